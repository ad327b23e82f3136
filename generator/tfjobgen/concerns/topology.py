"""Placement: where each task may run, from spec.topology and the profile, with no hand-labelled nodes.

Every rule is pod (anti-)affinity on kubernetes.io/hostname against the pods'
own labels, so the scheduler finds the servers itself. The rules are chosen so
that the layout holds whatever order the pods arrive in (docs/schedulers.md has the
guarantees, measured on the real kube-scheduler):

- colocated: PS g and the workers of its group (worker w is in group
  w // workersPerServer) carry the label tfjobgen.dev/group=g. A PS keeps off
  servers with pods of other tfjobgen jobs or of its own job's other groups,
  and, the rule being symmetric, keeps them off its server afterwards: the
  room beside it stays its group's. Workers need their group's PS on their server.
- isolated: PS repel the job's PS and workers; workers repel the job's PS and
  prefer servers that already run the job's workers, so they pack and leave
  whole servers free for a PS that comes late or is replaced.
- spread:   PS repel PS, preferred (weighted) or required.
- none:     no rule.

Colocated PS and isolated workers also set one topology spread constraint (the
job's PS across servers, ScheduleAnyway), which weighs nothing where the rules
already keep PS one to a server. A pod that sets constraints of its own gets no
system default spreading, which would otherwise pull the job's pods apart (its
headless Service selects them all): it would undo the packing of isolated
workers and send a replaced colocated PS away from its group.

A profile whose gang scheduler places groups itself (spec.gang.colocatedGroups: scheduler; gang.py
writes what it reads) gives colocated pods none of these rules: the group label stays, and the
gang scheduler puts each group on one server without preempting anyone. Volcano's task-topology
also keeps groups apart; Kubernetes' PodGroup topology constraint does not, so there each PS keeps
one rule, required anti-affinity to the job's other groups (one PS per server).

Optional node pools add a nodeSelector and tolerations per role; isolated jobs
get the profile's isolatedPools for roles they name no pool for. The profile's
priorityClasses name a class for PS and chief pods and one for workers and
evaluators, so a pending PS can preempt workers in its way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..inputs.problems import WARNING, Problem
from ..inputs.profile import ClusterProfile
from ..inputs.quantity import describe_bytes, describe_cpu
from ..inputs.trainingjob import TrainingJob
from . import gang_schedulers, labels

HOSTNAME = "kubernetes.io/hostname"
REQUIRED, PREFERRED = "requiredDuringSchedulingIgnoredDuringExecution", "preferredDuringSchedulingIgnoredDuringExecution"
# Isolated workers' preference for servers with the job's workers. The scheduler normalises the
# inter-pod affinity score across servers, so the weight only counts against other preferred terms.
PACKING_WEIGHT = 100
# The profile's priorityClasses key for each role's pods.
PRIORITY_CLASS_OF = {"ps": "ps", "chief": "ps", "worker": "worker", "evaluator": "worker"}


@dataclass(frozen=True)
class Placement:
    """Where one task's pod may run, and how it competes for a server."""

    affinity: dict = field(default_factory=dict)
    node_selector: dict = field(default_factory=dict)
    tolerations: tuple[dict, ...] = ()
    topology_spread: tuple[dict, ...] = ()
    priority_class: str | None = None
    labels: dict = field(default_factory=dict)  # pod labels the rules select on (the colocated group)


def group_of(job: TrainingJob, role: str, index: int) -> int:
    """colocated: the group of PS `index` (its own) or of worker `index` (the seed's INDEX = i // 10)."""
    return index if role == "ps" else index // job.topology.workers_per_server


def groups_by_scheduler(job: TrainingJob, profile: ClusterProfile) -> bool:
    """colocated, and the profile's gang scheduler keeps each group on one server (not pod affinity)."""
    return job.topology.mode == "colocated" and profile.gang.colocated_groups == "scheduler"


def priority_class(profile: ClusterProfile, role: str) -> str | None:
    """The PriorityClass of a role's pods: the profile's for the role; under Kubernetes' own gang, one class for
    the whole job, the PS's (else the workers'), since kube-scheduler 1.37 refuses to schedule a PodGroup
    whose pods' priorities differ from the group's ("all pods in a single pod group should have the same
    priority"; measured): the group, not the PS, then preempts what is in its way."""
    if gang_schedulers.of(profile).one_priority:
        return profile.priority_classes.get("ps") or profile.priority_classes.get("worker")
    return profile.priority_classes.get(PRIORITY_CLASS_OF[role])


def roles_needing_own_objects(job: TrainingJob) -> set[str]:
    """Roles whose tasks differ in placement or are selected by index, so each task needs its own object."""
    if job.topology.mode == "colocated":
        return {"ps", "worker"}  # each PS and each worker names its own group
    return set()


def pools(job: TrainingJob, profile: ClusterProfile) -> dict[str, str]:
    """role -> node pool name: the job's own choice, else the profile's GPU pool for roles that ask
    for GPUs, else (isolated jobs) the profile's default."""
    chosen = dict(job.topology.node_pools)
    if profile.gpu is not None and profile.gpu.node_pool is not None:
        for role in job.gpu_roles:
            chosen.setdefault(role, profile.gpu.node_pool)
    if job.topology.mode == "isolated":
        for role, pool in profile.isolated_pools.items():
            if role in job.roles:
                chosen.setdefault(role, pool)
    return chosen


def pool_source(job: TrainingJob, profile: ClusterProfile, role: str) -> str:
    """Who chose the role's node pool, in the words of a message: "" (the job itself, or no pool), the
    profile's GPU pool, or the profile's isolatedPools (the order `pools` applies them in)."""
    if role in job.topology.node_pools or role not in pools(job, profile):
        return ""
    if role in job.gpu_roles and profile.gpu is not None and profile.gpu.node_pool is not None:
        return "the profile's GPU pool, spec.gpu.nodePool"
    return f"the profile's isolatedPools.{role}"


def _term(selector: dict, **scope) -> dict:
    return {"labelSelector": selector, "topologyKey": HOSTNAME, **scope}


def _other_jobs(job: TrainingJob) -> dict:
    """A term for every tfjobgen pod of another job, in any namespace (namespaceSelector {})."""
    return _term({"matchExpressions": [{"key": labels.JOB, "operator": "Exists"},
                                       {"key": labels.JOB, "operator": "NotIn", "values": [job.name]}]},
                 namespaceSelector={})


def _other_groups(job: TrainingJob, group: int) -> dict:
    """A term for the job's pods outside group `group` (its other PS and workers, its chief, its evaluator)."""
    return _term({"matchExpressions": [{"key": labels.GROUP, "operator": "NotIn", "values": [str(group)]}],
                  "matchLabels": labels.job_selector(job)})


def _affinity(job: TrainingJob, role: str, index: int) -> dict:
    mode = job.topology.mode
    if mode == "colocated" and role == "ps":
        return {"podAntiAffinity": {REQUIRED: [_other_jobs(job), _other_groups(job, index)]}}
    if mode == "colocated" and role == "worker":
        return {"podAffinity": {REQUIRED: [_term(labels.group_selector(job, "ps", group_of(job, role, index)))]}}
    if mode == "isolated" and role == "ps":
        return {"podAntiAffinity": {REQUIRED: [_term(labels.role_selector(job, "ps", "worker"))]}}
    if mode == "isolated" and role == "worker":
        return {"podAffinity": {PREFERRED: [{"podAffinityTerm": _term(labels.role_selector(job, "worker")),
                                             "weight": PACKING_WEIGHT}]},
                "podAntiAffinity": {REQUIRED: [_term(labels.role_selector(job, "ps"))]}}
    if mode == "spread" and role == "ps":
        term = _term(labels.role_selector(job, "ps"))
        if job.topology.spread == "required":
            return {"podAntiAffinity": {REQUIRED: [term]}}
        return {"podAntiAffinity": {PREFERRED: [{"podAffinityTerm": term, "weight": job.topology.spread_weight}]}}
    return {}


def _topology_spread(job: TrainingJob, role: str) -> tuple[dict, ...]:
    """The constraint that replaces the scheduler's system default spreading (see the module docstring)."""
    if (job.topology.mode, role) in (("colocated", "ps"), ("isolated", "worker")):
        return ({"labelSelector": labels.role_selector(job, "ps"), "maxSkew": 1, "topologyKey": HOSTNAME,
                 "whenUnsatisfiable": "ScheduleAnyway"},)
    return ()


def placement(job: TrainingJob, profile: ClusterProfile, role: str, index: int) -> Placement:
    pool_name = pools(job, profile).get(role)
    pool = profile.node_pools[pool_name] if pool_name else None
    grouped = job.topology.mode == "colocated" and role in ("ps", "worker")
    by_scheduler = grouped and groups_by_scheduler(job, profile)
    affinity = _affinity(job, role, index)
    if by_scheduler:
        apart = role == "ps" and not gang_schedulers.of(profile).keeps_groups_apart
        affinity = {"podAntiAffinity": {REQUIRED: [_other_groups(job, index)]}} if apart else {}
    return Placement(
        affinity=affinity,
        node_selector=dict(pool.node_selector) if pool else {},
        tolerations=pool.tolerations if pool else (),
        topology_spread=() if by_scheduler else _topology_spread(job, role),
        priority_class=priority_class(profile, role),
        labels={labels.GROUP: str(group_of(job, role, index))} if grouped else {},
    )


# ---- checks -------------------------------------------------------------------------------------

def check(job: TrainingJob, profile: ClusterProfile) -> list[Problem]:
    problems = _check_pools(job, profile) + _check_gpu(job, profile)
    if problems:
        return problems
    chosen = pools(job, profile)
    for role in job.roles.values():
        node = profile.node_for(chosen.get(role.name))
        if role.cpu > node.cpu or role.memory > node.memory:
            problems.append(Problem(
                f"one {role.name} ({describe_cpu(role.cpu)} CPU, {describe_bytes(role.memory)}) does not fit "
                f"on a node ({describe_cpu(node.cpu)} CPU, {describe_bytes(node.memory)} in profile "
                f"'{profile.name}'{_pool_note(job, profile, role.name)})", f"spec.roles.{role.name}"))
    if job.topology.mode == "colocated" and not problems:
        problems += _check_colocated(job, profile)
    if all(p.severity == WARNING for p in problems):  # what fits a node may still fit none of its NUMA nodes
        from . import numa  # it reads this module's pools()

        problems += numa.check(job, profile)
    return problems + _relies_on_profile(job, profile)


def _relies_on_profile(job: TrainingJob, profile: ClusterProfile) -> list[Problem]:
    """Warnings where a topology needs something the profile does not give (a real profile's only: a cluster
    shared with other jobs). Colocated by affinity is not kept beside other jobs, PriorityClasses or not
    (docs/schedulers.md, measured on the real scheduler): only a gang scheduler that keeps groups keeps it."""
    if profile.embedded or job.topology.mode != "colocated" or groups_by_scheduler(job, profile):
        return []
    keeping = gang_schedulers.named(row for row in gang_schedulers.SCHEDULERS.values() if row.keeps_groups)
    instead = (f"set spec.gang.colocatedGroups: scheduler in profile '{profile.name}' with a gang scheduler that keeps "
               f"groups ({keeping}), or run the job on a cluster of its own")
    if "ps" not in profile.priority_classes:
        return [Problem(
            "on a cluster shared with other jobs a colocated PS can wait indefinitely for a server free of their "
            f"pods: name a PS PriorityClass in profile '{profile.name}' (spec.priorityClasses.ps) so it preempts "
            f"workers in its way, or better, {instead}", "spec.topology.mode", severity=WARNING)]
    return [Problem(
        "on a cluster shared with other jobs a PS PriorityClass does not keep colocated groups whole: the PS "
        "preempts other jobs' workers, their controllers recreate them, and they may be bound first, leaving groups "
        f"unplaced (measured on the real kube-scheduler, docs/schedulers.md): {instead}",
        "spec.topology.mode", severity=WARNING)]


def _pool_note(job: TrainingJob, profile: ClusterProfile, role: str) -> str:
    pool = pools(job, profile).get(role)
    if pool is None:
        return ""
    source = pool_source(job, profile, role)
    return f", node pool '{pool}'" + (f" from {source}" if source else "")


def _check_pools(job: TrainingJob, profile: ClusterProfile) -> list[Problem]:
    problems = []
    for role, pool in sorted(job.topology.node_pools.items()):
        if role not in job.roles:
            problems.append(Problem(f"the job has no {role} role", f"spec.topology.nodePools.{role}"))
        elif pool not in profile.node_pools:
            known = ", ".join(profile.node_pools) or "none"
            problems.append(Problem(
                f"no node pool '{pool}' in profile '{profile.name}' (pools: {known})",
                f"spec.topology.nodePools.{role}"))
    chosen = job.topology.node_pools
    if job.topology.mode == "colocated" and chosen.get("ps") != chosen.get("worker"):
        problems.append(Problem(
            "colocated puts PS and workers on the same servers, so they need the same node pool "
            f"(ps: {chosen.get('ps') or 'any'}, worker: {chosen.get('worker') or 'any'})",
            "spec.topology.nodePools"))
    return problems


def _check_gpu(job: TrainingJob, profile: ClusterProfile) -> list[Problem]:
    """GPU roles need the profile's GPU pool, and nothing that sends them elsewhere."""
    if not job.gpu_roles:
        return []
    if profile.gpu is None:
        return [Problem(f"asks for {job.roles[role].gpu} GPU(s) per task but profile '{profile.name}' has no GPU "
                        "nodes (spec.gpu): use a cluster profile that has them, or set gpu: 0",
                        f"spec.roles.{role}.gpu") for role in job.gpu_roles]
    problems, gpu_pool = [], profile.gpu.node_pool
    for role in job.gpu_roles:
        pool = job.topology.node_pools.get(role)  # an unknown pool is _check_pools' to report
        if gpu_pool is not None and pool is not None and pool != gpu_pool and pool in profile.node_pools:
            problems.append(Problem(f"the {role} tasks ask for GPUs, which only pool '{gpu_pool}' has "
                                    f"(profile spec.gpu.nodePool): name '{gpu_pool}' or remove the entry",
                                    f"spec.topology.nodePools.{role}"))
        if job.roles[role].gpu > profile.gpu.per_node:
            node = f"a node of pool '{gpu_pool}'" if gpu_pool else f"a node of profile '{profile.name}'"
            problems.append(Problem(f"{job.roles[role].gpu} GPUs per task, but {node} has "
                                    f"{profile.gpu.per_node} (profile spec.gpu.perNode)", f"spec.roles.{role}.gpu"))
    chosen = pools(job, profile)
    if job.topology.mode == "colocated" and chosen.get("ps") != chosen.get("worker") and not problems:
        problems.append(Problem(
            f"colocated puts PS beside their workers, and GPU tasks run in pool '{gpu_pool}': set "
            f"spec.topology.nodePools ps and worker to '{gpu_pool}', or use another topology",
            "spec.topology.nodePools"))
    return problems


def _check_colocated(job: TrainingJob, profile: ClusterProfile) -> list[Problem]:
    ps, worker = job.roles["ps"], job.roles["worker"]
    per_server = job.topology.workers_per_server
    problems = []
    groups_needed = math.ceil(worker.replicas / per_server)
    if groups_needed > ps.replicas:
        problems.append(Problem(
            f"{worker.replicas} workers in groups of {per_server} need {groups_needed} PS servers, "
            f"but there are {ps.replicas} PS: add PS or raise workersPerServer to "
            f"{math.ceil(worker.replicas / ps.replicas)}", "spec.roles.worker.replicas"))
    elif groups_needed < ps.replicas:
        problems.append(Problem(
            f"PS {groups_needed}..{ps.replicas - 1} get no workers beside them: {worker.replicas} workers "
            f"fill {groups_needed} groups of {per_server}", "spec.roles.ps.replicas", severity=WARNING))
    pool = job.topology.node_pools.get("ps")
    node = profile.node_for(pool)
    group = min(per_server, worker.replicas)
    cpu, memory = ps.cpu + group * worker.cpu, ps.memory + group * worker.memory
    if cpu > node.cpu or memory > node.memory:
        fits = min((node.cpu - ps.cpu) // worker.cpu, (node.memory - ps.memory) // worker.memory)
        remedy = f"lower workersPerServer to {fits} or shrink the tasks" if fits >= 1 else \
            "not even one worker fits beside the PS: shrink the tasks"
        where = f"node pool '{pool}' of profile '{profile.name}'" if pool else f"profile '{profile.name}'"
        problems.append(Problem(
            f"a colocated group is 1 PS ({describe_cpu(ps.cpu)} CPU, {describe_bytes(ps.memory)}) + {group} "
            f"workers ({describe_cpu(worker.cpu)} CPU, {describe_bytes(worker.memory)} each) = "
            f"{describe_cpu(cpu)} CPU, {describe_bytes(memory)}, more than one node holds "
            f"({describe_cpu(node.cpu)} CPU, {describe_bytes(node.memory)} in {where}): {remedy}",
            "spec.topology.workersPerServer"))
    return problems
