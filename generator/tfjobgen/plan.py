"""The plan: a validated job turned into what each of its tasks needs, before any backend.

A backend then only decides which Kubernetes objects carry these pod templates
(native: batch/v1 Jobs). Each concern module contributes one part:
topology -> affinity and node pools, qos -> resources and CPU-manager nodes,
tuning -> env, container -> image, command and security.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from . import container, labels, names, qos, topology, tuning
from .model import TrainingJob
from .profile import ClusterProfile

SCRATCH_VOLUME = "scratch"
CLUSTER_VOLUME = "cluster"


@dataclass(frozen=True)
class RolePlan:
    role: str
    replicas: int
    per_task: bool  # True: each task gets its own object (its placement or labels differ)


@dataclass(frozen=True)
class JobPlan:
    job: TrainingJob
    profile: ClusterProfile
    roles: tuple[RolePlan, ...]
    config_data: dict[str, str]  # the job's ConfigMap: cluster spec, endpoint map

    def pod_template(self, role: str, index: int | None) -> dict:
        """Pod template of task `index` of `role`; None for the shared template of an Indexed Job."""
        return pod_template(self.job, self.profile, role, index)


def build(job: TrainingJob, profile: ClusterProfile) -> JobPlan:
    own_objects = topology.roles_needing_own_objects(job)
    roles = tuple(
        RolePlan(name, spec.replicas, profile.task_objects == "per-task" or name in own_objects)
        for name, spec in job.roles.items()
    )
    config = {tuning.CLUSTER_KEY: json.dumps(tuning.cluster_spec(job, profile), sort_keys=True,
                                             separators=(",", ":"))}
    if job.uses_star_server:
        config[tuning.ENDPOINT_MAP_KEY] = tuning.endpoint_map(job, profile)
    return JobPlan(job, profile, roles, config)


def _tolerations(*groups: tuple[dict, ...]) -> list[dict]:
    seen, result = set(), []
    for toleration in (t for group in groups for t in group):
        key = json.dumps(toleration, sort_keys=True)
        if key not in seen:
            seen.add(key)
            result.append(toleration)
    return result


def pod_template(job: TrainingJob, profile: ClusterProfile, role: str, index: int | None) -> dict:
    place = topology.placement(job, profile, role, index or 0)
    cpu_nodes, cpu_tolerations = qos.node_selection(job, profile)
    mounts = [{"mountPath": container.SCRATCH_DIR, "name": SCRATCH_VOLUME}]
    volumes = [{"emptyDir": {}, "name": SCRATCH_VOLUME}]
    if job.uses_star_server:
        mounts.append({"mountPath": tuning.ENDPOINT_MAP_DIR, "name": CLUSTER_VOLUME, "readOnly": True})
        volumes.append({"configMap": {
            "items": [{"key": tuning.ENDPOINT_MAP_KEY, "path": tuning.ENDPOINT_MAP_KEY}],
            "name": names.cluster_config(job)}, "name": CLUSTER_VOLUME})
    training = {
        "command": container.command(job),
        "env": tuning.env(job, profile, role, index),
        "image": container.image(job, profile),
        "name": container.CONTAINER_NAME,
        "ports": container.ports(job, profile),
        "securityContext": container.security_context(job),
        "volumeMounts": mounts,
    }
    if job.args:
        training["args"] = list(job.args)
    spec = {
        "automountServiceAccountToken": False,  # the training needs no Kubernetes API access
        "containers": [training],
        "enableServiceLinks": False,  # no env var per Service in the namespace
        "restartPolicy": "OnFailure",
        "securityContext": container.pod_security_context(profile),
        "volumes": volumes,
    }
    if place.affinity:
        spec["affinity"] = place.affinity
    node_selector = {**place.node_selector, **cpu_nodes}
    if node_selector:
        spec["nodeSelector"] = node_selector
    tolerations = _tolerations(place.tolerations, cpu_tolerations)
    if tolerations:
        spec["tolerations"] = tolerations
    if job.service_account:
        spec["serviceAccountName"] = job.service_account
    qos.apply(spec, job, role)
    return {"metadata": {"labels": labels.for_task(job, role, index)}, "spec": spec}
