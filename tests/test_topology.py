"""Placement rules, checked by what they do: pods scheduled onto simulated servers.

The seed labelled nodes by hand (SCENCE/CASE/INDEX) to get its layouts; here
servers carry no labels but their hostname, and the layouts must emerge from
the generated rules alone, on the scheduler model of tests/simulation. The
arrival-order, node-loss and shared-cluster studies are in test_placement.py;
this file holds the rules one by one, and the errors and warnings about them.
"""

from __future__ import annotations

import copy

import pytest

from conftest import JOBS, problems_of, render, run_tfjobgen
from simulation import scenarios
from simulation.objects import SimNode, nodes
from simulation.scheduler import Scheduler
from simulation.state import ClusterState
from tfjobgen import labels
from tfjobgen.pods import Pod


def _workload(*paths, profile=None) -> scenarios.Workload:
    return scenarios.Workload.of(render(*paths, profile=profile))


def _place(workload: scenarios.Workload, cluster: list[SimNode], seed: int = 0, pods=None) -> scenarios.Run:
    """Every pod (or `pods`) in a random order on `cluster`."""
    if pods is not None:
        workload = scenarios.Workload(workload.objects, pods, workload.topology, workload.namespaces)
    return scenarios.arrive(workload, cluster, seed)


def _layout(run: scenarios.Run) -> dict[str, list[tuple[str, int]]]:
    """server -> sorted (role, index) of the pods it runs."""
    return {n: sorted((p.role, p.index) for p in pods.values()) for n, pods in run.state.pods_on.items() if pods}


def _groups_intact(run: scenarios.Run) -> bool:
    """True when every server with a PS i runs exactly workers 10i..10i+9 beside it."""
    for placed in _layout(run).values():
        ps = [index for role, index in placed if role == "ps"]
        workers = [index for role, index in placed if role == "worker"]
        if len(ps) != 1 or workers != list(range(10 * ps[0], 10 * ps[0] + 10)):
            return False
    return True


def _job(tmp_path, topology: str, ps: int = 4, name: str = "spread") -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"""apiVersion: tfjobgen.dev/v1alpha1
kind: TrainingJob
metadata: {{name: {name}, namespace: t}}
spec:
  image: x/y:1
  roles:
    ps: {{replicas: {ps}, cpu: 4, memory: 8Gi}}
    worker: {{replicas: 8, cpu: 2, memory: 4Gi}}
    chief: {{cpu: 1, memory: 1Gi}}
  topology: {topology}
""")
    return str(path)


def _profile(tmp_path, spec: str, name: str = "profile") -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"apiVersion: tfjobgen.dev/v1alpha1\nkind: ClusterProfile\nmetadata: {{name: {name}}}\nspec:\n{spec}")
    return str(path)


# ---- colocated ----------------------------------------------------------------------------------

@pytest.mark.parametrize("case, servers", [(1, 1), (2, 5), (3, 10), (4, 20)])
def test_seed_scene1_each_server_runs_one_ps_beside_its_ten_workers(case, servers):
    run = _place(_workload(JOBS / f"scene1-case{case}.yaml"), nodes(servers))  # the seed's server count
    assert run.pending == []
    assert len(_layout(run)) == servers
    assert _groups_intact(run), "PS i must share its server with workers 10i..10i+9, and nothing else"


def test_colocated_layout_fails_without_the_generated_rules():
    """Negative control: strip the affinity and the same check no longer holds (the test can fail)."""
    workload = _workload(JOBS / "scene1-case2.yaml")
    assert _groups_intact(_place(workload, nodes(5)))
    stripped = []
    for pod in workload.pods:
        spec = copy.deepcopy(pod.spec)
        spec.pop("affinity")
        stripped.append(Pod(pod.owner, pod.namespace, pod.hostname, pod.subdomain, pod.labels, pod.annotations,
                            spec, pod.env, pod.unresolved, pod.index))
    run = _place(workload, nodes(5), pods=stripped)
    assert run.pending == [] and not _groups_intact(run)


def test_colocated_pods_carry_their_group():
    """PS g and workers g*k .. g*k+k-1 share the label the rules select on (k = workersPerServer)."""
    for pod in _workload(JOBS / "scene1-case3.yaml").pods:
        group = pod.index if pod.role == "ps" else pod.index // 10
        assert pod.labels[labels.GROUP] == str(group)


def test_colocated_ps_never_share_a_server_even_with_room():
    workload = _workload(JOBS / "scene1-case2.yaml")
    ps = [p for p in workload.pods if p.role == "ps"]
    run = _place(workload, nodes(5, cpu=1000, memory="4Ti"), pods=ps)  # room for all 5 PS on one server
    assert run.pending == [] and all(len(placed) == 1 for placed in _layout(run).values())


def test_a_colocated_ps_keeps_its_server_for_its_group(tmp_path):
    """Once PS g is placed, no pod of another tfjobgen job may join its server (in any namespace)."""
    colocated = _workload(JOBS / "scene1-case1.yaml")
    other = _workload(_job(tmp_path, "{mode: spread}", name="other"))
    state = ClusterState(nodes(1, cpu=1000, memory="16Ti"))
    scheduler = Scheduler(state)
    for pod in (p for p in colocated.pods if p.role == "ps"):
        scheduler.create(pod)
    scheduler.run()
    for pod in other.pods:  # plenty of room, but the PS's rule keeps them off
        scheduler.create(pod)
    scheduler.run()
    assert {p.job for p in state.bound()} == {"scene1-case1"}
    assert len(scheduler.pending) == len(other.pods)


def test_a_colocated_ps_waits_for_a_server_free_of_other_jobs(tmp_path):
    """The other direction: a server that runs another job's pod is no place for a colocated PS."""
    other = _workload(_job(tmp_path, "{mode: none}", ps=1, name="other"))
    colocated = _workload(JOBS / "scene1-case1.yaml")
    state = ClusterState(nodes(1, cpu=1000, memory="16Ti"))
    scheduler = Scheduler(state)
    scheduler.create(other.pods[0])
    scheduler.run()
    ps = scheduler.create(next(p for p in colocated.pods if p.role == "ps"))
    scheduler.run()
    assert ps.node is None and ps.uid in scheduler.pending


# ---- isolated ------------------------------------------------------------------------------------

@pytest.mark.parametrize("case, ps, workers", [(1, 1, 10), (2, 5, 50), (3, 10, 100), (4, 20, 200)])
def test_seed_scene2_ps_and_workers_never_share_a_server(case, ps, workers):
    run = _place(_workload(JOBS / f"scene2-case{case}.yaml"), nodes(ps + workers // 10))  # the seed's servers
    assert run.pending == []
    layout = _layout(run)
    ps_servers = [placed for placed in layout.values() if any(r == "ps" for r, _ in placed)]
    worker_servers = [placed for placed in layout.values() if any(r == "worker" for r, _ in placed)]
    assert len(ps_servers) == ps and all(len(placed) == 1 for placed in ps_servers), "one PS per server, alone"
    assert len(worker_servers) == workers // 10 and all(len(placed) == 10 for placed in worker_servers)


def test_isolated_workers_pack_onto_as_few_servers_as_fit():
    """Workers prefer servers with the job's workers: 50 of them fill 5 servers, leaving the rest whole."""
    workload = _workload(JOBS / "scene2-case2.yaml")
    workers = [p for p in workload.pods if p.role == "worker"]
    for seed in range(5):
        run = _place(workload, nodes(25), seed, pods=workers)
        assert sorted(len(placed) for placed in _layout(run).values()) == [10] * 5


def test_isolated_leaves_pods_pending_rather_than_mixing():
    """With too few servers, isolation holds and the surplus waits (it is a rule, not a wish)."""
    workload = _workload(JOBS / "scene2-case2.yaml")
    ps_first = [p for p in workload.pods if p.role == "ps"] + [p for p in workload.pods if p.role == "worker"]
    state = ClusterState(nodes(5, cpu=1000, memory="4Ti"))  # room for everything, but 5 PS take all 5 servers
    scheduler = Scheduler(state)
    for pod in ps_first:
        scheduler.create(pod)
        scheduler.run()
    assert sorted({p.role for p in scheduler.pending.values()}) == ["worker"] and len(scheduler.pending) == 50
    assert all(len(pods) == 1 for pods in state.pods_on.values())


def test_colocated_ps_and_isolated_workers_set_their_own_spread_constraint():
    """One ScheduleAnyway constraint on the job's PS: it turns off the system default spreading."""
    for job, role in (("scene1-case2", "ps"), ("scene2-case2", "worker")):
        for pod in _workload(JOBS / f"{job}.yaml").pods:
            if pod.role != role:
                assert "topologySpreadConstraints" not in pod.spec
                continue
            [constraint] = pod.spec["topologySpreadConstraints"]
            assert constraint["whenUnsatisfiable"] == "ScheduleAnyway"
            assert constraint["labelSelector"] == {"matchLabels": {labels.JOB: job, labels.ROLE: "ps"}}
    assert all("topologySpreadConstraints" not in p.spec for p in _workload(JOBS / "wide-deep.yaml").pods)


def test_a_replaced_colocated_ps_goes_back_to_its_group():
    """With a spare server, an evicted PS returns to its workers; with the system default spreading it would not."""
    workload = _workload(JOBS / "scene1-case2.yaml")
    defaults = [Pod(p.owner, p.namespace, p.hostname, p.subdomain, p.labels, p.annotations,
                    {k: v for k, v in p.spec.items() if k != "topologySpreadConstraints"}) for p in workload.pods]
    for pods, returns in ((workload.pods, True), (defaults, False)):
        for seed in range(5):
            run = _place(workload, nodes(6), seed, pods=pods)
            scenarios.evict(run, "scene1-case2", "ps", seed)
            assert _groups_intact(run) is returns, f"seed {seed}"


# ---- spread ----------------------------------------------------------------------------------------

def _uneven_cluster():
    """Four servers, three of them half full: a least-allocated scheduler alone would stack on the empty one."""
    cluster = nodes(4, cpu=100, memory="1Ti")
    state = ClusterState(cluster)
    scheduler = Scheduler(state)
    for node in cluster[1:]:
        filler = scheduler.create(Pod("other", "t", f"filler-{node.name}", "", {"app": "other"}, {}, {"containers": [
            {"resources": {"requests": {"cpu": "50", "memory": "512Gi"}}}]}))
        scheduler._queued.pop(filler.uid)
        state.bind(filler, node.name)
    return scheduler


def test_spread_puts_each_ps_on_its_own_server_when_there_are_enough(tmp_path):
    workload = _workload(_job(tmp_path, "{mode: spread}"))
    ps = [p for p in workload.pods if p.role == "ps"]

    def ps_per_server(pods) -> list[int]:
        scheduler = _uneven_cluster()
        for pod in pods:
            scheduler.create(pod)
            scheduler.run()
        return sorted(sum(p.role == "ps" for p in on.values()) for on in scheduler.state.pods_on.values())

    assert ps_per_server(ps) == [1, 1, 1, 1]
    stripped = [Pod(p.owner, p.namespace, p.hostname, p.subdomain, p.labels, p.annotations,
                    {k: v for k, v in p.spec.items() if k != "affinity"}) for p in ps]
    assert ps_per_server(stripped) == [0, 0, 0, 4], "negative control: without the rule all four stack up"


def test_spread_preferred_still_schedules_when_servers_are_scarce_but_required_waits(tmp_path):
    preferred = _workload(_job(tmp_path, "{mode: spread}"))
    ps = [p for p in preferred.pods if p.role == "ps"]
    assert _place(preferred, nodes(2, cpu=1000, memory="4Ti"), pods=ps).pending == []
    required = _workload(_job(tmp_path, "{mode: spread, spread: required}"))
    ps = [p for p in required.pods if p.role == "ps"]
    assert len(_place(required, nodes(2, cpu=1000, memory="4Ti"), pods=ps).pending) == 2


def test_spread_repels_ps_from_ps_not_from_other_roles(tmp_path):
    """The seed's snippet used `NotIn [ps]`, which repels PS from workers; the intent is `In [ps]`."""
    workload = _workload(_job(tmp_path, "{mode: spread, spread: required}", ps=2))
    run = _place(workload, nodes(2, cpu=1000, memory="4Ti"))
    assert run.pending == []
    servers = _layout(run).values()
    assert all(sum(role == "ps" for role, _ in placed) == 1 for placed in servers)
    assert any(sum(role == "worker" for role, _ in placed) > 0 and any(r == "ps" for r, _ in placed)
               for placed in servers), "workers may share a server with a PS under spread"


# ---- node pools and priority ------------------------------------------------------------------------

POOLS = """  nodePools:
    ps-pool: {nodeSelector: {pool: ps}, tolerations: [{key: dedicated, operator: Equal, value: ps, effect: NoSchedule}]}
    worker-pool: {nodeSelector: {pool: workers}}
"""


def _pool_cluster() -> list[SimNode]:
    return (nodes(4, prefix="ps", labels={"pool": "ps"}, taints=[{"key": "dedicated", "value": "ps",
                                                                    "effect": "NoSchedule"}])
            + nodes(4, prefix="wk", labels={"pool": "workers"}) + nodes(2, prefix="any"))


def _servers_by_task(run: scenarios.Run) -> dict[tuple[str, int], str]:
    return {(p.role, p.index): n for n, pods in run.state.pods_on.items() for p in pods.values()}


def test_node_pools_send_each_role_to_its_pool(tmp_path):
    profile = _profile(tmp_path, POOLS)
    workload = _workload(_job(tmp_path, "{mode: isolated, nodePools: {ps: ps-pool, worker: worker-pool}}"),
                         profile=profile)
    where = _servers_by_task(_place(workload, _pool_cluster()))
    assert all(where[("ps", i)].startswith("ps-") for i in range(4))
    assert all(where[("worker", i)].startswith("wk-") for i in range(8))
    assert not where[("chief", 0)].startswith("ps-"), "the chief has no toleration for the PS pool's taint"


def test_isolated_jobs_get_the_profiles_pools_for_roles_they_name_none_for(tmp_path):
    profile = _profile(tmp_path, POOLS + "  isolatedPools: {ps: ps-pool, worker: worker-pool}\n")
    own = _workload(_job(tmp_path, "{mode: isolated, nodePools: {worker: worker-pool}}"), profile=profile)
    where = _servers_by_task(_place(own, _pool_cluster()))
    assert all(where[("ps", i)].startswith("ps-") for i in range(4)), "the profile's PS pool"
    assert all(where[("worker", i)].startswith("wk-") for i in range(8))
    spread = _workload(_job(tmp_path, "{mode: spread}", name="elsewhere"), profile=profile)
    assert all("nodeSelector" not in p.spec for p in spread.pods), "only isolated jobs get the default pools"


def test_the_profile_names_priority_classes_per_role(tmp_path):
    profile = _profile(tmp_path, "  priorityClasses: {ps: tfjobgen-ps, worker: tfjobgen-worker}\n")
    job = tmp_path / "job.yaml"
    job.write_text(open(_job(tmp_path, "{mode: spread}")).read().replace(
        "    chief:", "    evaluator: {cpu: 1, memory: 1Gi}\n    chief:"))
    classes = {p.role: p.spec["priorityClassName"] for p in _workload(job, profile=profile).pods}
    assert classes == {"ps": "tfjobgen-ps", "chief": "tfjobgen-ps", "worker": "tfjobgen-worker",
                       "evaluator": "tfjobgen-worker"}
    assert all("priorityClassName" not in p.spec for p in _workload(_job(tmp_path, "{mode: spread}")).pods)


# ---- errors and warnings ---------------------------------------------------------------------------

def test_a_profile_default_pool_must_exist(tmp_path):
    profile = _profile(tmp_path, POOLS + "  isolatedPools: {ps: ps-highmem}\n")
    proc = run_tfjobgen("render", "--profile", profile, _job(tmp_path, "{mode: isolated}"))
    assert proc.returncode == 1 and proc.stdout == ""
    errors = [line for line in proc.stderr.splitlines() if line.startswith(f"{profile}:") and ": warning: " not in line]
    assert errors == [
        f"{profile}:8: spec.isolatedPools.ps: no node pool 'ps-highmem' in spec.nodePools (pools: ps-pool, "
        "worker-pool)"]


@pytest.mark.parametrize("classes, field, words", [
    ("{worker: tfjobgen-worker}", "spec.priorityClasses", "set ps as well"),
    ("{ps: tfjobgen, worker: tfjobgen}", "spec.priorityClasses.worker", "a PS can only preempt pods of lower priority"),
    ("{ps: Bad_Name}", "spec.priorityClasses.ps", "expected a PriorityClass name"),
])
def test_priority_classes_that_cannot_work_are_errors(tmp_path, classes, field, words):
    profile = _profile(tmp_path, f"  priorityClasses: {classes}\n")
    proc = run_tfjobgen("render", "--profile", profile, _job(tmp_path, "{mode: spread}"))
    assert proc.returncode == 1 and proc.stdout == ""
    assert f"{profile}:5: {field}: " in proc.stderr and words in proc.stderr, proc.stderr


def test_a_ps_too_big_for_the_profiles_pool_is_an_error_at_the_role(tmp_path):
    small = """  nodePools:
    ps-pool: {nodeSelector: {pool: ps}, node: {cpu: 2, memory: 8Gi}}
  isolatedPools: {ps: ps-pool}
"""
    [problem] = problems_of(open(_job(tmp_path, "{mode: isolated}")).read(), tmp_path,
                            profile=_profile(tmp_path, small))
    assert problem.field == "spec.roles.ps" and problem.is_error
    assert "node pool 'ps-pool' from the profile's isolatedPools" in problem.message


def test_a_profile_pool_that_cannot_hold_a_colocated_group_is_an_error(tmp_path):
    pools = """  nodePools:
    small: {nodeSelector: {pool: small}, node: {cpu: 64, memory: 256Gi}}
"""
    text = open(JOBS / "scene1-case2.yaml").read().replace(
        "    workersPerServer: 10", "    workersPerServer: 10\n    nodePools: {ps: small, worker: small}")
    [problem] = [p for p in problems_of(text, tmp_path, profile=_profile(tmp_path, pools)) if p.is_error]
    assert problem.field == "spec.topology.workersPerServer"
    assert "68 CPU" in problem.message and "node pool 'small'" in problem.message
    assert "lower workersPerServer to 9" in problem.message


def test_a_cpuset_job_on_a_default_pool_outside_the_cpu_manager_nodes_is_an_error(tmp_path):
    profile = _profile(tmp_path, """  nodePools:
    ps-pool: {nodeSelector: {cpu-manager-policy: none}}
  isolatedPools: {ps: ps-pool}
  cpuManager: {nodeSelector: {cpu-manager-policy: static}}
""")
    [problem] = problems_of(open(_job(tmp_path, "{mode: isolated}")).read(), tmp_path, profile=profile)
    assert problem.field == "spec.qos" and "isolatedPools.ps" in problem.message


def test_colocated_without_a_ps_priority_class_is_a_warning(tmp_path):
    text = open(JOBS / "scene1-case2.yaml").read()
    plain = _profile(tmp_path, "  node: {cpu: 80, memory: 256Gi}\n", name="plain")
    [warning] = problems_of(text, tmp_path, profile=plain)
    assert warning.severity == "warning" and warning.field == "spec.topology.mode"
    assert "spec.priorityClasses.ps" in warning.message and "profile 'plain'" in warning.message
    with_classes = _profile(tmp_path, "  priorityClasses: {ps: tfjobgen-ps}\n", name="classes")
    assert problems_of(text, tmp_path, profile=with_classes) == []
    assert problems_of(text, tmp_path) == [], "the embedded default profile describes no cluster: no warning"
