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

from .. import labels, names, pods
from ..model import TrainingJob
from ..naming import Naming
from ..plan import JobPlan, RolePlan
from ..problems import Problem
from ..profile import ClusterProfile
from . import common
from .base import Backend, DecodedJob

NAME = "native"
# Kubernetes' annotation on an Indexed Job's pods: the pod's completion index.
_COMPLETION_INDEX = {"fieldRef": {"fieldPath": f"metadata.annotations['{labels.JOB_COMPLETION_INDEX}']"}}

NAMING = Naming(
    hostname=names.task,  # an Indexed Job `<job>-<role>` names its pods' hosts `<job>-<role>-<i>`
    address=lambda job, profile, role, index: names.task_address(job, profile, role, index, profile.grpc_port),
    index_source=lambda role: _COMPLETION_INDEX,
)


def check(job: TrainingJob, profile: ClusterProfile) -> list[Problem]:
    return []  # native expresses every topology


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
        "metadata": common.metadata(plan, name, labels.for_role(plan.job, role)),
        "spec": spec,
    }


def _role_jobs(plan: JobPlan, role: RolePlan) -> list[dict]:
    subdomain = names.service(plan.job)
    if not role.per_task:
        return [_job(plan, names.role_workload(plan.job, role.role), role.role,
                     common.with_subdomain(role.template, subdomain), role.replicas, indexed=True)]
    return [_job(plan, task.hostname, role.role, common.with_subdomain(task.template, subdomain, task.hostname),
                 1, indexed=False) for task in role.tasks]


def encode(plan: JobPlan) -> list[dict]:
    objects = [common.service(plan), common.config_map(plan), common.network_policy(plan)]
    for role in plan.roles:
        objects += _role_jobs(plan, role)
    return objects


def _failures_per_task(job: dict) -> int:
    spec = job["spec"]
    if "backoffLimitPerIndex" in spec:
        return spec["backoffLimitPerIndex"]
    return spec.get("backoffLimit", 6) // max(1, spec.get("completions", 1))


def decode(objects: list[dict]) -> list[DecodedJob]:
    """Every job run by batch/v1 Jobs among `objects`, each task as the Job controller creates its pod."""
    config_maps = common.config_maps(objects)
    found = []
    for (namespace, name), members in sorted(common.by_job(objects).items()):
        jobs = [o for o in members if o.get("kind") == "Job" and o.get("apiVersion") == "batch/v1"]
        if not jobs:
            continue
        task_pods = sorted((p for job in jobs for p in pods.job_pods(job, config_maps)), key=common.task_order)
        found.append(DecodedJob(namespace, name, NAME, members, task_pods,
                                min(_failures_per_task(job) for job in jobs), common.cluster_config(members)))
    return found


BACKEND = Backend(NAME, NAMING, check, encode, decode)
