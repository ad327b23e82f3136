"""NUMA nodes: where the kubelet's Topology Manager admits a pod, and how many tasks a node then holds.

The rules (kubernetes.io, "Control Topology Management Policies on a node"; the static CPU manager's
topology hints):

- Only a Guaranteed pod's whole CPUs are exclusive and aligned: qos cpuset. qos shared pods get the CPU
  manager's default hint (any NUMA node) and are never refused for it; memory is aligned only by the
  Memory Manager's Static policy, which tfjobgen does not model, so memory is counted per node.
- The CPU manager prefers the fewest NUMA nodes whose CPUs could hold the request, counting every CPU of
  them, reserved ones included: ceil(cpus / CPUs per NUMA node). It offers a set only if its free CPUs
  (reserved ones excluded, other pods' excluded) hold the request.
- restricted admits a pod only on a preferred set; single-numa-node only on one NUMA node (a request
  larger than a NUMA node is never admitted); best-effort and none admit every pod the node has CPUs for.
  Among equal sets the kubelet takes the one with more lower-numbered NUMA nodes. A refused pod fails
  with TopologyAffinityError; the kube-scheduler, which does not see NUMA nodes, may have sent it there.
- Scope: container aligns each container on its own (an init container's CPUs are handed on to the app
  containers); pod aligns the pod's total, the sum of its app containers or its largest init container
  if that is more. tfjobgen's pods have one container: both scopes align the role's cpu.

The arithmetic, for the issue's servers (2 sockets x 32 CPUs, 8-CPU workers, single-numa-node):

    reservedCpus 2, one on each NUMA node (--reserved-cpus 0,32):  free 31 + 31
        per NUMA node 31 // 8 = 3, so 3 + 3 = 6 workers a node; the node-wide count says 62 // 8 = 7
    reservedCpus 2 as a count (the kubelet takes CPUs 0 and 1):     free 30 + 32
        30 // 8 + 32 // 8 = 3 + 4 = 7, the node-wide 62 // 8 = 7 too
    a 40-CPU PS: 40 > 32, larger than a NUMA node: never admitted (restricted: ceil(40 / 32) = 2 NUMA
        nodes with 62 free between them: admitted)
    a 32-CPU PS, one reserved CPU on each NUMA node: 32 <= 32 so one NUMA node is preferred, and none has
        32 free: refused by restricted and single-numa-node alike, though the node has 62

Tasks of one size fill NUMA nodes one by one (first the lowest-numbered with room), so a node holds the
sum over its NUMA nodes of free // size under single-numa-node (tests/test_numa.py holds the rules to a
table of cases and that sum to a property).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations

from ..inputs.problems import Problem
from ..inputs.profile import ClusterProfile, NodeShape
from ..inputs.quantity import describe_cpu
from ..inputs.trainingjob import TrainingJob
from . import topology

ALIGNING = ("restricted", "single-numa-node")  # the policies that refuse a pod at admission


def aligned(job: TrainingJob, shape: NodeShape) -> bool:
    """Whether the Topology Manager can refuse this job's pods on such nodes: whole exclusive CPUs
    (qos cpuset), more than one NUMA node, and a policy that refuses."""
    return job.qos == "cpuset" and shape.numa_nodes > 1 and shape.topology_manager_policy in ALIGNING


def aligned_requests(app: Sequence[int], init: Sequence[int] = (), scope: str = "container") -> tuple[int, ...]:
    """The CPU requests the Topology Manager aligns for a pod, in order: each app container's (container
    scope) or the pod's total (pod scope)."""
    if scope == "pod":
        return (max(sum(app), max(init, default=0)),)
    return tuple(app)


def admit(free: Sequence[int], cpus: int, policy: str, numa_cpus: int) -> tuple[int, ...] | None:
    """Free CPUs per NUMA node after the kubelet admits a request of `cpus` exclusive CPUs, or None when the
    policy refuses it. `numa_cpus`: CPUs of one NUMA node, reserved ones included."""
    if policy in ALIGNING or policy == "best-effort":
        width = max(1, math.ceil(cpus / numa_cpus))  # the fewest NUMA nodes that could hold it: the preferred
        if width == 1:  # the common case, and the packing's inner loop: the lowest-numbered NUMA node with room
            for i, room in enumerate(free):
                if room >= cpus:
                    return (*free[:i], room - cpus, *free[i + 1:])
        elif policy != "single-numa-node":
            for chosen in combinations(range(len(free)), width):  # more lower-numbered NUMA nodes first
                if sum(free[i] for i in chosen) >= cpus:
                    return _take(free, chosen, cpus)
        if policy in ALIGNING:
            return None
    if sum(free) < cpus:
        return None
    return _take(free, range(len(free)), cpus)  # not aligned: from wherever CPUs are free


def _take(free: Sequence[int], chosen: Sequence[int], cpus: int) -> tuple[int, ...]:
    """Take `cpus` from the chosen NUMA nodes, the fullest first (the static policy packs)."""
    left, after = cpus, list(free)
    for i in sorted(chosen, key=lambda i: (free[i], i)):
        taken = min(left, after[i])
        after[i] -= taken
        left -= taken
    return tuple(after)


def admit_pod(free: Sequence[int], app: Sequence[int], init: Sequence[int], policy: str, scope: str,
              numa_cpus: int) -> tuple[int, ...] | None:
    """A whole pod: in container scope each init container must be admissible (its CPUs go on to the app
    containers), then each app container is admitted in turn; in pod scope the total at once."""
    if scope == "container" and any(admit(free, c, policy, numa_cpus) is None for c in init):
        return None
    for cpus in aligned_requests(app, init, scope):
        after = admit(free, cpus, policy, numa_cpus)
        if after is None:
            return None
        free = after
    return tuple(free)


def admit_on(shape: NodeShape, free: Sequence[int], cpus: int) -> tuple[int, ...] | None:
    """A one-container tfjobgen pod of `cpus` CPUs on a node of `shape` with `free` CPUs per NUMA node: both
    scopes align the one request (admit_pod with app=(cpus,)), so the packing's inner loop goes straight to it."""
    return admit(free, cpus, shape.topology_manager_policy, shape.numa_cpus)


def per_node(shape: NodeShape, cpus: int) -> int:
    """Tasks of `cpus` CPUs that one empty node admits, as far as CPUs go."""
    if shape.numa_nodes == 1 or shape.topology_manager_policy not in ALIGNING:
        return int(shape.cpu // cpus)
    count, free = 0, shape.numa_free
    while (free := admit_on(shape, free, cpus)) is not None:
        count += 1
    return count


def fits(shape: NodeShape, tasks: Sequence[int]) -> bool:
    """Whether one empty node admits all these tasks (CPUs each), in this order."""
    free: tuple[int, ...] | None = shape.numa_free
    for cpus in tasks:
        free = admit_on(shape, free, cpus)
        if free is None:
            return False
    return True


def _numa_text(shape: NodeShape) -> str:
    free = shape.numa_free
    after = f"{min(free)}" if min(free) == max(free) else "/".join(str(f) for f in free)
    reserved = f" ({after} for pods after reserved CPUs)" if sum(shape.reserved_by_numa_node) else ""
    return f"{shape.numa_nodes} NUMA nodes of {shape.numa_cpus} CPUs{reserved}"


def refusal(shape: NodeShape, cpus: int) -> str:
    """Why an empty node of `shape` refuses one task of `cpus` CPUs (call it only when it does)."""
    policy = shape.topology_manager_policy
    if cpus > shape.numa_cpus and policy == "single-numa-node":
        return (f"is larger than a NUMA node: the kubelet's Topology Manager (single-numa-node) admits a "
                f"Guaranteed pod only on one NUMA node, and a node has {_numa_text(shape)}")
    width = math.ceil(cpus / shape.numa_cpus)
    where = "on no NUMA node" if width == 1 else f"on no {width} NUMA nodes together"
    return (f"has room {where}: the kubelet's Topology Manager ({policy}) admits a Guaranteed pod only on the "
            f"fewest NUMA nodes whose CPUs, reserved ones counted, could hold it ({width}), and a node has "
            f"{_numa_text(shape)}")


def check(job: TrainingJob, profile: ClusterProfile) -> list[Problem]:
    """Tasks no node admits, and colocated groups no node admits whole, once the NUMA nodes are counted.
    Roles larger than a whole node are topology.check's to report."""
    chosen = topology.pools(job, profile)
    problems = []
    for role in job.roles.values():
        shape = profile.node_for(chosen.get(role.name))
        if aligned(job, shape) and role.cpu <= shape.cpu and not fits(shape, [int(role.cpu)]):
            problems.append(Problem(f"one {role.name} ({describe_cpu(role.cpu)} CPU) {refusal(shape, int(role.cpu))}"
                                    f" (profile '{profile.name}')", f"spec.roles.{role.name}"))
    if job.topology.mode == "colocated" and not problems:
        problems += _check_colocated(job, profile)
    return problems


def _check_colocated(job: TrainingJob, profile: ClusterProfile) -> list[Problem]:
    ps, worker = job.roles["ps"], job.roles["worker"]
    chosen_pool = job.topology.node_pools.get("ps")
    shape = profile.node_for(chosen_pool)
    group = min(job.topology.workers_per_server, worker.replicas)
    if not aligned(job, shape) or ps.cpu + group * worker.cpu > shape.cpu or \
            ps.memory + group * worker.memory > shape.memory:  # too big for the node: topology.check says so
        return []
    if fits(shape, [int(ps.cpu)] + [int(worker.cpu)] * group):
        return []
    room = next(k for k in range(group, -1, -1) if fits(shape, [int(ps.cpu)] + [int(worker.cpu)] * k))
    remedy = f"lower workersPerServer to {room} or shrink the tasks" if room else \
        "not even one worker fits beside the PS: shrink the tasks"
    where = f"node pool '{chosen_pool}' of profile '{profile.name}'" if chosen_pool else f"profile '{profile.name}'"
    return [Problem(
        f"a colocated group is 1 PS ({describe_cpu(ps.cpu)} CPU) + {group} workers ({describe_cpu(worker.cpu)} CPU "
        f"each): the node has the CPUs, but under the kubelet's Topology Manager "
        f"({shape.topology_manager_policy}) each task needs them on its NUMA node(s), and a node of {where} has "
        f"{_numa_text(shape)}: {remedy}", "spec.topology.workersPerServer")]
