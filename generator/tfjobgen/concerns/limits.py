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
limit, the size, and how many workers would fit with the job's PS.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Callable

from ..inputs.kubernetes_syntax import ANNOTATIONS_MAX
from ..inputs.problems import WARNING, Problem
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


# The environment strings that hold the cluster spec: they grow with the tasks. Any other string too long for
# Linux is one field's, named here (a value of spec.env is refused where it is written: container.check).
_GROWS_WITH_TASKS = (contract.TF_CONFIG, contract.CLUSTER_ENV)
_FIELD_OF = {contract.TRAINING_ENV: "spec.training"}
_REMEDY_OF = {contract.TRAINING_ENV: "the runtime's settings travel in it as JSON: list fewer data paths (a glob "
                                     "matches many: hdfs://.../part-*)"}


@dataclasses.dataclass(frozen=True)
class Sizes:
    env_string: int  # the longest NAME=value string of any pod, NUL included
    env_string_name: str  # which variable that is
    environment: int  # all NAME=value strings of the largest pod, and its command line (execve counts both)
    config_map: int  # the job's ConfigMap: its values
    last_applied: int  # the ConfigMap as client-side apply would copy it into an annotation


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


def sizes(job: TrainingJob, profile: ClusterProfile, naming: Naming) -> Sizes:
    cluster = environment.cluster_spec(job, profile, naming)
    cluster_text = contract.cluster_json(cluster)
    longest, longest_name, largest = 0, "", 0
    for role in job.roles:
        env = _pod_env(job, profile, naming, role, cluster_text)
        strings = {name: len(f"{name}={value}".encode()) + 1 for name, value in env.items()}
        name = max(strings, key=strings.get)
        if strings[name] > longest:
            longest, longest_name = strings[name], name
        largest = max(largest, sum(strings.values()))
    largest += sum(len(arg.encode("utf-8", "surrogatepass")) + 1 for arg in container.command(job) + list(job.args))
    data = {contract.CLUSTER_KEY: cluster_text}
    if job.uses_star_server:
        data[contract.ENDPOINT_MAP_KEY] = environment.endpoint_map(job, profile, cluster)
    config_map = sum(len(value.encode()) for value in data.values())
    last_applied = len(json.dumps({"data": data}, separators=(",", ":")).encode()) + _APPLY_METADATA
    return Sizes(longest, longest_name, largest, config_map, last_applied)


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
         f"a pod's environment and command line would be {found.environment:,} bytes; Linux refuses more than {ENVIRONMENT_MAX:,} "
         f"for the command line and environment together (a quarter of the usual 8 MiB stack limit), and the "
         f"image's own variables need room too"),
        ("config_map", CONFIG_MAP_MAX,
         f"the job's ConfigMap would hold {found.config_map:,} bytes; the API server refuses more than "
         f"{CONFIG_MAP_MAX:,}"),
    ]
    problems = []
    if found.env_string > ENV_STRING_MAX and found.env_string_name not in _GROWS_WITH_TASKS:
        # a string that does not grow with the tasks: fewer workers would not help, its field must change
        at = _FIELD_OF.get(found.env_string_name, "spec.env")
        return [Problem(f"{limits[0][2]}: {_REMEDY_OF.get(found.env_string_name, 'shorten it')}", at)]
    for attribute, limit, message in limits:
        if getattr(found, attribute) <= limit:
            continue
        fitting = _most_workers(job, lambda smaller: getattr(sizes(smaller, profile, naming), attribute) <= limit)
        ps = job.roles["ps"].replicas
        remedy = (f"with {ps} PS at most {fitting:,} workers fit" if fitting else
                  f"with {ps} PS not even one worker fits: use fewer PS") + \
            " (every address repeats metadata.name: a shorter name fits more)"
        problems.append(Problem(f"{message}: {remedy}", "spec.roles.worker.replicas"))
        break  # the first limit exceeded is the one to fix; the others follow from the same size
    if not problems and found.last_applied > ANNOTATIONS_MAX:
        problems.append(Problem(
            f"the job's ConfigMap is {found.config_map:,} bytes: client-side kubectl apply (Argo CD's default) "
            f"copies it into an annotation, which Kubernetes limits to {ANNOTATIONS_MAX:,} bytes; sync it with "
            "the Argo CD sync option ServerSideApply=true", "spec.roles.worker.replicas", severity=WARNING))
    return problems
