"""CPU and memory: Guaranteed pods on whole CPUs for qos cpuset, CFS shares for qos shared.

The kubelet's static CPU manager gives a container exclusive cores only when
its pod is Guaranteed (every container's requests == limits, for cpu and
memory) and its CPU count is a whole number. `apply` therefore sizes every
container of a pod, init and sidecar containers included, not just the
training container.
"""

from __future__ import annotations

import math
from fractions import Fraction

from . import topology
from .model import TrainingJob
from .problems import Problem
from .profile import ClusterProfile
from .quantity import cpu_text, describe_cpu


def cpu_limit(job: TrainingJob, role: str) -> Fraction | None:
    """The CPU limit of a role's containers (None: no limit, qos shared only)."""
    spec = job.roles[role]
    return spec.cpu if job.qos == "cpuset" else spec.cpu_limit


def cpu_budget(job: TrainingJob, role: str) -> int:
    """Whole CPUs a task may use: its limit, else its request, rounded up."""
    spec = job.roles[role]
    return max(1, math.ceil(cpu_limit(job, role) or spec.cpu))


def resources(job: TrainingJob, role: str) -> dict:
    spec = job.roles[role]
    requests = {"cpu": cpu_text(spec.cpu), "memory": spec.memory_text}
    limits = {"memory": spec.memory_text}
    limit = cpu_limit(job, role)
    if limit is not None:
        limits["cpu"] = cpu_text(limit)
    return {"limits": limits, "requests": requests}


def apply(pod_spec: dict, job: TrainingJob, role: str) -> dict:
    """Size every container of `pod_spec` for the role's QoS."""
    for key in ("initContainers", "containers"):
        for container in pod_spec.get(key, []):
            container["resources"] = resources(job, role)
    return pod_spec


def node_selection(job: TrainingJob, profile: ClusterProfile) -> tuple[dict, tuple[dict, ...]]:
    """nodeSelector and tolerations that send cpuset pods to the CPU-manager nodes."""
    if job.qos != "cpuset":
        return {}, ()
    return dict(profile.cpu_manager_selector), profile.cpu_manager_tolerations


def check(job: TrainingJob, profile: ClusterProfile) -> list[Problem]:
    problems = []
    for role in job.roles.values():
        where = f"spec.roles.{role.name}"
        if role.cpu <= 0:
            problems.append(Problem("must be more than 0", f"{where}.cpu"))
        if role.memory <= 0:
            problems.append(Problem("must be more than 0", f"{where}.memory"))
        if job.qos == "cpuset":
            if role.cpu.denominator != 1:
                problems.append(Problem(
                    f"qos cpuset needs whole CPUs for the kubelet's CPU manager, got {describe_cpu(role.cpu)}: "
                    f"use {max(1, math.ceil(role.cpu))} or set spec.qos: shared", f"{where}.cpu"))
            if role.cpu_limit is not None and role.cpu_limit != role.cpu:
                problems.append(Problem(
                    "under qos cpuset the CPU limit always equals cpu: remove cpuLimit", f"{where}.cpuLimit"))
        elif role.cpu_limit is not None and role.cpu_limit < role.cpu:
            problems.append(Problem(
                f"the limit {describe_cpu(role.cpu_limit)} is below the request {describe_cpu(role.cpu)}",
                f"{where}.cpuLimit"))
        pool = topology.pools(job, profile).get(role.name)
        if job.qos == "cpuset" and pool in profile.node_pools:
            pool_selector = profile.node_pools[pool].node_selector
            own = role.name in job.topology.node_pools  # else the profile's isolatedPools chose it
            named = f"node pool '{pool}'" if own else f"node pool '{pool}' (the profile's isolatedPools.{role.name})"
            for key, value in sorted(profile.cpu_manager_selector.items()):
                if key in pool_selector and pool_selector[key] != value:
                    problems.append(Problem(
                        f"{named} selects {key}={pool_selector[key]} but the CPU-manager nodes have {key}={value}: "
                        "no node can satisfy both", f"spec.topology.nodePools.{role.name}" if own else "spec.qos"))
    return problems
