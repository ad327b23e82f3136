"""What Linux and the Kubernetes API refuse, checked before anything is generated.

Every pod carries the whole cluster spec twice in its environment (TFJOBGEN_CLUSTER, and
TF_CONFIG that the kubelet assembles from it), and the job's ConfigMap holds it once more
(twice with StarServer's endpoint map). A big job can pass every other check and still
never start:

- Linux refuses one environment string (`NAME=value` and its NUL) longer than
  MAX_ARG_STRLEN, 32 pages = 131,072 bytes with 4 KiB pages: execve fails with E2BIG and
  the container never runs;
- Linux refuses argv and the environment together beyond a quarter of the stack limit:
  2 MiB under the usual 8 MiB, which containers inherit from their runtime (the image's
  own variables come on top of ours, so we keep to that with room to spare);
- the API server refuses a ConfigMap whose values add up to more than 1 MiB;
- client-side `kubectl apply`, Argo CD's default, copies the whole object into the
  last-applied-configuration annotation, and annotations are limited to 256 KiB
  (argo-cd#820): a bigger ConfigMap syncs only with ServerSideApply=true. A warning.

Each limit is checked on the environment the kubelet would really give the worst pod (the
same `environment.env` entries, `$(VAR)` expanded as pods.py does), and an error names the
limit, the size, and the field to change: how many workers would fit with the job's PS when the
cluster spec makes it too big, else the value of the intent's own that does (an env entry,
spec.training's longest list).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Callable

from ..inputs.kubernetes_syntax import ANNOTATIONS_MAX
from ..inputs.problems import WARNING, Problem, field_path
from ..inputs.profile import ClusterProfile
from ..inputs.trainingjob import TrainingJob
from ..shared import contract
from . import container, environment, pods
from .names import Naming

ENV_STRING_MAX = container.ARG_STRING_MAX  # MAX_ARG_STRLEN: one NAME=value string, its NUL included
ENVIRONMENT_MAX = (8 << 20) // 4  # argv + environment: a quarter of an 8 MiB stack limit
ENVIRONMENT_ROOM = 64 << 10  # kept free for the image's own variables and the command line
CONFIG_MAP_MAX = 1 << 20  # the API server's limit on a ConfigMap's values
_APPLY_METADATA = 1024  # what the last-applied copy adds beyond the data: metadata and labels


@dataclasses.dataclass(frozen=True)
class Sizes:
    env_string: int  # the longest NAME=value string of any pod, NUL included
    env_string_name: str  # which variable that is
    env_string_role: str  # in which role's pods
    environment: int  # all NAME=value strings of the largest pod, and its command line (execve counts both)
    environment_role: str  # which role's pod that is
    config_map: int  # the job's ConfigMap: its values
    last_applied: int  # the ConfigMap as client-side apply would copy it into an annotation


# The variables that carry the cluster spec: they grow with the job's tasks, and only they do.
_CLUSTER_SIZED = frozenset({contract.CLUSTER_ENV, contract.TF_CONFIG})


def _pod_env(job: TrainingJob, profile: ClusterProfile, naming: Naming, role: str, cluster: str) -> dict[str, str]:
    """The literal env of the role's last task, as the kubelet expands it (sources outside the job count as empty)."""
    known: dict[str, str] = {}
    for entry in environment.env(job, profile, naming, role, job.roles[role].replicas - 1):
        if "value" in entry:
            known[entry["name"]] = pods.expand_references(entry["value"], known)
        elif entry["name"] == contract.CLUSTER_ENV:
            known[entry["name"]] = cluster
        else:
            known[entry["name"]] = ""
    if naming.writes_tf_config:  # the controller writes it, with the same addresses
        known[contract.TF_CONFIG] = environment.tf_config_template(role, cluster, str(job.roles[role].replicas - 1))
    return known


def _string_bytes(name: str, value: str) -> int:
    return len(f"{name}={value}".encode()) + 1


def sizes(job: TrainingJob, profile: ClusterProfile, naming: Naming) -> Sizes:
    cluster = environment.cluster_spec(job, profile, naming)
    cluster_text = contract.cluster_json(cluster)
    longest, longest_name, longest_role, largest, largest_role = 0, "", "", 0, ""
    for role in job.roles:
        env = _pod_env(job, profile, naming, role, cluster_text)
        strings = {name: _string_bytes(name, value) for name, value in env.items()}
        name = max(strings, key=strings.get)
        if strings[name] > longest:
            longest, longest_name, longest_role = strings[name], name, role
        argv = sum(len(arg.encode("utf-8", "surrogatepass")) + 1
                   for arg in container.command(job, role) + container.args(job, role))
        if sum(strings.values()) + argv > largest:
            largest, largest_role = sum(strings.values()) + argv, role
    data = {contract.CLUSTER_KEY: cluster_text}
    if job.uses_star_server:
        data[contract.ENDPOINT_MAP_KEY] = environment.endpoint_map(job, profile, cluster)
    config_map = sum(len(value.encode()) for value in data.values())
    last_applied = len(json.dumps({"data": data}, separators=(",", ":")).encode()) + _APPLY_METADATA
    return Sizes(longest, longest_name, longest_role, largest, largest_role, config_map, last_applied)


def _largest_leaf(value, *at: str | int) -> tuple[int, tuple]:
    """(its JSON size, its path) of the largest string or list of strings inside `value`: the field to shorten."""
    if isinstance(value, dict):
        found = [_largest_leaf(item, *at, key) for key, item in value.items()]
    elif isinstance(value, list) and not all(isinstance(item, str) for item in value):
        found = [_largest_leaf(item, *at, i) for i, item in enumerate(value)]
    else:
        return len(json.dumps(value).encode()), at
    return max(found, default=(0, at))


def source_field(job: TrainingJob, role: str, name: str) -> str:
    """The intent's field that variable `name` of a `role` pod comes from, as precisely as it can be named."""
    for where, entries in ((("spec", "roles", role, "env"), job.roles[role].env), (("spec", "env"), job.env)):
        for i, entry in enumerate(entries):
            if entry["name"] == name:  # the role's own entries win, so they are looked at first
                return field_path(*where, i, "value")
    if name == contract.TRAINING_ENV:
        return field_path(*_largest_leaf(job.training, "spec", "training")[1])
    if job.hadoop and name in {entry["name"] for entry in environment.hadoop_env(job.hadoop)}:
        return "spec.hadoop"
    return "spec"


def _shorter(field: str) -> str:
    if field == "spec.training.data.paths":
        return "list fewer paths: each may be a glob (part-*.tfrecord) that the runtime expands"
    return "make this value shorter (a long list can go in a file the program reads, and its path here)"


def _too_big(job: TrainingJob, profile: ClusterProfile, naming: Naming, found: Sizes, attribute: str, limit: int,
             message: str) -> Problem:
    """The problem of a size over `limit`, at the field to change: the workers where the cluster spec makes it."""
    if attribute == "env_string" and found.env_string_name not in _CLUSTER_SIZED:
        field = source_field(job, found.env_string_role, found.env_string_name)
        return Problem(f"{message}: {_shorter(field)}", field)
    if attribute == "environment":
        env = _pod_env(job, profile, naming, found.environment_role, "")  # the pod without its cluster spec
        without_cluster = sum(_string_bytes(name, value) for name, value in env.items())
        if without_cluster > limit:
            name = max((n for n in env if n not in _CLUSTER_SIZED), key=lambda n: _string_bytes(n, env[n]))
            field = source_field(job, found.environment_role, name)
            return Problem(f"{message}: without the cluster spec it would still be {without_cluster:,} bytes, "
                           f"{name} the largest variable ({_string_bytes(name, env[name]):,} bytes): {_shorter(field)}",
                           field)
    fitting = _most_workers(job, lambda smaller: getattr(sizes(smaller, profile, naming), attribute) <= limit)
    ps = job.roles["ps"].replicas
    remedy = (f"with {ps} PS at most {fitting:,} workers fit" if fitting else
              f"with {ps} PS not even one worker fits: use fewer PS") + \
        " (every address repeats metadata.name: a shorter name fits more)"
    return Problem(f"{message}: {remedy}", "spec.roles.worker.replicas")


def _with_workers(job: TrainingJob, workers: int) -> TrainingJob:
    roles = dict(job.roles)
    roles["worker"] = dataclasses.replace(roles["worker"], replicas=workers)
    return dataclasses.replace(job, roles=roles)


def _most_workers(job: TrainingJob, fits: Callable[[TrainingJob], bool]) -> int:
    """The largest worker count (at most the job's) with which `fits` holds; 0 when none does."""
    low, high = 0, job.roles["worker"].replicas
    while low < high:
        middle = (low + high + 1) // 2
        if fits(_with_workers(job, middle)):
            low = middle
        else:
            high = middle - 1
    return low


def check(job: TrainingJob, profile: ClusterProfile, naming: Naming) -> list[Problem]:
    found = sizes(job, profile, naming)
    limits = [
        ("env_string", ENV_STRING_MAX,
         f"{found.env_string_name} of a pod would be {found.env_string:,} bytes; Linux refuses one environment "
         f"string over {ENV_STRING_MAX:,} bytes (MAX_ARG_STRLEN), so no container could start"),
        ("environment", ENVIRONMENT_MAX - ENVIRONMENT_ROOM,
         f"a pod's environment and command line would be {found.environment:,} bytes; Linux refuses more than "
         f"{ENVIRONMENT_MAX:,} for the command line and environment together (a quarter of the usual 8 MiB stack "
         "limit), and the image's own variables need room too"),
        ("config_map", CONFIG_MAP_MAX,
         f"the job's ConfigMap would hold {found.config_map:,} bytes; the API server refuses more than "
         f"{CONFIG_MAP_MAX:,}"),
    ]
    problems = []
    for attribute, limit, message in limits:
        if getattr(found, attribute) > limit:
            problems.append(_too_big(job, profile, naming, found, attribute, limit, message))
            break  # the first limit exceeded is the one to fix; the others follow from the same size
    if not problems and found.last_applied > ANNOTATIONS_MAX:
        problems.append(Problem(
            f"the job's ConfigMap is {found.config_map:,} bytes: client-side kubectl apply (Argo CD's default) "
            f"copies it into an annotation, which Kubernetes limits to {ANNOTATIONS_MAX:,} bytes; sync it with "
            "the Argo CD sync option ServerSideApply=true", "spec.roles.worker.replicas", severity=WARNING))
    return problems
