"""Scenarios the placement tests and docs/placement.py run on the scheduler model.

    workload = Workload.of(objects)          rendered objects -> pods (through backends.pods_of)
    run = arrive(workload, nodes, seed)      every pod created in a random order, one at a time
    lose_node(run, workload, seed)           a node with the job's pods fails; its pods are recreated
    verdicts(run.state, workload)            per job: every pod placed? the topology's layout intact?

Randomness comes from the seed alone (arrival order, tie-breaks, which node is
lost), so a failure names the seed that reproduces it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from tfjobgen import backends, labels
from tfjobgen.pods import Pod

from .objects import PriorityClass, SimNode, priority_classes, services
from .scheduler import Scheduler
from .state import ClusterState


@dataclass
class Workload:
    """The pods of one or more rendered jobs, decoded once and shared by every run."""

    objects: list[dict]
    pods: list[Pod]
    topology: dict[str, str]  # job -> topology mode, from its pods' annotation
    namespaces: dict[str, str]  # job -> namespace

    @classmethod
    def of(cls, objects: list[dict]) -> "Workload":
        decoded = backends.decode(objects)
        pods = [pod for job in decoded for pod in job.pods]
        topology = {job.name: job.pods[0].annotations.get(labels.TOPOLOGY, "none") for job in decoded if job.pods}
        # The Services a JobSet's controller or the TFJob operator creates count like ours (default spreading).
        created = [obj for job in decoded for obj in job.created]
        return cls(objects + created, pods, topology, {job.name: job.namespace for job in decoded})

    def job_pods(self, job: str) -> list[Pod]:
        return [p for p in self.pods if p.labels.get(labels.JOB) == job]


@dataclass
class Run:
    seed: int
    scheduler: Scheduler

    @property
    def state(self) -> ClusterState:
        return self.scheduler.state

    @property
    def pending(self) -> list:
        return sorted(self.scheduler.pending.values(), key=lambda p: p.task)


def arrive(workload: Workload, nodes: list[SimNode], seed: int, classes: dict[str, PriorityClass] | None = None,
           shuffle: bool = True) -> Run:
    """Create every pod in a random order (shuffle=False: as listed), one at a time, scheduling after each
    until the queue is empty.

    One at a time is the hardest order for placement rules: no queue sorting by
    priority helps, every pod sees the cluster as the earlier ones left it.
    """
    state = ClusterState(nodes, services(workload.objects))
    scheduler = Scheduler(state, classes if classes is not None else priority_classes(workload.objects), seed)
    order = list(workload.pods)
    if shuffle:
        random.Random(seed).shuffle(order)
    for pod in order:
        scheduler.create(pod)
        scheduler.run()
    return Run(seed, scheduler)


def evict(run: Run, job: str, role: str, seed: int) -> str:
    """A bound pod of `job`'s `role` (chosen by the seed) is evicted; its controller recreates it."""
    rng = random.Random(f"evict-{seed}")
    candidates = sorted((p for p in run.state.bound() if p.job == job and p.role == role), key=lambda p: p.index)
    pod = rng.choice(candidates)
    run.scheduler.delete(pod)
    run.scheduler.run()
    return pod.task


def lose_node(run: Run, job: str, seed: int) -> str:
    """A node running pods of `job` (chosen by the seed) fails; its pods are recreated and scheduled."""
    rng = random.Random(f"lose-{seed}")
    candidates = sorted(n for n, pods in run.state.pods_on.items()
                        if any(p.labels.get(labels.JOB) == job for p in pods.values()))
    name = rng.choice(candidates)
    recreated = run.scheduler.lose_node(name)
    rng.shuffle(recreated)  # the scheduler sees them in the order their controllers recreate them
    run.scheduler.run()
    return name


# ---- what a layout must look like ------------------------------------------------------------

@dataclass
class Verdict:
    job: str
    topology: str
    placed: int
    tasks: int
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.placed == self.tasks and not self.problems

    def __str__(self) -> str:
        head = f"{self.job} ({self.topology}): {self.placed}/{self.tasks} placed"
        return head + ("; " + "; ".join(self.problems) if self.problems else "")


def verdicts(state: ClusterState, workload: Workload) -> dict[str, Verdict]:
    """Per job: how many tasks run, and what breaks its topology's promise (nothing when intact)."""
    result = {}
    for job, mode in sorted(workload.topology.items()):
        tasks = {(p.role, p.index) for p in workload.job_pods(job)}
        servers = {}
        for node, pods in state.pods_on.items():
            mine = [p for p in pods.values() if p.job == job]
            if mine:
                servers[node] = (mine, [p for p in pods.values() if p.job and p.job != job])
        placed = {(p.role, p.index) for mine, _ in servers.values() for p in mine}
        verdict = Verdict(job, mode, len(placed & tasks), len(tasks))
        verdict.problems = _LAYOUT[mode](servers, len(state.nodes))
        result[job] = verdict
    return result


def _colocated(servers: dict, node_count: int) -> list[str]:
    """One PS per server, beside exactly the workers of its group and no pod of another tfjobgen job."""
    problems = []
    for node, (mine, others) in sorted(servers.items()):
        ps = [p for p in mine if p.role == "ps"]
        groups = {p.labels.get(labels.GROUP) for p in mine}
        if len(ps) != 1 or len(groups) != 1:
            problems.append(f"{node} holds {_tasks(mine)}")
        elif others:
            problems.append(f"{node} holds PS {ps[0].index}'s group and other jobs' {_tasks(others)}")
    return problems


def _isolated(servers: dict, node_count: int) -> list[str]:
    """No server holds both a PS and a worker of the job; one PS per server."""
    problems = []
    for node, (mine, _) in sorted(servers.items()):
        roles = [p.role for p in mine]
        if roles.count("ps") > 1 or ("ps" in roles and "worker" in roles):
            problems.append(f"{node} holds {_tasks(mine)}")
    return problems


def _spread(servers: dict, node_count: int) -> list[str]:
    """PS on distinct servers (where the cluster has as many servers as PS)."""
    ps_count = sum(p.role == "ps" for mine, _ in servers.values() for p in mine)
    if ps_count > node_count:
        return []
    return [f"{node} holds {_tasks(mine)}" for node, (mine, _) in sorted(servers.items())
            if sum(p.role == "ps" for p in mine) > 1]


_LAYOUT = {"colocated": _colocated, "isolated": _isolated, "spread": _spread, "none": lambda servers, n: []}


def _tasks(pods: list) -> str:
    by_role: dict[str, list[int]] = {}
    for p in pods:
        by_role.setdefault(f"{p.job}/{p.role}" if p.job else p.role, []).append(p.index)
    return ", ".join(f"{role} {sorted(ix)}" for role, ix in sorted(by_role.items()))
