"""From the objects read (read.Snapshot) to what a job is doing (JobStatus). Pure functions.

Each task is what its backend's `decode` says its controller creates (so a task with no pod yet is
listed too), matched to the real pods by role and index (promises.task_of). Per task:

- its current pod (the live one, else the newest) and its phase; a Pending one says why in the
  scheduler's words (promises.pending_reason: its PodScheduled condition, its FailedScheduling events);
- its earlier failures as its controller counts them: the Job controller's per-index annotations
  (native, JobSet's child Jobs: counted, and not counted when the cluster took the pod away), the
  training-operator's ExitedWithCode events (TFJob: it deletes a failed pod and makes a new one of the
  same name); restarts are the new pods it got after them;
- an ended container's exit code, its reason and what the code means (contract.exit_meaning), and
  what its controller does about it (lifecycle.after_failure, on the rules decode read back).

The job's state, first that applies:

    failed                 the TFJob or JobSet Failed; native: one of its Jobs Failed (a task failed
                           for good: a permanent exit, its budget spent, the deadline), which with
                           tfjobgen's runtime makes the chief stop every other task
    succeeded              the TFJob Succeeded, the JobSet Completed; native: the chief's pod
                           completed (worker 0's without a chief): the runtime's "training done", and
                           no task runs any more (until then: running, as Argo CD's Job health says)
    waiting for admission  suspended for Kueue (its Workload not admitted), or a PodGroup not yet
                           Running with tasks unbound (Volcano, the coscheduling plugin)
    suspended              suspended, and nothing that would admit it (no Kueue queue)
    starting               a task of the training cluster (chief, PS, workers) is not running and the
                           chief reports no step: a Pending one waits for room, the others wait for it
    running                every task of the training cluster runs, or the chief reports steps (tf2
                           trains on the workers it has)
"""

from __future__ import annotations

import datetime
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field

from .. import backends
from ..concerns import gang, labels, lifecycle, promises
from ..shared import contract
from . import metrics
from .read import Snapshot, event_time

FAILED, SUCCEEDED, WAITING, SUSPENDED, STARTING, RUNNING = (
    "failed", "succeeded", "waiting for admission", "suspended", "starting", "running")
ENDED = (FAILED, SUCCEEDED)
NO_POD = "NoPod"  # a task's phase when no pod of it exists (yet, or any more)
_EXITED = re.compile(r"^Pod: \S+?\.(\S+) exited with code (\d+)$")  # the training-operator's ExitedWithCode
_GANG_RUNNING = ("Running", "Scheduled", "Finished", "Completed")  # PodGroup phases of an admitted gang


@dataclass
class Failure:
    """How one pod of a task ended badly."""

    pod: str
    exit_code: int | None
    reason: str = ""  # the kubelet's word (Error, OOMKilled), or the disruption's
    meaning: str = ""  # contract.exit_meaning
    disruption: str = ""  # the DisruptionTarget condition's reason: the cluster took the pod away
    at: str = ""  # when it ended (RFC 3339)

    def describe(self) -> str:
        if self.disruption:
            taken = lifecycle.DISRUPTIONS.get(self.disruption, self.disruption)
            return taken + (f" (exit {self.exit_code})" if self.exit_code is not None else "")
        if self.exit_code is None:
            return self.meaning or self.reason or "ended"
        said = f" ({self.reason})" if self.reason and self.reason not in ("Error", "Completed") else ""
        return f"exit {self.exit_code}{said}" + (f": {self.meaning}" if self.meaning else "")

    def as_json(self) -> dict:
        return {"pod": self.pod, "exitCode": self.exit_code, "reason": self.reason, "meaning": self.meaning,
                "disruption": self.disruption}


@dataclass
class TaskStatus:
    role: str
    index: int
    phase: str  # Pending, Running, Succeeded, Failed, Terminating, or NO_POD
    pod: str = ""
    node: str = ""
    restarts: int = 0  # new pods it got after failures
    counted: int = 0  # its failures that count against its budget (the current pod's own included)
    not_counted: int = 0  # its failures the cluster caused (evictions, preemptions, lost nodes)
    exit_code: int | None = None  # the current pod's, once it ended
    why: str = ""  # one line: why it is in this phase
    ended: Failure | None = None  # the current pod's failure (or, with no pod, the last one known)
    last_failure: Failure | None = None  # an earlier pod's, when the task was replaced
    ended_at: str = ""

    @property
    def task(self) -> str:
        return f"{self.role}:{self.index}"


@dataclass(frozen=True)
class Condition:
    object: str  # "Kind name"
    type: str
    reason: str
    message: str
    at: str

    def describe(self) -> str:
        return f"{self.object} {self.type}" + (f" ({self.reason})" if self.reason else "") + \
            (f": {self.message}" if self.message else "")


@dataclass
class JobStatus:
    namespace: str
    name: str
    backend: str
    state: str
    reason: str  # one line: why the job is in this state
    cause: str = ""  # the task that failed it
    topology: str = ""
    roles: dict[str, int] = field(default_factory=dict)  # role -> tasks
    conditions: list[Condition] = field(default_factory=list)
    tasks: list[TaskStatus] = field(default_factory=list)
    placement: promises.Verdict | None = None
    placement_note: str = ""  # why placement was not judged
    training: metrics.Training | None = None
    created: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def ended(self) -> bool:
        return self.state in ENDED

    @property
    def running(self) -> int:
        return sum(t.phase == "Running" for t in self.tasks)


# ---- pods ----------------------------------------------------------------------------------

def _live(pod: dict) -> bool:
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed") and \
        not pod["metadata"].get("deletionTimestamp")


def _container(pod: dict) -> dict:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return next((c for c in statuses if c.get("name") == contract.CONTAINER_NAME), statuses[0] if statuses else {})


def _terminated(pod: dict) -> dict:
    return (_container(pod).get("state") or {}).get("terminated") or {}


def _disruption(pod: dict) -> str:
    return next((c.get("reason") or "Disrupted" for c in (pod.get("status") or {}).get("conditions") or []
                 if c.get("type") == lifecycle.DISRUPTION_CONDITION and c.get("status") == "True"), "")


def _failure(pod: dict, runtime: bool) -> Failure:
    ended = _terminated(pod)
    code = ended.get("exitCode")
    return Failure(pod["metadata"]["name"], code, ended.get("reason") or "",
                   contract.exit_meaning(code, runtime) if code is not None else "", _disruption(pod),
                   ended.get("finishedAt") or "")


def _count(annotations: dict, key: str) -> int | None:
    value = annotations.get(key)
    return int(value) if value is not None and str(value).isdigit() else None


def _operator_exits(events: list[dict]) -> dict[str, list[tuple[str, int, int]]]:
    """Pod name -> (when, exit code, how often) of the training-operator's ExitedWithCode events."""
    found: dict[str, list] = defaultdict(list)
    for event in events:
        match = _EXITED.match(event.get("message") or "") if event.get("reason") == "ExitedWithCode" else None
        if match and int(match.group(2)) != 0:  # it reports a success as an exit too
            found[match.group(1)].append((event_time(event), int(match.group(2)), int(event.get("count") or 1)))
    return {pod: sorted(exits) for pod, exits in found.items()}


# ---- tasks ---------------------------------------------------------------------------------

def task_status(role: str, index: int, pods: list[dict], events: list[dict], rules: lifecycle.Lifecycle | None,
                runtime: bool, exits: list[tuple[str, int, int]], hostname: str = "") -> TaskStatus:
    """One task, from every pod of it, the events about them and (TFJob) the operator's exits of its pods."""
    pods = sorted(pods, key=lambda p: (p["metadata"].get("creationTimestamp") or "", p["metadata"]["name"]))
    live = [p for p in pods if _live(p)]
    current = live[-1] if live else (pods[-1] if pods else None)
    current_failed = current is not None and (current.get("status") or {}).get("phase") == "Failed"
    failed_earlier = [p for p in pods if p is not current and (p.get("status") or {}).get("phase") == "Failed"]
    notes = current["metadata"].get("annotations") or {} if current else {}
    counted = _count(notes, labels.JOB_INDEX_FAILURE_COUNT)
    ignored = _count(notes, labels.JOB_INDEX_IGNORED_FAILURE_COUNT) or 0
    if counted is None:  # no per-index counts (a Job of one task, a TFJob): count the failed pods left
        counted = sum(1 for p in failed_earlier if not _disruption(p))
        ignored = sum(1 for p in failed_earlier if _disruption(p))
    # The operator's record outlives the pods it deleted: each exit, oldest first.
    flat = [(when, code) for when, code, times in exits for _ in range(times)]
    before = flat if current is not None and not current_failed else flat[:-1]
    counted = max(counted, len(before) - ignored)
    status = TaskStatus(role, index, NO_POD, restarts=counted + ignored, counted=counted, not_counted=ignored)
    if failed_earlier:
        status.last_failure = _failure(failed_earlier[-1], runtime)
    elif before:
        status.last_failure = Failure(hostname, before[-1][1], "", contract.exit_meaning(before[-1][1], runtime),
                                      at=before[-1][0])
    elif ignored:
        status.last_failure = Failure("", None, meaning="its pod was taken away by the cluster (evicted, preempted "
                                                        "or its node lost): not counted")
    if current is None:
        if flat:  # its last pod is gone, and the operator said how it ended
            when, code = flat[-1]
            status.ended = Failure(hostname, code, "", contract.exit_meaning(code, runtime), at=when)
            status.exit_code, status.counted = code, status.counted + 1
            status.why = f"its pod ended, {status.ended.describe()}; deleted since"
        return status
    meta, spec, pod_status = current["metadata"], current.get("spec") or {}, current.get("status") or {}
    status.pod, status.node = meta["name"], spec.get("nodeName") or ""
    phase = pod_status.get("phase") or "Pending"
    if phase in ("Succeeded", "Failed"):
        status.phase, status.ended = phase, _failure(current, runtime)
        status.exit_code, status.ended_at = status.ended.exit_code, status.ended.at
        status.why = status.ended.describe()
        if phase == "Failed":
            if status.ended.disruption and not (rules and rules.disruptions_fail):
                status.not_counted += 1
            else:
                status.counted += 1
            if rules is not None and status.exit_code is not None:
                decision = lifecycle.after_failure(rules, status.exit_code, bool(status.ended.disruption), counted,
                                                   ignored)
                status.why += f" ({decision.reason})"
    elif meta.get("deletionTimestamp"):
        status.phase = "Terminating"
        taken = _disruption(current)
        status.why = lifecycle.DISRUPTIONS.get(taken, taken) if taken else "being deleted"
    elif phase == "Pending":
        status.phase = "Pending"
        if not status.node:
            mine = [e for e in events if (e.get("involvedObject") or {}).get("uid") == meta.get("uid")]
            status.why = promises.pending_reason(current, mine)
        else:
            waiting = (_container(current).get("state") or {}).get("waiting") or {}
            status.why = (f"{waiting.get('reason')}: {waiting.get('message') or ''}".rstrip(": ") if waiting
                          else f"bound to {status.node}, starting")
    else:
        status.phase = phase
    if status.last_failure and status.phase in ("Running", "Pending"):
        replaced = f"replaced after {status.last_failure.describe()}"
        status.why = f"{status.why}; {replaced}" if status.why else replaced
    return status


def _uses_runtime(pods: list[dict], decoded) -> bool:
    """The tasks run tfjobgen's runtime (its exit codes have the runtime's meanings)."""
    containers = [c for p in pods for c in (p.get("spec") or {}).get("containers") or []
                  if c.get("name") == contract.CONTAINER_NAME]
    if not containers and decoded is not None:
        containers = [p.container for p in decoded.pods]
    return bool(containers) and all(c.get("command") == list(contract.RUNTIME_COMMAND) for c in containers)


def _has_control_channel(pods: list[dict], decoded) -> bool:
    """The tasks run the runtime, or a program of your own under the entrypoint: either way the chief stops the
    others with ABORT when a task fails for good, and they exit EXIT_ABORTED (the aftermath, not the cause)."""
    containers = [c for p in pods for c in (p.get("spec") or {}).get("containers") or []
                  if c.get("name") == contract.CONTAINER_NAME]
    if not containers and decoded is not None:
        containers = [p.container for p in decoded.pods]
    return bool(containers) and all(c.get("command") == list(contract.RUNTIME_COMMAND) or
                                    contract.own_program(c.get("command") or []) != (c.get("command") or [])
                                    for c in containers)


def _reporting(snapshot: Snapshot) -> backends.base.Reporting:
    return backends.get(snapshot.backend).reporting


def _decode(snapshot: Snapshot):
    """The job as its backend's decode reads the carriers: the tasks its controller should create."""
    found = backends.get(snapshot.backend).decode(snapshot.carriers + snapshot.config_maps)
    job = next((j for j in found if j.name == snapshot.name), None)
    return job if job is not None and not job.unreadable else None


def _order(key: tuple[str, int]) -> tuple[int, int]:
    role, index = key
    return (contract.TABLE_ROLES.index(role) if role in contract.TABLE_ROLES else len(contract.TABLE_ROLES), index)


def tasks_of(snapshot: Snapshot, decoded, runtime: bool) -> list[TaskStatus]:
    by_task: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for pod in snapshot.pods:
        task = promises.task_of(pod)
        if task.role:
            by_task[(task.role, task.index)].append(pod)
    hosts = {(p.role, p.index): p.hostname for p in decoded.pods} if decoded else {}
    exits = _operator_exits(snapshot.events) if _reporting(snapshot).exits_in_events else {}
    rules = decoded.lifecycle if decoded else None
    return [task_status(role, index, by_task.get((role, index), []), snapshot.events, rules, runtime,
                        exits.get(hosts.get((role, index), ""), []), hosts.get((role, index), ""))
            for role, index in sorted(set(hosts) | set(by_task), key=_order)]


# ---- the job -------------------------------------------------------------------------------

def _conditions(objects: list[dict], kind: str, skip: tuple[str, ...] = ()) -> list[Condition]:
    return [Condition(f"{kind} {o['metadata']['name']}", c.get("type", ""), c.get("reason") or "",
                      " ".join((c.get("message") or "").split()), c.get("lastTransitionTime") or "")
            for o in objects for c in (o.get("status") or {}).get("conditions") or []
            if c.get("status") == "True" and c.get("type") not in skip]


def _true(conditions: list[Condition], *types: str) -> list[Condition]:
    return [c for c in conditions if c.type in types]


def _suspended(snapshot: Snapshot) -> bool:
    *path, flag = _reporting(snapshot).suspend
    for carrier in snapshot.carriers:
        spec = carrier.get("spec") or {}
        for step in path:
            spec = spec.get(step) or {}
        if spec.get(flag):
            return True
    return False


def _leader(tasks: list[TaskStatus]) -> str:
    """The task whose success is the job's (tfjobgen's runtime): the chief, else worker 0."""
    return "chief:0" if any(t.role == "chief" for t in tasks) else "worker:0"


def _cause(tasks: list[TaskStatus], rules: lifecycle.Lifecycle | None, stopped_by_chief: bool) -> TaskStatus | None:
    """The task whose failure ended the job: the first to fail for good, not one the chief stopped after."""
    ended = [t for t in tasks if t.ended and t.phase in ("Failed", NO_POD) and t.ended.exit_code not in (None, 0)]
    if rules is None or not rules.disruptions_fail:
        ended = [t for t in ended if not t.ended.disruption]
    first = sorted(ended, key=lambda t: (stopped_by_chief and t.exit_code == contract.EXIT_ABORTED, t.ended.at or "~"))
    return first[0] if first else None


def _admission(snapshot: Snapshot, tasks: list[TaskStatus]) -> tuple[str, str] | None:
    """(state, reason) when the job waits to be admitted whole, None when it does not."""
    for group in snapshot.pod_groups:
        phase = (group.get("status") or {}).get("phase") or "Pending"
        if phase not in _GANG_RUNNING and any(t.phase in ("Pending", NO_POD) and not t.node for t in tasks):
            said = [c.get("message") for c in (group.get("status") or {}).get("conditions") or [] if c.get("message")]
            minimum = (group.get("spec") or {}).get("minMember")
            return WAITING, (f"PodGroup {group['metadata']['name']} ({group.get('apiVersion', '').split('/')[0]}) is "
                             f"{phase}: its {minimum} pods are bound together or not at all"
                             + (f"; {said[-1]}" if said else ""))
    if not _suspended(snapshot):
        return None
    for workload in snapshot.workloads:
        conditions = {c.get("type"): c for c in (workload.get("status") or {}).get("conditions") or []}
        admitted = (conditions.get("Admitted") or {}).get("status") == "True"
        if not admitted:
            said = next((conditions[t].get("message") for t in ("QuotaReserved", "Pending", "Evicted")
                         if t in conditions and conditions[t].get("message")), "")
            return WAITING, (f"Kueue has not admitted its Workload {workload['metadata']['name']}"
                             + (f": {said}" if said else ""))
        return STARTING, f"Kueue admitted its Workload {workload['metadata']['name']}; its controller resumes it"
    queues = {(c["metadata"].get("labels") or {}).get(gang.KUEUE_QUEUE_LABEL) for c in snapshot.carriers} - {None}
    if queues:
        return WAITING, f"suspended for Kueue (queue {', '.join(sorted(queues))}), which has made no Workload of it yet"
    return SUSPENDED, "spec.suspend is true: its controller creates no pod until it is resumed"


def _waiting(tasks: list[TaskStatus]) -> str:
    """Which training tasks are not running yet, and why (grouped by reason, the first few named)."""
    by_why: dict[str, list[str]] = defaultdict(list)
    for task in tasks:
        by_why[f"{task.phase}" + (f": {task.why}" if task.why else "")].append(task.task)
    parts = []
    for why, names in sorted(by_why.items(), key=lambda item: -len(item[1]))[:3]:
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        parts.append(f"{shown} {why}")
    return "; ".join(parts)


def job_status(snapshot: Snapshot) -> JobStatus:
    decoded = _decode(snapshot)
    runtime = _uses_runtime(snapshot.pods, decoded)
    rules = decoded.lifecycle if decoded else None
    tasks = tasks_of(snapshot, decoded, runtime)
    reporting = _reporting(snapshot)
    carrier_kind = snapshot.carriers[0].get("kind") or reporting.kind
    conditions = _conditions(snapshot.carriers, carrier_kind, skip=("Created", "FailureTarget", "SuccessCriteriaMet"))
    if reporting.child_jobs_name_failure:
        conditions += [c for c in _conditions(snapshot.jobs, "Job") if c.type == "Failed"]
    conditions += _conditions(snapshot.workloads, "Workload")
    conditions.sort(key=lambda c: (c.at, c.object, c.type))
    status = JobStatus(snapshot.namespace, snapshot.name, snapshot.backend, STARTING, "", conditions=conditions,
                       tasks=tasks, notes=list(snapshot.notes),
                       created=min((c["metadata"].get("creationTimestamp") or "" for c in snapshot.carriers),
                                   default=""))
    for task in tasks:
        status.roles[task.role] = status.roles.get(task.role, 0) + 1
    pods = snapshot.pods
    status.topology = next(((p["metadata"].get("annotations") or {}).get(labels.TOPOLOGY) for p in pods
                            if (p["metadata"].get("annotations") or {}).get(labels.TOPOLOGY)),
                           decoded.pods[0].annotations.get(labels.TOPOLOGY, "none") if decoded and decoded.pods else "")
    if snapshot.metrics:
        status.training = metrics.summarize(snapshot.metrics, _leader(tasks))
        status.training.partitioner = _partitioner(snapshot.pods)
    status.state, status.reason, status.cause = _state(snapshot, status, rules,
                                                       _has_control_channel(snapshot.pods, decoded))
    for task in tasks:
        if task.phase == NO_POD and not task.why:
            task.why = _no_pod(status.state, task)
    _judge_placement(snapshot, status)
    return status


def _partitioner(pods: list[dict]) -> str | None:
    """spec.training.partitioner from a pod's TFJOBGEN_TRAINING (the generator writes it with defaults)."""
    for pod in pods:
        for container in (pod.get("spec") or {}).get("containers") or []:
            for entry in container.get("env") or []:
                if entry.get("name") == contract.TRAINING_ENV and entry.get("value"):
                    try:
                        return json.loads(entry["value"]).get("partitioner")
                    except (ValueError, AttributeError):
                        return None
    return None


def _state(snapshot: Snapshot, status: JobStatus, rules, stopped_by_chief: bool) -> tuple[str, str, str]:
    tasks, conditions = status.tasks, status.conditions
    by_name = {t.task: t for t in tasks}
    leader = by_name.get(_leader(tasks))
    failed = _true(conditions, "Failed")
    if not _reporting(snapshot).job_conditions and leader and leader.phase == "Succeeded" and not failed:
        # Native: the job is done once every Job is, as Argo CD's health of its Jobs says: the chief's success
        # first tells the others DONE (runtime/control.py, or the entrypoint of a program of your own).
        busy = [t.task for t in tasks if t.phase in ("Pending", "Running", "Terminating")]
        if busy:
            return RUNNING, (f"{leader.task} completed (exit 0); {', '.join(busy[:4])}"
                             f"{f' and {len(busy) - 4} more' if len(busy) > 4 else ''} still running: their Jobs "
                             "complete when they hear DONE from the chief"), ""
        return SUCCEEDED, f"{leader.task} completed (exit 0): training is done", ""
    if failed:
        cause = _cause(tasks, rules, stopped_by_chief)
        if cause is None:  # its controller said no more than this (a TFJob whose pod was taken away, a deadline)
            return FAILED, failed[0].message or failed[0].describe(), ""
        why = f"{cause.task} {cause.ended.describe()}"
        if rules is not None and cause.exit_code is not None:
            decision = lifecycle.after_failure(rules, cause.exit_code, bool(cause.ended.disruption),
                                               cause.counted - 1, cause.not_counted)
            if decision.fails_job:
                why += f" ({decision.reason})"
        return FAILED, why, cause.task
    done = _true(conditions, "Succeeded", "Completed")
    if done:
        if leader and leader.phase == "Succeeded":
            return SUCCEEDED, f"{leader.task} completed (exit 0): training is done", ""
        return SUCCEEDED, done[0].describe(), ""
    admission = _admission(snapshot, tasks)
    if admission and admission[0] != STARTING:
        return admission[0], admission[1], ""
    training = [t for t in tasks if t.role in contract.TRAINING_ROLES]
    waiting = [t for t in training if t.phase not in ("Running", "Succeeded")]
    if not waiting and training:
        return RUNNING, f"every task of the training cluster runs ({len(training)} of {len(training)})", ""
    if admission:
        return STARTING, admission[1], ""
    missing = f"{len(waiting)} of {len(training)} training tasks not running: {_waiting(waiting)}"
    if status.training and status.training.step:  # training goes on without them (tf2 steps on the workers it has)
        return RUNNING, f"the chief reports step {status.training.step:,}, with {missing}", ""
    others = len(training) - len(waiting)
    then = f"; the other {others} wait for {'it' if len(waiting) == 1 else 'them'}" if others else ""
    return STARTING, f"{missing}{then}", ""


def _no_pod(state: str, task: TaskStatus) -> str:
    if state in ENDED:
        return "no pod: its controller deleted it once the job ended"
    if state in (WAITING, SUSPENDED):
        return "no pod while the job waits"
    if task.restarts or task.last_failure:
        return "no pod: its next one is not created yet"
    return "no pod yet"


def _judge_placement(snapshot: Snapshot, status: JobStatus) -> None:
    live = promises.live(snapshot.pods)
    if not live:
        status.placement_note = "no pod holds a place"
        return
    if snapshot.node_count is None and status.topology == "spread":
        status.placement_note = "not judged: the nodes could not be counted (" + \
            next((n for n in snapshot.notes if n.startswith("nodes")), "nodes unreadable") + ")"
        return
    verdicts = promises.verdicts(live + snapshot.neighbours, snapshot.node_count or len(live))
    status.placement = verdicts.get(status.key)


def age(created: str, now: datetime.datetime) -> str:
    """kubectl's way: 45s, 12m, 3h, 2d."""
    try:
        then = datetime.datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return "-"
    seconds = max(int((now - then).total_seconds()), 0)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
