"""Gang admission on the real gang schedulers: Volcano, the coscheduling plugin, Kueue and kube-scheduler's own
(Kubernetes 1.37's GangScheduling plugin, on a cluster started with --kubernetes 1.37).

One cluster per gang scheduler (tests/cluster/profiles/gang-*.yaml), shared by this module's tests:
NODES servers with 8 CPUs for pods each, two 3-CPU pods per server. A "whole-cluster" job has a PS
and 2*NODES-1 workers of 3 CPUs: it fits only on an empty cluster. A blocker takes 5 CPUs on every
server (one slot of two), so half of such a job would fit, and the default scheduler would place
that half. What is asserted is what each gang scheduler promises:
- no pod of a job that does not fit whole is bound (Volcano, Coscheduling), or the JobSet stays
  suspended with no pod at all (Kueue), and it starts whole once the room is freed;
- two such jobs applied together: one runs whole, the other waits with nothing bound, and runs
  whole once the first is gone (no deadlock holding halves);
- Coscheduling's scheduleTimeoutSeconds: a group missing one pod of eleven holds its places until the
  timeout, measured against the profile's 10 s;
- Kueue is topology-aware here (spec.gang.topologyAware): a job whose pods fit the ClusterQueue's quota
  but not the servers is not admitted, where Kueue by quota alone admits it and half of it holds its
  servers; and TAS pins pods without their affinity rules (why validation refuses isolated under it).
"""

from __future__ import annotations

import itertools
import tempfile
import time
from pathlib import Path

import cluster_support
import conftest
import pytest
import yaml
from cluster_support import LocalCluster, local_cluster, need_cluster_tools
from conftest import REPO, need, problems_of

from tfjobgen.artifacts import programs
from tfjobgen.expand import emit, pipeline
from tfjobgen.inputs import profile as profiles
from tfjobgen.inputs.profile import WORKLOAD_API_SINCE

PROFILES = REPO / "tests" / "cluster" / "profiles"
NODES = 5
GANG_PROGRAMS = {"volcano": ["vc-scheduler"], "scheduler-plugins": ["coscheduler", "coscheduling-controller"],
                 "kueue": ["kueue"], "kubernetes": []}
SCHEDULERS = sorted(GANG_PROGRAMS)
HOLD_SECONDS = 8  # how long a job that does not fit is watched for a bound pod
_names = itertools.count()


@pytest.fixture(scope="module", params=SCHEDULERS)
def gang(request):
    """(scheduler, cluster): a cluster of the gang profile, for every test of this module in turn."""
    need_cluster_tools(*GANG_PROGRAMS[request.param])
    extra = []
    if request.param == "kubernetes":  # a release with the Workload API: the run's own, or the first that has it
        if cluster_support.RELEASE and profiles.release(cluster_support.RELEASE) < profiles.release(WORKLOAD_API_SINCE):
            pytest.skip(f"Kubernetes {cluster_support.RELEASE} has no gang scheduling of its own "
                        f"(from {WORKLOAD_API_SINCE} on)")
        if not cluster_support.RELEASE:
            family = programs.family_of("kube-apiserver", WORKLOAD_API_SINCE)
            need(f"Kubernetes {WORKLOAD_API_SINCE}", "built" if family.is_built() else None,
                 f"{family.name} not built: run `make cluster-tools`")
            extra = ["--kubernetes", WORKLOAD_API_SINCE]
    with local_cluster(PROFILES / f"gang-{request.param}.yaml", NODES, *extra) as cluster:
        too_old = [line for line in cluster.up_stderr.splitlines()
                   if f"{request.param} left out:" in line and " needs Kubernetes " in line]
        if too_old:  # a controller release that does not run on this Kubernetes release (version skew)
            pytest.skip(too_old[0].split(": ", 1)[1])
        started = request.param == "kubernetes" or f"{request.param} started" in cluster.up_stderr
        assert started and not cluster.state()["missing"], cluster.up_stderr
        yield request.param, cluster


def intent(name: str, namespace: str, backend: str, ps: tuple[int, int] = (1, 3),
           workers: tuple[int, int] = (2 * NODES - 1, 3)) -> str:
    """A TrainingJob of (replicas, cpus) PS and workers, 1 GiB each, no placement rules of its own."""
    return yaml.safe_dump({
        "apiVersion": "tfjobgen.dev/v1alpha1", "kind": "TrainingJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"image": "registry.example.com/ml/wide-deep:1.4", "api": "tf1", "backend": backend,
                 "roles": {"ps": {"replicas": ps[0], "cpu": ps[1], "memory": "1Gi"},
                           "worker": {"replicas": workers[0], "cpu": workers[1], "memory": "1Gi"}},
                 "topology": {"mode": "none"}}})


# ---- which gang scheduler each test runs on, as tfjobgen itself says -----------------------------------
#
# The cases are only those a scheduler's profile can run: tfjobgen's validation and rendering of a small job
# under each gang profile decide, not a list here, so no case exists only to be skipped.

_SOURCES = Path(tempfile.mkdtemp(prefix="tfjobgen-gang-cases-"))


def _profile(scheduler: str):
    return pipeline.load_profile(str(PROFILES / f"gang-{scheduler}.yaml"))


def _gangs_whole(scheduler: str, backend: str) -> bool:
    """Validation has no word against the backend under the scheduler's profile (Kueue warns on native:
    it admits each batch/v1 Job on its own, so the job is no gang there)."""
    return not [p for p in problems_of(intent("whole", "fit", backend), _SOURCES, PROFILES / f"gang-{scheduler}.yaml",
                                       f"{scheduler}-{backend}.yaml") if p.field == "spec.backend"]


def _pod_group_spec(scheduler: str) -> dict:
    """spec of the PodGroup a native job gets under the scheduler's profile ({} when it gets none)."""
    path = _SOURCES / f"{scheduler}-native.yaml"
    path.write_text(intent("whole", "fit", "native"))
    groups = [o for o in conftest.render(path, profile=PROFILES / f"gang-{scheduler}.yaml") if o["kind"] == "PodGroup"]
    return groups[0]["spec"] if groups else {}


PAIRS = [pytest.param(s, b, id=f"{s}-{b}") for s in SCHEDULERS for b in ("native", "jobset") if _gangs_whole(s, b)]
# scheduleTimeoutSeconds on the job's PodGroup: the coscheduling plugin's Permit timeout.
PERMIT_TIMEOUT = [s for s in SCHEDULERS if "scheduleTimeoutSeconds" in _pod_group_spec(s)]
# spec.gang.colocatedGroups scheduler: the scheduler keeps a colocated group on one server (validation allows it
# only where that holds).
GROUPS_BY_SCHEDULER = [s for s in SCHEDULERS if _profile(s).gang.colocated_groups == "scheduler"]
# kube-scheduler's own gang: the job's PodGroups are the Workload API's, whose minCount a test can split by role.
WORKLOAD_API = [s for s in SCHEDULERS if "schedulingPolicy" in _pod_group_spec(s)]
TOPOLOGY_AWARE = [s for s in SCHEDULERS if _profile(s).gang.topology_aware]  # Kueue's TAS


def render(scheduler: str, text: str, tmp_path, profile=None) -> str:
    """The objects `tfjobgen render` writes for the job, rendered in-process (the CLI's own process is
    test_errors.py's)."""
    source = tmp_path / f"job-{next(_names)}.yaml"
    source.write_text(text)
    return emit.to_yaml(conftest.render(source, profile=profile or PROFILES / f"gang-{scheduler}.yaml"))


def job_pods(cluster: LocalCluster, namespace: str, job: str) -> list[dict]:
    return cluster.pods(namespace, f"tfjobgen.dev/job={job}")


def bound(pods: list[dict]) -> int:
    return sum(bool(p["spec"].get("nodeName")) for p in pods)


def running(cluster: LocalCluster, namespace: str, job: str, tasks: int) -> bool:
    pods = job_pods(cluster, namespace, job)
    return len(pods) == tasks and all((p.get("status") or {}).get("phase") == "Running" for p in pods)


def block(cluster: LocalCluster, scheduler: str, namespace: str, cpus: dict[int, int]) -> str:
    """Pods that take `cpus[i]` CPUs on node i: a Job, queued with Kueue when the cluster queues."""
    name = f"blocker-{next(_names)}"
    labels = {"kueue.x-k8s.io/queue-name": "training"} if scheduler == "kueue" else {}
    pods = [{"name": f"node-{node:03d}", "cpu": str(cpu)} for node, cpu in sorted(cpus.items())]
    for index, pod in enumerate(pods):  # one Job per node: each pins its pod there
        cluster.objects.create({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": f"{name}-{index}", "namespace": namespace, "labels": {**labels, "blocker": name}},
            "spec": {"template": {"metadata": {"labels": {"blocker": name}}, "spec": {
                "restartPolicy": "Never", "nodeSelector": {"kubernetes.io/hostname": pod["name"]},
                "containers": [{"name": "hold", "image": "registry.example.com/pause:3.10",
                                "resources": {"requests": {"cpu": pod["cpu"], "memory": "1Gi"}}}]}}}})
    cluster.wait(lambda: running_count(cluster, namespace, f"blocker={name}") == len(pods), f"blocker {name} Running")
    return name


def running_count(cluster: LocalCluster, namespace: str, selector: str) -> int:
    return sum((p.get("status") or {}).get("phase") == "Running" for p in cluster.pods(namespace, selector))


def unblock(cluster: LocalCluster, namespace: str, name: str) -> None:
    cluster.kubectl("delete", "jobs", "-n", namespace, "-l", f"blocker={name}", "--wait=false")


def stays_unbound(cluster: LocalCluster, scheduler: str, namespace: str, job: str, tasks: int,
                  seconds: float = HOLD_SECONDS) -> None:
    """For `seconds`, no pod of the job is bound; and the gang scheduler has seen the job and said why."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pods = job_pods(cluster, namespace, job)
        assert bound(pods) == 0, f"{job}: {bound(pods)} of {tasks} pods bound while the job does not fit whole"
        time.sleep(0.5)
    if scheduler == "kueue":
        jobset = cluster.objects.get("jobset.x-k8s.io/v1alpha2", "JobSet", job, namespace)
        assert jobset["spec"]["suspend"] is True and job_pods(cluster, namespace, job) == []
        workloads = cluster.objects.list("kueue.x-k8s.io/v1beta2", "Workload", namespace)
        mine = [w for w in workloads if w["metadata"]["ownerReferences"][0]["name"] == job]
        assert mine and not admitted(mine[0]), mine
        return
    pods = job_pods(cluster, namespace, job)
    assert len(pods) == tasks, f"every pod exists, none bound: {len(pods)} of {tasks}"
    reasons = {c.get("reason") for p in pods for c in (p.get("status") or {}).get("conditions") or []
               if c["type"] == "PodScheduled"}
    assert reasons == {"Unschedulable"}, f"{job}: the gang scheduler tried and refused each pod: {reasons}"


def admitted(workload: dict) -> bool:
    return any(c["type"] == "Admitted" and c["status"] == "True"
               for c in (workload.get("status") or {}).get("conditions") or [])


def release(cluster: LocalCluster, namespace: str) -> None:
    """Delete the namespace's jobs and wait until nothing in it holds room (pods ended, quota given back);
    then the namespace, whose deletion (graceful pod deletion, finalizers) no later test waits for."""
    cluster.kubectl("delete", "-n", namespace, "jobsets.jobset.x-k8s.io,jobs.batch", "--all", "--wait=false")

    def holds_nothing() -> bool:
        live = [p for p in cluster.pods(namespace) if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
        quota = [w for w in _workloads(cluster, namespace) if admitted(w)]
        return not live and not quota

    cluster.wait(holds_nothing, f"namespace {namespace} holding no room", timeout=90)
    cluster.kubectl("delete", "namespace", namespace, "--wait=false")


def _workloads(cluster: LocalCluster, namespace: str) -> list[dict]:
    if "kueue" not in cluster.state()["components"]:
        return []
    return cluster.objects.list("kueue.x-k8s.io/v1beta2", "Workload", namespace)


@pytest.mark.parametrize("gang, backend", PAIRS, indirect=["gang"])
def test_a_job_that_does_not_fit_whole_binds_nothing_and_starts_whole_once_room_is_freed(gang, backend, tmp_path):
    scheduler, cluster = gang
    namespace = f"fit-{backend}"
    cluster.namespace(namespace)
    blocker = block(cluster, scheduler, namespace, {n: 5 for n in range(NODES)})
    tasks = 2 * NODES
    cluster.apply(render(scheduler, intent("whole", namespace, backend), tmp_path))
    stays_unbound(cluster, scheduler, namespace, "whole", tasks)
    freed = time.monotonic()
    unblock(cluster, namespace, blocker)
    cluster.wait(lambda: running(cluster, namespace, "whole", tasks), "the job Running whole", timeout=90)
    print(f"{scheduler} {backend}: whole job Running {time.monotonic() - freed:.1f}s after its room was freed")
    nodes = [p["spec"]["nodeName"] for p in job_pods(cluster, namespace, "whole")]
    assert sorted(nodes) == sorted(f"node-{n:03d}" for n in range(NODES) for _ in range(2))
    release(cluster, namespace)


@pytest.mark.parametrize("gang, backend", PAIRS, indirect=["gang"])
def test_two_jobs_that_fit_one_at_a_time_never_deadlock(gang, backend, tmp_path):
    scheduler, cluster = gang
    namespace = f"two-{backend}"
    cluster.namespace(namespace)
    tasks = 2 * NODES
    both = render(scheduler, intent("first", namespace, backend), tmp_path) + "---\n" + \
        render(scheduler, intent("second", namespace, backend), tmp_path)
    cluster.apply(both)  # one request: the schedulers meet the two jobs' pods interleaved

    def one_whole():
        whole = [j for j in ("first", "second") if running(cluster, namespace, j, tasks)]
        return whole[0] if whole else None

    winner = cluster.wait(one_whole, "one of the two jobs Running whole", timeout=60)
    loser = "second" if winner == "first" else "first"
    stays_unbound(cluster, scheduler, namespace, loser, tasks)
    assert running(cluster, namespace, winner, tasks), "the job that runs keeps running"
    cluster.kubectl("delete", "--wait=false", "-n", namespace, "-f", "-", stdin=render(scheduler, intent(winner, namespace, backend),
                                                                             tmp_path), timeout=60)
    cluster.wait(lambda: running(cluster, namespace, loser, tasks), "the other job Running whole once the first is gone",
                 timeout=90)
    release(cluster, namespace)


@pytest.mark.parametrize("gang", PERMIT_TIMEOUT, indirect=True)
def test_coscheduling_holds_a_group_missing_one_pod_for_schedule_timeout_seconds(gang, tmp_path):
    """Eleven pods, the one worker too big for any server: the ten PS (tried first: the plugin sorts a
    group's pods by name) wait at Permit holding their places, since one missing pod of eleven is under
    the plugin's 10% reject threshold, until the PodGroup's scheduleTimeoutSeconds (10 s in the profile)
    gives them back; a 6-pod job that needs those places waits as long, then runs."""
    scheduler, cluster = gang
    timeout = _profile(scheduler).gang.schedule_timeout_seconds
    namespace = "held"
    cluster.namespace(namespace)
    block(cluster, scheduler, namespace, {n: 5 for n in range(NODES)})  # 3 CPUs free per server, 15 in all
    # 10 + 4 = 14 CPUs: the group's minResources fit the cluster's free 15, but the worker fits no server.
    cluster.apply(render(scheduler, intent("stuck", namespace, "native", ps=(10, 1), workers=(1, 4)), tmp_path))
    cluster.wait(lambda: bound(job_pods(cluster, namespace, "stuck")) == 0 and _waiting(cluster, namespace),
                 "the worker refused while the PS wait", timeout=30)
    applied = time.monotonic()
    cluster.apply(render(scheduler, intent("behind", namespace, "native", ps=(1, 1), workers=(5, 1)), tmp_path))
    cluster.wait(lambda: running(cluster, namespace, "behind", 6), "the 6-pod job Running", timeout=3 * timeout + 30)
    waited = time.monotonic() - applied
    timed_out = [e for e in _events(cluster, namespace, None, "FailedScheduling")
                 if "rejected due to timeout" in e["message"]]
    print(f"coscheduling: a 6-pod job waited {waited:.1f}s behind a group holding 10 places "
          f"(scheduleTimeoutSeconds {timeout}); {len(timed_out)} Permit timeouts, e.g. "
          f"{timed_out[0]['message'] if timed_out else '-'}")
    assert timed_out, "the waiting PS were given back by the Permit timeout"
    assert waited >= timeout * 0.5, f"the held places were free after {waited:.1f}s, before the {timeout} s timeout"
    assert bound(job_pods(cluster, namespace, "stuck")) == 0, "the stuck group never binds part of itself"
    release(cluster, namespace)


@pytest.mark.parametrize("gang", GROUPS_BY_SCHEDULER, indirect=True)
def test_the_gang_scheduler_keeps_each_colocated_group_on_one_server_where_its_pods_would_fit_apart(gang, tmp_path):
    """Two groups of a PS and 3 workers (1 CPU each, 4 per group): three servers have 3 CPUs free, where
    every pod fits on its own but no group does, and two are empty. Volcano's task-topology, or
    Kubernetes' PodGroup per group held to one hostname, puts each group whole on an empty server
    (colocatedGroups: scheduler): no pod affinity rule but, on Kubernetes, each PS's anti-affinity to
    the other groups."""
    scheduler, cluster = gang
    namespace = "groups"
    cluster.namespace(namespace)
    block(cluster, scheduler, namespace, {0: 5, 1: 5, 2: 5})
    job = yaml.safe_load(intent("grouped", namespace, "native", ps=(2, 1), workers=(6, 1)))
    job["spec"]["topology"] = {"mode": "colocated", "workersPerServer": 3}
    cluster.apply(render(scheduler, yaml.safe_dump(job), tmp_path))
    cluster.wait(lambda: running(cluster, namespace, "grouped", 8), "the colocated job Running", timeout=60)
    servers: dict[str, set[str]] = {}
    for pod in job_pods(cluster, namespace, "grouped"):
        rules = pod["spec"].get("affinity") or {}
        apart = scheduler == "kubernetes" and pod["metadata"]["labels"]["tfjobgen.dev/role"] == "ps"
        assert set(rules) == ({"podAntiAffinity"} if apart else set()), f"placed by the scheduler's groups: {rules}"
        servers.setdefault(pod["metadata"]["labels"]["tfjobgen.dev/group"], set()).add(pod["spec"]["nodeName"])
    assert sorted(len(nodes) for nodes in servers.values()) == [1, 1], f"each group on one server: {servers}"
    assert servers["0"] != servers["1"] and servers["0"] | servers["1"] <= {"node-003", "node-004"}, servers
    release(cluster, namespace)


@pytest.mark.parametrize("gang", WORKLOAD_API, indirect=True)
def test_kubernetes_gangs_the_whole_job_where_a_gang_per_role_lets_the_ps_through(gang, tmp_path):
    """Why tfjobgen writes one PodGroup per job rather than letting the Job controller make one per Job
    (1.37's WorkloadWithJob: a gang per role). The same job with a PodGroup per role, room for half of it:
    the PS's gang of one is placed at once and holds its server while the workers' gang waits; with
    tfjobgen's PodGroup nothing is bound."""
    scheduler, cluster = gang
    namespace = "per-role"
    cluster.namespace(namespace)
    block(cluster, scheduler, namespace, {n: 5 for n in range(NODES)})  # 3 CPUs free per server: 5 of 10 pods
    objects = [o for o in yaml.safe_load_all(render(scheduler, intent("roles", namespace, "native"), tmp_path)) if o]
    for obj in objects:
        if obj["kind"] == "PodGroup":  # one gang of every task becomes one per role
            roles = [o for o in objects if o["kind"] == "Job"]
            obj["metadata"]["name"] = "roles-ps"
            obj["spec"]["schedulingPolicy"]["gang"]["minCount"] = roles[0]["spec"]["completions"]
        if obj["kind"] == "Job":
            group = f"roles-{obj['metadata']['labels']['tfjobgen.dev/role']}"
            obj["spec"]["template"]["spec"]["schedulingGroup"]["podGroupName"] = group
    worker_group = {**next(o for o in objects if o["kind"] == "PodGroup"), "metadata": {
        "name": "roles-worker", "namespace": namespace}, "spec": {"schedulingPolicy": {"gang": {"minCount": 2 * NODES - 1}}}}
    assert [o["metadata"]["labels"]["tfjobgen.dev/role"] for o in objects if o["kind"] == "Job"] == ["ps", "worker"]
    cluster.apply(yaml.safe_dump_all([*objects, worker_group]))
    cluster.wait(lambda: running_count(cluster, namespace, "tfjobgen.dev/job=roles,tfjobgen.dev/role=ps") == 1,
                 "the PS's gang of one Running", timeout=60)
    time.sleep(HOLD_SECONDS)
    workers = cluster.pods(namespace, "tfjobgen.dev/job=roles,tfjobgen.dev/role=worker")
    assert len(workers) == 2 * NODES - 1 and bound(workers) == 0, f"{bound(workers)} workers bound"
    ps = cluster.pods(namespace, "tfjobgen.dev/job=roles,tfjobgen.dev/role=ps")[0]
    print(f"kubernetes, a gang per role: the PS Running on {ps['spec']['nodeName']} while its {len(workers)} workers "
          "wait; the job cannot start")
    release(cluster, namespace)


# ---- Kueue's topology-aware scheduling (the profile's spec.gang.topologyAware) ------------------------

KUEUE_API = "kueue.x-k8s.io/v1beta2"
QUOTA_ONLY = "quota-only"  # a ClusterQueue of a flavor with no Topology: Kueue as it admits without TAS


def _quota_only(cluster: LocalCluster, namespace: str, tmp_path) -> Path:
    """A ClusterQueue of the same quota as the cluster's whose flavor has no Topology, a LocalQueue on it in
    `namespace`, and the profile of such a cluster (topologyAware false, that queue)."""
    quota = cluster.objects.get(KUEUE_API, "ClusterQueue", "tfjobgen")["spec"]["resourceGroups"]
    for group in quota:
        for flavor in group["flavors"]:
            flavor["name"] = QUOTA_ONLY
    for obj in ({"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": QUOTA_ONLY}, "spec": {}},
                {"apiVersion": KUEUE_API, "kind": "ClusterQueue", "metadata": {"name": QUOTA_ONLY},
                 "spec": {"namespaceSelector": {}, "resourceGroups": quota}},
                {"apiVersion": KUEUE_API, "kind": "LocalQueue", "metadata": {"name": QUOTA_ONLY, "namespace": namespace},
                 "spec": {"clusterQueue": QUOTA_ONLY}}):
        cluster.wait(lambda obj=obj: cluster.objects.apply(obj), f"{obj['kind']} {QUOTA_ONLY}")
    document = yaml.safe_load((PROFILES / "gang-kueue.yaml").read_text())
    document["spec"]["gang"].update(queue=QUOTA_ONLY, topologyAware=False)
    path = tmp_path / "quota-only.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def _drop_quota_only(cluster: LocalCluster) -> None:
    cluster.kubectl("delete", "--wait=false", "--ignore-not-found", f"clusterqueues.kueue.x-k8s.io/{QUOTA_ONLY}",
                    f"resourceflavors.kueue.x-k8s.io/{QUOTA_ONLY}")


def _workload(cluster: LocalCluster, namespace: str, job: str) -> dict | None:
    mine = [w for w in _workloads(cluster, namespace) if w["metadata"]["ownerReferences"][0]["name"] == job]
    return mine[0] if mine else None


def _condition(obj: dict | None, kind: str) -> dict:
    return next((c for c in ((obj or {}).get("status") or {}).get("conditions") or [] if c["type"] == kind), {})


def _unschedulable(pods: list[dict]) -> list[tuple[dict, str]]:
    """(pod, kube-scheduler's message) of each pod it tried and refused."""
    return [(p, c.get("message", "")) for p in pods for c in (p.get("status") or {}).get("conditions") or []
            if c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable"]


def _add_server(cluster: LocalCluster, name: str) -> None:
    """One more server shaped as node-000 (KWOK keeps it Ready)."""
    like = cluster.objects.get("v1", "Node", "node-000")
    cluster.objects.create({"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": name, "annotations": like["metadata"]["annotations"],
        "labels": {**like["metadata"]["labels"], "kubernetes.io/hostname": name}},
        "spec": {}, "status": {k: like["status"][k] for k in ("allocatable", "capacity")}})


@pytest.mark.parametrize("gang", TOPOLOGY_AWARE, indirect=True)
def test_kueue_admits_a_job_once_its_pods_fit_the_servers_not_merely_the_quota(gang, tmp_path):
    """A PS of 1 CPU and 2*NODES+1 workers of 3 CPUs: 34 CPUs, within the ClusterQueue's 40, but a server holds
    two such workers (8 CPUs), so only 2*NODES fit. Through a ClusterQueue by quota alone (a flavor without a
    Topology) the job is admitted and all but one pod bound: half a job holds its servers. Topology-aware: not
    admitted, nothing created ("allows to fit only 10 out of 11"); a sixth server joins, and it runs whole."""
    scheduler, cluster = gang
    workers, tasks = 2 * NODES + 1, 2 * NODES + 2
    text = intent("servers", "quota", "jobset", ps=(1, 1), workers=(workers, 3))
    cluster.namespace("quota")
    profile = _quota_only(cluster, "quota", tmp_path)
    try:
        cluster.apply(render(scheduler, text, tmp_path, profile))

        def half_placed() -> bool:
            pods = job_pods(cluster, "quota", "servers")
            return (_condition(_workload(cluster, "quota", "servers"), "Admitted").get("status") == "True"
                    and len(pods) == tasks and bound(pods) == tasks - 1 and len(_unschedulable(pods)) == 1)

        cluster.wait(half_placed, "admitted by quota, every pod but one bound", timeout=60)
        time.sleep(HOLD_SECONDS)
        pods = job_pods(cluster, "quota", "servers")
        assert bound(pods) == tasks - 1, "the half-placed job keeps what it holds"
        print(f"kueue by quota: admitted, {bound(pods)} of {tasks} pods bound, 1 Pending: "
              f"{_unschedulable(pods)[0][1][:80]}")
        release(cluster, "quota")
    finally:
        _drop_quota_only(cluster)

    namespace, server = "servers", f"node-{NODES:03d}"
    cluster.namespace(namespace)
    cluster.apply(render(scheduler, text.replace("namespace: quota", f"namespace: {namespace}"), tmp_path))
    try:
        stays_unbound(cluster, scheduler, namespace, "servers", tasks)
        why = _condition(_workload(cluster, namespace, "servers"), "QuotaReserved").get("message", "")
        assert f"allows to fit only {2 * NODES} out of {workers} pod(s)" in why, why
        joined = time.monotonic()
        _add_server(cluster, server)
        cluster.wait(lambda: running(cluster, namespace, "servers", tasks), "the job Running whole", timeout=60)
        print(f"kueue topology-aware: not admitted ({why}); Running whole {time.monotonic() - joined:.1f}s after "
              f"a server joined")
        assert server in {p["spec"]["nodeName"] for p in job_pods(cluster, namespace, "servers")}
        release(cluster, namespace)
    finally:
        cluster.kubectl("delete", "node", server, "--ignore-not-found")


def _annotated(text: str) -> str:
    """A rendered JobSet with every PodSet annotated as under spec.gang.topologyAware (which refuses isolated)."""
    from tfjobgen.concerns import gang as gangs

    documents = [d for d in yaml.safe_load_all(text) if d]
    for document in documents:
        for replicated in document["spec"].get("replicatedJobs", []) if document["kind"] == "JobSet" else []:
            meta = replicated["template"]["spec"]["template"].setdefault("metadata", {})
            meta.setdefault("annotations", {})[gangs.KUEUE_UNCONSTRAINED_TOPOLOGY] = "true"
    return yaml.safe_dump_all(documents)


@pytest.mark.parametrize("gang", TOPOLOGY_AWARE, indirect=True)
def test_kueue_topology_aware_scheduling_pins_pods_without_their_affinity_rules(gang, tmp_path):
    """Why validation warns on spread and refuses isolated under spec.gang.topologyAware. TAS picks each pod's
    server by free room and pins it there (nodeSelector kubernetes.io/hostname); pod affinity is kube-scheduler's,
    after. spread, 3 PS of 2 CPUs: Running, its PS sharing servers (kube-scheduler alone spreads them). isolated,
    2 PS: admitted, a PS Pending for good on the server TAS pinned it to, beside the other."""
    scheduler, cluster = gang
    namespace = "pinned"
    cluster.namespace(namespace)
    spread = yaml.safe_load(intent("spread", namespace, "jobset", ps=(3, 2), workers=(6, 1)))
    spread["spec"]["topology"] = {"mode": "spread"}
    cluster.apply(render(scheduler, yaml.safe_dump(spread), tmp_path))
    cluster.wait(lambda: running(cluster, namespace, "spread", 9), "the spread job Running", timeout=60)
    ps_nodes = [p["spec"]["nodeName"] for p in cluster.pods(namespace, "tfjobgen.dev/job=spread,tfjobgen.dev/role=ps")]
    print(f"kueue topology-aware, spread: PS on {sorted(ps_nodes)}")
    assert len(set(ps_nodes)) < len(ps_nodes), f"TAS packs PS, preferred anti-affinity or not: {ps_nodes}"

    isolated = yaml.safe_load(intent("isolated", namespace, "jobset", ps=(2, 2), workers=(4, 2)))
    isolated["spec"]["topology"] = {"mode": "isolated"}
    # Refused under topologyAware: rendered for Kueue by quota, then annotated as topologyAware would.
    document = yaml.safe_load((PROFILES / "gang-kueue.yaml").read_text())
    document["spec"]["gang"]["topologyAware"] = False
    (tmp_path / "by-quota.yaml").write_text(yaml.safe_dump(document))
    cluster.apply(_annotated(render(scheduler, yaml.safe_dump(isolated), tmp_path, tmp_path / "by-quota.yaml")))

    def pinned_against_its_rules() -> list[tuple[dict, str]]:
        pods = job_pods(cluster, namespace, "isolated")
        return [(p, why) for p, why in _unschedulable(pods) if "anti-affinity" in why
                and p["spec"].get("nodeSelector", {}).get("kubernetes.io/hostname")]

    stuck = cluster.wait(pinned_against_its_rules, "a pod pinned where its anti-affinity forbids it", timeout=60)
    assert _condition(_workload(cluster, namespace, "isolated"), "Admitted").get("status") == "True"
    time.sleep(HOLD_SECONDS)
    assert not running(cluster, namespace, "isolated", 6), "a pinned pod never moves"
    layout = sorted((p["metadata"]["labels"]["tfjobgen.dev/role"], p["spec"].get("nodeName") or
                     f"pinned to {p['spec']['nodeSelector']['kubernetes.io/hostname']}, Pending")
                    for p in job_pods(cluster, namespace, "isolated"))
    print(f"kueue topology-aware, isolated: admitted, {layout}; {stuck[0][1][:90]}")
    release(cluster, namespace)


def _waiting(cluster: LocalCluster, namespace: str) -> bool:
    """The big worker has been refused with all ten PS waiting at Permit.

    Any refusal is not enough: a worker tried while fewer PS wait (one still in its back-off after
    an early try that found the group incomplete) makes the plugin's PostFilter reject the group
    ("PodGroup ... gets rejected"), and the places are free again. Only a refusal for CPU alone
    says the ten places are held, as they will be until the Permit timeout.
    """
    workers = cluster.pods(namespace, "tfjobgen.dev/job=stuck,tfjobgen.dev/role=worker")
    return any("Insufficient cpu" in e["message"] and "gets rejected" not in e["message"]
               for p in workers for e in _events(cluster, namespace, p["metadata"]["name"], "FailedScheduling"))


def _events(cluster: LocalCluster, namespace: str, pod: str | None, reason: str) -> list[dict]:
    events = cluster.objects.list("v1", "Event", namespace)
    return [e for e in events if e.get("reason") == reason
            and (pod is None or e["involvedObject"]["name"] == pod)]


def test_a_gang_scheduler_that_is_not_built_is_named_and_the_rest_of_the_cluster_runs(tmp_path):
    """A tools cache with the control plane and JobSet but no Volcano: `cluster up` says what is left out."""
    need_cluster_tools()
    from tfjobgen.artifacts import programs

    cache = tmp_path / "tools"
    cache.mkdir()
    for family in programs.families():
        if family.name != "volcano" and family.is_built():
            (cache / family.installed_in.name).symlink_to(family.installed_in)
    with local_cluster(PROFILES / "gang-volcano.yaml", 1, env={"TFJOBGEN_TOOLS_CACHE": str(cache)}) as cluster:
        assert "volcano left out: vc-scheduler not built (make cluster-tools)" in cluster.up_stderr
        assert cluster.state()["missing"] == ["volcano"]
        assert {"jobset", "training-operator"} <= set(cluster.state()["components"])
        # The operator watches Volcano's PodGroups when told to gang with it: without Volcano it runs without.
        assert "training-operator runs without gang scheduling: volcano is not running" in cluster.up_stderr


def test_every_gang_scheduler_keeps_its_cases():
    """The cases come from what tfjobgen says of each profile: a change there that left a scheduler, or one of
    the single-scheduler tests, without a case would otherwise shrink the tier unseen."""
    assert sorted({case.values[0] for case in PAIRS}) == SCHEDULERS
    assert {case.values[1] for case in PAIRS} == {"native", "jobset"}
    assert PERMIT_TIMEOUT and GROUPS_BY_SCHEDULER and WORKLOAD_API and TOPOLOGY_AWARE
