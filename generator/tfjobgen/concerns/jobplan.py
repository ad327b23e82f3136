"""The plan: a validated job turned into what each of its tasks needs, before any backend.

    JobPlan
      roles: RolePlan per role       replicas, and whether its tasks share one pod template
        tasks: TaskPlan per task     role, index, hostname, address, pod template
      cluster: the TF cluster spec   every address TF_CONFIG lists (the training tasks; the TFJob operator adds the evaluator)
      config_data                    the job's ConfigMap (cluster spec, endpoint map)

It is plain data: a backend only decides which Kubernetes objects carry these
pod templates (native: batch/v1 Jobs). Names come from the backend's `Naming`
(what its controller calls each pod), everything else from one concern module
each: topology -> affinity and node pools, qos -> resources and CPU-manager
nodes, environment -> env, container -> image, command and security, lifecycle ->
the restart policy (the failure rules themselves go on the backend's objects).

Tasks of a role that share a template share the very same dict, so a job of
thousands of tasks costs one template per role. Treat templates as read-only:
a backend that needs a variant copies the part it changes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..inputs.profile import ClusterProfile
from ..inputs.trainingjob import TrainingJob
from ..shared import contract
from . import container, environment, labels, lifecycle, names, podspec, qos, topology, volumes
from .names import Naming
from .volumes import CLUSTER_VOLUME, SCRATCH_VOLUME


@dataclass(frozen=True)
class TaskPlan:
    role: str
    index: int
    hostname: str  # the pod's hostname, as its controller sets it
    address: str  # host:port of its TF server, as TF_CONFIG lists it
    template: dict  # its pod template (the role's shared one unless the role is per_task)


@dataclass(frozen=True)
class RolePlan:
    role: str
    replicas: int
    per_task: bool  # True: each task has its own template (its placement or labels differ)
    tasks: tuple[TaskPlan, ...]

    @property
    def template(self) -> dict:
        """The template the role's tasks share (per_task roles: task 0's)."""
        return self.tasks[0].template


@dataclass(frozen=True)
class JobPlan:
    job: TrainingJob
    profile: ClusterProfile
    naming: Naming
    roles: tuple[RolePlan, ...]
    cluster: dict[str, tuple[str, ...]]  # role -> addresses, the TF cluster spec (training roles only)
    config_data: dict[str, str]  # the job's ConfigMap: cluster spec, endpoint map

    @property
    def tasks(self) -> tuple[TaskPlan, ...]:
        return tuple(task for role in self.roles for task in role.tasks)

    def role(self, name: str) -> RolePlan:
        return next(r for r in self.roles if r.role == name)


def build(job: TrainingJob, profile: ClusterProfile, naming: Naming) -> JobPlan:
    own_objects = topology.roles_needing_own_objects(job)
    cluster = environment.cluster_spec(job, profile, naming)
    roles = []
    for name, spec in job.roles.items():
        per_task = profile.task_objects == "per-task" or name in own_objects
        shared = None if per_task else pod_template(job, profile, naming, name, None)
        tasks = tuple(
            TaskPlan(name, i, naming.hostname(job, name, i), naming.address(job, profile, name, i),
                     shared if shared is not None else pod_template(job, profile, naming, name, i))
            for i in range(spec.replicas))
        roles.append(RolePlan(name, spec.replicas, per_task, tasks))
    config = {contract.CLUSTER_KEY: contract.cluster_json(cluster)}
    if job.uses_star_server:
        config[contract.ENDPOINT_MAP_KEY] = environment.endpoint_map(job, profile, cluster)
    return JobPlan(job, profile, naming, tuple(roles), cluster, config)


def _tolerations(*groups: tuple[dict, ...]) -> list[dict]:
    seen, result = set(), []
    for toleration in (t for group in groups for t in group):
        key = json.dumps(toleration, sort_keys=True)
        if key not in seen:
            seen.add(key)
            result.append(toleration)
    return result


def pod_template(job: TrainingJob, profile: ClusterProfile, naming: Naming, role: str, index: int | None) -> dict:
    """Task `index` of `role`; index None: the template all of the role's tasks share."""
    place = topology.placement(job, profile, role, index or 0)
    cpu_nodes, cpu_tolerations = qos.node_selection(job, profile)
    mounts = [{"mountPath": contract.SCRATCH_DIR, "name": SCRATCH_VOLUME}]
    own_volumes = [{"emptyDir": {}, "name": SCRATCH_VOLUME}]
    if job.uses_star_server:
        mounts.append({"mountPath": contract.ENDPOINT_MAP_DIR, "name": CLUSTER_VOLUME, "readOnly": True})
        own_volumes.append({"configMap": {
            "items": [{"key": contract.ENDPOINT_MAP_KEY, "path": contract.ENDPOINT_MAP_KEY}],
            "name": names.cluster_config(job)}, "name": CLUSTER_VOLUME})
    if container.wraps(job):  # the entrypoint, copied in by an init container; the training container only runs it
        mounts.append({"mountPath": contract.ENTRY_DIR, "name": container.ENTRY_VOLUME, "readOnly": True})
        own_volumes.append({"emptyDir": {}, "name": container.ENTRY_VOLUME})
    mounts += volumes.mounts(job, role)  # the intent's, after tfjobgen's own (volumes.check keeps them apart)
    training = {
        "command": container.command(job, role),
        "env": environment.env(job, profile, naming, role, index),
        "image": container.image(job, profile, role),
        "imagePullPolicy": container.PULL_POLICY,
        "name": contract.CONTAINER_NAME,
        "ports": container.ports(job, profile, naming) + [container.metrics_port(profile)],
        "securityContext": container.security_context(job),
        "volumeMounts": mounts,
    }
    if container.args(job, role):
        training["args"] = container.args(job, role)
    spec = {
        "automountServiceAccountToken": False,  # the training needs no Kubernetes API access
        "containers": [training],
        "enableServiceLinks": False,  # no env var per Service in the namespace
        **({"initContainers": [container.entry_init_container(job, profile)]} if container.wraps(job) else {}),
        "restartPolicy": lifecycle.RESTART_POLICY,  # a failed task gets a new pod, by the Job's rules
        "securityContext": container.pod_security_context(profile),
        "volumes": own_volumes + volumes.pod_volumes(job, role),
    }
    if place.affinity:
        spec["affinity"] = place.affinity
    if place.topology_spread:
        spec["topologySpreadConstraints"] = list(place.topology_spread)
    if place.priority_class:
        spec["priorityClassName"] = place.priority_class
    node_selector = podspec.node_selector(job, {**place.node_selector, **cpu_nodes})
    if node_selector:
        spec["nodeSelector"] = node_selector
    tolerations = _tolerations(place.tolerations, cpu_tolerations, podspec.tolerations(job))
    if tolerations:
        spec["tolerations"] = tolerations
    if job.service_account:
        spec["serviceAccountName"] = job.service_account
    if job.image_pull_secrets:
        spec["imagePullSecrets"] = podspec.pull_secrets(job)
    qos.apply(spec, job, profile, role)
    # The intent's pod labels win over its metadata.labels; tfjobgen's own win over both (podspec refuses them).
    metadata = {"annotations": {**podspec.annotations(job), labels.TOPOLOGY: job.topology.mode},
                "labels": {**labels.for_task(job, role, index), **podspec.labels(job), **place.labels}}
    return {"metadata": metadata, "spec": spec}
