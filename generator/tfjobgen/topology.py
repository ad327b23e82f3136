"""Placement: where each task may run, from spec.topology, with no hand-labelled nodes.

Everything is pod (anti-)affinity on kubernetes.io/hostname against the job's
own labels, so the scheduler finds the servers itself:

- colocated: PS repel each other (one per server); worker w needs PS w // k on
  its server, k = workersPerServer. The seed's 20 x (10 + 1) comes out as
  20 servers each holding PS i and workers 10i..10i+9.
- isolated:  PS repel PS and workers, workers repel PS: no server mixes them.
- spread:    PS repel PS, preferred (weighted) or required.
- none:      no rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from . import labels
from .model import TrainingJob
from .problems import WARNING, Problem
from .profile import ClusterProfile
from .quantity import describe_bytes, describe_cpu

HOSTNAME = "kubernetes.io/hostname"


@dataclass(frozen=True)
class Placement:
    """Where one task's pod may run."""

    affinity: dict = field(default_factory=dict)
    node_selector: dict = field(default_factory=dict)
    tolerations: tuple[dict, ...] = ()


def group_of(job: TrainingJob, worker_index: int) -> int:
    """colocated: the PS whose server worker `worker_index` shares (the seed's INDEX = i // 10)."""
    return worker_index // job.topology.workers_per_server


def roles_needing_own_objects(job: TrainingJob) -> set[str]:
    """Roles whose tasks differ in placement or are selected by index, so each task needs its own object."""
    if job.topology.mode == "colocated":
        return {"ps", "worker"}  # workers follow their PS by its index label
    return set()


def _term(selector: dict) -> dict:
    return {"labelSelector": selector, "topologyKey": HOSTNAME}


def _affinity(job: TrainingJob, role: str, index: int) -> dict:
    mode = job.topology.mode
    if mode == "colocated" and role == "ps":
        return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            _term(labels.role_selector(job, "ps"))]}}
    if mode == "colocated" and role == "worker":
        return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            _term(labels.task_selector(job, "ps", group_of(job, index)))]}}
    if mode == "isolated" and role == "ps":
        return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            _term(labels.role_selector(job, "ps", "worker"))]}}
    if mode == "isolated" and role == "worker":
        return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            _term(labels.role_selector(job, "ps"))]}}
    if mode == "spread" and role == "ps":
        term = _term(labels.role_selector(job, "ps"))
        if job.topology.spread == "required":
            return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
        return {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": job.topology.spread_weight, "podAffinityTerm": term}]}}
    return {}


def placement(job: TrainingJob, profile: ClusterProfile, role: str, index: int) -> Placement:
    pool_name = job.topology.node_pools.get(role)
    pool = profile.node_pools[pool_name] if pool_name else None
    return Placement(
        affinity=_affinity(job, role, index),
        node_selector=dict(pool.node_selector) if pool else {},
        tolerations=pool.tolerations if pool else (),
    )


def check(job: TrainingJob, profile: ClusterProfile) -> list[Problem]:
    problems = _check_pools(job, profile)
    if problems:
        return problems
    for role in job.roles.values():
        node = profile.node_for(job.topology.node_pools.get(role.name))
        if role.cpu > node.cpu or role.memory > node.memory:
            problems.append(Problem(
                f"one {role.name} ({describe_cpu(role.cpu)} CPU, {describe_bytes(role.memory)}) does not fit "
                f"on a node ({describe_cpu(node.cpu)} CPU, {describe_bytes(node.memory)} in profile "
                f"'{profile.name}')", f"spec.roles.{role.name}"))
    if job.topology.mode == "colocated" and not problems:
        problems += _check_colocated(job, profile)
    return problems


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
    pools = job.topology.node_pools
    if job.topology.mode == "colocated" and pools.get("ps") != pools.get("worker"):
        problems.append(Problem(
            "colocated puts PS and workers on the same servers, so they need the same node pool "
            f"(ps: {pools.get('ps') or 'any'}, worker: {pools.get('worker') or 'any'})",
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
    node = profile.node_for(job.topology.node_pools.get("ps"))
    group = min(per_server, worker.replicas)
    cpu, memory = ps.cpu + group * worker.cpu, ps.memory + group * worker.memory
    if cpu > node.cpu or memory > node.memory:
        fits = min((node.cpu - ps.cpu) // worker.cpu, (node.memory - ps.memory) // worker.memory)
        remedy = f"lower workersPerServer to {fits} or shrink the tasks" if fits >= 1 else \
            "not even one worker fits beside the PS: shrink the tasks"
        problems.append(Problem(
            f"a colocated group is 1 PS ({describe_cpu(ps.cpu)} CPU, {describe_bytes(ps.memory)}) + {group} "
            f"workers ({describe_cpu(worker.cpu)} CPU, {describe_bytes(worker.memory)} each) = "
            f"{describe_cpu(cpu)} CPU, {describe_bytes(memory)}, more than one node holds "
            f"({describe_cpu(node.cpu)} CPU, {describe_bytes(node.memory)} in profile '{profile.name}'): {remedy}",
            "spec.topology.workersPerServer"))
    return problems
