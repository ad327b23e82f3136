"""Capacity: how many nodes each topology needs, whether colocated groups fit, what stays Pending.

Everything comes from one function, `capacity(job, profile)`, fed by the
profile's node shapes, pools and (optional) node counts; node-shape fields
added to the profile later (reserved CPUs, say) reach it through
`profile.node_for`.

The packing follows the placement rules topology.py emits (docs/design.md):

    colocated  each PS on a node with no other PS; worker w on PS w // workersPerServer's node
    isolated   each PS on a node with no other task of the job but the chief or evaluator;
               workers on nodes without a PS
    spread     each PS on a node with no other PS (required; preferred asks the same when
               there is room); workers, chief and evaluator anywhere
    none       anywhere

Tasks are placed in order (PS, workers, chief, evaluator), each on the first
node with room that the rules allow, else on a new node of its pool while the
pool has nodes left (all of them when the profile gives no count). The node
count is the fewest nodes such a placement uses: the kube-scheduler scores
nodes instead (it spreads pods over the least allocated), so on a cluster
with other tenants fragmentation can leave a task Pending that this count
says fits. qos cpuset pods only go to CPU-manager nodes: a profile's counts
are read as the nodes the job may use.

Where the profile's nodes have NUMA nodes and the kubelet's Topology Manager
refuses pods that do not fit them (restricted, single-numa-node), a qos cpuset
task also needs room on its NUMA node(s): each node keeps its free CPUs per NUMA
node, and a task goes where numa.py's rules admit it (2 x 32 CPUs with a reserved
CPU on each NUMA node holds 6 workers of 8 CPUs, not the 62 // 8 = 7 the node's
total says; numa.py has the arithmetic). The kube-scheduler does not see NUMA
nodes: it may send a pod to a node whose NUMA nodes are full, where the kubelet
refuses it (TopologyAffinityError) and its Job makes a new pod.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

from ..inputs.problems import WARNING, Problem
from ..inputs.profile import ClusterProfile, NodeShape
from ..inputs.quantity import describe_bytes, describe_cpu
from ..inputs.trainingjob import TrainingJob
from . import numa, topology

MODES = ("colocated", "isolated", "spread", "none")
NO_POOL = "any"  # the label of nodes a role without a node pool uses
_ORDER = ("ps", "worker", "chief", "evaluator")


@dataclass(frozen=True)
class RoleFit:
    role: str
    replicas: int
    cpu: Fraction
    memory: Fraction
    pool: str
    node: NodeShape
    per_node: int  # tasks of this role alone that fit on one empty node


@dataclass(frozen=True)
class GroupFit:
    """Colocated groups of the same size: PS first..last, each with `workers` workers beside it."""

    first: int
    last: int
    workers: int
    cpu: Fraction
    memory: Fraction
    node: NodeShape

    @property
    def fits(self) -> bool:
        return self.cpu <= self.node.cpu and self.memory <= self.node.memory


@dataclass(frozen=True)
class Pending:
    role: str
    indexes: tuple[int, ...]
    reason: str
    field: str  # the intent field that would let them run

    @property
    def tasks(self) -> str:
        first, last = self.indexes[0], self.indexes[-1]
        name = f"{self.role}:{first}" if first == last else f"{self.role}:{first}-{last}"
        return name if len(self.indexes) == last - first + 1 else f"{len(self.indexes)} of {self.role}:{first}-{last}"


@dataclass(frozen=True)
class Packing:
    mode: str
    nodes: dict[str, int]  # pool -> nodes the placement uses
    pending: tuple[Pending, ...]


@dataclass(frozen=True)
class Share:
    pool: str
    nodes_used: int
    nodes: int
    cpu: Fraction  # the job's requests over the pool's CPUs
    memory: Fraction


@dataclass(frozen=True)
class Capacity:
    roles: tuple[RoleFit, ...]
    groups: tuple[GroupFit, ...]  # colocated only
    packings: tuple[Packing, ...]  # the job's own mode first, then the others
    node_counts: dict[str, int | None]  # pool -> nodes the profile says it has
    shares: tuple[Share, ...]  # pools with a count, for the job's own mode

    @property
    def own(self) -> Packing:
        return self.packings[0]


@dataclass
class _Node:
    pool: str
    cpu: int  # free millicores (whole numbers: the packing compares them millions of times)
    memory: int  # free bytes
    gpu: int  # free GPUs (0 on nodes outside the profile's GPU pool)
    numa: tuple[int, ...] | None = None  # free CPUs per NUMA node, where the Topology Manager aligns the job's pods
    roles: list[str] = field(default_factory=list)
    ps: set = field(default_factory=set)


def _milli(cpu: Fraction) -> int:
    return math.ceil(cpu * 1000)


def pool_of(job: TrainingJob, profile: ClusterProfile, role: str) -> str | None:
    """The node pool a role's tasks run in (None: any node): the job's own choice, else the
    profile's default (topology.pools). The one place capacity reads it."""
    return topology.pools(job, profile).get(role)


def _gpus_per_node(profile: ClusterProfile, pool: str | None) -> int:
    """GPUs on one node of `pool`: the profile's spec.gpu.perNode in its GPU pool, none elsewhere."""
    return profile.gpu.per_node if profile.gpu is not None and pool == profile.gpu.node_pool else 0


def capacity(job: TrainingJob, profile: ClusterProfile) -> Capacity:
    pools = {role: pool_of(job, profile, role) for role in job.roles}
    roles = []
    for name in _ORDER:
        if name in job.roles:
            spec, node = job.roles[name], profile.node_for(pools[name])
            per_node = min(node.cpu // spec.cpu if spec.cpu else 10 ** 6, node.memory // spec.memory)
            if numa.aligned(job, node):
                per_node = min(per_node, numa.per_node(node, int(spec.cpu)))
            if spec.gpu:
                per_node = min(per_node, _gpus_per_node(profile, pools[name]) // spec.gpu)
            roles.append(RoleFit(name, spec.replicas, spec.cpu, spec.memory, pools[name] or NO_POOL, node,
                                 int(per_node)))
    counts = {(pools[r] or NO_POOL): profile.node_count_for(pools[r]) for r in job.roles}
    modes = (job.topology.mode,) + tuple(m for m in MODES if m != job.topology.mode)
    packings = tuple(_pack(job, profile, mode, counts) for mode in modes)
    return Capacity(tuple(roles), _groups(job, profile), packings, counts, _shares(job, profile, packings[0], counts))


def _groups(job: TrainingJob, profile: ClusterProfile) -> tuple[GroupFit, ...]:
    if job.topology.mode != "colocated":
        return ()
    ps, worker, per = job.roles["ps"], job.roles["worker"], job.topology.workers_per_server
    node = profile.node_for(pool_of(job, profile, "ps"))
    sizes = [max(0, min(per, worker.replicas - g * per)) for g in range(ps.replicas)]
    found, start = [], 0
    for g in range(1, ps.replicas + 1):
        if g == ps.replicas or sizes[g] != sizes[start]:
            k = sizes[start]
            found.append(GroupFit(start, g - 1, k, ps.cpu + k * worker.cpu, ps.memory + k * worker.memory, node))
            start = g
    return tuple(found)


def _pack(job: TrainingJob, profile: ClusterProfile, mode: str, counts: dict[str, int | None]) -> Packing:
    nodes: list[_Node] = []
    opened: dict[str, int] = {}  # pool -> nodes opened
    homes: dict[int, _Node] = {}  # PS index -> its node
    pending: dict[tuple[str, str, str], list[int]] = {}
    per_group = job.topology.workers_per_server
    preferred = mode == "spread" and job.topology.spread == "preferred"

    def allowed(node: _Node, role: str, index: int, strict: bool = True) -> bool:
        if mode == "colocated" and role == "worker":
            return index // per_group in node.ps
        if role == "ps" and mode != "none" and node.ps and strict:
            return False
        if mode == "isolated":
            if role == "ps" and "worker" in node.roles:
                return False
            if role == "worker" and node.ps:
                return False
        return True

    for role in (r for r in _ORDER if r in job.roles):
        spec = job.roles[role]
        pool = pool_of(job, profile, role) or NO_POOL
        shape = profile.node_for(pool_of(job, profile, role))
        cpu, memory, gpu = _milli(spec.cpu), math.ceil(spec.memory), spec.gpu
        node_gpus = _gpus_per_node(profile, pool_of(job, profile, role))
        fits_a_node = cpu <= _milli(shape.cpu) and memory <= math.ceil(shape.memory) and gpu <= node_gpus
        aligned = numa.aligned(job, shape)  # then a node needs room on its NUMA nodes too
        fits_a_node = fits_a_node and (not aligned or numa.fits(shape, [int(spec.cpu)]))

        def admits(node: _Node) -> bool:
            return node.numa is None or numa.admit_on(shape, node.numa, int(spec.cpu)) is not None
        # Nodes only fill up and the rules only get stricter as tasks arrive, so a node that cannot take
        # a task of this role now never will: each scan starts where the last one gave up.
        start = {True: 0, False: 0}

        def first(strict: bool, index: int) -> _Node | None:
            while start[strict] < len(nodes):
                node = nodes[start[strict]]
                if node.pool == pool and node.cpu >= cpu and node.memory >= memory and node.gpu >= gpu and \
                        allowed(node, role, index, strict) and admits(node):
                    return node
                start[strict] += 1
            return None

        for index in range(spec.replicas):
            if mode == "colocated" and role == "worker":  # beside its PS, or nowhere
                home = homes.get(index // per_group)
                target = home if home and home.pool == pool and home.cpu >= cpu and home.memory >= memory \
                    and home.gpu >= gpu and admits(home) else None
            else:
                target = first(True, index)
                if target is None and fits_a_node:
                    if counts.get(pool) is None or opened.get(pool, 0) < counts[pool]:
                        target = _Node(pool, _milli(shape.cpu), math.ceil(shape.memory), node_gpus,
                                       shape.numa_free if aligned else None)
                        nodes.append(target)
                        opened[pool] = opened.get(pool, 0) + 1
                if target is None and preferred and role == "ps":  # a preference yields when nodes run out
                    target = first(False, index)
            if target is None:
                reason, fix = _why_pending(job, mode, role, index, spec, shape, node_gpus, pool, counts, nodes)
                pending.setdefault((role, reason, fix), []).append(index)
                continue
            target.cpu -= cpu
            target.memory -= memory
            target.gpu -= gpu
            if target.numa is not None:
                target.numa = numa.admit_on(shape, target.numa, int(spec.cpu))
            target.roles.append(role)
            if role == "ps":
                target.ps.add(index)
                homes[index] = target
    used = {}
    for node in nodes:
        used[node.pool] = used.get(node.pool, 0) + 1
    return Packing(mode, used, tuple(Pending(role, tuple(indexes), reason, fix)
                                     for (role, reason, fix), indexes in pending.items()))


def _why_pending(job, mode, role, index, spec, shape, node_gpus, pool, counts, nodes) -> tuple[str, str]:
    """Why a task finds no node, and the field that would change that."""
    size = f"{describe_cpu(spec.cpu)} CPU, {describe_bytes(spec.memory)}"
    replicas = f"spec.roles.{role}.replicas"
    if spec.gpu > node_gpus:
        return f"one task ({spec.gpu} GPUs) needs more than a node of pool {pool} has ({node_gpus})", \
            f"spec.roles.{role}.gpu"
    if spec.cpu > shape.cpu or spec.memory > shape.memory:
        node = f"{describe_cpu(shape.cpu)} CPU, {describe_bytes(shape.memory)}"
        return f"one task ({size}) is larger than a node ({node})", f"spec.roles.{role}"
    if numa.aligned(job, shape) and not numa.fits(shape, [int(spec.cpu)]):
        return f"one task ({size}) {numa.refusal(shape, int(spec.cpu))}", f"spec.roles.{role}"
    where = f"the {counts[pool]} node(s) of pool {pool}" if pool != NO_POOL else f"the {counts[pool]} node(s)"
    if mode == "colocated" and role == "worker":
        home = index // job.topology.workers_per_server
        if home >= job.roles["ps"].replicas:
            return (f"more workers than {job.roles['ps'].replicas} PS x {job.topology.workers_per_server}: "
                    "no PS to join"), replicas
        ps_node = next((n for n in nodes if home in n.ps), None)
        if ps_node is None:
            return "their PS is Pending, and a worker must run beside it (required pod affinity)", \
                "spec.roles.ps.replicas"
        if ps_node.pool != pool:
            return (f"colocated needs PS and workers in one node pool (ps: {ps_node.pool}, worker: {pool})",
                    "spec.topology.nodePools")
        return f"no room ({size}) left beside their PS on its node", "spec.topology.workersPerServer"
    if spec.gpu and all(n.gpu < spec.gpu for n in nodes if n.pool == pool):  # the GPUs ran out first
        return (f"needs {spec.gpu} GPU(s) on one node, and no node of {where} ({node_gpus} GPUs each) has that many "
                "left", f"spec.roles.{role}.gpu")
    if role == "ps" and mode in ("colocated", "isolated") or (mode == "spread" and job.topology.spread == "required"):
        others = "another PS or a worker" if mode == "isolated" else "another PS"
        asks = "spec.topology.spread" if mode == "spread" else replicas  # spread: required is what asks for it
        return f"needs a node without {others} (required anti-affinity) and {where} are taken", asks
    if role == "worker" and mode == "isolated":
        return f"needs {size} on a node without a PS; {where} are full or hold PS", replicas
    return f"no room for {size} on {where}", replicas


def check(job: TrainingJob, profile: ClusterProfile) -> list[Problem]:
    """Tasks that would stay Pending on the nodes the profile counts: a warning on the field that asks for
    them (nodes may be added, so not an error; what no node could ever hold is topology.check's error)."""
    pools = {pool_of(job, profile, role) for role in job.roles}
    counts = {(pool or NO_POOL): profile.node_count_for(pool) for pool in pools}
    if all(count is None for count in counts.values()):
        return []  # no count: every task finds a node, as far as the profile says
    return [Problem(f"{p.tasks} would stay Pending: {p.reason}", p.field, severity=WARNING)
            for p in _pack(job, profile, job.topology.mode, counts).pending]


def _shares(job: TrainingJob, profile: ClusterProfile, packing: Packing, counts) -> tuple[Share, ...]:
    found = []
    for pool, count in counts.items():
        if count is None:
            continue
        shape = profile.node_for(None if pool == NO_POOL else pool)
        members = [r for r in job.roles.values() if (pool_of(job, profile, r.name) or NO_POOL) == pool]
        cpu = sum((r.cpu * r.replicas for r in members), Fraction(0))
        memory = sum((r.memory * r.replicas for r in members), Fraction(0))
        found.append(Share(pool, packing.nodes.get(pool, 0), count, cpu / (count * shape.cpu),
                           memory / (count * shape.memory)))
    return tuple(found)
