"""`cluster up` and `cluster down`: a local cluster shaped as a profile, started and stopped whole.

up:   check the profile and the programs, then run STEPS in order over one Context (context.py), each step
      starting its part, taking its ports and recording them there:
        certificates -> etcd -> kube-apiserver and the pod network (podnet.py) -> the controller manager,
        the scheduler and KWOK -> PriorityClasses and nodes -> real nodes (--real-nodes: nodes/) -> every
        node Ready -> kube-router on real nodes -> the controllers (controllers/) -> Argo CD (--argocd:
        controllers/argocd.py) -> state.json.
      Any failure, or Ctrl-C, stops every process the context holds and removes what it made, then the folder.
down: stop every process marked with the cluster's folder, remove what real nodes made (nodes/teardown.py),
      then the folder.
"""

from __future__ import annotations

import json
import ssl
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..artifacts import programs
from ..expand import pipeline
from ..inputs.problems import InvalidInput
from ..inputs.profile import ClusterProfile
from ..kube import api
from ..shared import package_data
from . import home, processes, shape
from .context import Context
from .controllers import argocd
from .controllers.base import start_all
from .home import ClusterFiles
from .nodes import bring_up, teardown
from .plane import components, pki, release

CORE_PROGRAMS = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"]
# The control plane's ports, by the purposes state.json names them with.
PLANE_PORTS = ("etcd", "etcd-peer", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
# The PriorityClasses a profile may name, as the docs define them: the wheel carries the file (pyproject.toml).
PRIORITY_CLASSES = "docs/priority-classes.yaml"
PRIORITY_CLASSES_FILE = Path(package_data.find(PRIORITY_CLASSES))
START_TIMEOUT = 60.0


class ClusterError(Exception):
    """One line for the user: a name taken, a component that would not start."""


def up(profile: ClusterProfile, nodes: int | None, name: str, say: Callable[[str], None],
       warn: Callable[[str], None], gitops: "argocd.Source | None" = None, real_nodes: int = 0,
       kubernetes: str = "", monitoring: bool = False) -> home.ClusterState:
    """Start a cluster shaped as the profile, loaded by the caller (and Argo CD reading `gitops`); its state
    once every node is Ready. `real_nodes`: how many of the main group's nodes run containers (nodes/);
    `kubernetes`: the control plane's release ("1.30", "v1.37.2"; "": the default, plane/release.py);
    `monitoring`: the Prometheus Operator and a Prometheus pod on a real node (controllers/prometheus_operator.py)."""
    cluster_folder = checked_folder(name)
    errors = [p for p in pipeline.check_profile(profile) if p.is_error]
    if errors:
        raise InvalidInput(errors)
    groups = shape.node_groups(profile, nodes)
    # Every flag before the programs: on a machine that has not run `make cluster-tools` yet, "not built" would
    # hide a flag's mistake until after a build of many minutes.
    try:
        chosen = release.choose(profile, kubernetes)
    except release.ReleaseRefused as err:
        raise ClusterError(str(err)) from None
    skew = release.kubelet_skew_problem(programs.family_of("kubelet").version, chosen.version) if real_nodes else ""
    if skew:
        raise ClusterError(f"--real-nodes: {skew}: pass a --kubernetes release the kubelet may join, or none "
                           "(the default release)")
    if monitoring:
        _check_monitoring(profile, real_nodes)
    files = ClusterFiles(cluster_folder)
    real = _plan_real_nodes(profile, groups, real_nodes, files.nodes)
    lacking = programs.missing(CORE_PROGRAMS)
    if lacking:
        raise programs.ToolsMissing(f"{', '.join(lacking)} not built: run `make cluster-tools` "
                                 f"(binaries go to {programs.cache_root()})")
    release.require_built(chosen)
    if gitops:
        argocd.check(gitops, profile.name)
    images = _node_images() if real else []
    bring_up.check_machine(real, images)
    if monitoring:
        images += _monitoring_images()
    plan = Plan(name, _node_objects(groups, real), real, images, gitops)
    _claim(name, cluster_folder)
    context = Context(files, profile, chosen, _timed(say), warn, asked=("--monitoring",) if monitoring else ())
    try:
        for step in STEPS:
            step(context, plan)
    except BaseException as err:
        _stop(context, keep_logs=isinstance(err, (processes.StartFailed, bring_up.NodesError)))
        raise
    return home.load(name)


@dataclass(frozen=True)
class Plan:
    """What `up` was asked for, checked before anything starts: the steps read it."""

    name: str
    nodes: list[dict]  # every Node object, the real nodes' made real (bring_up.real_node_object)
    real: list[bring_up.RealNode]
    images: list[bring_up.Image]  # what real nodes pull
    gitops: argocd.Source | None


# ---- the steps of `up`, in order: each starts its part over the context and records it there ----------------

def make_certificates(context: Context, plan: Plan) -> None:
    """The CA, the API server's and the admin's pairs, the service accounts' key; the plane's ports."""
    context.say("certificates")
    folder = context.files.pki
    context.ca = pki.make_ca(folder, f"tfjobgen-{plan.name}-ca")
    pki.issue(context.ca, folder, "apiserver", "kube-apiserver", server=True)  # the API server reads it from files.pki
    pki.issue(context.ca, folder, "admin", "admin", client=True, organization="system:masters")
    pki.signing_key(folder, "service-accounts")
    context.ports(*PLANE_PORTS)
    context.api_port = context.ports_taken["kube-apiserver"]


def start_etcd(context: Context, plan: Plan) -> None:
    context.say("etcd")
    port = context.ports_taken
    store = context.launch(components.etcd(context.files, port["etcd"], port["etcd-peer"]))
    processes.wait_for(store, lambda: _get(f"http://127.0.0.1:{port['etcd']}/health"), START_TIMEOUT, "a healthy store")


def start_api_server(context: Context, plan: Plan) -> None:
    """kube-apiserver and the pod network; then the admin's kubeconfig and the context's client."""
    files = context.files
    context.say(f"kube-apiserver {context.kubernetes}, pod network")
    network = context.launch(components.pod_network(files, context.api_port))
    apiserver = context.launch(components.kube_apiserver(files, context.api_port, context.ports_taken["etcd"],
                                                         context.release))
    server = f"https://127.0.0.1:{context.api_port}"
    trusted = ssl.create_default_context(cafile=str(context.ca.cert))
    processes.wait_for(apiserver, lambda: _get(server + "/readyz", trusted), START_TIMEOUT, "readiness (/readyz)")
    processes.wait_for(network, files.pod_network.exists, START_TIMEOUT, f"its socket {files.pod_network}")
    admin = pki.Pair(files.pki / "admin.crt", files.pki / "admin.key")  # issued by make_certificates
    files.kubeconfig.write_text(home.kubeconfig_text(plan.name, server, context.ca.cert.read_bytes(),
                                                      admin.cert.read_bytes(), admin.key.read_bytes()))
    files.kubeconfig.chmod(0o600)
    context.objects = api.Objects(api.connect(str(files.kubeconfig)))


def start_schedulers(context: Context, plan: Plan) -> None:
    """The controller manager, the scheduler and KWOK (which moves the KWOK nodes and their pods)."""
    context.say("kube-controller-manager, kube-scheduler, kwok")
    files, port = context.files, context.ports_taken
    controller_manager = context.launch(components.kube_controller_manager(
        files, port["kube-controller-manager"], context.release))
    scheduler = context.launch(components.kube_scheduler(files, port["kube-scheduler"], context.release))
    context.launch(components.kwok(files))
    local_only = ssl._create_unverified_context()  # their self-made serving certificates, on 127.0.0.1
    for process in (controller_manager, scheduler):
        health = f"https://127.0.0.1:{port[process.component.name]}/healthz"
        processes.wait_for(process, lambda: _get(health, local_only), START_TIMEOUT, "health (/healthz)")


def create_nodes(context: Context, plan: Plan) -> None:
    """The profile's PriorityClasses and every Node object."""
    import yaml

    defined = list(yaml.safe_load_all(PRIORITY_CLASSES_FILE.read_text())) if PRIORITY_CLASSES_FILE.is_file() else []
    classes = shape.priority_classes(context.profile, defined)
    context.say(f"{len(plan.nodes)} nodes ({len(plan.real)} real), {len(classes)} PriorityClasses")
    for obj in classes + plan.nodes:
        context.objects.create(obj)


def start_real_nodes(context: Context, plan: Plan) -> None:
    if not plan.real:
        return
    context.say("real nodes: bridge")
    bring_up.start_host(context, plan.real, plan.images, context.profile.cluster_domain)
    for real in plan.real:
        context.say(f"real node {real.name}: containerd, kubelet")
        bring_up.start_node(context, real, plan.real)


def wait_nodes_ready(context: Context, plan: Plan) -> None:
    names = {n["metadata"]["name"] for n in plan.nodes}

    def ready() -> bool:
        for process in context.started:
            if process.exited() is not None:
                raise processes.StartFailed(f"{process.component.name} exited with code {process.exited()}: "
                                            f"{process.failure()}")
        nodes = context.objects.list("v1", "Node")
        return names <= {n["metadata"]["name"] for n in nodes if is_ready(n)}

    deadline = time.monotonic() + START_TIMEOUT
    while not ready():
        if time.monotonic() > deadline:
            raise processes.StartFailed(f"nodes not Ready after {START_TIMEOUT:.0f} s (see logs/kwok.log, and "
                                        "logs/kubelet-*.log of real nodes)")
        time.sleep(0.2)


def start_network_policy(context: Context, plan: Plan) -> None:
    if not plan.real:
        return
    # kube-router reads each node's address from its status, which a Ready kubelet has written
    context.say("kube-router (NetworkPolicy) on every real node")
    bring_up.start_policy(context, plan.real)


def start_controllers(context: Context, plan: Plan) -> None:
    from .controllers import kube_state_metrics, prometheus_operator

    context.say("controllers")
    start_all(context)
    for asked in (prometheus_operator, kube_state_metrics):  # asked for by name: not started is a failed `up`
        if asked.ASKED in context.asked and asked.NAME in context.missing:
            raise ClusterError(f"{asked.ASKED}: {asked.NAME} {context.missing[asked.NAME]}")


def start_argocd(context: Context, plan: Plan) -> None:
    if not plan.gitops:
        return
    context.part = "argocd"  # its ports are recorded as "argocd redis", ...
    try:
        context.argocd = argocd.start(context, plan.gitops)
    finally:
        context.part = ""


def save_state(context: Context, plan: Plan) -> None:
    """state.json, written last: a cluster is up once it exists."""
    profile = context.profile
    home.ClusterState(
        name=plan.name, profile=str(Path(profile.origin.file).resolve()) if profile.origin.file else "",
        profile_name=profile.name, api_port=context.api_port, nodes=len(plan.nodes),
        components=[s.component.name for s in context.started if s.exited() is None],
        missing=sorted(context.missing), ports=dict(context.ports_taken), argocd=context.argocd,
        real_nodes=[r.name for r in plan.real], kubernetes=context.kubernetes).save()
    context.say("ready")


STEPS: tuple[Callable[[Context, Plan], None], ...] = (
    make_certificates, start_etcd, start_api_server, start_schedulers, create_nodes, start_real_nodes,
    wait_nodes_ready, start_network_policy, start_controllers, start_argocd, save_state)


def down(name: str) -> list[int]:
    """Stop the cluster's processes and remove its folder; the PIDs stopped. ClusterError if the name is not a
    plain name of the clusters' home, names no cluster, or names a folder `up` did not make."""
    folder = checked_folder(name)
    if not folder.exists():
        raise ClusterError(f"no cluster named {name!r} (running: {', '.join(home.names()) or 'none'})")
    _made_by_up(folder)
    return _stop(Context(ClusterFiles(folder)))


def checked_folder(name: str) -> Path:
    """home.folder(), the one check of a cluster name, with its refusal as this module's error."""
    try:
        return home.folder(name)
    except (home.NameRefused, home.HomeUnusable) as err:
        raise ClusterError(str(err)) from None


def _made_by_up(folder: Path) -> None:
    """Refuse a folder without the marker `up` writes: its processes are not stopped, nothing of it is removed."""
    if not home.made_by_up(folder):
        raise ClusterError(f"{folder} was not made by `tfjobgen cluster up` (it has no {home.MARKER_FILE}): nothing "
                           "stopped, nothing removed; remove it yourself if it is yours to remove")


# ---- helpers ------------------------------------------------------------------------------------------------

def _plan_real_nodes(profile, groups, count: int, folder: Path) -> list:
    if not count:
        return []
    main = groups[0]
    if count > main.count:
        raise ClusterError(f"--real-nodes {count}: the main group has {main.count} node(s); pass --nodes {count} "
                           "to make every node real")
    names = [n["metadata"]["name"] for n in shape.node_objects([main])][:count]
    return bring_up.plan(profile, names, folder)


def _node_objects(groups, real: list) -> list[dict]:
    """Every Node object of the groups, the first len(real) made real nodes'."""
    objects = shape.node_objects(groups)
    for index, real_node in enumerate(real):
        objects[index] = bring_up.real_node_object(objects[index], real_node)
    return objects


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


def _check_monitoring(profile: ClusterProfile, real_nodes: int) -> None:
    """What `--monitoring` needs before anything starts: a node to run Prometheus on, monitoring turned on in the
    profile (its jobs render nothing to scrape otherwise), its programs built."""
    if not real_nodes:
        raise ClusterError("--monitoring: Prometheus runs as a pod of the profile's monitoring namespace, which "
                           "needs a real node: add --real-nodes N (docs/nodes.md)")
    if not profile.monitoring.enabled:
        origin = profile.origin
        where = f"{origin.file}:{origin.line_of('spec.monitoring.enabled')}: " if origin.file else ""
        raise ClusterError(f"--monitoring: {where}spec.monitoring.enabled: false, so the profile's jobs render no "
                           "PodMonitor to scrape: set it to true, or leave out --monitoring")
    lacking = programs.missing(["prometheus-operator", "kube-state-metrics"])
    if lacking:
        families = " ".join(sorted({programs.family_of(p).name for p in lacking}))
        raise programs.ToolsMissing(f"--monitoring: {', '.join(lacking)} not built: run `tfjobgen cluster tools "
                                    f"{families}` (binaries go to {programs.cache_root()})")


def _monitoring_images() -> list:
    """The images of catalog.FOR_MONITORING, as built by `make images`; ClusterError naming one not built."""
    from ..artifacts.images import catalog, store

    found = []
    for name in catalog.FOR_MONITORING:
        built = store.built(name)
        if built is None:
            raise ClusterError(f"--monitoring: the image {name} is not built: run `tfjobgen images build {name}` "
                               "(make images)")
        found.append(bring_up.Image(archive=built.archive, repository=catalog.path_in_registry(name), tag=built.tag))
    return found


def _stop(context: Context, keep_logs: bool = False) -> list[int]:
    """Stop the cluster's processes (those the context started reaped), remove what its real nodes made, then its
    folder; the PIDs stopped."""
    folder = context.files.home
    stopped = processes.stop_all(folder, context.started)
    teardown.remove(folder)
    home.remove(folder, keep_logs=keep_logs)
    return stopped


def _claim(name: str, folder: Path) -> None:
    """Make the cluster's folder (checked by checked_folder) and mark it as `up`'s, or say why not: running
    already, a folder `up` did not make, or debris of one that died (removed, being `up`'s)."""
    if folder.exists():
        if processes.running(folder):
            raise ClusterError(f"a cluster named {name!r} is already running "
                               f"(tfjobgen cluster down --name {name} stops it)")
        _made_by_up(folder)
        _stop(Context(ClusterFiles(folder)))  # nothing of it runs: what is left is debris of a crash
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.mkdir()
    home.mark(folder)  # first, before anything is in it: a folder without it is not `down`'s to remove


def _timed(say: Callable[[str], None]) -> Callable[[str], None]:
    """`say` with the seconds since `up` began in front."""
    begun = time.monotonic()
    return lambda what: say(f"[{time.monotonic() - begun:5.1f}s] {what}")


def is_ready(node: dict) -> bool:
    """The node says it is Ready (its kubelet, or KWOK for it)."""
    return any(c["type"] == "Ready" and c["status"] == "True" for c in (node.get("status") or {}).get("conditions") or [])


def _get(url: str, context: ssl.SSLContext | None = None) -> bool:
    with urllib.request.urlopen(url, timeout=2, context=context) as response:
        body = response.read()
    return response.status == 200 and (not url.endswith("/health") or json.loads(body).get("health") == "true")
