"""Helpers for the cluster tier: a local cluster started as a user starts it, and what tests do to it.

`local_cluster(...)` runs `tfjobgen cluster up` in its own process (its stdout captured: it must
return, holding nothing), yields a LocalCluster, and runs `tfjobgen cluster down` whatever happens;
then no process of the cluster may be left. Clusters of a test session live under one temporary
folder (TFJOBGEN_CLUSTER_HOME), so two sessions on one machine never meet.

The tier needs the programs `make cluster-tools` builds: without them each test says so and is
skipped (a failure under TFJOBGEN_REQUIRE_TOOLS=1, as in CI).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import subprocess
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from conftest import REPO, need, tfjobgen_command, uses

from tfjobgen.kube import api
from tfjobgen.cluster import control, home, processes
from tfjobgen.artifacts import programs
from tfjobgen.cluster.plane import stages
from tfjobgen.harness import pods
from tfjobgen.kit import owned
from tfjobgen.place import place

SESSION_HOME = Path(os.environ[home.HOME_ENV])  # this session's folder (conftest.py)
_names = itertools.count()
UP_DEADLINE = 120
# The Kubernetes release every local_cluster runs (`cluster up --kubernetes`): benchmarks/release_checks.py
# runs the tier's checks on each release this way. Unset: the default release.
RELEASE = os.environ.get("TFJOBGEN_TEST_KUBERNETES", "")


@uses("cluster")
def need_cluster_tools(*names: str) -> None:
    """Skip (fail under CI) unless the control plane's programs, and the programs `names`, are built."""
    lacking = programs.missing(control.CORE_PROGRAMS + list(names))
    need("the local cluster's programs", None if lacking else "built",
         f"{', '.join(lacking)} not built: run `make cluster-tools` (binaries go to {programs.cache_root()})")


def cluster_env(extra: dict | None = None) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO / "generator"), home.HOME_ENV: str(SESSION_HOME), **(extra or {})}


@uses("cluster")
def tfjobgen(*args: str, timeout: float = UP_DEADLINE, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(tfjobgen_command() + list(args), capture_output=True, text=True, cwd=REPO,
                          env=cluster_env(env), timeout=timeout, stdin=subprocess.DEVNULL)


@dataclass
class LocalCluster:
    name: str
    kubeconfig: Path
    up_stderr: str

    @property
    def home(self) -> Path:
        return SESSION_HOME / self.name

    @property
    def objects(self) -> api.Objects:
        if not hasattr(self, "_objects"):
            self._objects = api.Objects(api.connect(str(self.kubeconfig)))
        return self._objects

    def state(self) -> dict:
        return json.loads((self.home / "state.json").read_text())

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True,
                timeout: float = 120) -> subprocess.CompletedProcess:
        proc = subprocess.run(["kubectl", f"--kubeconfig={self.kubeconfig}", *args], input=stdin,
                              capture_output=True, text=True, timeout=timeout)
        assert not check or proc.returncode == 0, f"kubectl {' '.join(args)}: {proc.stderr}"
        return proc

    def apply(self, text: str, check: bool = True) -> subprocess.CompletedProcess:
        """Server-side apply, as Argo CD applies (kubectl reads multi-document YAML from stdin)."""
        return self.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=text, check=check)

    def restricted_namespace(self, name: str) -> None:
        """A namespace whose pods must meet Pod Security "restricted" (enforced by the real admission plugin)."""
        place.job_namespace(self.objects, name)

    def namespace(self, name: str) -> None:
        """A namespace jobs can run in, with their profile's LocalQueue when it queues with Kueue."""
        from tfjobgen.expand import pipeline

        place.job_namespace(self.objects, name, pipeline.load_profile(self.state()["profile"] or None),
                            restricted=False)

    def pods(self, namespace: str, selector: str = "") -> list[dict]:
        return self.objects.list("v1", "Pod", namespace, label_selector=selector)

    def wait(self, check, what: str, timeout: float = 60):
        return api.wait_until(check, timeout, what)

    def fail_pod(self, namespace: str, pod: str, exit_code: int, reason: str = "Error") -> None:
        """End a running pod's container with `exit_code`, through KWOK's chaos stage."""
        pods.fail_pod(self.objects, namespace, pod, exit_code, reason)

    def succeed_pod(self, namespace: str, pod: str) -> None:
        pods.succeed_pod(self.objects, namespace, pod)

    def evict_pod(self, namespace: str, pod: str) -> None:
        """The Eviction API, as `kubectl drain` uses it: the pod gets a DisruptionTarget condition."""
        body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod, "namespace": namespace}}
        self.kubectl("create", "--raw", f"/api/v1/namespaces/{namespace}/pods/{pod}/eviction", "-f", "-",
                     stdin=json.dumps(body))

    def lose_node(self, node: str) -> None:
        """The server is lost: NotReady, tainted by the node lifecycle controller, its pods evicted."""
        stages.lose_node(self.objects, node)


def leftovers(cluster_home: Path) -> list[int]:
    return processes.running(cluster_home)


@dataclass(frozen=True)
class Process:
    pid: int
    name: str  # /proc's comm: the first 15 bytes of the program's name
    argv: tuple[str, ...]
    environment: dict[str, str]


def cluster_processes(cluster_home: Path) -> list[Process]:
    """The live processes of a cluster, read from /proc. Kubelets and CNI plugins start programs that
    last milliseconds (iptables, mount): one that ends between the listing and the reading is left out."""
    found = []
    for pid, environment in sorted(owned.environments(processes.MARKER, str(cluster_home)).items()):
        try:
            name = Path(f"/proc/{pid}/comm").read_text().strip()
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        found.append(Process(pid, name, tuple(a.decode(errors="replace") for a in argv if a), environment))
    return found


@uses("cluster")  # on the wrapper: conftest's marking does not look inside contextlib's
@contextlib.contextmanager
def local_cluster(profile: str | Path | None = None, nodes: int | None = 4, *extra: str, env: dict | None = None):
    """A cluster shaped as `profile`, up for the `with` block; every process of it gone after.
    `env`: added to `cluster up`'s environment (such as another tools cache)."""
    need_cluster_tools()
    name = f"t{os.getpid()}-{next(_names)}"
    args = ["cluster", "up", "--name", name, *extra]
    if RELEASE:
        args += ["--kubernetes", RELEASE]
    if profile:
        args += ["--profile", str(profile)]
    if nodes:
        args += ["--nodes", str(nodes)]
    started = time.monotonic()
    try:
        proc = tfjobgen(*args, env=env)
        assert proc.returncode == 0, f"cluster up failed ({time.monotonic() - started:.1f}s):\n{proc.stderr}"
        kubeconfig = Path(proc.stdout.strip().splitlines()[-1])
        cluster = LocalCluster(name, kubeconfig, proc.stderr)
        if RELEASE:  # the release asked for, read off the API server itself
            served = cluster.kubectl("get", "--raw", "/version").stdout
            assert programs.family_of("kube-apiserver", RELEASE).version == json.loads(served)["gitVersion"], served
        yield cluster
    finally:
        down = tfjobgen("cluster", "down", "--name", name)
        left = leftovers(SESSION_HOME / name)
        assert not left, f"processes of cluster {name} left after down: {left} ({down.stderr})"


def signals_as_a_terminal_gives_them() -> None:
    """For preexec_fn: no signal blocked or ignored that a shell in a terminal leaves alone. A suite started
    in the background ignores SIGINT, and a harness may block SIGCHLD; children inherit both, and then
    Ctrl-C does nothing, or tmux never learns that its pane's process exited."""
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    for number in (signal.SIGINT, signal.SIGQUIT, signal.SIGCHLD):
        signal.signal(number, signal.SIG_DFL)


# ---- placement scenarios on one cluster, reshaped between them -------------------------------

def node_objects(count: int, cpu: int = 80, memory: str = "256Gi", prefix: str = "node",
                 labels: dict | None = None, taints: list | None = None) -> list[dict]:
    """Nodes of one shape (the seed's 80 cores / 256 GiB by default), unlabelled but for `labels`."""
    from tfjobgen.cluster import shape
    from tfjobgen.inputs import quantity
    from tfjobgen.inputs.profile import NodeShape

    group = shape.NodeGroup(prefix, count, NodeShape(quantity.parse(cpu), quantity.parse(memory)), labels or {},
                            tuple(taints or ()), {})
    return shape.node_objects([group])


# How long emptying the cluster may take before the pods left are forced out. Normally every pod is
# gone in about 6 s. In CI, pods bound to a node KWOK was ignoring stayed for minutes: a node made
# again under an old name, before the old node's lease was gone (reshape now waits for that). The
# warning reshape gives records what state any pod left was in.
EMPTY_GRACE = 45


def reshape(cluster: LocalCluster, nodes: list[dict]) -> None:
    """Empty the cluster (every namespace a test made, every pod gone) and give it exactly `nodes`,
    each Ready and running its pods (KWOK holding its lease).

    Emptying is the scenario's setup, not what it checks: pods still there after EMPTY_GRACE seconds
    are forced out, as `kubectl delete --force --grace-period=0` does, and a warning names them in
    pytest's summary with the state they were stuck in.
    """
    objects = cluster.objects
    for namespace in objects.list("v1", "Namespace"):
        name = namespace["metadata"]["name"]
        if not name.startswith("kube-") and name != "default":
            objects.delete("v1", "Namespace", name)
    left: list[dict] = []

    def no_pod_left() -> bool:
        left[:] = _release_orphans(objects)
        return not left

    try:
        cluster.wait(no_pod_left, "every pod gone", timeout=EMPTY_GRACE)
    except TimeoutError:
        warnings.warn(f"cluster {cluster.name}: {len(left)} pod(s) not gone {EMPTY_GRACE} s after their "
                      f"namespace was deleted, forced out: {'; '.join(map(_pod_summary, left))}; "
                      f"{_namespaces_summary(objects)}")
        cluster.wait(lambda: not _force_out(objects), "every pod forced out", timeout=60)
    try:
        cluster.wait(lambda: len(objects.list("v1", "Namespace")) <= 4, "namespaces gone", timeout=120)
    except TimeoutError as err:
        raise TimeoutError(f"{err}: {_namespaces_summary(objects)}") from None
    removed = {n["metadata"]["name"] for n in objects.list("v1", "Node")}
    for name in sorted(removed):
        objects.delete("v1", "Node", name)
    # A node's lease is owned by the node. If a new node of the same name came before the garbage
    # collector removed the old node's lease, KWOK would renew that lease, lose it to the collector,
    # and ignore the new node's pods until it made a lease again (seen in CI: a pod never started).
    cluster.wait(lambda: not removed & {lease["metadata"]["name"] for lease in node_leases(objects)},
                 "the removed nodes' leases gone", timeout=60)
    for node in nodes:
        objects.create(node)
    names = {n["metadata"]["name"] for n in nodes}
    cluster.wait(lambda: names == _held_ready_nodes(objects), "nodes Ready, each holding its own lease")


def node_leases(objects) -> list[dict]:
    """The nodes' leases (KWOK holds one per node it runs, as a kubelet does)."""
    return objects.list("coordination.k8s.io/v1", "Lease", "kube-node-lease")


def _held_ready_nodes(objects) -> set[str]:
    """The nodes that are Ready and hold a lease owned by no other node (KWOK sets the owner on a later
    renewal when it did not know the node's UID yet): only then does KWOK start the pods bound to them."""
    owners = {lease["metadata"]["name"]: {o["uid"] for o in lease["metadata"].get("ownerReferences") or []}
              for lease in node_leases(objects) if lease["spec"].get("holderIdentity")}
    return {n["metadata"]["name"] for n in objects.list("v1", "Node")
            if n["metadata"]["name"] in owners and owners[n["metadata"]["name"]] <= {n["metadata"]["uid"]}
            and control.is_ready(n)}


def _pod_summary(pod: dict) -> str:
    meta, status = pod["metadata"], pod.get("status", {})
    return (f"{meta['namespace']}/{meta['name']} phase={status.get('phase')} node={pod['spec'].get('nodeName')} "
            f"deleting={bool(meta.get('deletionTimestamp'))} finalizers={meta.get('finalizers')}")


def _namespaces_summary(objects) -> str:
    """What holds each namespace being deleted (the namespace controller's conditions)."""
    held = []
    for namespace in objects.list("v1", "Namespace"):
        if namespace["metadata"].get("deletionTimestamp"):
            conditions = [f"{c['type']}: {c.get('message', '')}"
                          for c in namespace.get("status", {}).get("conditions", []) if c.get("status") == "True"]
            held.append(f"namespace {namespace['metadata']['name']} {conditions or 'no condition yet'}")
    return "; ".join(held) or "no namespace being deleted"


def _user_pods(objects) -> list[dict]:
    return [p for p in objects.list("v1", "Pod") if not p["metadata"]["namespace"].startswith("kube-")]


def _release_orphans(objects) -> list[dict]:
    """The pods left, after freeing those only the Job controller's finalizer still holds.

    Seen on 1.34.12: when a namespace is deleted under running Jobs, its pods end (Failed) but
    keep batch.kubernetes.io/job-tracking, Pending ones too, and the namespace stays Terminating
    (the class of kubernetes#108645): the Job went before the Job controller counted them.
    Removing the finalizer is what the Job documentation advises; here everything is torn down.
    """
    left = _user_pods(objects)
    for pod in left:
        meta = pod["metadata"]
        ended = pod["status"].get("phase") in ("Failed", "Succeeded") or not pod["spec"].get("nodeName")
        if meta.get("deletionTimestamp") and ended and meta.get("finalizers"):
            _drop_finalizers(objects, pod)
    return left


def _drop_finalizers(objects, pod: dict) -> None:
    meta = pod["metadata"]
    objects.patch("v1", "Pod", meta["name"], {"metadata": {"finalizers": None}}, meta["namespace"])


def _force_out(objects) -> list[dict]:
    """Every pod left loses its finalizers and is deleted at once; the pods that were left."""
    left = _user_pods(objects)
    for pod in left:
        meta = pod["metadata"]
        if meta.get("finalizers"):
            _drop_finalizers(objects, pod)
        objects.delete("v1", "Pod", meta["name"], meta["namespace"], grace_period_seconds=0)
    return left


def place_objects(cluster: LocalCluster, objects: list[dict], seed: int | None = 0) -> list[dict]:
    """Create `objects` (shuffled by `seed`; None: as listed) and return the live pods once the scheduler settles."""
    import random

    from tfjobgen import backends
    from tfjobgen.concerns import promises

    namespaces = sorted({o["metadata"]["namespace"] for o in objects if o["metadata"].get("namespace")})
    for namespace in namespaces:
        cluster.restricted_namespace(namespace)
    order = list(objects)
    if seed is not None:
        random.Random(seed).shuffle(order)
    for obj in order:
        if cluster.objects.has_kind(obj["apiVersion"], obj["kind"]):
            cluster.objects.apply(obj)  # idempotent: scenarios create a job's Service again with its next role
    expected = {job.key: len(job.pods) for job in backends.decode(objects)}
    return promises.live(place.settle(cluster.objects, namespaces, expected, {}))


def layout(pods: list[dict]) -> dict[str, list[tuple[str, int]]]:
    """node -> sorted (role, index) of the pods bound there."""
    from tfjobgen.concerns import promises

    found: dict[str, list] = {}
    for pod in pods:
        task = promises.task_of(pod)
        if task.node:
            found.setdefault(task.node, []).append((task.role, task.index))
    return {node: sorted(tasks) for node, tasks in sorted(found.items())}


def pending(pods: list[dict]) -> list[tuple[str, int]]:
    from tfjobgen.concerns import promises

    return sorted((t.role, t.index) for t in map(promises.task_of, pods) if not t.node)
