"""Labels on generated objects and pods, the selectors built from them, and the rules the intent's own obey."""

from __future__ import annotations

from ..inputs.kubernetes_syntax import ANNOTATIONS_MAX, KEY_RULE, check_map, key_name_problem
from ..inputs.problems import WARNING, Problem, field_path
from ..inputs.trainingjob import TrainingJob

OUR_PREFIX = "tfjobgen.dev/"  # every label under it is tfjobgen's own
JOB = "tfjobgen.dev/job"
COMPONENT = "app.kubernetes.io/component"  # which part of a job an object is: a role, or an add-on named as its field
ROLE = "tfjobgen.dev/role"
INDEX = "tfjobgen.dev/index"
# colocated: the PS a pod belongs with (PS g and workers g*k .. g*k+k-1, k = workersPerServer).
GROUP = "tfjobgen.dev/group"
# Pod annotation: the intent's topology mode, so a summary reads it back without guessing from affinity.
TOPOLOGY = "tfjobgen.dev/topology"
# Kubernetes' own label on pods of an Indexed Job (GA in 1.32, on by default since 1.28).
JOB_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
# Kubernetes' annotations on pods of an Indexed Job with backoffLimitPerIndex: the index's earlier
# failures that count against its budget, and those that did not (absent: 0).
JOB_INDEX_FAILURE_COUNT = "batch.kubernetes.io/job-index-failure-count"
JOB_INDEX_IGNORED_FAILURE_COUNT = "batch.kubernetes.io/job-index-ignored-failure-count"


def _own(job: TrainingJob, component: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "tfjobgen-trainingjob",
        "app.kubernetes.io/instance": job.name,
        COMPONENT: component,
        "app.kubernetes.io/managed-by": "tfjobgen",
        JOB: job.name,
    }


def is_ours(job: TrainingJob, key: str) -> bool:
    """A label key tfjobgen sets itself: its selectors, `summary` and the placement rules read these, so an
    intent's value for one is never used, on any object (check warns of it)."""
    return key.startswith(OUR_PREFIX) or key in _own(job, "")


def recommended(job: TrainingJob, component: str) -> dict[str, str]:
    """The app.kubernetes.io/* recommended labels, plus the intent's own labels but ours."""
    return {**{k: v for k, v in job.labels.items() if not is_ours(job, k)}, **_own(job, component)}


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

def check(job: TrainingJob) -> list[Problem]:
    """The intent's labels and annotations, as the API server would judge them on every object."""
    problems = check_map(job.labels, "metadata", "labels")
    for key in job.labels:
        if is_ours(job, key):
            problems.append(Problem(f"tfjobgen sets the label {key} itself; your value is replaced (on objects "
                                    "without it, left off)", field_path("metadata", "labels", key), severity=WARNING))
    for key in job.annotations:
        wrong = key_name_problem(key, lower_prefix=True)  # the API server lower-cases annotation prefixes to check
        if wrong:
            problems.append(Problem(f"annotation key '{key}' is not valid: {wrong} ({KEY_RULE})",
                                    field_path("metadata", "annotations", key)))
    size = sum(len(k.encode()) + len(v.encode()) for k, v in job.annotations.items())
    if size > ANNOTATIONS_MAX:
        problems.append(Problem(f"the annotations are {size:,} bytes; Kubernetes allows {ANNOTATIONS_MAX:,} per "
                                "object, keys and values together", "metadata.annotations"))
    return problems
