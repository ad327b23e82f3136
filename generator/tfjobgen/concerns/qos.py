"""CPU and memory: Guaranteed pods on whole CPUs for qos cpuset, CFS shares for qos shared.

The kubelet's static CPU manager gives a container exclusive cores only when
its pod is Guaranteed (every container's requests == limits, for cpu and
memory) and its CPU count is a whole number. `apply` therefore sizes every
container of a pod, init and sidecar containers included, not just the
training container.

The static policy also refuses to start unless the kubelet reserves CPU for the
system (kube-reserved + system-reserved, or --reserved-cpus, rounded up to whole
CPUs): pods get the node's CPUs minus those. The profile says how many
(`reservedCpus`), and `check_profile` says so when it does not.
"""

from __future__ import annotations

import math
from fractions import Fraction

from ..inputs.problems import WARNING, Problem
from ..inputs.profile import ClusterProfile
from ..inputs.quantity import cpu_text, describe_bytes, describe_cpu
from ..inputs.trainingjob import MIN_TASK_MEMORY, TrainingJob
from ..shared import contract
from . import topology



def cpu_limit(job: TrainingJob, role: str) -> Fraction | None:
    """The CPU limit of a role's containers (None: no limit, qos shared only)."""
    spec = job.roles[role]
    return spec.cpu if job.qos == "cpuset" else spec.cpu_limit


def cpu_budget(job: TrainingJob, role: str) -> int:
    """Whole CPUs a task may use: its limit, else its request, rounded up."""
    spec = job.roles[role]
    return max(1, math.ceil(cpu_limit(job, role) or spec.cpu))


def gpu_resources(job: TrainingJob, profile: ClusterProfile, role: str) -> dict:
    """The role's GPUs as the device plugin's extended resource ({} when none). Extended resources
    cannot be overcommitted: Kubernetes requires their request to equal their limit."""
    count = job.roles[role].gpu
    return {profile.gpu.resource: str(count)} if count and profile.gpu is not None else {}


def resources(job: TrainingJob, role: str) -> dict:
    spec = job.roles[role]
    requests = {"cpu": cpu_text(spec.cpu), "memory": spec.memory_text}
    limits = {"memory": spec.memory_text}
    limit = cpu_limit(job, role)
    if limit is not None:
        limits["cpu"] = cpu_text(limit)
    return {"limits": limits, "requests": requests}


def apply(pod_spec: dict, job: TrainingJob, profile: ClusterProfile, role: str) -> dict:
    """Size every container of `pod_spec` for the role's QoS; the GPUs go to the training container
    only (GPUs do not count towards a pod's QoS class, CPU and memory do)."""
    gpus = gpu_resources(job, profile, role)
    for key in ("initContainers", "containers"):
        for container in pod_spec.get(key, []):
            sized = resources(job, role)
            if gpus and container["name"] == contract.CONTAINER_NAME:
                sized = {"limits": {**sized["limits"], **gpus}, "requests": {**sized["requests"], **gpus}}
            container["resources"] = sized
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
        if role.memory < MIN_TASK_MEMORY:
            written = role.memory_text
            amount = describe_bytes(role.memory) if role.memory >= 1024 else f"{math.ceil(role.memory)} byte(s)"
            hint = f": did you mean {written}Gi?" if written.isdigit() else ""
            problems.append(Problem(
                f"{written} is {amount}; a TensorFlow task needs at least {describe_bytes(Fraction(MIN_TASK_MEMORY))} "
                f"(importing TensorFlow alone takes about 600 MB){hint}", f"{where}.memory"))
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
            source = topology.pool_source(job, profile, role.name)  # "": the job's own nodePools chose it
            named = f"node pool '{pool}'" + (f" ({source})" if source else "")
            for key, value in sorted(profile.cpu_manager_selector.items()):
                if key in pool_selector and pool_selector[key] != value:
                    problems.append(Problem(
                        f"{named} selects {key}={pool_selector[key]} but the CPU-manager nodes have {key}={value}: "
                        "no node can satisfy both" + (": set spec.qos: shared, or run the static CPU manager on the "
                                                      "pool's nodes" if source else ""),
                        "spec.qos" if source else f"spec.topology.nodePools.{role.name}"))
    return problems


def check_profile(profile: ClusterProfile) -> list[Problem]:
    """A CPU reservation the kubelet refuses with the static policy, whatever the jobs."""
    if not profile.cpu_manager_selector:
        return []
    return [Problem("the kubelet refuses the static CPU manager policy without a CPU reservation (kube-reserved + "
                    "system-reserved, or --reserved-cpus): at least 1 on CPU-manager nodes", f"{at}.reservedCpus")
            for at, shape in profile.own_node_shapes if shape.reserved_cpus == 0]


def check_profile_for(profile: ClusterProfile, jobs: list[TrainingJob]) -> list[Problem]:
    """Where cpuset pods go, and what CPUs they can get there: warnings that matter only to a build with
    qos cpuset jobs (said once per build, by pipeline.check_all)."""
    if not any(job.qos == "cpuset" for job in jobs):
        return []
    if not profile.cpu_manager_selector:
        if profile.embedded:  # nobody wrote this profile: say whose it is, and where the setting belongs
            return [Problem(
                "the embedded default profile (no --profile was given) names no CPU-manager nodes, so on a cluster "
                "qos cpuset pods may land on nodes without the static CPU manager policy and share cores: give "
                "--profile FILE, your cluster's profile, with its cpuManager.nodeSelector",
                "spec.cpuManager.nodeSelector", severity=WARNING)]
        return [Problem(
            f"profile '{profile.name}' names no CPU-manager nodes, so qos cpuset pods may land on nodes without "
            "the static CPU manager policy and share cores: set cpuManager.nodeSelector (kubernetes.io/os: linux "
            "when every node runs it)", "spec.cpuManager.nodeSelector", severity=WARNING)]
    return [Problem(
        f"{at}.cpu ({describe_cpu(shape.cpu)}) is taken as what pods get, but the static CPU manager needs "
        "the kubelet to reserve at least one CPU for the system, so cpuset pods get at most "
        f"{describe_cpu(shape.cpu - 1)}: set {at}.reservedCpus to the kubelet's reservation",
        f"{at}.reservedCpus", severity=WARNING)
        for at, shape in profile.own_node_shapes if shape.reserved_cpus is None]

