"""Labels on generated objects and pods, the selectors built from them, and the rules the intent's own obey."""

from __future__ import annotations

import re

from .model import TrainingJob
from .problems import WARNING, Problem, field_path

OUR_PREFIX = "tfjobgen.dev/"  # every label under it is tfjobgen's own
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

# Kubernetes' rules for label and annotation keys and label values (k8s.io/apimachinery validation). This is
# their one home: the intent's labels and annotations, and every string of the profile that becomes a label,
# a node selector or a toleration (profile.check), are judged here.
_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
NAME_MAX, PREFIX_MAX = 63, 253
ANNOTATIONS_MAX = 256 << 10  # keys and values of all of an object's annotations, in bytes
_KEY_RULE = ("a key is a name of up to 63 letters, digits, '-', '_' and '.' that starts and ends with a letter "
             "or digit, optionally after a DNS prefix and '/', such as example.com/team")
_VALUE_RULE = (f"a value is empty or up to {NAME_MAX} letters, digits, '-', '_' and '.' that starts and ends with a "
               "letter or digit")


def _key_problem(key: str, lower_prefix: bool) -> str:
    prefix, slash, name = key.rpartition("/")
    if slash and not prefix:
        return "the prefix before '/' is empty"
    if prefix and dns_subdomain_problem(prefix.lower() if lower_prefix else prefix):
        return f"prefix '{prefix}' is not a DNS subdomain of at most {PREFIX_MAX} characters"
    if len(name) > NAME_MAX:
        return f"the name after the prefix is {len(name)} characters; at most {NAME_MAX}"
    if not _NAME.match(name):
        return f"'{name}' has characters Kubernetes does not allow"
    return ""


def dns_subdomain_problem(name: str) -> str:
    """What keeps `name` from being a DNS subdomain (RFC 1123, as object names are), "" when it is one."""
    if len(name) > PREFIX_MAX:
        return f"it has {len(name)} characters; at most {PREFIX_MAX}"
    if not _DNS_SUBDOMAIN.match(name):
        return "it has characters other than lower-case letters, digits, '-' and '.', or does not start and end " \
               "with a letter or digit"
    return ""


def key_problem(key: str, at: str) -> Problem | None:
    """A label key (a node selector's, a toleration's) as the API server judges it."""
    wrong = _key_problem(key, lower_prefix=False)
    return Problem(f"label key '{key}' is not valid: {wrong} ({_KEY_RULE})", at) if wrong else None


def value_problem(value: str, at: str) -> Problem | None:
    """A label value (a node selector's, a toleration's) as the API server judges it."""
    if len(value) <= NAME_MAX and (not value or _NAME.match(value)):
        return None
    why = f"it has {len(value)} characters" if len(value) > NAME_MAX else "it has other characters"
    return Problem(f"label value '{value}' is not valid ({why}): {_VALUE_RULE}", at)


def check_map(mapping: dict[str, str], *at: str) -> list[Problem]:
    """Every key and value of a label map (or node selector) at field `at`."""
    problems = []
    for key, value in mapping.items():
        where = field_path(*at, key)
        problems += [p for p in (key_problem(key, where), value_problem(value, where)) if p]
    return problems


def check_tolerations(tolerations: tuple[dict, ...] | list[dict], *at: str) -> list[Problem]:
    """Tolerations as the API server judges them (ValidateTolerations, k8s.io/kubernetes pkg/apis/core)."""
    problems = []
    for index, toleration in enumerate(tolerations):
        key, value = toleration.get("key", ""), toleration.get("value", "")
        operator = toleration.get("operator", "Equal")
        if key:
            problems += [p for p in (key_problem(key, field_path(*at, index, "key")),) if p]
        elif operator != "Exists":
            problems.append(Problem("a toleration without a key must have operator Exists (it then tolerates every "
                                    "taint)", field_path(*at, index, "operator")))
        if operator == "Exists" and value:
            problems.append(Problem("a toleration with operator Exists matches any value: remove value",
                                    field_path(*at, index, "value")))
        elif operator != "Exists":
            problems += [p for p in (value_problem(value, field_path(*at, index, "value")),) if p]
        if "tolerationSeconds" in toleration and toleration.get("effect") != "NoExecute":
            problems.append(Problem("tolerationSeconds applies only to effect NoExecute: set that effect, or remove "
                                    "tolerationSeconds", field_path(*at, index, "tolerationSeconds")))
    return problems


def check(job: TrainingJob) -> list[Problem]:
    """The intent's labels and annotations, as the API server would judge them on every object."""
    problems = check_map(job.labels, "metadata", "labels")
    for key in job.labels:
        if is_ours(job, key):
            problems.append(Problem(f"tfjobgen sets the label {key} itself; your value is replaced (on objects "
                                    "without it, left off)", field_path("metadata", "labels", key), severity=WARNING))
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
