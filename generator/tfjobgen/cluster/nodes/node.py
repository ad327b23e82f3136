"""One real node: containerd and a kubelet in the node's network namespace, and kube-router beside them.

The configuration functions are pure (text from the node's plan); `start` writes them and starts
the processes, each with the cluster's mark (processes.py) and inside the node's cgroup, so that
`cluster down` finds every process: the daemons by their mark, the containers by the cgroup.

Several kubelets share this machine, so each node gets its own of everything a kubelet or
containerd keeps: root and state folders, sockets, runc's state, pod logs, cgroup root
(/tfjg-nI). They see the same CPUs and memory: every real node reports the whole machine.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ...artifacts import programs
from ...artifacts.images import catalog
from ..processes import Component
from .network import BRIDGE_ADDRESS, REGISTRY_RELAY_PORT, NodeAddresses

KUBELET_PORT = 10250
# The v1 hierarchies a node's cgroup is made in; runc also writes the cgroup2 "unified" one of the
# hybrid layout, which only needs removing.
HIERARCHIES = ("cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "blkio", "pids", "systemd")
CGROUP_ROOT = Path("/sys/fs/cgroup")
SOCKET_PATH_MAX = 107  # sun_path holds 108 bytes with the final NUL


@dataclass(frozen=True)
class RealNode:
    """A node of the cluster that runs containers: its name (the Node object's), its place on the network,
    its folder, and how its kubelet is set up."""

    name: str
    addresses: NodeAddresses
    folder: Path  # <cluster>/nodes/<name>
    cluster_domain: str
    static_cpu_manager: bool  # the profile's CPU-manager nodes: pin Guaranteed pods to whole CPUs
    registry_hosts: tuple[str, ...]  # registry names containerd fetches from the cluster's registry
    topology_manager_policy: str = "none"  # the profile's node shape: its kubelet's Topology Manager
    topology_manager_scope: str = "container"

    @property
    def cgroup(self) -> str:
        return f"/{self.addresses.namespace}"

    @property
    def daemons_cgroup(self) -> str:
        return f"{self.cgroup}/system"

    @property
    def containerd_socket(self) -> Path:
        return self.folder / "containerd.sock"

    @property
    def kubeconfig(self) -> Path:
        return self.folder / "kubeconfig"

    @property
    def logs(self) -> Path:
        return self.folder / "logs"


def containerd_config(node: RealNode) -> str:
    d = node.folder
    disabled = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
                "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs",
                "io.containerd.tracing.processor.v1.otlp"]
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return "\n".join([
        "version = 2",
        f'root = "{d / "containerd" / "root"}"',
        f'state = "{d / "containerd" / "state"}"',
        f"disabled_plugins = {json.dumps(disabled)}",
        "[grpc]", f'  address = "{node.containerd_socket}"',
        f"[{cri}]",
        f'  sandbox_image = "{catalog.reference(catalog.PAUSE)}"',
        "  restrict_oom_score_adj = true  # no CAP_SYS_RESOURCE here: runc cannot lower a score",
        '  stream_server_address = "127.0.0.1"',
        '  stream_server_port = "0"',
        "  disable_apparmor = true",
        f"[{cri}.containerd]",
        '  snapshotter = "overlayfs"',
        '  default_runtime_name = "runc"',
        f"[{cri}.containerd.runtimes.runc]",
        '  runtime_type = "io.containerd.runc.v2"',
        f"[{cri}.containerd.runtimes.runc.options]",
        "  SystemdCgroup = false",
        f'  Root = "{d / "containerd" / "runc"}"  # runc\'s state: else one folder for every node',
        f"[{cri}.cni]",
        f'  bin_dir = "{programs.family_of("bridge").installed_in}"',
        f'  conf_dir = "{d / "cni" / "net.d"}"',
        "  max_conf_num = 1",
        f"[{cri}.registry]",
        f'  config_path = "{d / "registry-hosts"}"',
        "",
    ])


def registry_hosts(node: RealNode) -> dict[str, str]:
    """hosts.toml per registry name: each is served by the cluster's registry, over the bridge, and by
    nothing else (the mirror is also the server, so no pull ever leaves the machine)."""
    local = f"http://{BRIDGE_ADDRESS}:{REGISTRY_RELAY_PORT}"
    text = f'server = "{local}"\n\n[host."{local}"]\n  capabilities = ["pull", "resolve"]\n'
    return {host: text for host in node.registry_hosts}


def cni_config(node: RealNode) -> str:
    """A bridge per node with the node's pod subnet; no masquerade (nothing is routed off the machine)."""
    return json.dumps({"cniVersion": "1.0.0", "name": "tfjobgen", "plugins": [
        {"type": "bridge", "bridge": "cni0", "isGateway": True, "ipMasq": False, "hairpinMode": True,
         "ipam": {"type": "host-local", "ranges": [[{"subnet": node.addresses.pod_subnet}]],
                  "routes": [{"dst": "0.0.0.0/0"}], "dataDir": str(node.folder / "cni" / "ipam")}},
        {"type": "portmap", "capabilities": {"portMappings": True}},
    ]}, indent=1) + "\n"


def kubelet_config(node: RealNode, ca_file: Path) -> str:
    config = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "address": node.addresses.address, "port": KUBELET_PORT, "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1", "healthzPort": 10248,
        # Only the API server (the cluster CA's admin certificate) may use the kubelet's API: pods can
        # reach their node's address.
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True},
                           "x509": {"clientCAFile": str(ca_file)}},
        "authorization": {"mode": "Webhook"},
        "cgroupDriver": "cgroupfs", "cgroupRoot": node.cgroup, "cgroupsPerQOS": True,
        "containerRuntimeEndpoint": f"unix://{node.containerd_socket}",
        "clusterDomain": node.cluster_domain, "clusterDNS": [BRIDGE_ADDRESS],
        "resolvConf": str(node.folder / "resolv.conf"),  # nothing of the host's resolver reaches a pod
        "failSwapOn": False,
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
        "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
        "serializeImagePulls": False,
        "podLogsDir": str(node.folder / "pod-logs"),  # each kubelet removes the log folders of pods it does not know
        "protectKernelDefaults": False,  # the built kubelet only warns (versions.yaml's edit): it never sets sysctls
        "rotateCertificates": False, "serverTLSBootstrap": False,
    }
    # The CPU and Topology Managers the profile says its nodes run, written out even when they are the
    # kubelet's defaults, so the file says what tfjobgen's capacity arithmetic assumed.
    config.update({"cpuManagerPolicy": "static" if node.static_cpu_manager else "none",
                   "topologyManagerPolicy": node.topology_manager_policy,
                   "topologyManagerScope": node.topology_manager_scope})
    if node.static_cpu_manager:
        # One CPU of the machine for everything else: the static policy hands out the others whole.
        config["reservedSystemCPUs"] = "0"
    return json.dumps(config, indent=1) + "\n"


def in_namespace(node: RealNode, argv: list[str]) -> list[str]:
    """Run argv in the node's network namespace only: `ip netns exec` would also give it a /sys of its own,
    without the cgroup mounts the kubelet needs."""
    return ["nsenter", f"--net={node.addresses.netns_path}", "--", *argv]


def containerd(node: RealNode) -> Component:
    return Component(f"containerd-{node.name}", in_namespace(node, [
        "containerd", "--config", str(node.folder / "containerd.toml")]), cgroup=node.daemons_cgroup)


def kubelet(node: RealNode) -> Component:
    d = node.folder
    return Component(f"kubelet-{node.name}", in_namespace(node, [
        str(programs.program("kubelet")), f"--config={d / 'kubelet.json'}", f"--kubeconfig={node.kubeconfig}",
        f"--root-dir={d / 'kubelet'}", f"--cert-dir={d / 'kubelet' / 'pki'}",
        f"--hostname-override={node.name}", f"--node-ip={node.addresses.address}", "--v=1",
        # cAdvisor's containerd client (/metrics/cadvisor's namespace, pod and container labels) dials its own
        # default socket, /run/containerd/containerd.sock, not the runtime endpoint: tell it the node's
        f"--containerd={node.containerd_socket}",
    ]), cgroup=node.daemons_cgroup)


def kube_router(node: RealNode, kubeconfig: Path, service_range: str) -> Component:
    """kube-router's NetworkPolicy controller only (no routing, no service proxy): iptables and ipsets in
    the node's namespace."""
    return Component(f"kube-router-{node.name}", in_namespace(node, [
        str(programs.program("kube-router")), f"--kubeconfig={kubeconfig}", f"--hostname-override={node.name}",
        "--run-firewall=true", "--run-router=false", "--run-service-proxy=false", "--run-loadbalancer=false",
        "--enable-ipv4=true", "--enable-ipv6=false", "--enable-cni=false",
        f"--service-cluster-ip-range={service_range}", "--health-port=0", "--metrics-port=0", "--v=1",
    ]), cgroup=node.daemons_cgroup)


def write_files(node: RealNode, ca_file: Path) -> None:
    """Every file the node's processes read, and the folders they expect."""
    d = node.folder
    for sub in ("logs", "cni/net.d", "cni/ipam", "pod-logs", "kubelet/pki"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    (d / "containerd.toml").write_text(containerd_config(node))
    (d / "cni" / "net.d" / "10-tfjobgen.conflist").write_text(cni_config(node))
    for host, text in registry_hosts(node).items():
        (d / "registry-hosts" / host).mkdir(parents=True, exist_ok=True)
        (d / "registry-hosts" / host / "hosts.toml").write_text(text)
    (d / "kubelet.json").write_text(kubelet_config(node, ca_file))
    (d / "resolv.conf").write_text(f"search {node.cluster_domain}\n")


def too_long_paths(node: RealNode) -> list[str]:
    """Unix sockets the node's processes make, whose paths the kernel would refuse."""
    sockets = [Path(f"{node.containerd_socket}.ttrpc"), node.folder / "kubelet" / "pod-resources" / "kubelet.sock"]
    return [str(s) for s in sockets if len(str(s)) > SOCKET_PATH_MAX]


def make_cgroups(node: RealNode) -> None:
    """/tfjg-nI and /tfjg-nI/system (the node's daemons) in every hierarchy; a new cpuset cgroup starts
    with no CPU and no memory node, so both are copied from the root."""
    for hierarchy in HIERARCHIES:
        (CGROUP_ROOT / hierarchy / node.cgroup.lstrip("/") / "system").mkdir(parents=True, exist_ok=True)
    cpuset = CGROUP_ROOT / "cpuset"
    for path in (cpuset / node.cgroup.lstrip("/"), cpuset / node.cgroup.lstrip("/") / "system"):
        for key in ("cpuset.cpus", "cpuset.mems"):
            (path / key).write_text((cpuset / key).read_text())


def cgroup_pids(node: RealNode) -> list[int]:
    """Every process in the node's cgroups: its daemons, the shims and the containers."""
    base = CGROUP_ROOT / "pids" / node.cgroup.lstrip("/")
    pids = set()
    for procs in base.rglob("cgroup.procs") if base.is_dir() else ():
        try:
            pids.update(int(line) for line in procs.read_text().split())
        except OSError:
            continue
    return sorted(pids)


def remove_cgroups(node: RealNode) -> None:
    """The node's cgroups, deepest first (a cgroup with a process in it stays, and says so by EBUSY)."""
    for hierarchy in (*HIERARCHIES, "unified"):
        base = CGROUP_ROOT / hierarchy / node.cgroup.lstrip("/")
        if not base.is_dir():
            continue
        for path in sorted((p for p in base.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
            _rmdir(path)
        _rmdir(base)


def _rmdir(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass
