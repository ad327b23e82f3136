"""Labels on generated objects and pods, the selectors built from them, and the rules the intent's own obey."""

from __future__ import annotations

import re

from .model import TrainingJob
from .problems import WARNING, Problem, field_path

JOB = "tfjobgen.dev/job"
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
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/managed-by": "tfjobgen",
        JOB: job.name,
    }


def recommended(job: TrainingJob, component: str) -> dict[str, str]:
    """The app.kubernetes.io/* recommended labels, plus the intent's own labels (ours win)."""
    return {**job.labels, **_own(job, component)}


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

# Kubernetes' rules for label and annotation keys and label values (k8s.io/apimachinery validation).
_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
NAME_MAX, PREFIX_MAX = 63, 253
ANNOTATIONS_MAX = 256 << 10  # keys and values of all of an object's annotations, in bytes
_KEY_RULE = ("a key is a name of up to 63 letters, digits, '-', '_' and '.' that starts and ends with a letter "
             "or digit, optionally after a DNS prefix and '/', such as example.com/team")


def _key_problem(key: str, lower_prefix: bool) -> str:
    prefix, slash, name = key.rpartition("/")
    if slash and not prefix:
        return "the prefix before '/' is empty"
    if prefix and (len(prefix) > PREFIX_MAX or not _DNS_SUBDOMAIN.match(prefix.lower() if lower_prefix else prefix)):
        return f"prefix '{prefix}' is not a DNS subdomain of at most {PREFIX_MAX} characters"
    if len(name) > NAME_MAX:
        return f"the name after the prefix is {len(name)} characters; at most {NAME_MAX}"
    if not _NAME.match(name):
        return f"'{name}' has characters Kubernetes does not allow"
    return ""


def check(job: TrainingJob) -> list[Problem]:
    """The intent's labels and annotations, as the API server would judge them on every object."""
    problems = []
    ours = set(_own(job, "")) | {ROLE, INDEX}
    for key, value in job.labels.items():
        at = field_path("metadata", "labels", key)
        wrong = _key_problem(key, lower_prefix=False)
        if wrong:
            problems.append(Problem(f"label key '{key}' is not valid: {wrong} ({_KEY_RULE})", at))
        elif key in ours:
            problems.append(Problem(f"tfjobgen sets the label {key} itself; your value is replaced", at,
                                    severity=WARNING))
        if len(value) > NAME_MAX or (value and not _NAME.match(value)):
            why = f"it has {len(value)} characters" if len(value) > NAME_MAX else "it has other characters"
            problems.append(Problem(
                f"label value '{value}' is not valid ({why}): a value is empty or up to {NAME_MAX} letters, "
                "digits, '-', '_' and '.' that starts and ends with a letter or digit", at))
    for key in job.annotations:
        wrong = _key_problem(key, lower_prefix=True)  # the API server lower-cases annotation prefixes to check
        if wrong:
            problems.append(Problem(f"annotation key '{key}' is not valid: {wrong} ({_KEY_RULE})",
                                    field_path("metadata", "annotations", key)))
    size = sum(len(k.encode()) + len(v.encode()) for k, v in job.annotations.items())
    if size > ANNOTATIONS_MAX:
        problems.append(Problem(f"the annotations are {size:,} bytes; Kubernetes allows {ANNOTATIONS_MAX:,} per "
                                "object, keys and values together", "metadata.annotations"))
    return problems
