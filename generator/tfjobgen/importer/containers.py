"""A replica's training container and pod: the image, command and args one for the job, env for the job or
for a role, resources, and a row for every other field of the pod. Pure: Builder in, Builder filled."""

from __future__ import annotations

import re
import shlex
from typing import Any

from ..concerns import environment
from ..inputs import quantity
from ..inputs.problems import field_path
from ..shared import contract
from .builder import Builder
from .report import CARRIED, DECIDE, DROPPED, Row
from .sources import Refusal, Replica, Source

# What a role gets when the source asked for nothing (a BestEffort pod): a TrainingJob must size every role.
GUESS_CPU, GUESS_MEMORY = 1, "4Gi"
GPU_RESOURCES = ("nvidia.com/gpu", "alpha.kubernetes.io/nvidia-gpu")
_SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "ash", "busybox"}
_SHELL_CODE = re.compile(r"[;&|`$<>(){}\n*?~\\]")
_HAND_WIRED = re.compile(r"TF_CONFIG|--ps_hosts|--worker_hosts|/etc/volcano/")
# The generated variables validation refuses in spec.env, read from where validation keeps them so that
# import and validate never disagree on which names tfjobgen owns.
OWNED_ENV = dict(environment._RESERVED)  # noqa: SLF001 (one list, not a copy to drift)
THREAD_ENV = {contract.INTRA_OP_ENV: "intraOp", contract.INTER_OP_ENV: "interOp", contract.OMP_ENV: "intraOp"}


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


def job_wide(b: Builder, source: Source, containers: dict[str, tuple[int, dict]]) -> None:
    """image, command and args: the worker's for the whole job, and a role's own where it differs."""
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


def _one_for_all(b: Builder, key: str, target: str, values: dict[str, Any], paths: dict[str, str], what: str,
                 rewrites: dict[str, str] | None = None) -> None:
    chosen_role = "worker" if "worker" in values else next(iter(values))
    chosen = values[chosen_role]
    differ = any(v != chosen for v in values.values())
    note = (rewrites or {}).get(chosen_role, "")
    if differ:
        note = "; ".join(n for n in (note, f"the worker's; roles with another {what} have their own") if n)
    b.put(target, chosen, f"{paths[chosen_role]}.{key}", note)
    for role, value in values.items():
        where = f"{paths[role]}.{key}"
        if value == chosen:
            why = (rewrites or {}).get(role, "") or ("the same for every role" if len(values) > 1 else "")
            b.row(where, CARRIED, target, why)
        else:  # the role's own, beside the job-wide one
            b.carry(where, f"spec.roles.{role}.{key}", value, f"the {role}'s own {what}",
                    (rewrites or {}).get(role, ""))


def _env(b: Builder, replica: Replica, path: str, container: dict) -> None:
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


def place_env(b: Builder, roles: list[str]) -> None:
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


def _threads(b: Builder, replica: Replica, where: str, entry: dict) -> None:
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


def _resources(b: Builder, replica: Replica, path: str, container: dict) -> None:
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


def _replicas(b: Builder, replica: Replica) -> int:
    value = replica.data.get("replicas", 1)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        b.refuse(f"{replica.path}.replicas", f"replicas {value!r}: a number of tasks, 1 or more")
        return 1
    if "replicas" not in replica.data:
        b.notes[f"spec.roles.{replica.role}.replicas"] = "the source gave none: the operator's default, 1"
        b.row(replica.path, CARRIED, f"spec.roles.{replica.role}.replicas", "no replicas: the operator's default, 1")
    return value


def _gpu(b: Builder, replica: Replica, where: str, value: Any, resource: str) -> None:
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


def _container_rest(b: Builder, replica: Replica, path: str, container: dict) -> None:
    pod, pod_path = replica.pod, replica.pod_path
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
        b.row(f"{replica.path}.{key}", *REPLICA_FIELDS.get(key, (DECIDE, "", "no TrainingJob field holds it")))
    if "tfReplicaType" in replica.data or "name" in replica.data:
        key = "tfReplicaType" if "tfReplicaType" in replica.data else "name"
        b.row(f"{replica.path}.{key}", CARRIED, f"spec.roles.{replica.role}", "the replica's role")
    template = replica.data.get("template") or {}
    for key in sorted(set(template) - {"metadata", "spec"}):
        b.row(f"{replica.path}.template.{key}", DROPPED, "", "not a pod template field")


_OWN = "tfjobgen sets it"
RESTRICTED = "restricted Pod Security refuses it, and tfjobgen's pods are restricted"
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
    "hostNetwork": (DROPPED, "", RESTRICTED), "hostIPC": (DROPPED, "", RESTRICTED),
    "hostPID": (DROPPED, "", RESTRICTED),
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
REPLICA_FIELDS = {
    "policies": (DROPPED, "spec.failurePolicy", "Volcano's events -> actions: a task failing for good fails a "
                                                "TrainingJob; pods the cluster takes away are replaced without counting"),
    "maxRetry": (DECIDE, "spec.failurePolicy.backoffLimitPerTask", "a task's own retries: a TrainingJob has one "
                                                                    "budget per task, the same for every role"),
    "minAvailable": (DECIDE, "ClusterProfile spec.gang", "gang admission is the profile's"),
}

