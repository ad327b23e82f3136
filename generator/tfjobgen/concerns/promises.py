"""What each topology promises about where a job's pods land, checked on real bindings.

    colocated   each server holds one PS and exactly the workers of its group, and no pod of
                another tfjobgen job
    isolated    no server holds both a PS and a worker of the job; one PS per server
    spread      PS on distinct servers (when the cluster has as many servers as PS)
    none        nothing

`tfjobgen place` checks them on a local cluster, `tfjobgen status` on a live one: both read pods
as the API server has them (Pod objects as dicts) and call `verdicts`. Pure functions.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from . import labels

# Where each controller writes a pod's index within its role: our own label (per-task objects),
# the Indexed Job's (native and JobSet), the training-operator's (TFJob).
INDEX_LABELS = (labels.INDEX, labels.JOB_COMPLETION_INDEX, "training.kubeflow.org/replica-index")


@dataclass(frozen=True)
class Task:
    """One pod as placement sees it."""

    job: str  # "namespace/name" of the TrainingJob ("" for a pod of no tfjobgen job)
    role: str
    index: int
    group: str  # colocated group ("" otherwise)
    node: str  # "" while Pending
    topology: str

    @property
    def name(self) -> str:
        return f"{self.role}:{self.index}"


def task_of(pod: dict) -> Task:
    meta = pod.get("metadata") or {}
    pod_labels = meta.get("labels") or {}
    job = pod_labels.get(labels.JOB, "")
    index = next((pod_labels[k] for k in INDEX_LABELS if k in pod_labels), "0")
    return Task(job=f"{meta.get('namespace', '')}/{job}" if job else "", role=pod_labels.get(labels.ROLE, ""),
                index=int(index), group=pod_labels.get(labels.GROUP, ""), node=(pod.get("spec") or {}).get("nodeName") or "",
                topology=(meta.get("annotations") or {}).get(labels.TOPOLOGY, "none"))


def live(pods: list[dict]) -> list[dict]:
    """Pods that hold (or wait for) a place: not ended, not being deleted."""
    return [p for p in pods if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            and not (p.get("metadata") or {}).get("deletionTimestamp")]


def pending_reason(pod: dict, events: list[dict] = ()) -> str:
    """Why a pod waits for a node, in the scheduler's own words: its PodScheduled condition, else the
    last FailedScheduling event among `events` (the pod's own), else that it was not scheduled yet."""
    nominated = (pod.get("status") or {}).get("nominatedNodeName")
    if nominated:
        return f"nominated for {nominated}: waiting for the pods it preempted there to leave"
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition["type"] == "PodScheduled" and condition["status"] == "False" and condition.get("message"):
            return condition["message"]
    failed = [e for e in events if e.get("reason") == "FailedScheduling" and e.get("message")]
    if failed:
        return failed[-1]["message"]
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition["type"] == "PodScheduled" and condition["status"] == "False":
            return condition.get("reason") or "unschedulable"
    return "not yet scheduled"


@dataclass
class Verdict:
    job: str
    topology: str
    placed: int
    tasks: int
    broken: list[str] = field(default_factory=list)  # what breaks the promise, one line per server
    # Those of `broken` that are only other jobs' pods beside a layout that is whole (colocated's servers
    # are the group's alone): what a gang scheduler's groups give up (spec.gang.colocatedGroups: scheduler).
    beside: list[str] = field(default_factory=list)

    @property
    def holds(self) -> bool:
        """The promise holds for the pods placed (Pending ones break nothing: they are counted apart)."""
        return not self.broken

    @property
    def whole(self) -> bool:
        """The job's own layout holds, whoever else shares its servers."""
        return len(self.broken) == len(self.beside)

    def __str__(self) -> str:
        head = f"{self.job} ({self.topology}): {self.placed}/{self.tasks} placed"
        return head + ("; " + "; ".join(self.broken) if self.broken else "")


def verdicts(pods: list[dict], node_count: int) -> dict[str, Verdict]:
    """Per tfjobgen job among `pods` (the live pods of the cluster, or of the jobs and their neighbours)."""
    tasks = [task_of(p) for p in live(pods)]
    by_node: dict[str, list[Task]] = defaultdict(list)
    for task in tasks:
        if task.node:
            by_node[task.node].append(task)
    result = {}
    for job in sorted({t.job for t in tasks if t.job}):
        mine = [t for t in tasks if t.job == job]
        servers = {node: ([t for t in on if t.job == job], [t for t in on if t.job and t.job != job])
                   for node, on in by_node.items() if any(t.job == job for t in on)}
        topology = mine[0].topology
        own = _RULES.get(topology, _nothing)(servers, node_count)
        beside = _neighbours(servers) if topology == "colocated" else []
        result[job] = Verdict(job, topology, sum(1 for t in mine if t.node), len(mine), own + beside, beside)
    return result


def _one_group(mine: list[Task]) -> bool:
    return sum(t.role == "ps" for t in mine) == 1 and len({t.group for t in mine}) == 1


def _colocated(servers: dict, node_count: int) -> list[str]:
    return [f"{node} holds {_describe(mine)}" for node, (mine, _) in sorted(servers.items()) if not _one_group(mine)]


def _neighbours(servers: dict) -> list[str]:
    """Servers where a colocated group is whole and other jobs' pods sit beside it."""
    return [f"{node} holds PS {next(t.index for t in mine if t.role == 'ps')}'s group and other jobs' "
            f"{_describe(others)}" for node, (mine, others) in sorted(servers.items()) if others and _one_group(mine)]


def _isolated(servers: dict, node_count: int) -> list[str]:
    broken = []
    for node, (mine, _) in sorted(servers.items()):
        roles = [t.role for t in mine]
        if roles.count("ps") > 1 or ("ps" in roles and "worker" in roles):
            broken.append(f"{node} holds {_describe(mine)}")
    return broken


def _spread(servers: dict, node_count: int) -> list[str]:
    ps_count = sum(t.role == "ps" for mine, _ in servers.values() for t in mine)
    if ps_count > node_count:
        return []  # more PS than servers: sharing is unavoidable, and the rule is only a preference
    return [f"{node} holds {_describe(mine)}" for node, (mine, _) in sorted(servers.items())
            if sum(t.role == "ps" for t in mine) > 1]


def _nothing(servers: dict, node_count: int) -> list[str]:
    return []


_RULES = {"colocated": _colocated, "isolated": _isolated, "spread": _spread, "none": _nothing}


def _describe(tasks: list[Task]) -> str:
    by_role: dict[str, list[int]] = defaultdict(list)
    for task in tasks:
        by_role[f"{task.job.split('/')[-1]}/{task.role}" if task.job else task.role].append(task.index)
    return ", ".join(f"{role} {sorted(indexes)}" for role, indexes in sorted(by_role.items()))
