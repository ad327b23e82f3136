"""Native backend: plain Kubernetes objects, no operator needed.

Per job: one headless Service (stable DNS for every task, published before
pods are ready), one ConfigMap (cluster spec, endpoint map), one NetworkPolicy
(only the job's own pods reach its ports), and batch/v1 Jobs:

- one Indexed Job per role when all its tasks share a pod template: O(1)
  objects for spread, isolated and none. Kubernetes names each pod's host
  `<job>-<role>-<index>` itself;
- one Job per task when placement differs per task (colocated PS and workers),
  with hostname `<job>-<role>-<index>` set in its template.

Why Jobs, for PS too: a Job replaces a failed task within its budget and can
complete. A StatefulSet or Deployment PS never completes, so it would hold its
(exclusive) cores after training ends. How failures are counted and which exits
end the job is lifecycle.py's, written here as the Job's failure fields.

No ttlSecondsAfterFinished: under GitOps a finished Job that deletes itself is
"missing" to Argo CD, whose selfHeal would recreate it and train again.
"""

from __future__ import annotations

from ..concerns import gang, labels, lifecycle, metadata, names, pods
from ..concerns.jobplan import JobPlan, RolePlan
from ..concerns.names import Naming
from ..inputs.problems import Problem
from ..inputs.profile import ClusterProfile
from ..inputs.trainingjob import TrainingJob
from . import common
from .base import Backend, DecodedJob, Reporting

NAME = "native"

NAMING = Naming(
    hostname=names.task,  # an Indexed Job `<job>-<role>` names its pods' hosts `<job>-<role>-<i>`
    address=lambda job, profile, role, index: names.task_address(job, role, index, profile.grpc_port),
    index_source=lambda role: common.COMPLETION_INDEX_SOURCE,
    failures_source=common.FAILURE_COUNT_SOURCE,  # backoffLimitPerIndex makes the Job controller count them
)


def check(job: TrainingJob, profile: ClusterProfile) -> list[Problem]:
    return []  # native expresses every topology


def _job(plan: JobPlan, name: str, role: str, template: dict, completions: int, indexed: bool) -> dict:
    ending = lifecycle.batch_job_spec(lifecycle.of(plan.job, plan.profile), indexed)
    spec = {"template": gang.pod_template(plan, template), **ending}
    if indexed:
        spec.update(completionMode="Indexed", completions=completions, parallelism=completions)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata.of(plan.job, name, {**labels.for_role(plan.job, role), **gang.workload_labels(plan)}),
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
    return objects + gang.objects(plan)


def decode(objects: list[dict]) -> list[DecodedJob]:
    """Every job run by batch/v1 Jobs among `objects`, each task as the Job controller creates its pod."""
    return common.decode_each(objects, "batch/v1", "Job", NAME, _decode_one)


def _decode_one(namespace: str, name: str, members: list[dict], jobs: list[dict], config_maps: dict) -> DecodedJob:
    task_pods = sorted((p for job in jobs for p in pods.job_pods(job, config_maps)), key=common.task_order)
    return DecodedJob(namespace, name, NAME, members, task_pods, lifecycle.from_batch_job_spec(jobs[0]["spec"]),
                      common.cluster_config(members))


# A Job per role, or per task: none of them speaks for the whole job.
BACKEND = Backend(NAME, NAMING, check, encode, decode, one_object=False,
                  reporting=Reporting("Job", job_conditions=False))
