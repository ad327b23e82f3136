"""`cluster up` and `cluster down`: a local cluster shaped as a profile, started and stopped whole.

up:   check the profile and the programs -> certificates -> etcd -> kube-apiserver and the pod
      network (podnet.py) -> the controller manager, the scheduler and KWOK -> PriorityClasses and
      nodes -> real nodes (--real-nodes: nodes/) -> every node Ready -> the controllers -> Argo CD
      (--argocd: argocd.py) -> state.json.
      Any failure, or Ctrl-C, stops what was started and removes what it made, then the folder.
down: stop every process marked with the cluster's folder, remove what real nodes made (nodes/teardown.py),
      then the folder.
"""

from __future__ import annotations

import json
import ssl
import time
import urllib.request
from pathlib import Path
from typing import Callable

from ..expand import pipeline
from ..inputs.problems import InvalidInput
from ..inputs.profile import ClusterProfile
from ..kube import api
from . import argocd, controllers, home, processes, shape
from ..artifacts import programs
from .nodes import bring_up, teardown
from .plane import components, pki, release
from .home import ClusterFiles

CORE_PROGRAMS = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"]
PRIORITY_CLASSES_FILE = programs.REPO / "docs" / "priority-classes.yaml"
START_TIMEOUT = 60.0


class ClusterError(Exception):
    """One line for the user: a name taken, a component that would not start."""


def up(profile: ClusterProfile, nodes: int | None, name: str, say: Callable[[str], None],
       warn: Callable[[str], None], gitops: "argocd.Source | None" = None, real_nodes: int = 0,
       kubernetes: str = "") -> home.ClusterState:
    """Start a cluster shaped as the profile, loaded by the caller (and Argo CD reading `gitops`); its state
    once every node is Ready. `real_nodes`: how many of the main group's nodes run containers (nodes/);
    `kubernetes`: the control plane's release ("1.30", "v1.37.2"; "": the default, plane/release.py)."""
    if not home.NAME_PATTERN.match(name):
        raise ClusterError(f"cluster name {name!r}: use lowercase letters, digits and '-' (at most 40)")
    errors = [p for p in pipeline.check_profile(profile) if p.is_error]
    if errors:
        raise InvalidInput(errors)
    groups = shape.node_groups(profile, nodes)
    lacking = programs.missing(CORE_PROGRAMS)
    if lacking:
        raise programs.ToolsMissing(f"{', '.join(lacking)} not built: run `make cluster-tools` "
                                 f"(binaries go to {programs.cache_root()})")
    try:
        chosen = release.choose(profile, kubernetes)
    except release.ReleaseRefused as err:
        raise ClusterError(str(err)) from None
    if real_nodes and chosen.family.release_of:
        raise ClusterError(f"--real-nodes: the nodes' kubelet is {programs.family_of('kubelet').version}, and a kubelet "
                           f"newer than its API server ({chosen.version}) is not supported: real nodes run on the "
                           "default release only")
    if gitops:
        argocd.check(gitops, profile.name)
    real = _plan_real_nodes(profile, groups, real_nodes, home.folder(name) / "nodes")
    images = _node_images() if real else []
    bring_up.check_machine(real, images)
    _claim(name)
    files = ClusterFiles(home.folder(name))
    started: list[processes.Started] = []
    try:
        state = _start(profile, groups, name, files, started, say, warn, gitops, real, images, chosen)
    except BaseException as err:
        _remove(name, started, keep_logs=isinstance(err, (processes.StartFailed, bring_up.NodesError)))
        raise
    return state


def _plan_real_nodes(profile, groups, count: int, folder: Path) -> list:
    if not count:
        return []
    main = groups[0]
    if count > main.count:
        raise ClusterError(f"--real-nodes {count}: the main group has {main.count} node(s); pass --nodes {count} "
                           "to make every node real")
    names = [n["metadata"]["name"] for n in shape.node_objects([main])][:count]
    return bring_up.plan(profile, names, folder)


def _node_images() -> list | None:
    """The images real nodes pull, as built by `make images`; None when one is not built."""
    from ..artifacts.images import catalog, store

    found = []
    for name in catalog.FOR_NODES:
        built = store.built(name)
        if built is None:
            return None
        found.append(bring_up.Image(archive=built.archive, repository=catalog.path_in_registry(name), tag=built.tag))
    return found


def _remove(name: str, started: list = (), keep_logs: bool = False) -> list[int]:
    """Stop the cluster's processes, remove what its real nodes made, then its folder; the PIDs stopped."""
    folder = home.folder(name)
    stopped = processes.stop_all(folder, started)
    teardown.remove(folder)
    home.remove(name, keep_logs=keep_logs)
    return stopped


def _claim(name: str) -> None:
    """Make the cluster's folder, or say why not: running already, or debris of one that died."""
    folder = home.folder(name)
    if folder.exists():
        if processes.running(folder):
            raise ClusterError(f"a cluster named {name!r} is already running "
                               f"(tfjobgen cluster down --name {name} stops it)")
        _remove(name)  # nothing of it runs: what is left is debris of a crash
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.mkdir()


def _start(profile, groups, name, files: ClusterFiles, started, say, warn, gitops, real, images,
           chosen: release.Release) -> home.ClusterState:
    begun = time.monotonic()

    def step(what: str) -> None:
        say(f"[{time.monotonic() - begun:5.1f}s] {what}")

    step("certificates")
    ca = pki.make_ca(files.pki, f"tfjobgen-{name}-ca")
    pki.issue(ca, files.pki, "apiserver", "kube-apiserver", server=True)  # the API server reads it from files.pki
    admin = pki.issue(ca, files.pki, "admin", "admin", client=True, organization="system:masters")
    pki.signing_key(files.pki, "service-accounts")
    etcd_client, etcd_peer, api_port, kcm_port, scheduler_port = tools_ports = _ports(5)

    step("etcd")
    etcd = _launch(components.etcd(files, etcd_client, etcd_peer), files, started)
    processes.wait_for(etcd, lambda: _get(f"http://127.0.0.1:{etcd_client}/health"), START_TIMEOUT, "a healthy store")

    step(f"kube-apiserver {chosen.version}, pod network")
    network = _launch(components.pod_network(files, api_port), files, started)
    apiserver = _launch(components.kube_apiserver(files, api_port, etcd_client, chosen), files, started)
    server = f"https://127.0.0.1:{api_port}"
    trusted = ssl.create_default_context(cafile=str(ca.cert))
    processes.wait_for(apiserver, lambda: _get(server + "/readyz", trusted), START_TIMEOUT, "readiness (/readyz)")
    processes.wait_for(network, files.pod_network.exists, START_TIMEOUT, f"its socket {files.pod_network}")
    files.kubeconfig.write_text(home.kubeconfig_text(name, server, ca.cert.read_bytes(), admin.cert.read_bytes(),
                                                      admin.key.read_bytes()))
    files.kubeconfig.chmod(0o600)

    step("kube-controller-manager, kube-scheduler, kwok")
    local_only = ssl._create_unverified_context()  # their self-made serving certificates, on 127.0.0.1
    controller_manager = _launch(components.kube_controller_manager(files, kcm_port, chosen), files, started)
    scheduler = _launch(components.kube_scheduler(files, scheduler_port, chosen), files, started)
    _launch(components.kwok(files), files, started)
    processes.wait_for(controller_manager, lambda: _get(f"https://127.0.0.1:{kcm_port}/healthz", local_only),
                       START_TIMEOUT, "health (/healthz)")
    processes.wait_for(scheduler, lambda: _get(f"https://127.0.0.1:{scheduler_port}/healthz", local_only),
                       START_TIMEOUT, "health (/healthz)")

    client = api.connect(str(files.kubeconfig))
    objects = api.Objects(client)
    import yaml

    defined = list(yaml.safe_load_all(PRIORITY_CLASSES_FILE.read_text())) if PRIORITY_CLASSES_FILE.is_file() else []
    classes = shape.priority_classes(profile, defined)
    node_objects = shape.node_objects(groups)
    for index, real_node in enumerate(real):
        node_objects[index] = bring_up.real_node_object(node_objects[index], real_node)
    step(f"{len(node_objects)} nodes ({len(real)} real), {len(classes)} PriorityClasses")
    for obj in classes + node_objects:
        objects.create(obj)
    ports_taken: dict[str, int] = {}
    context = _real_nodes_context(files, ca, api_port, objects, started, step, ports_taken)
    if real:
        step("real nodes: bridge")
        bring_up.start_host(context, real, images, profile.cluster_domain)
        for real_node in real:
            step(f"real node {real_node.name}: containerd, kubelet")
            bring_up.start_node(context, real_node, real)
    _wait_nodes_ready(objects, {n["metadata"]["name"] for n in node_objects}, started)
    if real:  # kube-router reads each node's address from its status, which a Ready kubelet has written
        step("kube-router (NetworkPolicy) on every real node")
        bring_up.start_policy(context, real)
    step("controllers")
    outcome = controllers.start_all(files, ca, objects, profile, step, warn, started, kubernetes=chosen.version)
    gitops_state = {}
    if gitops:
        context = controllers.Context(files, ca, objects, profile, step, warn, tuple(outcome.started),
                                      kubernetes=chosen.version)
        try:
            gitops_state = argocd.start(context, gitops)
        finally:
            started.extend(context.started)
            outcome.ports.update({f"argocd {k}": v for k, v in context.ports_taken.items()})

    state = home.ClusterState(
        name=name, profile=str(Path(profile.origin.file).resolve()) if profile.origin.file else "", profile_name=profile.name,
        api_port=api_port, nodes=len(node_objects), components=[s.component.name for s in started if s.exited() is None],
        missing=sorted(outcome.missing),
        ports={**dict(zip(["etcd", "etcd-peer", "kube-apiserver", "kube-controller-manager", "kube-scheduler"],
                          tools_ports)), **ports_taken, **outcome.ports}, argocd=gitops_state,
        real_nodes=[r.name for r in real], kubernetes=chosen.version)
    state.save()
    step("ready")
    return state


def _real_nodes_context(files, ca, api_port, objects, started, step, ports_taken) -> bring_up.Context:
    def ports(*purposes: str) -> list[int]:
        found = _ports(len(purposes))
        ports_taken.update(zip(purposes, found))
        return found

    return bring_up.Context(home=files.home, ca=ca, api_port=api_port, objects=objects,
                            service_range=components.SERVICE_CIDR, say=step,
                            launch=lambda component: _launch(component, files, started), ports=ports)


def _wait_nodes_ready(objects: api.Objects, names: set[str], started) -> None:
    def ready() -> bool:
        for process in started:
            if process.exited() is not None:
                raise processes.StartFailed(f"{process.component.name} exited with code {process.exited()}: "
                                            f"{process.failure()}")
        nodes = objects.list("v1", "Node")
        return names <= {n["metadata"]["name"] for n in nodes if is_ready(n)}

    deadline = time.monotonic() + START_TIMEOUT
    while not ready():
        if time.monotonic() > deadline:
            raise processes.StartFailed(f"nodes not Ready after {START_TIMEOUT:.0f} s (see logs/kwok.log, and "
                                        "logs/kubelet-*.log of real nodes)")
        time.sleep(0.2)


def is_ready(node: dict) -> bool:
    """The node says it is Ready (its kubelet, or KWOK for it)."""
    return any(c["type"] == "Ready" and c["status"] == "True" for c in (node.get("status") or {}).get("conditions") or [])


def _launch(component: processes.Component, files: ClusterFiles, started: list) -> processes.Started:
    process = processes.start(component, files.home)
    started.append(process)
    return process


def _ports(count: int) -> list[int]:
    from ..kit import owned

    return owned.free_ports(count)


def _get(url: str, context: ssl.SSLContext | None = None) -> bool:
    with urllib.request.urlopen(url, timeout=2, context=context) as response:
        body = response.read()
    return response.status == 200 and (not url.endswith("/health") or json.loads(body).get("health") == "true")


def down(name: str) -> list[int]:
    """Stop the cluster's processes and remove its folder; the PIDs stopped. ClusterError if unknown."""
    folder = home.folder(name)
    if not folder.exists():
        raise ClusterError(f"no cluster named {name!r} (running: {', '.join(home.names()) or 'none'})")
    return _remove(name)
