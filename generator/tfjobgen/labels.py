"""Labels on generated objects and pods, and the selectors built from them."""

from __future__ import annotations

from .model import TrainingJob

JOB = "tfjobgen.dev/job"
ROLE = "tfjobgen.dev/role"
INDEX = "tfjobgen.dev/index"
# colocated: the PS a pod belongs with (PS g and workers g*k .. g*k+k-1, k = workersPerServer).
GROUP = "tfjobgen.dev/group"
# Pod annotation: the intent's topology mode, so a summary reads it back without guessing from affinity.
TOPOLOGY = "tfjobgen.dev/topology"
# Kubernetes' own label on pods of an Indexed Job (GA in 1.32, on by default since 1.28).
JOB_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"


def recommended(job: TrainingJob, component: str) -> dict[str, str]:
    """The app.kubernetes.io/* recommended labels, plus the intent's own labels."""
    return {
        **job.labels,
        "app.kubernetes.io/name": "tfjobgen-trainingjob",
        "app.kubernetes.io/instance": job.name,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/managed-by": "tfjobgen",
        JOB: job.name,
    }


def for_role(job: TrainingJob, role: str) -> dict[str, str]:
    return {**recommended(job, role), ROLE: role}


def for_task(job: TrainingJob, role: str, index: int | None) -> dict[str, str]:
    """A pod's labels; `index` is None for pods of an Indexed Job (Kubernetes labels those)."""
    result = for_role(job, role)
    if index is not None:
        result[INDEX] = str(index)
    return result


def job_selector(job: TrainingJob) -> dict[str, str]:
    return {JOB: job.name}


def role_selector(job: TrainingJob, *roles: str) -> dict:
    """A labelSelector for the job's pods of the given roles."""
    if len(roles) == 1:
        return {"matchLabels": {JOB: job.name, ROLE: roles[0]}}
    return {
        "matchLabels": {JOB: job.name},
        "matchExpressions": [{"key": ROLE, "operator": "In", "values": list(roles)}],
    }


def group_selector(job: TrainingJob, role: str, group: int) -> dict:
    """A labelSelector for the job's pods of `role` in colocated group `group`."""
    return {"matchLabels": {GROUP: str(group), JOB: job.name, ROLE: role}}
