"""Placement rules as written into the objects, and the errors and warnings about them.

What the rules do on a scheduler is checked on the real kube-scheduler of a local cluster:
tests/cluster/test_topology_real.py (one rule at a time) and tests/cluster/test_guarantees.py
(arrival orders, node loss, shared clusters).
"""

from __future__ import annotations

import pytest
from conftest import JOBS, problems_of, render, run_tfjobgen

from jobs import job_yaml, write_job
from tfjobgen import backends
from tfjobgen.concerns import labels
from tfjobgen.concerns.pods import Pod


def _pods(*paths, profile=None) -> list[Pod]:
    """Each task's pod, as its controller would create it from the rendered objects."""
    return backends.pods_of(render(*paths, profile=profile))


# 4 PS of 4 CPUs, 8 workers of 2 and a chief, placed by each topology (the job's name stays "spread").
SPREAD = job_yaml("spread", ps=4, workers=8, topology="spread")
ISOLATED = job_yaml("spread", ps=4, workers=8, topology="isolated")


def _profile(tmp_path, spec: str, name: str = "profile") -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"apiVersion: tfjobgen.dev/v1alpha1\nkind: ClusterProfile\nmetadata: {{name: {name}}}\nspec:\n{spec}")
    return str(path)


def test_colocated_pods_carry_their_group():
    """PS g and workers g*k .. g*k+k-1 share the label the rules select on (k = workersPerServer)."""
    for pod in _pods(JOBS / "scene1-case3.yaml"):
        group = pod.index if pod.role == "ps" else pod.index // 10
        assert pod.labels[labels.GROUP] == str(group)


def test_colocated_ps_and_isolated_workers_set_their_own_spread_constraint():
    """One ScheduleAnyway constraint on the job's PS: it turns off the system default spreading."""
    for job, role in (("scene1-case2", "ps"), ("scene2-case2", "worker")):
        for pod in _pods(JOBS / f"{job}.yaml"):
            if pod.role != role:
                assert "topologySpreadConstraints" not in pod.spec
                continue
            [constraint] = pod.spec["topologySpreadConstraints"]
            assert constraint["whenUnsatisfiable"] == "ScheduleAnyway"
            assert constraint["labelSelector"] == {"matchLabels": {labels.JOB: job, labels.ROLE: "ps"}}
    assert all("topologySpreadConstraints" not in p.spec for p in _pods(JOBS / "wide-deep.yaml"))


# ---- node pools and priority ------------------------------------------------------------------------

POOLS = """  nodePools:
    ps-pool: {nodeSelector: {pool: ps}, tolerations: [{key: dedicated, operator: Equal, value: ps, effect: NoSchedule}]}
    worker-pool: {nodeSelector: {pool: workers}}
"""


def test_the_profile_names_priority_classes_per_role(tmp_path):
    profile = _profile(tmp_path, "  priorityClasses: {ps: tfjobgen-ps, worker: tfjobgen-worker}\n")
    job = write_job(tmp_path, job_yaml("spread", ps=4, workers=8, evaluator=True, topology="spread"))
    classes = {p.role: p.spec["priorityClassName"] for p in _pods(job, profile=profile)}
    assert classes == {"ps": "tfjobgen-ps", "chief": "tfjobgen-ps", "worker": "tfjobgen-worker",
                       "evaluator": "tfjobgen-worker"}
    assert all("priorityClassName" not in p.spec for p in _pods(write_job(tmp_path, SPREAD)))


# ---- errors and warnings ---------------------------------------------------------------------------

def test_a_profile_default_pool_must_exist(tmp_path):
    profile = _profile(tmp_path, POOLS + "  isolatedPools: {ps: ps-highmem}\n")
    proc = run_tfjobgen("render", "--profile", profile, write_job(tmp_path, ISOLATED))
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
    proc = run_tfjobgen("render", "--profile", profile, write_job(tmp_path, SPREAD))
    assert proc.returncode == 1 and proc.stdout == ""
    assert f"{profile}:5: {field}: " in proc.stderr and words in proc.stderr, proc.stderr


def test_a_ps_too_big_for_the_profiles_pool_is_an_error_at_the_role(tmp_path):
    small = """  nodePools:
    ps-pool: {nodeSelector: {pool: ps}, node: {cpu: 2, memory: 8Gi}}
  isolatedPools: {ps: ps-pool}
"""
    [problem] = problems_of(ISOLATED, tmp_path,
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
    [problem] = problems_of(ISOLATED, tmp_path, profile=profile)
    assert problem.field == "spec.qos" and "isolatedPools.ps" in problem.message


def test_colocated_without_a_ps_priority_class_is_a_warning(tmp_path):
    text = open(JOBS / "scene1-case2.yaml").read()
    plain = _profile(tmp_path, "  node: {cpu: 80, memory: 256Gi}\n", name="plain")
    [warning] = problems_of(text, tmp_path, profile=plain)
    assert warning.severity == "warning" and warning.field == "spec.topology.mode"
    assert "spec.priorityClasses.ps" in warning.message and "profile 'plain'" in warning.message
    assert problems_of(text, tmp_path) == [], "the embedded default profile describes no cluster: no warning"


def test_colocated_on_a_shared_profile_without_the_schedulers_groups_is_a_warning_priority_classes_or_not(tmp_path):
    """docs/schedulers.md measured it: with a PS PriorityClass, colocated by affinity still broke beside other
    jobs (PS preempted workers that were recreated and bound first); only the scheduler's groups kept them whole."""
    text = open(JOBS / "scene1-case2.yaml").read()
    with_classes = _profile(tmp_path, "  priorityClasses: {ps: tfjobgen-ps, worker: tfjobgen-worker}\n", name="classes")
    [warning] = problems_of(text, tmp_path, profile=with_classes)
    assert warning.severity == "warning" and warning.field == "spec.topology.mode"
    assert "colocatedGroups: scheduler" in warning.message and "volcano and kubernetes" in warning.message
    assert "profile 'classes'" in warning.message and "docs/schedulers.md" in warning.message
    grouped = _profile(tmp_path, "  gang: {scheduler: volcano, colocatedGroups: scheduler}\n", name="grouped")
    assert [p for p in problems_of(text, tmp_path, profile=grouped) if p.field == "spec.topology.mode"] == []
