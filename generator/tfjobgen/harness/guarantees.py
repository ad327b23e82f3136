"""What each topology guarantees, measured on the real kube-scheduler: the tables of docs/schedulers.md.

Rows are topologies, each measured on the example jobs that use it; columns are situations:

    arrival order         the job alone on exactly the servers it needs, objects created in shuffled orders
    PS evicted, ...       the same with one spare server (per pool): once placed, a PS is evicted, then a
                          server running the job's pods is lost; the layout must hold after both
    shared cluster        every job of an overlay on one cluster of its profile, created in shuffled order,
                          with the PriorityClasses the profile names
    shared, no ...        the same without them

A second table, the gang table, measures the shared cluster again under each gang scheduler
(GANGS): the overlay's profile given that spec.gang, its jobs rendered under it, the cluster running
that scheduler (and the Kubernetes release it needs). Its "none" column is the shared cluster column.

Every run is `place.run_order`: a fresh local cluster, the real scheduler, `promises.verdicts`.
A run is good when every pod is placed and every layout holds. docs/generate/placement.py writes the
tables (all orders); the cluster tier runs a sample and checks the tables are current.
"""

from __future__ import annotations

import copy
import json
import os
import statistics
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import yaml

from ..artifacts import programs
from ..expand import pipeline
from ..inputs.intents import Intent
from ..place import place
from . import gangs, sample

REPO = programs.REPO
JOBS = sample.JOBS
FILES = {"deeprec-ctr": "deeprec-starserver.yaml"}  # job -> file, where they differ


@dataclass(frozen=True)
class Need:
    """Servers a job needs alone on the seed's 80-core / 256 GiB nodes: for its PS, for the rest."""

    ps: int
    others: int

    @property
    def servers(self) -> int:
        return self.ps + self.others


# The seed's own server counts for its scenes (colocated: one server per group; isolated: one per PS
# plus one per 10 workers); deeprec-ctr 10 PS servers + 80 workers at 10 per server; wide-deep one
# server per PS (its workers, chief and evaluator fit beside them).
NEEDS = {
    "scene1-case1": Need(1, 0), "scene1-case2": Need(5, 0), "scene1-case3": Need(10, 0), "scene1-case4": Need(20, 0),
    "scene2-case1": Need(1, 1), "scene2-case2": Need(5, 5), "scene2-case3": Need(10, 10), "scene2-case4": Need(20, 20),
    "deeprec-ctr": Need(10, 8), "wide-deep": Need(4, 0),
}
ISOLATED = ("scene2-case1", "scene2-case2", "scene2-case3", "scene2-case4", "deeprec-ctr")
ROWS = {  # row -> the example jobs it is measured on
    "colocated": ("scene1-case1", "scene1-case2", "scene1-case3", "scene1-case4"),
    "isolated": ISOLATED,
    "isolated, with pools": ISOLATED,
    "spread (preferred)": ("wide-deep",),
    "spread (required)": ("wide-deep",),
}
ARRIVAL, REPLACEMENT = "arrival order", "PS evicted, then a node lost"
SHARED, SHARED_PLAIN = "shared cluster", "shared, no PriorityClasses"
COLUMNS = (ARRIVAL, REPLACEMENT, SHARED, SHARED_PLAIN)
# The overlays whose shared cluster each row is measured in (prod-96c gives isolated jobs pools).
SHARED_IN = {"colocated": ("seed-80c", "prod-96c"), "isolated": ("seed-80c",),
             "isolated, with pools": ("prod-96c",), "spread (preferred)": ("seed-80c", "prod-96c"),
             "spread (required)": ("seed-80c", "prod-96c")}
# No job of the overlays asks for spread: required, so their shared clusters get wide-deep once more, under
# this name and with spread: required: every row then has a shared figure.
SPREAD_REQUIRED_JOB = "wide-deep-required"
SHARED_JOBS = {**ROWS, "spread (required)": (SPREAD_REQUIRED_JOB,)}  # row -> its jobs on a shared cluster

SEED_PROFILE = {"apiVersion": "tfjobgen.dev/v1alpha1", "kind": "ClusterProfile", "metadata": {"name": "seed-shape"},
                "spec": {"node": {"cpu": 80, "memory": "256Gi"}}}


def _dedicated(value: str) -> list[dict]:
    return [{"key": "dedicated", "operator": "Equal", "value": value, "effect": "NoSchedule"}]


def pools_profile(need: Need, spare: int) -> dict:
    """Two pools tainted for their roles, sized for the job (plus `spare` each), and no other node."""
    return {"apiVersion": "tfjobgen.dev/v1alpha1", "kind": "ClusterProfile", "metadata": {"name": "pools-80c"},
            "spec": {"node": {"cpu": 80, "memory": "256Gi"}, "nodeCount": 1,
                     "nodePools": {"ps": {"nodeSelector": {"pool": "ps"}, "tolerations": _dedicated("ps"),
                                          "nodeCount": need.ps + spare},
                                   "workers": {"nodeSelector": {"pool": "workers"}, "tolerations": _dedicated("workers"),
                                               "nodeCount": need.others + spare}},
                     "isolatedPools": {"ps": "ps", "worker": "workers"}}}


# Shared clusters: sized as the sum of what each job needs alone, so every job fits however the
# others land. prod-96c: 96-core nodes hold one colocated group each; wide-deep (twice) fits on 5,
# ctr-jobset on 3; isolated PS go to ps-highmem (64 cores), their workers to cpu-workers.
SHARED_NODES = {"seed-80c": {"": sum(n.servers for n in NEEDS.values()) + NEEDS["wide-deep"].servers + 3},
                "prod-96c": {"": 1 + 5 + 10 + 20 + 5 + 5 + 3, "ps-highmem": 1 + 5 + 10 + 20 + 10,
                             "cpu-workers": 1 + 4 + 8 + 16 + 7}}


# The gang table's columns besides "none" (the shared cluster column): each gang scheduler as a profile
# would set it, and for the two that can keep a colocated group on one server themselves, that too.
GANGS = {
    "volcano": gangs.SCHEDULERS["volcano"],
    "volcano, groups by Volcano": gangs.SCHEDULERS["volcano"].with_settings(colocatedGroups="scheduler"),
    "scheduler-plugins": gangs.SCHEDULERS["scheduler-plugins"],
    "kueue": gangs.SCHEDULERS["kueue"],
    "kubernetes": gangs.SCHEDULERS["kubernetes"],
    "kubernetes, groups by Kubernetes": gangs.SCHEDULERS["kubernetes"].with_settings(colocatedGroups="scheduler"),
}


def gang_column(gang: str) -> str:
    """The key a gang table column's figures are recorded under ("none" is the shared cluster column's)."""
    return SHARED if gang == gangs.NONE else f"gang {gang}"


@dataclass
class Figure:
    good: int = 0
    runs: int = 0
    preemptions: int = 0
    failures: list[str] = field(default_factory=list)  # one line per bad run, naming its order
    whole: int = 0  # runs where every pod was placed and each job's own layout held, neighbours aside
    seconds: list[float] = field(default_factory=list)  # each run's, from the first object created to settled

    def add(self, run: place.Run, jobs: tuple[str, ...], what: str) -> None:
        mine = {key: o for key, o in run.jobs.items() if key.split("/")[-1] in jobs}
        self.runs += 1
        self.preemptions += run.preempted  # everything the run preempted: the row's jobs' PS preempt others' workers
        self.whole += all(o.whole and o.placed == o.tasks for o in mine.values())
        self.seconds.append(round(run.seconds, 1))
        bad = [f"{key}: {o.placed}/{o.tasks} placed" + ("; " + "; ".join(o.broken) if o.broken else "")
               for key, o in sorted(mine.items()) if not (o.holds and o.placed == o.tasks)]
        bad += [f"{key}: broken after the eviction" for key, held in run.after_eviction.items()
                if not held and key.split("/")[-1] in jobs]
        if bad:
            pending = next((p for o in mine.values() for p in o.pending), None)
            if pending:
                bad.append(f"{pending[0]} pending: {pending[1]}")
            self.failures.append(f"order {run.seed}{what}: " + " | ".join(bad))
        else:
            self.good += 1


def render(job: str, profile: dict, spread_required: bool = False, name: str = "") -> list[dict]:
    """The objects jobs/<job> becomes under `profile` (in-process, as kustomize would), named `name` if given."""
    path = JOBS / FILES.get(job, f"{job}.yaml")
    data = yaml.safe_load(path.read_text())
    if spread_required:
        data["spec"].setdefault("topology", {})["spread"] = "required"
    if name:
        data["metadata"]["name"] = name
    with tempfile.TemporaryDirectory() as folder:
        job_file = Path(folder) / path.name
        job_file.write_text(yaml.safe_dump(data))
        intents, problems = pipeline.load_intents([str(job_file)])
    expansion = pipeline.expand(intents, pipeline.profile_from(profile))
    errors = [p.format() for p in problems + expansion.problems if p.is_error]
    assert not errors, "\n".join(errors)
    return expansion.in_order()


def _run(objects: list[dict], profile: dict, nodes: int | None, seed: int, lose: bool, say,
         kubernetes: str = "") -> place.Run:
    return place.run_order(objects, pipeline.profile_from(profile), nodes, seed, lose,
                           f"guarantee-{os.getpid()}-{seed}", say, kubernetes=kubernetes)


def single_job(row: str, job: str, spare: int) -> tuple[list[dict], dict, int | None]:
    """A job as a row measures it alone: its objects, its cluster's profile and main-group size."""
    need = NEEDS[job]
    if row == "isolated, with pools":
        profile = pools_profile(need, spare)
        return render(job, profile), profile, None
    profile = SEED_PROFILE
    return render(job, profile, spread_required=row == "spread (required)"), profile, need.servers + spare


def shared_cluster(overlay: str) -> tuple[dict, int]:
    """The overlay's profile, its pools counted as SHARED_NODES says, and the main group's size."""
    profile = yaml.safe_load((sample.OVERLAYS / overlay / "cluster-profile.yaml").read_text())
    counts = SHARED_NODES[overlay]
    for pool, spec in profile["spec"].get("nodePools", {}).items():
        spec.setdefault("nodeCount", counts.get(pool, 1))
    return profile, counts[""]


def shared_case(column: str, gang: gangs.Gang | None, overlay: str, overlays: dict[str, list[dict]],
                intents: dict[str, list[dict]]) -> tuple[dict, int, list[dict], str]:
    """A shared column's cluster for an overlay (under `gang`, for a gang table column): its profile,
    main-group size, the objects created on it (the overlay's jobs and SPREAD_REQUIRED_JOB) and its
    Kubernetes release ("": the default)."""
    profile, nodes = shared_cluster(overlay)
    if gang:
        profile, objects = under_gang(profile, intents[overlay], gang)
    else:
        objects = overlays[overlay]
    objects = objects + render("wide-deep", profile, spread_required=True, name=SPREAD_REQUIRED_JOB)
    if column == SHARED_PLAIN:
        objects = without_priority_classes(objects)
    return profile, nodes, objects, gang.kubernetes if gang else ""


def under_gang(profile: dict, intents: list[dict], gang: gangs.Gang) -> tuple[dict, list[dict]]:
    """The shared cluster's profile given `gang`, and the overlay's intents rendered under it."""
    profile = gang.given_to(profile)
    expansion = pipeline.expand([Intent(copy.deepcopy(i)) for i in intents], pipeline.profile_from(profile))
    errors = [p.format() for p in expansion.problems if p.is_error]
    assert not errors, "\n".join(errors)
    return profile, expansion.in_order()


def without_priority_classes(objects: list[dict]) -> list[dict]:
    objects = copy.deepcopy(objects)
    for obj in objects:
        for pod_spec in pod_specs(obj):
            pod_spec.pop("priorityClassName", None)
    return objects


def pod_specs(value) -> list[dict]:
    if isinstance(value, dict):
        return [value] if "containers" in value else [s for v in value.values() for s in pod_specs(v)]
    if isinstance(value, list):
        return [s for v in value for s in pod_specs(v)]
    return []


# A replacement run waits for the Job controller's backoff and the taint manager: the column is
# measured on the first jobs of each row (the smaller ones), every order.
REPLACEMENT_JOBS = 2


def figures(overlays: dict[str, list[dict]], orders: range, rows: tuple[str, ...] = tuple(ROWS),
            columns: tuple[str, ...] = COLUMNS, jobs_per_row: int | None = None,
            progress: Callable[[str], None] = lambda line: None, gangs: tuple[str, ...] = (),
            intents: dict[str, list[dict]] | None = None) -> dict[tuple[str, str], Figure]:
    """Every asked-for cell: (row, column) -> Figure. `jobs_per_row`: only the first few jobs of a row.
    `gangs`: the gang table's columns too (GANGS' names), the overlays' `intents` rendered under each."""
    quiet = progress
    found: dict[tuple[str, str], Figure] = {}
    for row in rows:
        for column, spare, lose in ((ARRIVAL, 0, False), (REPLACEMENT, 1, True)):
            if column not in columns:
                continue
            figure = found[row, column] = Figure()
            limit = min(jobs_per_row or len(ROWS[row]), REPLACEMENT_JOBS if lose else len(ROWS[row]))
            for job in ROWS[row][:limit]:
                objects, profile, nodes = single_job(row, job, spare)
                for seed in orders:
                    figure.add(_run(objects, profile, nodes, seed, lose, quiet), (job,), f" ({job})")
            progress(f"{row}, {column}: {figure.good}/{figure.runs}")
    shared = [(c, None) for c in (SHARED, SHARED_PLAIN) if c in columns] + [(gang_column(g), GANGS[g]) for g in gangs]
    for column, gang in shared:
        for row in rows:
            found[row, column] = Figure()
        for overlay in sorted({o for row in rows for o in SHARED_IN[row]}):
            profile, nodes, objects, kubernetes = shared_case(column, gang, overlay, overlays, intents or {})
            for seed in orders:
                run = _run(objects, profile, nodes, seed, False, quiet, kubernetes)
                for row in rows:
                    if overlay in SHARED_IN[row]:
                        found[row, column].add(run, SHARED_JOBS[row], f" ({overlay})")
            progress(f"{column}, {overlay}: {len(orders)} orders")
    return found


def table(found: dict[tuple[str, str], Figure]) -> str:
    """The placement table: per cell, the runs that held of all runs, and the pods preempted."""
    return _markdown(found, {column: column for column in COLUMNS}, timed=False)


def gang_table(found: dict[tuple[str, str], Figure]) -> str:
    """The gang table: the shared cluster column, under each gang scheduler, with the median time to settle."""
    return _markdown(found, {gang: gang_column(gang) for gang in (gangs.NONE, *GANGS)}, timed=True)


def _markdown(found: dict[tuple[str, str], Figure], columns: dict[str, str], timed: bool) -> str:
    """Rows of ROWS, columns as headed (heading -> the column the figures are recorded under)."""
    lines = ["| topology | " + " | ".join(columns) + " |", "| --- |" + " --- |" * len(columns)]
    for row in ROWS:
        cells = [_cell(found.get((row, column)), timed) for column in columns.values()]
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _cell(figure: Figure | None, timed: bool) -> str:
    if not figure or not figure.runs:
        return "-"
    cell = f"{figure.good}/{figure.runs} held"
    if figure.whole > figure.good:  # colocated groups whole, with other jobs' pods beside them
        cell += f" ({figure.whole} whole, not alone)"
    cell += f", {figure.preemptions} preempted" if figure.preemptions else ""
    return cell + (f", {statistics.median(figure.seconds):.0f} s" if timed and figure.seconds else "")


def save(found: dict[tuple[str, str], Figure], path: Path) -> None:
    path.write_text(json.dumps({f"{row} | {column}": asdict(figure) for (row, column), figure in sorted(found.items())},
                               indent=1) + "\n")


def load(path: Path) -> dict[tuple[str, str], Figure]:
    return {tuple(key.split(" | ")): Figure(**value) for key, value in json.loads(path.read_text()).items()}
