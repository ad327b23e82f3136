"""Kubernetes' own rules for the strings it keys objects by: label and annotation keys, label values,
DNS subdomains, tolerations (k8s.io/apimachinery's validation, and ValidateTolerations in
k8s.io/kubernetes pkg/apis/core).

Their one home: the intent's labels and annotations (labels.check) and every string of the
profile that becomes a label, a node selector, a toleration or an object name (profile.check)
are judged here. An input rule, so it imports nothing above inputs/.
"""

from __future__ import annotations

import re

from .problems import Problem, field_path

_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
NAME_MAX, PREFIX_MAX = 63, 253
ANNOTATIONS_MAX = 256 << 10  # keys and values of all of an object's annotations, in bytes
KEY_RULE = ("a key is a name of up to 63 letters, digits, '-', '_' and '.' that starts and ends with a letter "
            "or digit, optionally after a DNS prefix and '/', such as example.com/team")
VALUE_RULE = (f"a value is empty or up to {NAME_MAX} letters, digits, '-', '_' and '.' that starts and ends with a "
              "letter or digit")


def key_name_problem(key: str, lower_prefix: bool) -> str:
    """What keeps `key` from being a label or annotation key, "" when it is one (`lower_prefix`: the API
    server lower-cases an annotation key's prefix before it checks it)."""
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


def dns_label_problem(name: str) -> str:
    """What keeps `name` from being a DNS label (RFC 1123, as namespaces and job names are), "" when it is one."""
    if len(name) > NAME_MAX:
        return f"it has {len(name)} characters; at most {NAME_MAX}"
    if not _DNS_LABEL.match(name):
        return "use only lower-case letters, digits and '-', starting and ending with a letter or digit"
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
    wrong = key_name_problem(key, lower_prefix=False)
    return Problem(f"label key '{key}' is not valid: {wrong} ({KEY_RULE})", at) if wrong else None


def value_problem(value: str, at: str) -> Problem | None:
    """A label value (a node selector's, a toleration's) as the API server judges it."""
    if len(value) <= NAME_MAX and (not value or _NAME.match(value)):
        return None
    why = f"it has {len(value)} characters" if len(value) > NAME_MAX else "it has other characters"
    return Problem(f"label value '{value}' is not valid ({why}): {VALUE_RULE}", at)


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
