"""`tfjobgen place`: where the real kube-scheduler puts jobs, on a fresh local cluster of their profile.

For each creation order (a seed): a new cluster shaped as the profile; the jobs' namespaces
(Pod Security "restricted"); their objects created one after another in the seed's shuffled
order; then wait until the scheduler settles (every pod created, bound or marked Unschedulable,
no preemption under way, nothing moving for a while). Optionally one PS is then evicted and a
server running the jobs' pods lost (NotReady: the node lifecycle controller evicts its pods), each
followed by settling again. Each run reports, per job: pods placed, pods Pending with the
scheduler's own reason, whether the topology's promise holds (promises.py), and preemptions. A pod
its controller cannot create (the API server refused it) ends the run at once with the controller's event.
"""

from __future__ import annotations

import os
import random
import time
import zlib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Callable

from .. import backends
from ..cluster import control
from ..cluster.controllers import kueue
from ..cluster.plane import stages
from ..concerns import promises
from ..inputs.intents import Intent
from ..inputs.profile import ClusterProfile
from ..kube import api

QUIET_SECONDS = 2.0  # nothing moved for this long: the scheduler is done with what it can place
STUCK_SECONDS = 30.0  # a preemption that has not moved for this long is reported, not waited for
SETTLE_TIMEOUT = 180.0
# What the jobs' controllers record when the API server refuses what they create (a pod whose ServiceAccount does
# not exist, say): the Job controller's (native Jobs, and JobSet's child Jobs), JobSet's, the training-operator's.
CREATE_FAILED = {"Job": ("FailedCreate",), "JobSet": ("JobCreationFailed", "HeadlessServiceCreationFailed"),
                 "TFJob": ("FailedCreatePod", "FailedCreateService")}


class CreateFailed(Exception):
    """A controller of the jobs could not create their pods: the scheduler will never see them."""


@dataclass
class JobOutcome:
    job: str  # namespace/name
    topology: str
    tasks: int
    placed: int
    holds: bool
    broken: list[str] = field(default_factory=list)
    pending: list[tuple[str, str]] = field(default_factory=list)  # (task, the scheduler's reason)
    preemptions: int = 0  # pods of this job the scheduler preempted
    whole: bool = True  # its own layout holds, other jobs' pods aside (promises.Verdict.whole)


@dataclass
class Run:
    seed: int
    order: list[str]  # the objects as created, Kind/name
    jobs: dict[str, JobOutcome]
    seconds: float  # from the first object created to settled (the last settling, after a loss)
    evicted: str = ""
    lost_node: str = ""
    after_eviction: dict[str, bool] = field(default_factory=dict)  # job -> its promise held then
    tasks: list[promises.Task] = field(default_factory=list)  # where every live pod ended up
    skipped: list[str] = field(default_factory=list)  # kinds the local cluster has no API for (monitoring)
    preempted: int = 0  # pods the scheduler preempted in the run, whoever they belonged to

    @property
    def good(self) -> bool:
        return all(o.holds and o.placed == o.tasks for o in self.jobs.values()) and all(self.after_eviction.values())


def nodes_needed(jobs, profile: ClusterProfile, spare: int) -> int | None:
    """Nodes of the main group when the profile does not count them: what the jobs need alone,
    added up (each fits however the others land), plus `spare`. None when the profile counts them."""
    if profile.node_count is not None:
        return None
    from ..concerns import capacity

    needed = sum(capacity.capacity(job, profile).own.nodes.get(capacity.NO_POOL, 0) for job in jobs)
    return max(needed, 1) + spare


def run_order(objects: list[dict], profile: ClusterProfile, nodes: int | None, seed: int, lose_node: bool,
              name: str, say: Callable[[str], None], kubernetes: str = "") -> Run:
    """One creation order on a cluster of its own (of that Kubernetes release), started and stopped here."""
    state = control.up(profile, nodes, name, lambda line: None, say, kubernetes=kubernetes)
    try:
        client = api.Objects(api.connect(str(state.kubeconfig)))
        return _place(client, objects, seed, lose_node, state.nodes, say, profile)
    finally:
        control.down(name)


def run_orders(objects: list[dict], profile: ClusterProfile, nodes: int | None, seeds: list[int], name: str,
               say: Callable[[str], None]) -> list[Run]:
    """Several creation orders on one cluster, emptied between them: a review's answer at the cost of one
    cluster's start (about 6 s of the 8 s an order takes). Each order after the first starts from a cluster
    with none of the previous order's objects or pods left (`_empty`); what it cannot reset is the
    scheduler's own memory of the earlier pods, which a fresh cluster (run_order, `tfjobgen place`) has not."""
    state = control.up(profile, nodes, name, lambda line: None, say)
    try:
        client = api.Objects(api.connect(str(state.kubeconfig)))
        runs = []
        for index, seed in enumerate(seeds):
            if index:
                _empty(client, objects)
            runs.append(_place(client, objects, seed, False, state.nodes, say, profile))
        return runs
    finally:
        control.down(name)


def _empty(client: api.Objects, objects: list[dict], timeout: float = 60) -> None:
    """Remove `objects` and every pod of their namespaces, and wait until the API has none of them."""
    namespaces = sorted({o["metadata"]["namespace"] for o in objects if o["metadata"].get("namespace")})
    present = [o for o in objects if client.has_kind(o["apiVersion"], o["kind"])]
    for obj in reversed(present):
        client.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace"),
                      propagation_policy="Background")

    def cleared() -> bool:
        pods = [p for namespace in namespaces for p in client.list("v1", "Pod", namespace)]
        for pod in pods:  # KWOK runs nothing to stop: no grace, and the Job tracking finalizer let go
            meta = pod["metadata"]
            if meta.get("finalizers"):
                client.patch("v1", "Pod", meta["name"], {"metadata": {"finalizers": None}}, meta["namespace"])
            client.delete("v1", "Pod", meta["name"], meta["namespace"], grace_period_seconds=0)
        left = [o for o in present if client.get(o["apiVersion"], o["kind"], o["metadata"]["name"],
                                                  o["metadata"].get("namespace")) is not None]
        return not pods and not left

    api.wait_until(cleared, timeout, "the previous order's objects and pods to be gone", interval=0.5)


RESTRICTED = {"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"}


def job_namespace(objects: api.Objects, name: str, profile: ClusterProfile | None = None,
                  restricted: bool = True) -> None:
    """A namespace jobs can run in on a local cluster: Pod Security "restricted", enforced by the real admission
    plugin, and the profile's LocalQueue when it queues with Kueue (Kueue admits nothing from a namespace
    without it; a LocalQueue belongs with its namespace, so tfjobgen names it and emits none). The one home
    of this for place, the tests and the benchmarks."""
    objects.apply({"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": name, **({"labels": RESTRICTED} if restricted else {})}})
    # The API server refuses a pod of a ServiceAccount that does not exist, the namespace's default one too, which
    # the controller manager creates just after: waited for, a refused pod (CreateFailed) is the job's own doing.
    api.wait_until(lambda: objects.get("v1", "ServiceAccount", "default", name), 60,
                   f"namespace {name}'s default ServiceAccount")
    if profile is not None:
        kueue.open_queue(objects, profile, name)


def _place(client: api.Objects, objects: list[dict], seed: int, lose_node: bool, node_count: int, say,
           profile: ClusterProfile) -> Run:
    expected = _expected_pods(objects)
    namespaces = sorted({o["metadata"]["namespace"] for o in objects if o["metadata"].get("namespace")})
    for namespace in namespaces:
        job_namespace(client, namespace, profile)
    rng = random.Random(seed)
    known = [o for o in objects if client.has_kind(o["apiVersion"], o["kind"])]
    skipped = sorted({f"{o['apiVersion']} {o['kind']}" for o in objects if o not in known})
    order = list(known)
    rng.shuffle(order)
    begun = time.monotonic()
    for obj in order:
        client.create(obj)
    seen: dict[str, promises.Task] = {}  # every pod seen, by name: preempted ones are gone by the end
    pods = settle(client, namespaces, expected, seen, say=say)
    run = Run(seed, [f"{o['kind']}/{o['metadata']['name']}" for o in order], {}, 0.0, skipped=skipped)
    if lose_node:
        jobs_pods = [p for p in promises.live(pods) if promises.task_of(p).job and p["spec"].get("nodeName")]
        ps_pods = sorted((p for p in jobs_pods if promises.task_of(p).role == "ps"), key=lambda p: p["metadata"]["name"])
        if ps_pods:
            victim = rng.choice(ps_pods)
            run.evicted = victim["metadata"]["name"]
            _evict(client, victim)
            pods = settle(client, namespaces, expected, seen, gone=run.evicted, say=say)
            run.after_eviction = {job: v.holds for job, v in promises.verdicts(pods, node_count).items()}
        servers = sorted({p["spec"]["nodeName"] for p in promises.live(pods)
                          if promises.task_of(p).job and p["spec"].get("nodeName")})
        run.lost_node = rng.choice(servers)
        stages.lose_node(client, run.lost_node)
        pods = settle(client, namespaces, expected, seen, lost=run.lost_node, say=say)
        node_count -= 1
    run.seconds = time.monotonic() - begun
    victims = _preemptions(client, namespaces, seen)
    run.jobs = outcomes(pods, node_count, victims)
    run.preempted = sum(victims.values())
    run.tasks = [promises.task_of(p) for p in promises.live(pods)]
    return run


def _expected_pods(objects: list[dict]) -> dict[str, int]:
    return {job.key: len(job.pods) for job in backends.decode(objects)}


def settle(client: api.Objects, namespaces: list[str], expected: dict[str, int], seen: dict,
           gone: str = "", lost: str = "", say: Callable[[str], None] = lambda line: None) -> list[dict]:
    """The pods once the scheduler is done: all there, each bound or Unschedulable, quiet for a while.

    `seen` collects every pod met (name -> task); `gone`: a pod that must have been replaced first;
    `lost`: a node whose pods must have left it. A preemption that has not moved for STUCK_SECONDS
    ends the wait too: its pod is reported Pending, nominated for a node. While pods are missing, a
    controller's refusal to create them (CREATE_FAILED) ends it at once: CreateFailed says which and why.
    """
    last, quiet_since, said, asked = None, time.monotonic(), time.monotonic(), 0.0
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while True:
        pods = [p for namespace in namespaces for p in client.list("v1", "Pod", namespace)]
        live = promises.live(pods)
        seen.update({p["metadata"]["name"]: promises.task_of(p) for p in pods})
        counts = Counter(promises.task_of(p).job for p in live)
        if any(counts.get(job, 0) < n for job, n in expected.items()) and time.monotonic() - asked >= 1.0:
            asked = time.monotonic()  # the events once a second: a refusal is said within one
            refused = create_failed(client, namespaces)
            if refused:
                raise CreateFailed(refused)
        snapshot = sorted((p["metadata"]["name"], p["spec"].get("nodeName") or "",
                           (p.get("status") or {}).get("nominatedNodeName") or "") for p in live)
        nominated = [name for name, node, nomination in snapshot if nomination and not node]
        complete = (all(counts.get(job, 0) >= n for job, n in expected.items())
                    and all(p["spec"].get("nodeName") or _unschedulable(p) for p in live)
                    and not any(name == gone for name, _, _ in snapshot)
                    and not (lost and any(node == lost for _, node, _ in snapshot)))
        now = time.monotonic()
        if snapshot != last:
            last, quiet_since = snapshot, now
        quiet = now - quiet_since
        if complete and (quiet >= QUIET_SECONDS and not nominated or quiet >= STUCK_SECONDS):
            return pods
        if now - said >= 15:
            said = now
            say(f"settling: {len(live)} pods, {sum(1 for _, node, _ in snapshot if node)} bound, "
                f"{len(nominated)} nominated (preempting)")
        if now > deadline:
            raise TimeoutError(f"the scheduler did not settle in {SETTLE_TIMEOUT:.0f} s "
                               f"({len(live)} pods, {len(nominated)} nominated)")
        time.sleep(0.25)


def create_failed(client: api.Objects, namespaces: list[str]) -> str:
    """The first refusal the jobs' controllers recorded (CREATE_FAILED), as one line; "" when there is none."""
    refusals = [event for namespace in namespaces for event in client.list("v1", "Event", namespace)
                if event.get("reason") in CREATE_FAILED.get((event.get("involvedObject") or {}).get("kind"), ())]
    if not refusals:
        return ""
    event = min(refusals, key=lambda e: str(e.get("firstTimestamp") or e.get("eventTime") or ""))
    involved = event["involvedObject"]
    message = " ".join(str(event.get("message") or event.get("note") or "").split())
    return (f"{involved['kind']} {involved.get('namespace', '')}/{involved.get('name', '')} could not create its "
            f"pods ({event['reason']}): {message}")


def _unschedulable(pod: dict) -> bool:
    return any(c["type"] == "PodScheduled" and c["status"] == "False"
               for c in (pod.get("status") or {}).get("conditions") or [])


def _evict(client: api.Objects, pod: dict) -> None:
    meta = pod["metadata"]
    eviction = client.resource("v1", "Pod").subresources["eviction"]
    eviction.create(body={"apiVersion": "policy/v1", "kind": "Eviction",
                          "metadata": {"name": meta["name"], "namespace": meta["namespace"]}},
                    name=meta["name"], namespace=meta["namespace"])


def _preemptions(client: api.Objects, namespaces: list[str], seen: dict) -> Counter:
    """Pods the scheduler preempted, per job they belonged to: its 'Preempted' events name the victims."""
    found: Counter = Counter()
    for namespace in namespaces:
        for event in client.list("v1", "Event", namespace):
            if event.get("reason") == "Preempted":
                victim = seen.get((event.get("involvedObject") or {}).get("name", ""))
                found[victim.job if victim else "?"] += 1
    return found


def outcomes(pods: list[dict], node_count: int, preempted: Counter) -> dict[str, JobOutcome]:
    pending = defaultdict(list)
    for pod in promises.live(pods):
        task = promises.task_of(pod)
        if task.job and not task.node:
            pending[task.job].append((task.name, promises.pending_reason(pod)))
    return {job: JobOutcome(job, v.topology, v.tasks, v.placed, v.holds, v.broken, sorted(pending[job]),
                            preempted.get(job, 0), v.whole)
            for job, v in promises.verdicts(pods, node_count).items()}


# ---- reports ----------------------------------------------------------------------------------

HEADERS = ["ORDER", "JOB", "TOPOLOGY", "PLACED", "PENDING", "LAYOUT", "PREEMPTED", "SECONDS"]


def rows(runs: list[Run]) -> list[list]:
    found = []
    for run in runs:
        for job, outcome in sorted(run.jobs.items()):
            layout = "holds" if outcome.holds else "BROKEN"
            if run.after_eviction and not run.after_eviction.get(job, True):
                layout += " (broken after the eviction)"
            found.append([run.seed, job, outcome.topology, f"{outcome.placed}/{outcome.tasks}",
                          len(outcome.pending), layout, outcome.preemptions, f"{run.seconds:.1f}"])
    return found


def details(runs: list[Run]) -> list[str]:
    """What each run did to the jobs, and why pods wait, grouped by the scheduler's reason."""
    lines = []
    for kind in sorted({k for run in runs for k in run.skipped}):
        lines.append(f"not created: {kind} (the local cluster has no such API; it does not change placement)")
    for run in runs:
        if run.lost_node:
            lines.append(f"order {run.seed}: evicted {run.evicted or 'no PS'}, then lost {run.lost_node}")
        for job, outcome in sorted(run.jobs.items()):
            for broken in outcome.broken:
                lines.append(f"order {run.seed}: {job}: {broken}")
            reasons: dict[str, list[str]] = defaultdict(list)
            for task, reason in outcome.pending:
                reasons[reason].append(task)
            for reason, tasks in sorted(reasons.items()):
                shown = ", ".join(tasks[:6]) + (f" and {len(tasks) - 6} more" if len(tasks) > 6 else "")
                lines.append(f"order {run.seed}: {job}: {shown} Pending: {reason}")
    return lines


def as_json(runs: list[Run]) -> dict:
    return {"runs": [{
        "order": run.seed, "seconds": round(run.seconds, 2), "created": run.order, "evicted": run.evicted,
        "lostNode": run.lost_node, "heldAfterEviction": run.after_eviction,
        "jobs": [{"job": o.job, "topology": o.topology, "tasks": o.tasks, "placed": o.placed, "holds": o.holds,
                  "broken": o.broken, "pending": [{"task": t, "reason": r} for t, r in o.pending],
                  "preemptions": o.preemptions} for o in sorted(run.jobs.values(), key=lambda o: o.job)],
    } for run in runs], "good": all(run.good for run in runs)}


# ---- for `tfjobgen diff` ------------------------------------------------------------------------

def for_review(objects: list[dict], intents: list[dict], profile_file: str | None, orders: int = 2,
               cluster: str = "") -> str:
    """Markdown for a pull request: where the real scheduler puts these jobs (`objects`, rendered from
    `intents` by kustomize in another process) on a local cluster of the profile, or one line saying why
    it was not checked."""
    from ..artifacts import programs
    from ..expand import pipeline
    from ..kit import table

    lacking = programs.missing(control.CORE_PROGRAMS)
    if lacking:
        return ("_Placement not checked on a local cluster: its programs are not built here "
                f"({', '.join(lacking)}; `make cluster-tools` builds them)._")
    profile = pipeline.load_profile(profile_file)
    jobs = [job for job in pipeline.expand([Intent(data) for data in intents], profile).jobs if job]
    nodes = nodes_needed(jobs, profile, spare=0)
    try:
        # One local cluster per reviewed cluster and process: `diff` reviews several clusters at once.
        name = f"review-{os.getpid()}" + (f"-{zlib.crc32(cluster.encode()):08x}" if cluster else "")  # a short name
        runs = run_orders(objects, profile, nodes, list(range(orders)), name, lambda line: None)
    except Exception as err:  # noqa: BLE001 - a note in the review, never a failed diff
        return f"_Placement not checked on a local cluster: {err}_"
    return "\n".join([table.markdown(HEADERS, rows(runs))] + [f"- {line}" for line in details(runs)])
