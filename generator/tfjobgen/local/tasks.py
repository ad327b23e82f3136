"""From rendered pods to local processes: which pods run, and how their environment changes.

The pods come from the job's backend (`backends.decode`: its controller and the
kubelet, emulated), so each has the exact env a cluster would give it. To run here:

- every address moves to 127.0.0.1 with a free port: the cluster spec in
  TFJOBGEN_CLUSTER and TF_CONFIG, TFJOBGEN_CONTROL_ADDRESS, and both sides of
  StarServer's endpoint map (written to a local file);
- the cluster spec lists only the tasks that run here (after a scale-down), and
  TFJOBGEN_EVALUATOR says whether the evaluator does;
- `--restarts N` replaces the job's failure budget, in TFJOBGEN_TASK_RETRIES too;
- modelDir moves to a directory of this run (--model-dir chooses another, a URL included);
- `python` in the command means this Python; a program of your own runs without the entrypoint
  (`/tfjobgen/entry --`) its pods run it under: the supervisor plays that part;
- unpinned tasks share every CPU here, so thread pools above the CPU count are
  capped to it (a tf2 worker keeps at least 2 inter-op threads);
- and a check refuses any env value that still names a cluster host.
Pure functions: the caller picks ports and CPUs, writes the files `build` returns (the endpoint
map) and starts the processes.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
from dataclasses import dataclass, field
from typing import NamedTuple

from ..backends import DecodedJob
from ..concerns.lifecycle import Lifecycle
from ..concerns.pods import Pod
from ..inputs.quantity import parse as parse_quantity
from ..shared import contract
from ..shared.contract import CLUSTER_ENV, CONTROL_ADDRESS_ENV, ENDPOINT_MAP_KEY, TRAINING_ENV
from .shape import LocalError


@dataclass
class LocalTask:
    role: str
    index: int
    command: list[str]
    env: dict[str, str]  # the pod's env after the rewrites (laid over this process's env at start)
    address: str  # its TF server address here ("" for the evaluator, which serves nothing)
    cpus: tuple[int, ...] | None = None  # pinned CPUs, None: any
    owner: str = ""  # what fails with it: its Job on native (the other Jobs go on), the whole JobSet or TFJob
    counts_failures: bool = False  # its controller tells each new pod its failure count (FAILURES_ENV)
    metrics: str = ""  # host:port its Prometheus metrics are served on ("" when the pod names no metrics port)

    @property
    def name(self) -> str:
        return f"{self.role}:{self.index}"

    @property
    def file_name(self) -> str:
        return f"{self.role}-{self.index}"


@dataclass
class JobRequest:
    """What the rendered job asks for, read back from its pods."""

    name: str
    backend: str
    api: str
    protocol: str
    counts: dict[str, int]
    cpus: dict[str, float]  # role -> CPU limit (else request) per task
    training: dict | None  # spec.training as the pods get it; None when the job runs its own program
    lifecycle: Lifecycle  # how failed tasks are treated (lifecycle.py)
    pods: list[Pod] = field(repr=False, default_factory=list)
    endpoint_map: str | None = None
    fails_as_one: bool = False  # a task failing for good stops every task, not only its own object's
    completed_by: tuple[str, ...] = ()  # tasks whose exit 0 completes the job; its controller then stops the rest

    @property
    def uses_runtime(self) -> bool:
        return self.training is not None


def describe(jobs: list[DecodedJob]) -> JobRequest:
    """The job's request; LocalError when the objects hold no job or several."""
    if len(jobs) != 1:
        raise LocalError(f"run-local runs one TrainingJob at a time; found {len(jobs)}: "
                         f"{', '.join(job.key for job in jobs)}")
    job = jobs[0]
    pods = job.pods
    counts: dict[str, int] = {}
    cpus: dict[str, float] = {}
    for pod in pods:
        counts[pod.role] = counts.get(pod.role, 0) + 1
        resources = pod.container.get("resources", {})
        cpu = resources.get("limits", {}).get("cpu") or resources.get("requests", {}).get("cpu") or "1"
        cpus[pod.role] = float(parse_quantity(cpu) or 1)
    first = pods[0].env
    training = json.loads(first[TRAINING_ENV]) if TRAINING_ENV in first else None
    return JobRequest(job.name, job.backend, first.get(contract.API_ENV, "tf2"),
                      first.get(contract.PROTOCOL_ENV, "grpc"), counts, cpus, training, job.lifecycle,
                      pods, job.config.get(ENDPOINT_MAP_KEY), job.fails_as_one, job.completed_by)


@dataclass(frozen=True)
class Overrides:
    steps: int | None = None
    startup_timeout: int | None = None
    model_dir: str | None = None  # None: <run_dir>/model, whatever the job's modelDir
    protocol: str | None = None  # the protocol to run with (a fallback), None: the job's
    retries: int | None = None  # failures each task may have (--restarts), None: the job's


def lifecycle_of(request: JobRequest, overrides: Overrides) -> Lifecycle:
    """The job's failure rules, with --restarts applied."""
    if overrides.retries is None:
        return request.lifecycle
    return dataclasses.replace(request.lifecycle, retries_per_task=overrides.retries)


def host_of(address: str) -> str:
    return address.rpartition(":")[0]


def pin(request: JobRequest, counts: dict[str, int], cpus: tuple[int, ...]) -> dict[str, tuple[int, ...]] | None:
    """Exclusive CPUs per task, as the kubelet's CPU manager gives them, when they all fit; else None."""
    wanted = [(role, i, max(1, math.ceil(request.cpus[role]))) for role in counts for i in range(counts[role])]
    if sum(n for _, _, n in wanted) > len(cpus):
        return None
    result, next_cpu = {}, 0
    for role, i, n in wanted:
        result[f"{role}:{i}"] = cpus[next_cpu:next_cpu + n]
        next_cpu += n
    return result


class Built(NamedTuple):
    """What `build` gives its caller, which writes `files` before it starts any task."""

    tasks: list[LocalTask]
    notices: list[str]  # what changed, for people
    files: dict[str, str]  # path -> text of the files the tasks read (StarServer's endpoint map)


def build(request: JobRequest, counts: dict[str, int], ports: list[int], run_dir: str, overrides: Overrides,
          machine_cpus: tuple[int, ...]) -> Built:
    """The local tasks, the notices about what changed and the files the tasks read. `ports` must hold
    `ports_needed` free ports; nothing is written here."""
    notices: list[str] = []
    ports = list(ports)
    pods = [p for p in request.pods if p.index < counts.get(p.role, 0)]
    cluster = json.loads(pods[0].env[CLUSTER_ENV]) if CLUSTER_ENV in pods[0].env else \
        json.loads(pods[0].env[contract.TF_CONFIG])["cluster"]
    local_cluster, moved = _move_cluster(cluster, counts, ports)
    hosts = {host_of(a) for addresses in cluster.values() for a in addresses}
    control = f"127.0.0.1:{ports.pop(0)}"
    files, endpoint_dir = {}, None
    if request.endpoint_map is not None:
        endpoint_dir = os.path.join(run_dir, "starserver")
        path = os.path.join(endpoint_dir, ENDPOINT_MAP_KEY)
        files[path] = rewrite_endpoint_map(request.endpoint_map, moved, ports)
        notices.append(f"StarServer endpoint map rewritten for {len(moved)} local tasks: {path}")

    metrics_ports = ports[-len(pods):]  # the last of ports_needed: one per task
    pinned = pin(request, counts, machine_cpus)
    training = _local_training(request.training, run_dir, overrides, notices)
    run = _RunEnv(contract.cluster_json(local_cluster), local_cluster, control,
                  None if training is None else json.dumps(training, sort_keys=True, separators=(",", ":")),
                  endpoint_dir, overrides.protocol, "1" if counts.get("evaluator") else "0", overrides.retries)

    tasks, capped = [], set()
    for pod in pods:
        env = _rewrite_env(pod.env, run)
        metrics = ""
        if contract.METRICS_PORT_ENV in env:  # the pod's metrics port; here, a free one per task
            port = metrics_ports.pop(0)
            env[contract.METRICS_PORT_ENV] = str(port)
            metrics = f"127.0.0.1:{port}"
        task_dir = os.path.join(run_dir, "tasks", f"{pod.role}-{pod.index}")
        if env.get("HOME") == contract.SCRATCH_DIR:  # the pod's writable emptyDir; here, the task's own directory
            env["HOME"] = task_dir
        cpus = pinned.get(f"{pod.role}:{pod.index}") if pinned else None
        if cpus is None and _cap_threads(env, len(machine_cpus), request.api, pod.role):
            capped.add(pod.role)
        _check_no_cluster_names(env, hosts, f"{pod.role}:{pod.index}")
        # A program of your own runs here without the entrypoint the pods copy in: the supervisor ends the
        # other tasks when the chief's program ends, as the entrypoint does in a cluster.
        command = contract.own_program(pod.container.get("command", [])) + list(pod.container.get("args", []))
        if command and command[0] in ("python", "python3"):
            command[0] = sys.executable  # this Python, which has tfjobgen (and TensorFlow)
        address = local_cluster[pod.role][pod.index] if pod.role in local_cluster else ""
        owner = request.name if request.fails_as_one else pod.owner  # what fails with it, as its controller has it
        tasks.append(LocalTask(pod.role, pod.index, command, env, address, cpus, owner=owner,
                               counts_failures=bool(env.get(contract.FAILURES_ENV)), metrics=metrics))
    served = [f"{t.name} http://{t.metrics}{contract.METRICS_PATH}" for t in tasks if t.metrics]
    if served:
        notices.append("Prometheus metrics at " + ", ".join(served))
    if pinned is None:
        total = sum(math.ceil(request.cpus[role]) * n for role, n in counts.items())
        notices.append(f"tasks are not pinned to CPUs: they would need {total} and this machine has "
                       f"{len(machine_cpus)}" + (f"; thread pools of {', '.join(sorted(capped))} are capped at "
                                                 f"{len(machine_cpus)}" if capped else ""))
    return Built(tasks, notices, files)


def _move_cluster(cluster: dict[str, list[str]], counts: dict[str, int],
                  ports: list[int]) -> tuple[dict[str, list[str]], dict[str, str]]:
    """(the cluster of the tasks that run here, each cluster address -> its local one): each task gets the
    next of `ports` (taken from the list), in the cluster spec's order."""
    local_cluster, moved = {}, {}
    for role, addresses in cluster.items():
        kept = addresses[:counts.get(role, 0)]
        if kept:
            local_cluster[role] = []
            for address in kept:
                moved[address] = f"127.0.0.1:{ports.pop(0)}"
                local_cluster[role].append(moved[address])
    return local_cluster, moved


@dataclass(frozen=True)
class _RunEnv:
    """The values every task of this run gets in place of its pod's."""

    cluster_json: str  # TFJOBGEN_CLUSTER
    cluster: dict[str, list[str]]  # TF_CONFIG's cluster, where the backend's controller writes TF_CONFIG
    control: str  # TFJOBGEN_CONTROL_ADDRESS
    training: str | None  # TFJOBGEN_TRAINING, None: the job runs its own program
    endpoint_dir: str | None  # TF_SEASTAR_ENDPOINT_MAP_PATH, None: no StarServer
    protocol: str | None  # TFJOBGEN_PROTOCOL, None: the job's
    evaluator: str  # TFJOBGEN_EVALUATOR: whether the evaluator runs here
    retries: int | None  # TFJOBGEN_TASK_RETRIES, None: the job's


def _rewrite_env(pod_env: dict[str, str], run: _RunEnv) -> dict[str, str]:
    """A pod's env with this run's values in the variables it has."""
    env = dict(pod_env)
    if CLUSTER_ENV in env:
        env[CLUSTER_ENV] = run.cluster_json
    if contract.TF_CONFIG in env:
        config = json.loads(env[contract.TF_CONFIG])
        config["cluster"] = run.cluster
        env[contract.TF_CONFIG] = json.dumps(config, separators=(",", ":"))
    if CONTROL_ADDRESS_ENV in env:
        env[CONTROL_ADDRESS_ENV] = run.control
    if run.training is not None and TRAINING_ENV in env:
        env[TRAINING_ENV] = run.training
    if run.endpoint_dir and contract.ENDPOINT_MAP_PATH_ENV in env:
        env[contract.ENDPOINT_MAP_PATH_ENV] = run.endpoint_dir
    if run.protocol and contract.PROTOCOL_ENV in env:
        env[contract.PROTOCOL_ENV] = run.protocol
    if contract.EVALUATOR_ENV in env:
        env[contract.EVALUATOR_ENV] = run.evaluator
    if run.retries is not None and contract.RETRIES_ENV in env:
        env[contract.RETRIES_ENV] = str(run.retries)
    return env


def ports_needed(request: JobRequest, counts: dict[str, int]) -> int:
    """One TF port per task, one control port, one seastar port per task with StarServer, and one
    metrics port per task."""
    tasks = sum(counts.values())
    return tasks + 1 + (tasks if request.endpoint_map is not None else 0) + tasks


def rewrite_endpoint_map(text: str, moved: dict[str, str], ports: list[int]) -> str:
    """StarServer's `grpc=seastar` lines for the local tasks, both sides moved to 127.0.0.1.

    The left side must equal the task's TF_CONFIG entry byte for byte; every local task
    must have exactly one line (checked: DeepRec would fail at start otherwise).
    """
    lines, seen = [], set()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        grpc, sep, seastar = line.partition("=")
        if not sep or ":" not in seastar:
            raise LocalError(f"the endpoint map's line {number} is not 'grpc host:port=seastar host:port': {line!r}")
        if grpc not in moved:
            continue  # a task left out of the local run
        if grpc in seen:
            raise LocalError(f"the endpoint map lists {grpc} twice")
        seen.add(grpc)
        lines.append(f"{moved[grpc]}=127.0.0.1:{ports.pop(0)}")
    missing = sorted(set(moved) - seen)
    if missing:
        raise LocalError(f"the endpoint map has no line for {', '.join(missing)}")
    return "\n".join(lines) + "\n"


def _local_training(training: dict | None, run_dir: str, overrides: Overrides, notices: list[str]) -> dict | None:
    if training is None:
        return None
    training = json.loads(json.dumps(training))
    if overrides.steps is not None:
        training["steps"] = overrides.steps
    if overrides.startup_timeout is not None:
        training["startupTimeoutSeconds"] = overrides.startup_timeout
    data = training.get("data", {})
    # Tasks run in their own directories: a relative data path means one relative to here.
    data["paths"] = [p if contract.is_shared_storage(p) else os.path.abspath(p) for p in data.get("paths", [])]
    if overrides.model_dir:
        given = overrides.model_dir
        training["modelDir"] = given if contract.is_shared_storage(given) else os.path.abspath(given)
    else:
        # A trial must not write into, or resume from, the real job's checkpoints.
        if contract.is_shared_storage(training["modelDir"]):
            notices.append(f"modelDir {training['modelDir']} is replaced by this run's own directory "
                           "(--model-dir URL uses a shared one)")
        training["modelDir"] = os.path.join(run_dir, "model")
    return training


def _cap_threads(env: dict[str, str], cpus: int, api: str, role: str) -> bool:
    """Pools above this machine's CPUs come down to them; True when anything changed."""
    before = {name: env.get(name) for name in contract.THREAD_ENVS}
    for name in contract.THREAD_ENVS:
        value = env.get(name, "")
        if value.isdigit() and int(value) > cpus:
            env[name] = str(cpus)
    inter = env.get(contract.INTER_OP_ENV, "")
    raised = contract.inter_op_threads(api, role, int(inter)) if inter.isdigit() else None
    if raised is not None and raised != int(inter):
        env[contract.INTER_OP_ENV] = str(raised)  # fewer deadlock a tf2 worker
    return before != {name: env.get(name) for name in contract.THREAD_ENVS}


def _check_no_cluster_names(env: dict[str, str], hosts: set[str], task: str) -> None:
    for name, value in env.items():
        for host in hosts:
            if host and host in value:
                raise LocalError(f"{task}: {name} still names the cluster host {host} after the rewrite; "
                                 "run-local does not know how to move it")
