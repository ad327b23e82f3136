"""NUMA nodes and the kubelet's Topology Manager: the arithmetic held to its documented rules, and what
validate, capacity and `tfjobgen plan` make of it.

The rules (kubernetes.io, "Control Topology Management Policies on a node", and the static CPU manager's
hints): only Guaranteed pods on whole CPUs get exclusive CPUs and so NUMA hints; the CPU manager prefers the
fewest NUMA nodes whose CPUs (reserved ones included) could hold the request; `restricted` admits a pod only
on such a preferred set, `single-numa-node` only on one NUMA node, `best-effort` and `none` always. The pod
scope aligns the pod's total request (the app containers' sum, or the largest init container if larger); the
container scope aligns each container on its own. A rejected pod fails with TopologyAffinityError.
"""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from conftest import run_tfjobgen
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs import job_yaml, write_job
from tfjobgen.cluster.nodes import node as real_node
from tfjobgen.concerns import capacity, numa
from tfjobgen.expand import pipeline
from tfjobgen.inputs.profile import NodeShape


def _shape(cpu: int, numa_nodes: int, reserved=None, policy="single-numa-node", scope="container") -> NodeShape:
    """A node of `cpu` CPUs over `numa_nodes` NUMA nodes; reserved: a count (kubelet's choice of where)
    or a per-NUMA-node list."""
    by_numa = tuple(reserved) if isinstance(reserved, (list, tuple)) else None
    count = sum(by_numa) if by_numa is not None else reserved
    return NodeShape(cpu=Fraction(cpu - (count or 0)), memory=Fraction(256 << 30), reserved_cpus=count,
                     numa_nodes=numa_nodes, reserved_cpus_per_numa_node=by_numa,
                     topology_manager_policy=policy, topology_manager_scope=scope)


# ---- the kubelet's rules, case by case --------------------------------------------------------------

# (policy, NUMA nodes' free CPUs, CPUs per NUMA node, request, free CPUs after admission or None: rejected)
ADMISSION = [
    # single-numa-node: one NUMA node holds the whole request, the lowest-numbered one with room
    ("single-numa-node", (31, 32), 32, 8, (23, 32)),
    ("single-numa-node", (31, 32), 32, 32, (31, 0)),      # 32 fit only on NUMA node 1 (node 0 lost a reserved CPU)
    ("single-numa-node", (31, 32), 32, 33, None),         # larger than a NUMA node: never admitted
    ("single-numa-node", (31, 31), 32, 32, None),         # one reserved CPU on each: 62 free, no 32 together
    ("single-numa-node", (7, 7), 32, 8, None),            # room on the node (14), none on one NUMA node
    # restricted: the fewest NUMA nodes whose CPUs could hold it (reserved ones counted), with room for it
    ("restricted", (31, 32), 32, 32, (31, 0)),
    ("restricted", (31, 32), 32, 40, (0, 23)),            # two NUMA nodes are the fewest for 40: admitted
    ("restricted", (31, 31), 32, 32, None),               # one NUMA node could hold 32, none has it free
    ("restricted", (15, 16, 16, 16), 16, 20, (0, 11, 16, 16)),  # two of four, the lowest-numbered pair
    ("restricted", (15, 4, 16, 16), 16, 20, (0, 4, 11, 16)),    # pair (0,1) has 19: the next pair, (0,2)
    # best-effort and none never reject: the node-wide count decides
    ("best-effort", (31, 31), 32, 32, (0, 30)),
    ("none", (7, 7), 32, 8, (0, 6)),
    ("none", (31, 32), 32, 63, (0, 0)),
]


@pytest.mark.parametrize("policy, free, size, cpus, after", ADMISSION)
def test_admission_follows_the_topology_managers_policy(policy, free, size, cpus, after):
    assert numa.admit(free, cpus, policy, size) == after


@pytest.mark.parametrize("app, init, scope, aligned", [
    ((20, 20), (), "container", (20, 20)),   # each container on its own
    ((20, 20), (), "pod", (40,)),            # the pod as a whole
    ((8,), (24,), "pod", (24,)),             # an init container larger than the app containers' sum
    ((8, 8), (4,), "pod", (16,)),
    ((8,), (), "container", (8,)),           # tfjobgen's pods: one container, the same in both scopes
    ((8,), (), "pod", (8,)),
])
def test_the_scope_decides_what_is_aligned(app, init, scope, aligned):
    assert numa.aligned_requests(app, init, scope) == aligned


@pytest.mark.parametrize("scope", ["container", "pod"])
@pytest.mark.parametrize("policy, free, size, cpus", [case[:4] for case in ADMISSION])
def test_a_one_container_pod_is_one_request_in_either_scope(scope, policy, free, size, cpus):
    """admit_on, the packing's shortcut for tfjobgen's one-container pods, answers as admit_pod does."""
    shape = _shape(size * len(free), len(free), policy=policy, scope=scope)
    assert numa.admit_on(shape, free, cpus) == numa.admit_pod(free, (cpus,), (), policy, scope, size)


def test_two_containers_that_fit_a_numa_node_each_are_admitted_per_container_and_refused_per_pod():
    free = (31, 32)
    assert numa.admit_pod(free, (20, 20), (), "single-numa-node", "container", 32) == (11, 12)
    assert numa.admit_pod(free, (20, 20), (), "single-numa-node", "pod", 32) is None


# ---- packing: tasks per node -------------------------------------------------------------------------

def test_six_workers_of_8_cpus_on_2x32_with_a_reserved_cpu_on_each_numa_node_not_seven():
    """31 + 31 free: 3 + 3 = 6 under single-numa-node; the node-wide count, 62 // 8, says 7."""
    spread = _shape(64, 2, reserved=[1, 1])
    assert numa.per_node(spread, 8) == 6
    assert numa.per_node(_shape(64, 2, reserved=[1, 1], policy="none"), 8) == 7
    assert numa.per_node(_shape(64, 2, reserved=[1, 1], policy="best-effort"), 8) == 7
    # Both reserved CPUs on NUMA node 0 (the kubelet's own choice for a count): 30 // 8 + 32 // 8 = 7.
    assert numa.per_node(_shape(64, 2, reserved=2), 8) == 7
    assert numa.per_node(_shape(64, 2, reserved=[2, 0]), 8) == 7


@settings(max_examples=200, deadline=None, derandomize=True)
@given(numa_nodes=st.sampled_from([1, 2, 4, 8]), per_numa=st.integers(1, 48), cpus=st.integers(1, 64),
       reserved=st.data())
def test_single_numa_node_packs_each_numa_node_on_its_own(numa_nodes, per_numa, cpus, reserved):
    """Tasks of one size under single-numa-node: the sum over NUMA nodes of free // size, never more than the
    node-wide count; none packs the node-wide count."""
    by_numa = reserved.draw(st.lists(st.integers(0, per_numa - 1), min_size=numa_nodes, max_size=numa_nodes))
    shape = _shape(per_numa * numa_nodes, numa_nodes, reserved=by_numa)
    free = [per_numa - r for r in by_numa]
    expected = sum(f // cpus for f in free) if numa_nodes > 1 else sum(free) // cpus
    assert numa.per_node(shape, cpus) == expected <= sum(free) // cpus
    assert numa.per_node(_shape(per_numa * numa_nodes, numa_nodes, reserved=by_numa, policy="none"), cpus) == \
        sum(free) // cpus


# ---- the profile, validate, plan ----------------------------------------------------------------------

PROFILE = """apiVersion: tfjobgen.dev/v1alpha1
kind: ClusterProfile
metadata: {{name: two-socket}}
spec:
  node: {{cpu: 64, reservedCpus: 2, memory: 256Gi, numaNodes: 2{extra}}}
  cpuManager: {{nodeSelector: {{cpu-manager-policy: static}}}}
"""


def _profile(tmp_path, extra=", reservedCpusPerNumaNode: [1, 1], topologyManagerPolicy: single-numa-node"):
    path = tmp_path / "profile.yaml"
    path.write_text(PROFILE.format(extra=extra))
    return str(path)


def test_a_ps_larger_than_a_numa_node_is_an_error_naming_both_numbers(tmp_path):
    job = write_job(tmp_path, job_yaml("big", ps=1, workers=2, roles={"ps": {"cpu": 40}}, qos="cpuset"))
    result = run_tfjobgen("validate", job, "--profile", _profile(tmp_path))
    assert result.returncode == 1
    assert "spec.roles.ps: one ps (40 CPU) is larger than a NUMA node" in result.stderr
    assert "32 CPUs" in result.stderr and "31 for pods" in result.stderr, result.stderr
    # best-effort admits it across both NUMA nodes, and so does restricted (63 free on the two, the fewest)
    for policy in ("best-effort", "restricted"):
        extra = f", topologyManagerPolicy: {policy}"
        assert run_tfjobgen("validate", job, "--profile", _profile(tmp_path, extra)).returncode == 0


def test_restricted_refuses_a_task_no_numa_node_can_hold_once_reserved_cpus_are_taken(tmp_path):
    job = write_job(tmp_path, job_yaml("edge", ps=1, workers=2, roles={"ps": {"cpu": 32}}, qos="cpuset"))
    refused = run_tfjobgen("validate", job, "--profile", _profile(
        tmp_path, ", reservedCpusPerNumaNode: [1, 1], topologyManagerPolicy: restricted"))
    assert refused.returncode == 1 and "spec.roles.ps" in refused.stderr and "restricted" in refused.stderr
    admitted = run_tfjobgen("validate", job, "--profile", _profile(
        tmp_path, ", reservedCpusPerNumaNode: [2, 0], topologyManagerPolicy: restricted"))
    assert admitted.returncode == 0, admitted.stderr


def test_qos_shared_pods_are_not_aligned(tmp_path):
    job = write_job(tmp_path, job_yaml("shared", ps=1, workers=2, roles={"ps": {"cpu": 40}}, qos="shared"))
    assert run_tfjobgen("validate", job, "--profile", _profile(tmp_path)).returncode == 0


def test_capacity_packs_per_numa_node(tmp_path):
    job_path = write_job(tmp_path, job_yaml("workers", ps=1, workers=12, topology="isolated",
                                            roles={"worker": {"cpu": 8, "memory": "8Gi"}}, qos="cpuset"))
    profile = pipeline.load_profile(_profile(tmp_path))
    intents, _ = pipeline.load_intents([job_path])
    job, problems = pipeline.validate(intents[0], profile)
    assert job is not None, [p.format() for p in problems]
    found = capacity.capacity(job, profile)
    assert next(r for r in found.roles if r.role == "worker").per_node == 6
    assert found.own.nodes == {capacity.NO_POOL: 1 + 2}  # the PS alone, then 12 workers 6 a node


def test_plan_shows_the_numa_nodes_it_packed_on(tmp_path):
    job = write_job(tmp_path, job_yaml("workers", ps=1, workers=12, topology="isolated",
                                       roles={"worker": {"cpu": 8, "memory": "8Gi"}}, qos="cpuset"))
    result = run_tfjobgen("plan", job, "--profile", _profile(tmp_path))
    assert result.returncode == 0, result.stderr
    [worker] = [line.split() for line in result.stdout.splitlines() if line.startswith("worker ")]
    assert "(31+31" in worker and "single-numa-node)," in worker and worker[-1] == "6", worker


def test_a_colocated_group_must_fit_the_numa_nodes(tmp_path):
    """1 PS of 16 + 5 workers of 8 = 56 of 62 free CPUs, but NUMA nodes of 31 hold 16 + 8 and 3 x 8."""
    job = write_job(tmp_path, job_yaml("group", ps=1, workers=5, qos="cpuset",
                                       topology={"mode": "colocated", "workersPerServer": 5},
                                       roles={"ps": {"cpu": 16}, "worker": {"cpu": 8}}))
    result = run_tfjobgen("validate", job, "--profile", _profile(tmp_path))
    assert result.returncode == 1 and "spec.topology.workersPerServer" in result.stderr
    assert "NUMA" in result.stderr and "lower workersPerServer to 4" in result.stderr, result.stderr


@pytest.mark.parametrize("extra, field, words", [
    (", numaNodes: 3", "spec.node.numaNodes", "do not divide"),
    (", reservedCpusPerNumaNode: [1]", "spec.node.reservedCpusPerNumaNode", "one entry per NUMA node"),
    (", reservedCpusPerNumaNode: [2, 1]", "spec.node.reservedCpusPerNumaNode", "reservedCpus"),
    (", topologyManagerPolicy: single-numa", "spec.node.topologyManagerPolicy", "single-numa-node"),
])
def test_profile_numa_fields_that_do_not_fit_together_are_errors(tmp_path, extra, field, words):
    job = write_job(tmp_path, job_yaml("ok", qos="cpuset"))
    text = PROFILE.format(extra=extra).replace("numaNodes: 2, numaNodes: 3", "numaNodes: 3")
    (tmp_path / "p.yaml").write_text(text)
    result = run_tfjobgen("validate", job, "--profile", str(tmp_path / "p.yaml"))
    assert result.returncode == 1 and field in result.stderr and words in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


# ---- the real nodes' kubelet --------------------------------------------------------------------------

def _kubelet(tmp_path, profile_path) -> dict:
    from tfjobgen.cluster.nodes import bring_up

    profile = pipeline.load_profile(profile_path)
    [node] = bring_up.plan(profile, ["n1"], tmp_path)
    return json.loads(real_node.kubelet_config(node, tmp_path / "ca.crt"))


def test_the_kubelet_runs_the_profiles_cpu_and_topology_managers(tmp_path):
    config = _kubelet(tmp_path, _profile(tmp_path, ", topologyManagerPolicy: restricted, topologyManagerScope: pod"))
    assert config["cpuManagerPolicy"] == "static"
    assert config["topologyManagerPolicy"] == "restricted" and config["topologyManagerScope"] == "pod"


def test_a_kubelet_without_a_topology_policy_is_told_none(tmp_path):
    (tmp_path / "plain.yaml").write_text("apiVersion: tfjobgen.dev/v1alpha1\nkind: ClusterProfile\n"
                                         "metadata: {name: plain}\nspec: {}\n")
    config = _kubelet(tmp_path, str(tmp_path / "plain.yaml"))
    assert config["cpuManagerPolicy"] == "none"
    assert config["topologyManagerPolicy"] == "none" and config["topologyManagerScope"] == "container"
