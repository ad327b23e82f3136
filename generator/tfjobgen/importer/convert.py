"""A Source (sources.py) into a TrainingJob intent, with a comment where a choice was made and a
report row for every source field.

Pure: `convert(source, file, lines, namespace)` returns an `Imported` (the intent as plain data,
its comments by field, the rows, and which source field each intent field came from, so that a
value tfjobgen's validation refuses is reported at the source's own line) or the refusals.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from ..concerns import environment
from ..inputs import quantity
from ..inputs.problems import field_path
from ..shared import contract
from . import pending
from .report import CARRIED, DECIDE, DROPPED, Row
from .sources import Refusal, Replica, Source, main_container

API_VERSION, KIND = "tfjobgen.dev/v1alpha1", "TrainingJob"
DEFAULT_NAMESPACE = "default"
# What a role gets when the source asked for nothing (a BestEffort pod): a TrainingJob must size every role.
GUESS_CPU, GUESS_MEMORY = 1, "4Gi"
GPU_RESOURCES = ("nvidia.com/gpu", "alpha.kubernetes.io/nvidia-gpu")
_SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "ash", "busybox"}
_SHELL_CODE = re.compile(r"[;&|`$<>(){}\n*?~\\]")
_HAND_WIRED = re.compile(r"TF_CONFIG|--ps_hosts|--worker_hosts|/etc/volcano/")
_SERVER_SET = {"uid", "resourceVersion", "creationTimestamp", "generation", "selfLink", "managedFields",
               "ownerReferences", "finalizers", "deletionTimestamp", "deletionGracePeriodSeconds"}
_BOOKKEEPING = {"kubectl.kubernetes.io/last-applied-configuration"}
# The generated variables validation refuses in spec.env, read from where validation keeps them so that
# import and validate never disagree on which names tfjobgen owns.
OWNED_ENV = dict(environment._RESERVED)  # noqa: SLF001 (one list, not a copy to drift)
THREAD_ENV = {contract.INTRA_OP_ENV: "intraOp", contract.INTER_OP_ENV: "interOp", contract.OMP_ENV: "intraOp"}


@dataclass
class Imported:
    intent: dict
    notes: dict[str, str]  # intent field -> the comment written above it
    rows: list[Row]
    provenance: dict[str, str]  # intent field -> the source field it came from
    name: str = ""


@dataclass
class _Builder:
    """The intent under construction, and the rows and comments that say how."""

    intent: dict = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    rows: list[Row] = field(default_factory=list)
    provenance: dict[str, str] = field(default_factory=dict)
    refusals: list[Refusal] = field(default_factory=list)
    # Env entries carried, until every role's are known (_place_env): those every role has go to spec.env.
    env: list[tuple[str, str, Any, int]] = field(default_factory=list)

    def put(self, target: str, value: Any, source: str = "", note: str = "") -> None:
        node = self.intent
        *parents, last = target.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
        if source:
            self.provenance.setdefault(target, source)
        if note:
            self.notes[target] = note if target not in self.notes else f"{self.notes[target]}; {note}"

    def row(self, source: str, outcome: str, target: str, why: str) -> None:
        self.rows.append(Row(source, outcome, target, why))

    def carry(self, source: str, target: str, value: Any, why: str = "", note: str = "") -> None:
        self.put(target, value, source, note)
        self.row(source, CARRIED, target, why or note)

    def refuse(self, where: str, message: str) -> None:
        self.refusals.append(Refusal(where, message))


def convert(source: Source, namespace: str | None = None) -> Imported | list[Refusal]:
    b = _Builder()
    b.put("apiVersion", API_VERSION)
    b.put("kind", KIND)
    b.row("apiVersion", CARRIED, "apiVersion", f"a {source.kind} becomes a {API_VERSION} {KIND}")
    b.row("kind", CARRIED, "kind", "")
    _metadata(b, source, namespace)
    containers = {}
    for role, replica in source.replicas.items():
        found = main_container(replica)
        if isinstance(found, Refusal):
            b.refusals.append(found)
            continue
        containers[role] = found
    if b.refusals:
        return b.refusals
    _job_wide(b, source, containers)  # and, per role, its env, resources and the rest of its pod
    _failure_policy(b, source)
    _policies(b, source)
    for key in sorted(set(source.data) - {"apiVersion", "kind", "metadata", "spec"}):
        b.row(key, DROPPED, "", "the server's view of the job (status), not part of it" if key == "status" else
              "not a field of the job")
    _place_env(b, list(source.replicas))
    _write_choices(b, source)
    if b.refusals:
        return b.refusals
    return Imported(b.intent, b.notes, b.rows, b.provenance, b.intent["metadata"]["name"])


# ---- metadata ---------------------------------------------------------------

def _metadata(b: _Builder, source: Source, namespace: str | None) -> None:
    meta = source.metadata
    name = meta.get("name")
    if isinstance(name, str) and name:
        b.carry("metadata.name", "metadata.name", name)
        if "generateName" in meta:
            b.row("metadata.generateName", DROPPED, "", "the API server ignores it beside a name")
    elif isinstance(meta.get("generateName"), str) and meta["generateName"].strip("-"):
        chosen = meta["generateName"].rstrip("-")
        b.put("metadata.name", chosen, "metadata.generateName",
              "the TFJob had only generateName: a TrainingJob's name is fixed, so its prefix was taken")
        b.row("metadata.generateName", CARRIED, "metadata.name", "the prefix, as a fixed name (GitOps names each job)")
    else:
        b.refuse("metadata.name", "the job has no name: give it metadata.name (a DNS-1035 label such as wide-deep)")
        b.put("metadata.name", "")
    if isinstance(meta.get("namespace"), str) and meta["namespace"]:
        b.carry("metadata.namespace", "metadata.namespace", meta["namespace"])
    else:
        chosen = namespace or DEFAULT_NAMESPACE
        b.put("metadata.namespace", chosen, "metadata",
              f"the source named no namespace (kubectl applied it to the current one): {chosen} "
              f"{'from --namespace' if namespace else 'assumed; import --namespace NS sets another'}")
        b.row("metadata.namespace", DECIDE, "metadata.namespace",
              f"not in the source; {chosen} was written: a TrainingJob names its namespace")
    # Whole mappings: their keys hold dots and slashes (example.com/team), which a dotted target would split.
    labels = {}
    for key, value in sorted((meta.get("labels") or {}).items()):
        labels[str(key)] = "" if value is None else str(value)
        b.row(field_path("metadata.labels", key), CARRIED, f"metadata.labels.{key}", "on every generated object and pod")
    if labels:
        b.put("metadata.labels", labels, "metadata.labels")
    annotations = {}
    for key, value in sorted((meta.get("annotations") or {}).items()):
        where = field_path("metadata.annotations", key)
        if key in _BOOKKEEPING:
            b.row(where, DROPPED, "", "kubectl's own bookkeeping")
        elif key == "scheduling.k8s.io/group-name":
            b.row(where, DROPPED, "", "the gang's PodGroup: tfjobgen's gang admission is the cluster profile's spec.gang")
        else:
            annotations[str(key)] = "" if value is None else str(value)
            b.row(where, CARRIED, f"metadata.annotations.{key}", "on every generated object (not the pods, as on the TFJob)")
    if annotations:
        b.put("metadata.annotations", annotations, "metadata.annotations")
    for key in sorted(set(meta) - {"name", "generateName", "namespace", "labels", "annotations"}):
        b.row(field_path("metadata", key), DROPPED, "", "set by the API server" if key in _SERVER_SET else
              "not carried: a TrainingJob's metadata is its name, namespace, labels and annotations")


# ---- image, command, env: the fields one role or all roles have -------------------------------

def argv(container: dict, where: str) -> tuple[list[str], list[str], str] | Refusal:
    """The command and args a container runs, as argument lists: `sh -c 'python train.py --x 1'` (no shell
    code in it) becomes [python, train.py, --x, '1'], as tfjobgen runs argument lists only. The third
    value says what was rewritten, '' when nothing was."""
    command, args = container.get("command"), container.get("args")
    command = [] if command is None else command
    args = [] if args is None else args
    if not isinstance(command, list) or not isinstance(args, list):
        return Refusal(f"{where}.command", "command and args are lists of strings")
    command, args = [str(c) for c in command], [str(a) for a in args]
    if not command:
        return Refusal(f"{where}.command" if "command" in container else where,
                       "no command: the TFJob runs its image's own entrypoint, which import cannot see, and a "
                       "TrainingJob without spec.command runs tfjobgen's training runtime instead; write the "
                       "entrypoint as the container's command (docker inspect --format '{{.Config.Entrypoint}}' "
                       "IMAGE) and import again")
    full = command + args
    program = full[0].rsplit("/", 1)[-1]
    if program in _SHELLS and len(full) > 1 and full[1] in ("-c", "-lc", "-ec"):
        script = full[2] if len(full) > 2 else ""
        if len(full) > 3 or _SHELL_CODE.search(script) or not script.strip():
            found = _SHELL_CODE.search(script)
            what = f"shell code ({found.group(0)!r})" if found else "a shell script"
            return Refusal(f"{where}.command", f"the command is {what}, run by {full[0]} -c; tfjobgen runs "
                                               "argument lists only: put the script in the image and name it "
                                               "([/bin/sh, /app/train.sh]) or run the program itself "
                                               "([python, train.py, --steps, '100'])")
        return shlex.split(script), [], f"was {full[0]} {full[1]} '{script.strip()}': the same program as an argument list"
    if len(command) == 1 and re.search(r"\s", command[0]) and not _SHELL_CODE.search(command[0]):
        return shlex.split(command[0]), args, f"was one string '{command[0]}': split into arguments"
    return command, args, ""


def _job_wide(b: _Builder, source: Source, containers: dict[str, tuple[int, dict]]) -> None:
    """image, command and args: one for the whole job; the worker's when roles differ (a decision)."""
    paths = {role: field_path(source.replicas[role].pod_path, "containers", i) for role, (i, _) in containers.items()}
    images = {}
    for role, (_, container) in containers.items():
        image = container.get("image")
        if not isinstance(image, str) or not image.strip():
            b.refuse(f"{paths[role]}.image" if "image" in container else paths[role],
                     f"the {source.replicas[role].key} container has no image: every TrainingJob task runs spec.image")
        elif re.search(r"\$\{|\$\(|<[^>]*>", image):
            b.refuse(f"{paths[role]}.image", f"image {image!r} is a placeholder (envsubst or a <VALUE> to fill in): "
                                             "fill it in and import the result")
        else:
            images[role] = image
    argvs = {}
    for role, (_, container) in containers.items():
        got = argv(container, paths[role])
        if isinstance(got, Refusal):
            b.refusals.append(got)
        else:
            argvs[role] = got
    if b.refusals:
        return
    _one_for_all(b, "image", "spec.image", {r: images[r] for r in containers}, paths, "image")
    commands = {r: argvs[r][0] for r in argvs}
    arguments = {r: argvs[r][1] for r in argvs}
    _one_for_all(b, "command", "spec.command", commands, paths, "command", rewrites={r: argvs[r][2] for r in argvs})
    if any(arguments.values()):
        _one_for_all(b, "args", "spec.args", arguments, paths, "args")
    for role, (command, args, _) in argvs.items():
        text = " ".join(command + args)
        if _HAND_WIRED.search(text):
            b.row(f"{paths[role]}.command", DECIDE, "spec.roles (TF_CONFIG is generated)",
                  f"the command wires the cluster by hand ({_HAND_WIRED.search(text).group(0)}): tfjobgen writes "
                  "TF_CONFIG for every task; read it instead of flags or host files")
    for role, (_, container) in containers.items():
        _env(b, source.replicas[role], paths[role], container)
        _resources(b, source.replicas[role], paths[role], container)
        _container_rest(b, source.replicas[role], paths[role], container)


def _one_for_all(b: _Builder, key: str, target: str, values: dict[str, Any], paths: dict[str, str], what: str,
                 rewrites: dict[str, str] | None = None) -> None:
    chosen_role = "worker" if "worker" in values else next(iter(values))
    chosen = values[chosen_role]
    differ = any(v != chosen for v in values.values())
    note = (rewrites or {}).get(chosen_role, "")
    if differ:
        note = "; ".join(n for n in (note, f"the roles' {what}s differ: the worker's was taken") if n)
    b.put(target, chosen, f"{paths[chosen_role]}.{key}", note)
    for role, value in values.items():
        where = f"{paths[role]}.{key}"
        if value == chosen:
            why = (rewrites or {}).get(role, "") or ("the same for every role" if len(values) > 1 else "")
            b.row(where, CARRIED, target, why)
        else:
            b.rows.append(pending.per_role(role, key, where, chosen_role))


def _env(b: _Builder, replica: Replica, path: str, container: dict) -> None:
    entries = container.get("env") or []
    for i, entry in enumerate(entries):
        where = field_path(f"{path}.env", i)
        name = entry.get("name") if isinstance(entry, dict) else None
        if name in THREAD_ENV:
            _threads(b, replica, where, entry)
        elif name in OWNED_ENV or (isinstance(name, str) and name.startswith(contract.GENERATED_PREFIX)):
            b.row(where, DROPPED, OWNED_ENV.get(name, ""),
                  f"{name} set by hand: tfjobgen owns it and writes it for every task; its field is "
                  f"{OWNED_ENV.get(name, 'the spec (TFJOBGEN_* variables are generated)')}")
        elif isinstance(entry, dict) and "valueFrom" in entry and not (
                isinstance(entry["valueFrom"], dict) and len(entry["valueFrom"]) == 1 and
                set(entry["valueFrom"]) <= {"secretKeyRef", "configMapKeyRef", "fieldRef", "resourceFieldRef"}):
            b.row(where, DECIDE, "spec.env", "a valueFrom a TrainingJob does not take (it takes secretKeyRef, "
                                             "configMapKeyRef, fieldRef or resourceFieldRef)")
        else:
            value = dict(entry) if isinstance(entry, dict) else entry
            if isinstance(value, dict) and "value" in value and not isinstance(value["value"], str):
                value["value"] = "" if value["value"] is None else str(value["value"])
            b.rows.append(Row(where, CARRIED, "", "env"))  # the target is set once every role's env is known
            b.env.append((replica.role, where, value, len(b.rows) - 1))
    if "envFrom" in container:
        b.row(f"{path}.envFrom", DECIDE, "spec.env (valueFrom per key)",
              "a TrainingJob has no envFrom: name each key as an env entry with valueFrom secretKeyRef or configMapKeyRef")


def _place_env(b: _Builder, roles: list[str]) -> None:
    carried = b.env
    by_role: dict[str, list] = {r: [] for r in roles}
    for role, where, value, index in carried:
        by_role[role].append((where, value, index))
    common = [value for _, value, _ in by_role.get("worker") or next(iter(by_role.values()))
              if all(any(v == value for _, v, _ in entries) for entries in by_role.values())] if len(roles) > 1 else []
    job_wide: list = []
    per_role: dict[str, list] = {r: [] for r in roles}
    for role in roles:
        for where, value, index in by_role[role]:
            if value in common:
                target = f"spec.env[{common.index(value)}]"
                if value not in job_wide:
                    job_wide.append(value)
                    b.provenance.setdefault(target, where)
                why = "every role has it"
            else:
                target = f"spec.roles.{role}.env[{len(per_role[role])}]"
                per_role[role].append(value)
                b.provenance.setdefault(target, where)
                why = f"only the {role} has it"
            b.rows[index] = Row(where, CARRIED, target, why)
    if job_wide:
        b.put("spec.env", job_wide)
    for role, values in per_role.items():
        if values:
            b.put(f"spec.roles.{role}.env", values)


def _threads(b: _Builder, replica: Replica, where: str, entry: dict) -> None:
    name, value = entry.get("name"), entry.get("value")
    key = THREAD_ENV[name]
    target = f"spec.roles.{replica.role}.threads.{key}"
    try:
        count = int(str(value))
    except ValueError:
        count = 0
    if not 1 <= count <= 1024:
        b.row(where, DROPPED, target, f"{name} set by hand to {value!r}: tfjobgen owns it (threads.{key}, default the "
                                      "CPU limit) and an integer from 1 to 1024 is what it takes")
        return
    roles = b.intent.get("spec", {}).get("roles", {}).get(replica.role, {})
    if name == contract.OMP_ENV and "intraOp" in roles.get("threads", {}):
        b.row(where, DROPPED, target, f"{name}: tfjobgen sets it equal to threads.intraOp")
        return
    b.carry(where, target, count, f"{name} set by hand: tfjobgen owns it and writes it from this field",
            f"from {name} (tfjobgen writes {name} itself)")


def _resources(b: _Builder, replica: Replica, path: str, container: dict) -> None:
    role, target = replica.role, f"spec.roles.{replica.role}"
    resources = container.get("resources") or {}
    where = f"{path}.resources"
    requests = resources.get("requests") or {}
    limits = resources.get("limits") or {}
    if replica.role in ("ps", "worker"):
        b.put(f"{target}.replicas", _replicas(b, replica), f"{replica.path}.replicas")
    elif "replicas" in replica.data and replica.data["replicas"] != 1:
        b.refuse(f"{replica.path}.replicas", f"{replica.data['replicas']} {replica.key} replicas: a TrainingJob's "
                                             f"{role} is a single task; keep replicas: 1")
    if "replicas" in replica.data:
        b.row(f"{replica.path}.replicas", CARRIED, f"{target}.replicas", "" if role in ("ps", "worker") else "one task")
    cpu_request, cpu_limit = requests.get("cpu"), limits.get("cpu")
    if cpu_request is None and cpu_limit is None:
        b.put(f"{target}.cpu", GUESS_CPU, where, "the source asked for no CPU: a guess, set what the task needs")
        b.row(where, DECIDE, f"{target}.cpu", "no CPU in the source (a BestEffort pod): a TrainingJob sizes every "
                                              f"task; {GUESS_CPU} was written")
    else:
        cpu = cpu_request if cpu_request is not None else cpu_limit
        b.carry(f"{where}.{'requests' if cpu_request is not None else 'limits'}.cpu", f"{target}.cpu", cpu,
                "" if cpu_request is not None else "a limit alone is also the request")
        if cpu_limit is not None:
            if cpu_request is not None:
                b.carry(f"{where}.limits.cpu", f"{target}.cpuLimit", cpu_limit)
            else:
                b.put(f"{target}.cpuLimit", cpu_limit, f"{where}.limits.cpu")
    mem_request, mem_limit = requests.get("memory"), limits.get("memory")
    if mem_request is None and mem_limit is None:
        b.put(f"{target}.memory", GUESS_MEMORY, where, "the source asked for no memory: a guess, set what the task needs")
        b.row(f"{where}.memory" if resources else where, DECIDE, f"{target}.memory",
              f"no memory in the source: a TrainingJob sizes every task; {GUESS_MEMORY} was written")
    else:
        memory = mem_limit if mem_limit is not None else mem_request
        b.carry(f"{where}.{'limits' if mem_limit is not None else 'requests'}.memory", f"{target}.memory", memory,
                "requested and limited alike")
        if mem_limit is not None and mem_request is not None:
            same = quantity.parse(mem_request) == quantity.parse(mem_limit)
            b.row(f"{where}.requests.memory", CARRIED if same else DECIDE, f"{target}.memory",
                  "equal to the limit" if same else "a TrainingJob requests and limits memory alike: the limit was taken")
            if not same:
                b.notes[f"{target}.memory"] = f"the source requested {mem_request} and limited {mem_limit}: the limit is both"
        elif mem_limit is None:
            b.notes[f"{target}.memory"] = "the source set only a request: a TrainingJob limits memory at the same value"
    for kind, values in (("requests", requests), ("limits", limits)):
        for resource in sorted(set(values) - {"cpu", "memory"}):
            key = f"{where}.{kind}.{resource}"
            if resource in GPU_RESOURCES:
                _gpu(b, replica, key, values[resource], resource)
            else:
                b.row(key, DECIDE, "ClusterProfile spec.gpu.resource", f"{resource}: a TrainingJob asks for CPU, memory "
                                                                       "and the profile's GPU resource only")
    for key in sorted(set(resources) - {"requests", "limits"}):
        b.row(f"{where}.{key}", DROPPED, "", "not a resource field a TrainingJob has")


def _replicas(b: _Builder, replica: Replica) -> int:
    value = replica.data.get("replicas", 1)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        b.refuse(f"{replica.path}.replicas", f"replicas {value!r}: a number of tasks, 1 or more")
        return 1
    if "replicas" not in replica.data:
        b.notes[f"spec.roles.{replica.role}.replicas"] = "the source gave none: the operator's default, 1"
        b.row(replica.path, CARRIED, f"spec.roles.{replica.role}.replicas", "no replicas: the operator's default, 1")
    return value


def _gpu(b: _Builder, replica: Replica, where: str, value: Any, resource: str) -> None:
    target = f"spec.roles.{replica.role}.gpu"
    try:
        count = int(str(value))
    except ValueError:
        count = -1
    if not 0 <= count <= 16:
        b.row(where, DECIDE, target, f"{value!r} GPUs: a TrainingJob asks for 0 to 16 whole GPUs per task")
        return
    b.carry(where, target, count, "as the profile's GPU resource (spec.gpu.resource)" +
            ("; alpha.kubernetes.io/nvidia-gpu is gone since Kubernetes 1.11" if resource.startswith("alpha.") else ""))


_CONTAINER_READ = {"image", "command", "args", "env", "envFrom", "resources", "name"}


def _container_rest(b: _Builder, replica: Replica, path: str, container: dict) -> None:
    pod, pod_path = replica.pod, replica.pod_path
    rows = pending.volumes(pod, pod_path, container.get("volumeMounts"), f"{path}.volumeMounts")
    rows += pending.pod_metadata(replica.pod_metadata, f"{replica.path}.template.metadata")
    rows += pending.pull_secrets(pod, pod_path)
    rows += pending.placement(pod, pod_path)
    b.rows += rows
    b.row(f"{path}.name", DROPPED, "", "tfjobgen names its container tensorflow, as the operator does")
    for key in sorted(set(container) - _CONTAINER_READ - {"volumeMounts"}):
        b.row(f"{path}.{key}", *_CONTAINER_FIELDS.get(key, (DECIDE, "", "no TrainingJob field holds it")))
    containers = pod.get("containers") or []
    for i, other in enumerate(containers):
        if other is not container:
            b.refuse(field_path(pod_path, "containers", i),
                     f"a second container ({other.get('name', '?')}) beside the training one: a TrainingJob runs one "
                     "container per pod, and a job imported without its sidecar would start without what it "
                     "serves; run it as its own Deployment, or keep this job where it runs")
    if pod.get("initContainers"):
        b.refuse(f"{pod_path}.initContainers",
                 "init containers: a TrainingJob has none, and a job imported without them would start without what "
                 "they prepare (data, files, permissions); fold their work into the image or the program")
    for key in sorted(set(pod) - {"containers", "volumes", "imagePullSecrets", "nodeSelector", "tolerations",
                                  "affinity", "initContainers", "restartPolicy"}):
        if key in ("serviceAccountName", "serviceAccount"):
            continue  # one for the job: below
        b.row(f"{pod_path}.{key}", *_POD_FIELDS.get(key, (DECIDE, "", "no TrainingJob field holds it")))
    account = pod.get("serviceAccountName", pod.get("serviceAccount"))
    if account is not None:
        key = "serviceAccountName" if "serviceAccountName" in pod else "serviceAccount"
        current = b.intent.get("spec", {}).get("serviceAccountName")
        if current is None:
            b.carry(f"{pod_path}.{key}", "spec.serviceAccountName", str(account), "the pods' ServiceAccount")
        elif current == account:
            b.row(f"{pod_path}.{key}", CARRIED, "spec.serviceAccountName", "the same for every role")
        else:
            b.row(f"{pod_path}.{key}", DECIDE, "spec.serviceAccountName",
                  f"roles differ ({current} and {account}): a TrainingJob has one ServiceAccount")
    for key in sorted(set(replica.data) - {"replicas", "template", "restartPolicy", "tfReplicaType", "name"}):
        b.row(f"{replica.path}.{key}", *_REPLICA_FIELDS.get(key, (DECIDE, "", "no TrainingJob field holds it")))
    if "tfReplicaType" in replica.data or "name" in replica.data:
        key = "tfReplicaType" if "tfReplicaType" in replica.data else "name"
        b.row(f"{replica.path}.{key}", CARRIED, f"spec.roles.{replica.role}", "the replica's role")
    template = replica.data.get("template") or {}
    for key in sorted(set(template) - {"metadata", "spec"}):
        b.row(f"{replica.path}.template.{key}", DROPPED, "", "not a pod template field")


_OWN = "tfjobgen sets it"
_CONTAINER_FIELDS = {
    "imagePullPolicy": (DROPPED, "", "tfjobgen pulls Always (a tag may move); pin a digest for a fixed image"),
    "ports": (DROPPED, "", "tfjobgen names its own ports (the profile's, 2222 by default) and TF_CONFIG lists them"),
    "securityContext": (DROPPED, "spec.readOnlyRootFilesystem",
                        "tfjobgen's pods are restricted (non-root, no privilege escalation, all capabilities "
                        "dropped); privileged, added capabilities and root are refused there"),
    "workingDir": (DECIDE, "spec.command", "a TrainingJob has no workingDir: name the program by its absolute path, "
                                           "or set WORKDIR in the image"),
    "livenessProbe": (DROPPED, "", _OWN), "readinessProbe": (DROPPED, "", _OWN), "startupProbe": (DROPPED, "", _OWN),
    "terminationMessagePath": (DROPPED, "", "the default"), "terminationMessagePolicy": (DROPPED, "", "the default"),
    "stdin": (DROPPED, "", "tasks read no input"), "tty": (DROPPED, "", "tasks read no input"),
}
_POD_FIELDS = {
    "hostNetwork": (DROPPED, "", pending.RESTRICTED), "hostIPC": (DROPPED, "", pending.RESTRICTED),
    "hostPID": (DROPPED, "", pending.RESTRICTED),
    "securityContext": (DROPPED, "", "tfjobgen writes the restricted pod security context (user 10000)"),
    "hostAliases": (DECIDE, "", "a TrainingJob has no hostAliases: resolve the name through cluster DNS"),
    "nodeName": (DROPPED, "", "pins a pod to one node: tfjobgen places pods by the topology and the profile's pools"),
    "priorityClassName": (DECIDE, "ClusterProfile spec.priorityClasses", "PriorityClasses are the profile's"),
    "schedulerName": (DECIDE, "ClusterProfile spec.gang", "the scheduler is the profile's (spec.gang)"),
    "terminationGracePeriodSeconds": (DROPPED, "", _OWN),
    "dnsPolicy": (DROPPED, "", _OWN), "subdomain": (DROPPED, "", _OWN), "hostname": (DROPPED, "", _OWN),
    "automountServiceAccountToken": (DROPPED, "", "tfjobgen's pods never mount an API token"),
    "enableServiceLinks": (DROPPED, "", _OWN),
}
_REPLICA_FIELDS = {
    "policies": (DROPPED, "spec.failurePolicy", "Volcano's events -> actions: a task failing for good fails a "
                                                "TrainingJob; pods the cluster takes away are replaced without counting"),
    "maxRetry": (DECIDE, "spec.failurePolicy.backoffLimitPerTask", "a task's own retries: a TrainingJob has one "
                                                                    "budget per task, the same for every role"),
    "minAvailable": (DECIDE, "ClusterProfile spec.gang", "gang admission is the profile's"),
}


# ---- restartPolicy and the job's policies -------------------------------------------

def _restart_policy(source: Source, replica: Replica) -> tuple[str, str]:
    """A replica's restart policy and where it was written. The TFJob operator (v1alpha2 on) sets each pod's
    restartPolicy from the replica's, Never when it has none; v1alpha1 and Volcano read the pod's own."""
    if source.replica_container == "spec.tfReplicaSpecs":
        return str(replica.data.get("restartPolicy", "Never")), (
            f"{replica.path}.restartPolicy" if "restartPolicy" in replica.data else "")
    if "restartPolicy" in replica.pod:
        return str(replica.pod["restartPolicy"]), f"{replica.pod_path}.restartPolicy"
    return "", ""


def _failure_policy(b: _Builder, source: Source) -> None:
    policies = {role: _restart_policy(source, r) for role, r in source.replicas.items()}
    chosen, where = policies["worker"]
    backoff = source.policies.get("backoffLimit") or source.policies.get("maxRetry")
    target = "spec.failurePolicy.backoffLimitPerTask"
    for role, replica in source.replicas.items():
        policy, at = policies[role]
        if at and policy != chosen:
            b.row(at, DECIDE, "spec.failurePolicy", f"restartPolicy {policy} differs from the worker's {chosen or '(none)'}: "
                                                    "a TrainingJob has one failure policy; the worker's was taken")
        elif at:
            b.row(at, CARRIED, "spec.failurePolicy", _POLICY_WHY.get(policy, "not a restartPolicy the operator knows"))
        if "restartPolicy" in replica.pod and at != f"{replica.pod_path}.restartPolicy":
            b.row(f"{replica.pod_path}.restartPolicy", DROPPED, "",
                  f"the operator ignores it: it sets the pod's from the replica's restartPolicy ({policy})")
    if chosen == "Never" and source.replica_container == "spec.tfReplicaSpecs":
        b.put(target, 0, where or "spec.tfReplicaSpecs", "restartPolicy Never" + ("" if where else " (the operator's default)")
              + ": the operator made no new pod for a failed task")
        if backoff:
            b.row(backoff[0], DROPPED, target, "restartPolicy Never retries nothing")
        return
    if backoff:
        value = backoff[1]
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value:
            b.carry(backoff[0], target, min(value, 100),
                    "counted per task, where the source counted retries across the job" +
                    ("; at most 100" if value > 100 else ""),
                    f"from {backoff[0].split('.')[-1]} {value}, now per task")
        else:
            b.row(backoff[0], DECIDE, target, f"{value!r} is not a count of retries")
    if chosen == "ExitCode":
        b.row(where, DECIDE, "spec.failurePolicy.permanentExitCodes",
              "ExitCode failed the job at once on exit codes 1-127; permanentExitCodes lists at most 100 codes: "
              "name the ones your program uses for a failure a new pod cannot mend")


_POLICY_WHY = {
    "Never": "a failed task fails the job: backoffLimitPerTask 0",
    "OnFailure": "a failed task is retried: tfjobgen gives it a new pod, up to backoffLimitPerTask",
    "Always": "a failed task is retried: tfjobgen gives it a new pod, up to backoffLimitPerTask; a task that "
              "succeeded stays done",
    "ExitCode": "retried on exit codes 128-255, up to backoffLimitPerTask",
}


def _policies(b: _Builder, source: Source) -> None:
    for name, (where, value) in source.policies.items():
        if name in ("backoffLimit", "maxRetry"):
            continue  # _failure_policy
        if name == "activeDeadlineSeconds":
            if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
                b.carry(where, "spec.failurePolicy.activeDeadlineSeconds", value)
            else:
                b.row(where, DECIDE, "spec.failurePolicy.activeDeadlineSeconds", f"{value!r} is not a number of seconds")
        elif name == "schedulingPolicy" and isinstance(value, dict) and value:
            for key in value:
                b.row(f"{where}.{key}", DECIDE, "ClusterProfile spec.gang",
                      f"{key}: gang admission (minAvailable, queue, priority) is the cluster profile's spec.gang, "
                      "the same for every job of the cluster")
        else:
            outcome, target, why = _JOB_POLICIES.get(name, (DECIDE, "", "no TrainingJob field holds it"))
            b.row(where, outcome, target, why)
    spec = source.data.get("spec") or {}
    run_policy = spec.get("runPolicy") if isinstance(spec.get("runPolicy"), dict) else None
    if run_policy is not None and not run_policy:
        b.row("spec.runPolicy", DROPPED, "", "empty")
    if "successPolicy" in spec:
        value = spec["successPolicy"]
        if value in ("", None, "Default"):
            b.row("spec.successPolicy", CARRIED, "", "the default: the job succeeds when its chief (or worker 0) does, "
                                                     "as a TrainingJob does")
        else:
            b.row("spec.successPolicy", DECIDE, "", f"{value}: a TrainingJob succeeds when its chief (or worker 0) "
                                                    "does, and has no field for another rule")
    listed = {where for where, _ in source.policies.values()}
    for key in sorted(set(spec) - {"tfReplicaSpecs", "replicaSpecs", "tasks", "runPolicy", "successPolicy"}):
        if f"spec.{key}" not in listed:
            b.row(f"spec.{key}", *_JOB_POLICIES.get(key, (DECIDE, "", "no TrainingJob field holds it")))
    if run_policy:
        for key in sorted(set(run_policy) - {w.split(".")[-1] for w in listed if w.startswith("spec.runPolicy.")}):
            b.row(f"spec.runPolicy.{key}", DECIDE, "", "no TrainingJob field holds it")


_JOB_POLICIES = {
    "cleanPodPolicy": (DROPPED, "", "a TrainingJob's tasks end with the job: the chief (tfjobgen's runtime) or "
                                    "spec.failurePolicy.activeDeadlineSeconds ends running PS and workers, and the "
                                    "Jobs keep their finished pods for their logs"),
    "ttlSecondsAfterFinished": (DROPPED, "", "Argo CD owns the objects' lifetime: a finished job is removed by "
                                             "deleting its file (a TTL would have self-heal recreate it)"),
    "suspend": (DROPPED, "", "admission is Kueue's or the profile's gang (spec.gang)"),
    "managedBy": (DROPPED, "", "tfjobgen's objects are managed by their own controllers"),
    "enableDynamicWorker": (DROPPED, "", "a TrainingJob's workers are fixed in number"),
    "minAvailable": (DECIDE, "ClusterProfile spec.gang", "gang admission is the cluster profile's spec.gang"),
    "queue": (DECIDE, "ClusterProfile spec.gang", "the queue is the cluster profile's (spec.gang)"),
    "schedulerName": (DECIDE, "ClusterProfile spec.gang", "the scheduler is the cluster profile's (spec.gang)"),
    "priorityClassName": (DECIDE, "ClusterProfile spec.priorityClasses", "PriorityClasses are the profile's"),
    "policies": _REPLICA_FIELDS["policies"],
    "plugins": (DROPPED, "", "svc, env, ssh: tfjobgen makes the headless Service and TF_CONFIG itself; the "
                             "tensorflow plugin's task names were read for the roles"),
    "volumes": (DECIDE, "spec.volumes (missing)", "a TrainingJob has no volumes yet"),
    "schedulingPolicy": (DROPPED, "", "empty"),
}


def _write_choices(b: _Builder, source: Source) -> None:
    """The fields whose tfjobgen default would change what the source did: written out, each with why."""
    guaranteed = all(_whole_guaranteed(r) for r in source.replicas.values())
    b.put("spec.qos", "shared", note="shared: CPU requests as the source had them" +
          ("; its pods were Guaranteed with whole CPUs, so cpuset (exclusive cores on the profile's CPU-manager "
           "nodes) would fit them" if guaranteed else "; cpuset (the default) needs whole CPUs and "
           "Guaranteed pods"))
    b.put("spec.topology.mode", "none", note="none: the scheduler places the pods, as for the source; spread "
                                             "(the default) also keeps PS apart")
    b.put("spec.readOnlyRootFilesystem", False, note="false: the source's containers could write anywhere; true "
                                                     "(the default) leaves only /tmp writable")
    b.put("spec.backend", "native", note="native: plain Jobs, no operator; tfjob keeps a Kubeflow TFJob")


def _whole_guaranteed(replica: Replica) -> bool:
    found = main_container(replica)
    if isinstance(found, Refusal):
        return False
    resources = found[1].get("resources") or {}
    requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
    cpu = quantity.parse(limits.get("cpu", "")) if "cpu" in limits else None
    return (cpu is not None and cpu.denominator == 1 and cpu > 0 and "memory" in limits and
            all(quantity.parse(requests.get(k, limits[k])) == quantity.parse(limits[k]) for k in ("cpu", "memory")))
