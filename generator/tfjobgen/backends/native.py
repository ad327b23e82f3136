"""Native backend: plain Kubernetes objects, no operator needed.

Per job: one headless Service (stable DNS for every task, published before
pods are ready), one ConfigMap (cluster spec, endpoint map), one NetworkPolicy
(only the job's own pods reach its ports), and batch/v1 Jobs:

- one Indexed Job per role when all its tasks share a pod template: O(1)
  objects for spread, isolated and none. Kubernetes names each pod's host
  `<job>-<role>-<index>` itself;
- one Job per task when placement differs per task (colocated PS and workers),
  with hostname `<job>-<role>-<index>` set in its template.

Why Jobs, for PS too: a Job restarts a failed task (restartPolicy OnFailure,
bounded by backoffLimit) and can complete. A StatefulSet or Deployment PS
never completes, so it would hold its (exclusive) cores after training ends.

No ttlSecondsAfterFinished: under GitOps a finished Job that deletes itself is
"missing" to Argo CD, whose selfHeal would recreate it and train again.
"""

from __future__ import annotations

from .. import container, labels, names
from ..plan import JobPlan

# Intent annotations that describe the intent itself, not its objects.
_BOOKKEEPING_PREFIXES = ("kustomize.config.k8s.io/", "config.kubernetes.io/", "internal.config.kubernetes.io/",
                         "config.k8s.io/", "kubectl.kubernetes.io/")


def _metadata(plan: JobPlan, name: str, object_labels: dict) -> dict:
    meta = {"labels": object_labels, "name": name, "namespace": plan.job.namespace}
    annotations = {k: v for k, v in plan.job.annotations.items() if not k.startswith(_BOOKKEEPING_PREFIXES)}
    if annotations:
        meta["annotations"] = annotations
    return meta


def _service(plan: JobPlan) -> dict:
    job = plan.job
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(plan, names.service(job), labels.recommended(job, "cluster")),
        "spec": {
            "clusterIP": "None",
            "ports": [{"name": p["name"], "port": p["containerPort"], "protocol": "TCP",
                       "targetPort": p["containerPort"]} for p in container.ports(job, plan.profile)],
            "publishNotReadyAddresses": True,  # TF_CONFIG hosts must resolve while tasks start
            "selector": labels.job_selector(job),
        },
    }


def _config_map(plan: JobPlan) -> dict:
    return {
        "apiVersion": "v1",
        "data": dict(plan.config_data),
        "kind": "ConfigMap",
        "metadata": _metadata(plan, names.cluster_config(plan.job), labels.recommended(plan.job, "cluster")),
    }


def _network_policy(plan: JobPlan) -> dict:
    job = plan.job
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _metadata(plan, names.network_policy(job), labels.recommended(job, "cluster")),
        "spec": {
            "ingress": [{
                "from": [{"podSelector": {"matchLabels": labels.job_selector(job)}}],
                "ports": [{"port": p["containerPort"], "protocol": "TCP"} for p in container.ports(job, plan.profile)],
            }],
            "podSelector": {"matchLabels": labels.job_selector(job)},
            "policyTypes": ["Ingress"],
        },
    }


def _job(plan: JobPlan, name: str, role: str, template: dict, completions: int, indexed: bool) -> dict:
    spec = {
        "backoffLimit": plan.job.backoff_limit_per_task * completions,
        "template": template,
    }
    if indexed:
        spec.update(completionMode="Indexed", completions=completions, parallelism=completions)
    if plan.job.active_deadline_seconds:
        spec["activeDeadlineSeconds"] = plan.job.active_deadline_seconds
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _metadata(plan, name, labels.for_role(plan.job, role)),
        "spec": spec,
    }


def render(plan: JobPlan) -> list[dict]:
    job = plan.job
    objects = [_service(plan), _config_map(plan), _network_policy(plan)]
    for role in plan.roles:
        if not role.per_task:
            template = plan.pod_template(role.role, None)
            template["spec"]["subdomain"] = names.service(job)
            objects.append(_job(plan, names.role_workload(job, role.role), role.role, template,
                                role.replicas, indexed=True))
            continue
        for index in range(role.replicas):
            template = plan.pod_template(role.role, index)
            template["spec"]["hostname"] = names.task(job, role.role, index)
            template["spec"]["subdomain"] = names.service(job)
            objects.append(_job(plan, names.task(job, role.role, index), role.role, template, 1, indexed=False))
    return objects
