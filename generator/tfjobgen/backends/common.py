"""Objects every backend emits the same way: the headless Service, the ConfigMap, the NetworkPolicy, and the
metadata of the one object that carries a whole job (every object's metadata is metadata.py's)."""

from __future__ import annotations

import os
from collections import defaultdict
from typing import Callable

from ..concerns import container, gang, labels, metadata, names
from ..concerns.jobplan import JobPlan
from ..concerns.lifecycle import Lifecycle
from ..inputs.problems import Problem
from ..shared import contract

NAMESPACE_NAME = "kubernetes.io/metadata.name"  # the label every namespace carries: its own name


def whole_job_metadata(plan: JobPlan) -> dict:
    """The metadata of the one object that carries a whole job (a JobSet, a TFJob), named as the job:
    the object Kueue admits, so it carries the gang's queue label."""
    return metadata.of(plan.job, plan.job.name,
                       {**labels.recommended(plan.job, "training"), **gang.workload_labels(plan)})


def service(plan: JobPlan) -> dict:
    """The headless Service whose name is every pod's subdomain: DNS for each task."""
    job = plan.job
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata.of(job, names.service(job), labels.recommended(job, "cluster")),
        "spec": {
            "clusterIP": "None",
            "ports": [{"name": p["name"], "port": p["containerPort"], "protocol": "TCP",
                       "targetPort": p["containerPort"]} for p in container.ports(job, plan.profile, plan.naming)],
            "publishNotReadyAddresses": True,  # TF_CONFIG hosts must resolve while tasks start
            "selector": labels.job_selector(job),
        },
    }


def config_map(plan: JobPlan) -> dict:
    return {
        "apiVersion": "v1",
        "data": dict(plan.config_data),
        "kind": "ConfigMap",
        "metadata": metadata.of(plan.job, names.cluster_config(plan.job), labels.recommended(plan.job, "cluster")),
    }


def network_policy(plan: JobPlan) -> dict:
    """Only the job's own pods reach its ports; with monitoring on, the monitoring namespace's pods
    also reach the metrics port (and no other). The namespace is matched by the
    kubernetes.io/metadata.name label the API server sets on every namespace (GA since 1.22)."""
    job = plan.job
    ingress = [{
        "from": [{"podSelector": {"matchLabels": labels.job_selector(job)}}],
        "ports": [{"port": p["containerPort"], "protocol": "TCP"}
                  for p in container.ports(job, plan.profile, plan.naming)],
    }]
    monitoring = plan.profile.monitoring
    if monitoring.enabled:
        ingress.append({
            "from": [{"namespaceSelector": {"matchLabels": {NAMESPACE_NAME: monitoring.namespace}}}],
            "ports": [{"port": plan.profile.metrics_port, "protocol": "TCP"}],
        })
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": metadata.of(job, names.network_policy(job), labels.recommended(job, "cluster")),
        "spec": {
            "ingress": ingress,
            "podSelector": {"matchLabels": labels.job_selector(job)},
            "policyTypes": ["Ingress"],
        },
    }


# The env sources of a task's index and earlier failures in a template all pods of an Indexed Job
# share (native's Jobs, JobSet's child Jobs): the annotations the Job controller sets on each pod.
COMPLETION_INDEX_SOURCE = {"fieldRef": {"fieldPath": f"metadata.annotations['{labels.JOB_COMPLETION_INDEX}']"}}
FAILURE_COUNT_SOURCE = {"fieldRef": {"fieldPath": f"metadata.annotations['{labels.JOB_INDEX_FAILURE_COUNT}']"}}


def one_template_per_role(job, profile, carrier: str) -> list[Problem]:
    """What a backend with one pod template per role (`carrier` says what holds it) cannot run."""
    problems = []
    if job.topology.mode == "colocated":
        problems.append(Problem(
            f"topology colocated needs a pod template per task (each worker selects its own PS), and {carrier} "
            "has one per role: use backend native, or topology spread, isolated or none", "spec.backend"))
    if profile.task_objects == "per-task":
        problems.append(Problem(
            f"the cluster profile '{profile.name}' asks for one object per task (taskObjects: per-task), and "
            f"{carrier} has one per role: use backend native on this cluster", "spec.backend"))
    return problems


def with_subdomain(template: dict, subdomain: str, hostname: str | None = None) -> dict:
    """A copy of a shared pod template whose spec also names the pod's subdomain (and hostname)."""
    spec = {**template["spec"], "subdomain": subdomain}
    if hostname is not None:
        spec["hostname"] = hostname
    return {**template, "spec": spec}


# ---- reading back -------------------------------------------------------------------------

def by_job(objects: list[dict]) -> dict[tuple[str, str], list[dict]]:
    """(namespace, job) -> the objects carrying that job's label, in their order."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for obj in objects:
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        found = (meta or {}).get("labels") or {}
        if isinstance(found, dict) and found.get(labels.JOB):
            groups[(str(meta.get("namespace", "")), str(found[labels.JOB]))].append(obj)
    return groups


def jobs_carried_by(objects: list[dict], api_version: str, kind: str):
    """(namespace, job, the job's objects, those of them of this kind) for every job, in name order,
    that has objects of this kind: where each backend's decode starts."""
    for (namespace, name), members in sorted(by_job(objects).items()):
        carriers = [o for o in members if o.get("kind") == kind and o.get("apiVersion") == api_version]
        if carriers:
            yield namespace, name, members, carriers


def decode_each(objects: list[dict], api_version: str, kind: str, backend: str,
                decode_one: Callable[[str, str, list[dict], list[dict], dict], "DecodedJob"]) -> list:  # noqa: F821
    """decode_one(namespace, name, members, carriers, config maps) for every job carried by objects of this
    kind; a job whose objects are not what the backend renders (edited by hand, cut short) comes back
    without tasks and says why, rather than stopping every other job's reading with a traceback."""
    from .base import DecodedJob

    maps = config_maps(objects)
    found = []
    for namespace, name, members, carriers in jobs_carried_by(objects, api_version, kind):
        try:
            found.append(decode_one(namespace, name, members, carriers, maps))
        except (KeyError, IndexError, TypeError, AttributeError, ValueError) as err:
            if os.environ.get(contract.DEBUG_ENV):
                raise
            why = f"no '{err.args[0]}'" if isinstance(err, KeyError) else str(err)
            found.append(DecodedJob(namespace, name, backend, members, [], Lifecycle(0, (), None),
                                    unreadable=f"its {kind} is not what tfjobgen renders ({why}): its tasks "
                                               "are not described"))
    return found


def config_maps(objects: list[dict]) -> dict[tuple[str, str], dict]:
    """(namespace, name) -> data, for every ConfigMap among objects (the kubelet reads env from them)."""
    found = {}
    for obj in objects:
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        if obj.get("kind") == "ConfigMap" and obj.get("apiVersion") == "v1" and isinstance(meta.get("name"), str):
            found[(meta.get("namespace", ""), meta["name"])] = obj.get("data") if isinstance(obj.get("data"), dict) \
                else {}
    return found


def cluster_config(objects: list[dict]) -> dict[str, str]:
    """The data of the job's ConfigMap that holds its cluster spec ({} when none)."""
    return next((dict(o.get("data", {})) for o in objects
                 if o.get("kind") == "ConfigMap" and contract.CLUSTER_KEY in (o.get("data") or {})), {})


def task_order(pod) -> tuple[int, int]:
    return (contract.ROLES.index(pod.role) if pod.role in contract.ROLES else len(contract.ROLES), pod.index)
