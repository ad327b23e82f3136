"""Bringing real nodes up beside a running control plane, in this order:

  check the machine -> the bridge (the claim) -> the registry, its relay, the images pushed -> the API
  relay, RBAC, CoreDNS -> per node: cgroups, namespace, files, credentials, containerd, kubelet ->
  kube-router on every node.

Every step records what it made before making it (the node's folder, host.json), so that
teardown.py removes exactly that, whether `up` finished, failed or was interrupted.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from ...artifacts import programs
from ...inputs.profile import ClusterProfile
from ...kit.files import write_file
from .. import processes
from ..context import Context
from ..plane import pki
from ..plane.addresses import SERVICE_CIDR
from . import host, network
from . import node as node_files
from .node import RealNode

# The Debian programs a real node runs, each with what it is for.
MACHINE_PROGRAMS = {"containerd": "the container runtime", "runc": "containerd's OCI runtime",
                    "iptables": "the CNI bridge and kube-router's NetworkPolicy rules",
                    "ipset": "kube-router's NetworkPolicy sets", "socat": "the relays onto the bridge",
                    "skopeo": "pushing the built images to the cluster's registry", "nsenter": "entering a node's network"}
NODE_PROGRAMS = ["kubelet", "kube-router", "coredns", "registry", "bridge", "host-local", "loopback", "portmap"]
# Paths that containerd, the CNI plugins, the kubelet and `ip netns` use whatever they are told: made by
# the first real node on a machine, removed after the last, left alone when they were there before.
SHARED_PATHS = ("/run/containerd", "/var/lib/cni", "/var/log/containers", "/var/log/pods", "/var/lib/kubelet",
                "/run/netns")
MEMORY_PER_NODE = 1 << 30  # a node's daemons take ~200 MiB; the rest is room for its pods
START_TIMEOUT = 60.0
DEFAULT_REGISTRY_HOSTS = ("registry.example.com", "registry.k8s.io")  # the repository's jobs, and the pause image


class NodesError(Exception):
    """One line for the user: what the machine lacks for real nodes, and how to get it."""


@dataclass(frozen=True)
class Image:
    """A built image and the repository path it is pushed to in the cluster's registry."""

    archive: Path  # an oci-archive tarball
    repository: str  # e.g. ml/tfjobgen-runtime
    tag: str


def plan(profile: ClusterProfile, names: list[str], nodes_folder: Path) -> list[RealNode]:
    """The real nodes named `names` (the first nodes of the profile's main group)."""
    hosts = set(DEFAULT_REGISTRY_HOSTS)
    if profile.image_registry:
        hosts.add(profile.image_registry.split("/")[0])
    static = bool(profile.cpu_manager_selector)
    return [RealNode(name=name, addresses=network.NodeAddresses(index), folder=nodes_folder / name,
                     cluster_domain=profile.cluster_domain, static_cpu_manager=static,
                     registry_hosts=tuple(sorted(hosts)),
                     topology_manager_policy=profile.node.topology_manager_policy,
                     topology_manager_scope=profile.node.topology_manager_scope)
            for index, name in enumerate(names, start=1)]


def check_machine(nodes: list[RealNode], images: list[Image] | None) -> None:
    """What real nodes need of this machine, each lack said in one line with its remedy."""
    if not nodes:
        return
    if os.geteuid() != 0:
        raise NodesError("real nodes need root (network namespaces, cgroups, mounts)")
    lacking = [f"{name} ({why})" for name, why in MACHINE_PROGRAMS.items() if shutil.which(name) is None]
    if lacking:
        raise NodesError(f"real nodes need Debian's {', '.join(lacking)}: apt-get install "
                         f"{' '.join(n for n in MACHINE_PROGRAMS if shutil.which(n) is None and n != 'nsenter')}"
                         " (.ci/run installs them)")
    missing = programs.missing(NODE_PROGRAMS)
    if missing:
        raise programs.ToolsMissing(f"{', '.join(missing)} not built: run `make cluster-tools` "
                                 f"(binaries go to {programs.cache_root()})")
    if images is None:
        raise NodesError("the images are not built: run `make images`")
    if len(nodes) > network.MAX_REAL_NODES:
        raise NodesError(f"--real-nodes {len(nodes)}: at most {network.MAX_REAL_NODES} fit the bridge's addresses")
    available = _memory_available()
    if available and len(nodes) * MEMORY_PER_NODE > available:
        raise NodesError(f"--real-nodes {len(nodes)}: each real node needs about {MEMORY_PER_NODE >> 20} MiB and "
                         f"this machine has {available >> 20} MiB available; ask for at most "
                         f"{max(available // MEMORY_PER_NODE, 0)}")
    if network.bridge_exists():
        raise NodesError(f"another cluster with real nodes runs on this machine (its bridge {network.BRIDGE} "
                         "exists): `tfjobgen cluster list` names it, `tfjobgen cluster down --name NAME` stops it")
    too_long = [path for n in nodes for path in node_files.too_long_paths(n)]
    if too_long:
        raise NodesError(f"the cluster's folder is too deep for a node's sockets ({too_long[0]} is longer than "
                         f"{node_files.SOCKET_PATH_MAX} bytes): set TFJOBGEN_CLUSTER_HOME to a shorter folder")


def _memory_available() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def start_host(context: Context, nodes: list[RealNode], images: list[Image], cluster_domain: str) -> None:
    """The bridge, the registry with the images, the API relay, RBAC and CoreDNS."""
    folder = context.files.nodes
    folder.mkdir(parents=True, exist_ok=True)
    # Recorded before anything is made: teardown removes only what this cluster made. Written whole or not at
    # all: an up interrupted mid-write left an empty record that down could not read (and so left the bridge).
    write_file(str(folder / "host.json"), json.dumps({
        "bridge": network.BRIDGE,
        "made_paths": [p for p in SHARED_PATHS if not os.path.lexists(p)]}, indent=1) + "\n")
    network.make_host()

    context.say(f"registry, {len(images)} images")
    registry_port, = context.ports("registry")
    storage = registry_storage()
    storage.mkdir(parents=True, exist_ok=True)
    (folder / "registry.json").write_text(host.registry_config(storage, registry_port))
    registry = context.launch(host.registry(folder / "registry.json"))
    processes.wait_for(registry, lambda: _get(f"http://127.0.0.1:{registry_port}/v2/"), START_TIMEOUT, "its API (/v2/)")
    context.launch(host.registry_relay(registry_port))
    for image in images:
        _push(image, registry_port, folder / "logs")

    context.say("API relay, CoreDNS")
    context.launch(host.api_relay(context.api_port))
    for obj in host.rbac_objects():
        context.objects.create(obj)
    coredns_pair = pki.issue(context.ca, folder / "pki", "coredns", host.COREDNS_USER, client=True)
    from .. import home as cluster_home

    kubeconfig = folder / "coredns.kubeconfig"
    kubeconfig.write_text(cluster_home.kubeconfig_text(
        "cluster", f"https://127.0.0.1:{context.api_port}", context.ca.cert.read_bytes(),
        coredns_pair.cert.read_bytes(), coredns_pair.key.read_bytes()))
    (folder / "Corefile").write_text(host.corefile(cluster_domain, kubeconfig))
    dns = context.launch(host.coredns(folder / "Corefile"))
    processes.wait_for(dns, lambda: _get(host.dns_ready_url()), START_TIMEOUT, "readiness (/ready)")


def registry_storage() -> Path:
    """The registry's blobs, kept between clusters beside the image cache: an image is pushed once per machine."""
    from ...kit import caches

    return caches.folder("registry", "TFJOBGEN_REGISTRY_STORAGE")


def _push(image: Image, port: int, logs: Path) -> None:
    logs.mkdir(parents=True, exist_ok=True)
    target = f"docker://127.0.0.1:{port}/{image.repository}:{image.tag}"
    with open(logs / "skopeo.log", "a") as log:
        done = subprocess.run(["skopeo", "copy", "--quiet", "--dest-tls-verify=false", "--preserve-digests",
                               f"oci-archive:{image.archive}", target], stdout=log, stderr=subprocess.STDOUT)
    if done.returncode:
        raise NodesError(f"pushing {image.archive.name} to {target} failed (exit {done.returncode}; see {logs / 'skopeo.log'})")


def start_node(context: Context, real: RealNode, everyone: list[RealNode]) -> processes.Started:
    """One node: its record, cgroups, namespace, files, credentials, containerd and kubelet (started, not Ready)."""
    real.folder.mkdir(parents=True, exist_ok=True)
    write_file(str(real.folder / "node.json"), json.dumps({"name": real.name, "index": real.addresses.index}) + "\n")
    node_files.make_cgroups(real)
    network.make_node(real.addresses, [n.addresses for n in everyone])
    node_files.write_files(real, context.ca.cert)
    credentials = pki.issue(context.ca, real.folder / "pki", "kubelet", f"system:node:{real.name}", client=True,
                            organization=host.NODES_GROUP)
    real.kubeconfig.write_text(host.kubeconfig_over_bridge(
        context.ca.cert.read_bytes(), credentials.cert.read_bytes(), credentials.key.read_bytes()))
    containerd = context.launch(node_files.containerd(real))
    processes.wait_for(containerd, real.containerd_socket.exists, START_TIMEOUT, f"its socket {real.containerd_socket}")
    return context.launch(node_files.kubelet(real))


def start_policy(context: Context, nodes: list[RealNode]) -> None:
    """kube-router on every node, with one read-only identity."""
    folder = context.files.nodes
    pair = pki.issue(context.ca, folder / "pki", "kube-router", host.KUBE_ROUTER_USER, client=True)
    kubeconfig = folder / "kube-router.kubeconfig"
    kubeconfig.write_text(host.kubeconfig_over_bridge(context.ca.cert.read_bytes(), pair.cert.read_bytes(),
                                                      pair.key.read_bytes()))
    for real in nodes:
        context.launch(node_files.kube_router(real, kubeconfig, SERVICE_CIDR))


def real_node_object(node_object: dict, real: RealNode) -> dict:
    """The Node object KWOK would have kept, made a real node's: no KWOK mark, its pod subnet (kube-router reads
    it; the controller manager here allocates none). The kubelet registers onto it and reports the machine."""
    metadata = dict(node_object["metadata"])
    metadata["annotations"] = {k: v for k, v in (metadata.get("annotations") or {}).items()
                               if not k.startswith("kwok.x-k8s.io")}
    metadata["labels"] = {**metadata.get("labels", {}), "type": "real"}
    spec = {**node_object.get("spec", {}), "podCIDR": real.addresses.pod_subnet,
            "podCIDRs": [real.addresses.pod_subnet]}
    return {"apiVersion": "v1", "kind": "Node", "metadata": metadata, "spec": spec}


def _get(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=2) as response:
        return response.status == 200

