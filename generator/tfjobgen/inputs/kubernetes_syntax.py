"""Kubernetes' own rules for the strings it keys objects by: label and annotation keys, label values,
DNS subdomains, tolerations (k8s.io/apimachinery's validation, and ValidateTolerations in
k8s.io/kubernetes pkg/apis/core), extended resource names (pkg/apis/core/helper), the PriorityClasses
the system keeps, the durations of monitoring.coreos.com objects (Prometheus' duration grammar), and an
env entry's valueFrom (validateEnvVarValueFrom: downward-API paths, resources and divisors, ConfigMap and
Secret names and keys).

Their one home: the intent's labels and annotations (labels.check), its env (environment.check) and every
string of the profile that becomes a label, a node selector, a toleration or an object name (profile.check)
are judged here. An input rule, so it imports nothing above inputs/.
"""

from __future__ import annotations

import re
from fractions import Fraction

from . import quantity
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
    if name and "" in name.split("."):
        return "it has an empty label (two dots, or a dot at an end)"
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


def extended_resource_problem(name: str) -> str:
    """What keeps `name` from being an extended resource a container may request (validateContainerResourceName
    and helper.IsExtendedResourceName), "" when it is one."""
    prefix, slash, _ = name.partition("/")
    if not slash:
        return "it has no domain prefix, such as nvidia.com/gpu: a name without one is Kubernetes' own (cpu, memory)"
    if "kubernetes.io/" in name:
        return "names in kubernetes.io/ are Kubernetes' own resources, not a device plugin's"
    if name.startswith("requests."):
        return "a name starting with 'requests.' is a ResourceQuota's, not a resource"
    wrong = key_name_problem(name, lower_prefix=False)
    if wrong:
        return wrong
    if len("requests." + prefix) > PREFIX_MAX:  # quotas name it requests.<name>: that must be a qualified name too
        return f"its prefix is {len(prefix)} characters; at most {PREFIX_MAX - len('requests.')}"
    return ""


# PriorityClasses the API server creates itself; it refuses to create any other named system-*.
SYSTEM_PRIORITY_CLASSES = ("system-node-critical", "system-cluster-critical")


def priority_class_problem(name: str) -> str:
    """What keeps training pods from naming PriorityClass `name`, "" when nothing does."""
    if name in SYSTEM_PRIORITY_CLASSES:
        return ("is reserved for the cluster's own components: the API server admits pods of that class only in "
                "kube-system (or under a ResourceQuota scoped to it), and training pods that outrank the cluster "
                "would preempt DNS and the CNI; name a class of your own")
    if name.startswith("system-"):
        return "cannot exist: the API server refuses to create a PriorityClass named system-*, other than its own two"
    return ""


_DURATION = re.compile(r"(?:([0-9]+)y)?(?:([0-9]+)w)?(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?"
                       r"(?:([0-9]+)ms)?")
_DURATION_MS = (365 * 86_400_000, 7 * 86_400_000, 86_400_000, 3_600_000, 60_000, 1000, 1)
DURATION_NS_MAX = (1 << 63) - 1  # Prometheus (model.Duration) and Go's time.Duration: nanoseconds in 64 bits


def duration_ns(text: str) -> int | None:
    """A Prometheus duration (common/model ParseDuration; the Prometheus Operator's Duration) in nanoseconds,
    None when `text` is not one."""
    match = _DURATION.fullmatch(text)
    if text == "0":
        return 0
    if not text or not match:
        return None
    return sum(int(n) * ms for n, ms in zip(match.groups(), _DURATION_MS) if n) * 1_000_000


def duration_problem(text: str) -> str:
    """What keeps `text` from being a Prometheus duration, "" when it is one."""
    total = duration_ns(text)
    if total is None:
        return ("it is not a Prometheus duration: whole numbers with units y, w, d, h, m, s, ms, largest first, "
                "such as 30s or 1m30s")
    if total > DURATION_NS_MAX:
        return "it is longer than Prometheus holds (nanoseconds in 64 bits: about 292 years)"
    return ""


# env's valueFrom, as validateEnvVarValueFrom (k8s.io/kubernetes pkg/apis/core/validation) judges it; the same in
# v1.34 and v1.37. tests/cluster/test_api_server_agrees.py holds these rules to a real kube-apiserver.
# The downward API's paths env supports (validEnvDownwardAPIFieldPathExpressions): fewer than volumes get.
ENV_FIELD_PATHS = ("metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName",
                   "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs")
# Paths any downward API accepts (pods.ConvertDownwardAPIFieldLabel): ones not in ENV_FIELD_PATHS are for volumes.
_FIELD_LABELS = ENV_FIELD_PATHS + ("metadata.annotations", "metadata.labels", "spec.restartPolicy",
                                   "spec.schedulerName", "status.phase")
_OLD_FIELD_LABELS = {"spec.host": "spec.nodeName"}  # still converted, for old v1 clients
ENV_RESOURCES = ("limits.cpu", "limits.memory", "limits.ephemeral-storage",
                 "requests.cpu", "requests.memory", "requests.ephemeral-storage")
_HUGEPAGES = ("limits.hugepages-", "requests.hugepages-")
_BYTES_DIVISORS = ("1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei")
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


def config_map_key_problem(key: str) -> str:
    """What keeps `key` from being a ConfigMap or Secret key (IsConfigMapKey), "" when it is one."""
    if not key:
        return "it is empty"
    if len(key) > PREFIX_MAX:
        return f"it has {len(key)} characters; at most {PREFIX_MAX}"
    if not _CONFIG_KEY.match(key):
        return "use only letters, digits, '-', '_' and '.' (a key is a file name in a mounted volume, never a path)"
    if key in (".", "..") or key.startswith(".."):
        return "it is '.', '..' or starts with '..', which the kubelet's mounted volumes keep for themselves"
    return ""


def field_path_problem(path: str) -> str:
    """What keeps env from reading pod field `path` (validateObjectFieldSelector with env's paths), "" when it
    can."""
    if not path:
        return f"fieldPath is empty: name a field, one of {', '.join(ENV_FIELD_PATHS)}"
    body, subscript = _subscripted(path)
    if subscript is not None:
        if body not in ("metadata.labels", "metadata.annotations"):
            return f"'{body}' takes no ['...'] subscript: only metadata.labels['<key>'] and " \
                   "metadata.annotations['<key>'] do"
        annotation = body == "metadata.annotations"
        wrong = "it has more than one '/'" if subscript.count("/") > 1 else (
            "it is empty" if not subscript else key_name_problem(subscript, lower_prefix=annotation))
        return f"'{subscript}' is not a {'annotation' if annotation else 'label'} key: {wrong}" if wrong else ""
    path = _OLD_FIELD_LABELS.get(path, path)
    if path in ENV_FIELD_PATHS:
        return ""
    where = " (downward-API volumes only)" if path in _FIELD_LABELS else ""
    return f"'{path}' cannot be read into env{where}: env supports {', '.join(ENV_FIELD_PATHS)}, " \
           "metadata.labels['<key>'] and metadata.annotations['<key>']"


def _subscripted(path: str) -> tuple[str, str | None]:
    """fieldpath.SplitMaybeSubscriptedPath: ("metadata.labels", "key") for "metadata.labels['key']"."""
    if not path.endswith("']"):
        return path, None
    body, opening, subscript = path[:-2].partition("['")
    return (body, subscript) if opening and body else (path, None)


def resource_problem(resource: str) -> str:
    """What keeps env from reading the container's `resource` (validateContainerResourceFieldSelector), "" when
    it can."""
    if not resource:
        return f"resource is empty: name one of {', '.join(ENV_RESOURCES)}"
    if resource in ENV_RESOURCES or resource.startswith(_HUGEPAGES):
        return ""
    return f"'{resource}' cannot be read into env: name one of {', '.join(ENV_RESOURCES)}, or " \
           "limits.hugepages-<size> (extended resources such as nvidia.com/gpu are not offered)"


def divisor_problem(resource: str, divisor: int | float | str) -> str:
    """What is wrong with `divisor` for `resource` (validateContainerResourceDivisor, on the quantity's canonical
    form), "" when nothing is."""
    value = quantity.parse(divisor)
    if value is None:
        return f"divisor '{divisor}' is not a quantity"
    if value == 0:  # the API server treats a zero divisor as unset (the kubelet divides by 1)
        return ""
    canonical = _canonical(value, str(divisor))
    if resource.endswith(".cpu"):
        return "" if canonical in ("1", "1m") else f"divisor '{divisor}' for {resource}: use 1 or 1m"
    if resource.endswith((".memory", ".ephemeral-storage")) or resource.startswith(_HUGEPAGES):
        return "" if canonical in _BYTES_DIVISORS else \
            f"divisor '{divisor}' for {resource}: use one of {', '.join(_BYTES_DIVISORS)}"
    return ""


def _canonical(value: Fraction, written: str) -> str | None:
    """The one or unit forms (1, 1m, 1k, 1Ki, ...) of resource.Quantity's canonical text for `value` as written,
    None for any other text. The format follows the suffix written: Ki... binary (below 1024 printed as
    decimal), e or E and digits an exponent (printed as one), anything else decimal SI."""
    text = written.strip()
    binary = text.endswith(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")) and value >= 1024
    exponent = re.search(r"[0-9.][eE][-+]?[0-9]+$", text) is not None
    if value == 1:
        return "1"
    if binary:
        units = {1024 ** (i + 1): s for i, s in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))}
        return f"1{units[value]}" if value in units else None
    if exponent:
        return None  # 1e3 stays "1e3": only 1e0 (above) is one of the accepted forms
    units = {Fraction(1, 1000): "m", **{1000 ** (i + 1): s for i, s in enumerate(("k", "M", "G", "T", "P", "E"))}}
    return f"1{units[value]}" if value in units else None


def check_value_from(value_from: dict, *at: str | int) -> list[Problem]:
    """An env entry's valueFrom (the schema has checked its shape and types) as the API server judges it."""
    problems = []
    for source, selector in value_from.items():
        where = (*at, source)
        if source in ("secretKeyRef", "configMapKeyRef"):
            kind = "Secret" if source == "secretKeyRef" else "ConfigMap"
            name, key = selector.get("name", ""), selector.get("key", "")
            if not name:
                problems.append(Problem(f"name the {kind} to read (its name in the job's namespace)",
                                        field_path(*where, "name")))
            elif dns_subdomain_problem(name):
                problems.append(Problem(f"{kind} name '{name}' is not a DNS subdomain: {dns_subdomain_problem(name)}",
                                        field_path(*where, "name")))
            if not key:
                problems.append(Problem(f"name the key of the {kind} to read", field_path(*where, "key")))
            elif config_map_key_problem(key):
                problems.append(Problem(f"key '{key}' is not valid: {config_map_key_problem(key)}",
                                        field_path(*where, "key")))
        elif source == "fieldRef":
            api_version = selector.get("apiVersion") or "v1"  # the API server's default
            wrong = field_path_problem(selector.get("fieldPath", ""))
            if api_version != "v1":
                problems.append(Problem(f"apiVersion '{api_version}' is not one the downward API reads: leave it "
                                        "out (v1)", field_path(*where, "apiVersion")))
            elif wrong:
                problems.append(Problem(wrong, field_path(*where, "fieldPath")))
        elif source == "resourceFieldRef":
            resource = selector.get("resource", "")
            wrong = resource_problem(resource)
            if wrong:
                problems.append(Problem(wrong, field_path(*where, "resource")))
            wrong = divisor_problem(resource, selector["divisor"]) if "divisor" in selector else ""
            if wrong:
                problems.append(Problem(wrong, field_path(*where, "divisor")))
    return problems
