"""The placement cases the tests assert and docs/placement.py reports, in one place.

Each case renders example jobs with a profile and runs them on a simulated
cluster of that profile's node shape, over many seeds:

- arrival:     one job alone on exactly as many servers as it needs, its pods created in a random order;
- replacement: the same job with a spare server (one per pool); once it is placed, one of its PS is
               evicted and recreated, then a server running its pods fails and the pods it ran are
               recreated;
- shared:      every job of an overlay on one cluster, the pods of all jobs interleaved at random, with
               the PriorityClasses the overlay's profile names, and once more without them.

A run is good when every pod is placed and every job's layout holds (scenarios.verdicts).
`figures()` computes every cell of the table in docs/design.md; `table()` writes it.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import yaml

from tfjobgen import emit, pipeline

from .objects import PriorityClass, SimNode, nodes, priority_classes
from .scenarios import Run, Workload, arrive, evict, lose_node, verdicts

REPO = Path(__file__).resolve().parents[2]
JOBS = REPO / "jobs"
PRIORITY_CLASSES_FILE = REPO / "docs" / "priority-classes.yaml"

ARRIVAL_SEEDS = range(50)
NODE_LOSS_SEEDS = range(20)
SHARED_SEEDS = range(10)

CPU_MANAGER = {"cpu-manager-policy": "static"}  # both overlays send cpuset pods to these nodes
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
# server per PS (its workers, chief and evaluator fit beside them); ctr-jobset one per PS and one for
# its chief, which colocated PS keep away from as from a PS (its workers fit beside them).
NEEDS = {
    "scene1-case1": Need(1, 0), "scene1-case2": Need(5, 0), "scene1-case3": Need(10, 0), "scene1-case4": Need(20, 0),
    "scene2-case1": Need(1, 1), "scene2-case2": Need(5, 5), "scene2-case3": Need(10, 10), "scene2-case4": Need(20, 20),
    "deeprec-ctr": Need(10, 8), "wide-deep": Need(4, 0), "ctr-jobset": Need(2, 1),
}
ISOLATED = ("scene2-case1", "scene2-case2", "scene2-case3", "scene2-case4", "deeprec-ctr")

# The pools every isolated job gets from this profile (isolatedPools), each pool tainted for its role.
POOLS_PROFILE = {
    "apiVersion": "tfjobgen.dev/v1alpha1", "kind": "ClusterProfile", "metadata": {"name": "pools-80c"},
    "spec": {
        "nodePools": {
            "ps": {"nodeSelector": {"pool": "ps"},
                   "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "ps", "effect": "NoSchedule"}]},
            "workers": {"nodeSelector": {"pool": "workers"}, "tolerations": [
                {"key": "dedicated", "operator": "Equal", "value": "workers", "effect": "NoSchedule"}]},
        },
        "isolatedPools": {"ps": "ps", "worker": "workers"},
    },
}


def load_priority_classes() -> dict[str, PriorityClass]:
    """The PriorityClasses of docs/priority-classes.yaml, the ones the overlays' profiles name."""
    return priority_classes(list(yaml.safe_load_all(PRIORITY_CLASSES_FILE.read_text())))


def render(job: str, profile: dict | None = None, patch: Callable[[dict], None] | None = None) -> list[dict]:
    """The objects jobs/<job> becomes (in-process), after `patch` edits its intent; errors fail loudly."""
    path = JOBS / FILES.get(job, f"{job}.yaml")
    intents, problems = pipeline.load_intents([str(path)])
    if patch:  # on a copy: source.parse_file caches the parsed file, which later renders read again
        intents = [dataclasses.replace(intent, data=copy.deepcopy(intent.data)) for intent in intents]
        for intent in intents:
            patch(intent.data)
    expansion = pipeline.expand(intents, pipeline.profile_from(profile) if profile else pipeline.load_profile(None))
    errors = [p.format() for p in problems + expansion.problems if p.is_error]
    assert not errors, "\n".join(errors)
    return emit.kustomize_order([obj for group in expansion.objects for obj in group])


def required_spread(intent: dict) -> None:
    intent["spec"]["topology"]["spread"] = "required"


# ---- clusters --------------------------------------------------------------------------------

def seed_cluster(servers: int, labels: dict | None = None) -> list[SimNode]:
    """`servers` of the seed's shape (80 cores, 256 GiB), unlabelled but for `labels`."""
    return nodes(servers, 80, "256Gi", labels=labels)


def pools_cluster(need: Need, spare: int = 0) -> list[SimNode]:
    """POOLS_PROFILE's two pools, each tainted for its role, sized for the job (plus `spare` each)."""
    def pool(name: str, count: int) -> list[SimNode]:
        return nodes(count, 80, "256Gi", prefix=name, labels={"pool": name},
                     taints=[{"key": "dedicated", "value": name, "effect": "NoSchedule"}])
    return pool("ps", need.ps + spare) + pool("workers", need.others + spare)


def overlay_cluster(overlay: str) -> list[SimNode]:
    """One cluster for all the jobs of an overlay, in its profile's node shapes and pools.

    Sized as the sum of what each job needs alone, so every job fits however the
    others land; every node carries the CPU-manager label, the pools their labels and taints.
    """
    if overlay == "seed-80c":
        return nodes(sum(n.servers for n in NEEDS.values()), 80, "256Gi", labels=CPU_MANAGER)
    if overlay == "prod-96c":
        # 96-core nodes hold one colocated group each (68 CPU); wide-deep's 4 PS, chief and 48 workers
        # fit on 5, ctr-jobset's 2 PS, chief and 6 workers on 3.
        # Isolated PS go to ps-highmem (64 cores), their workers to cpu-workers, 13 scene-2 workers
        # (7 CPU) or 12 deeprec workers (8 CPU) to a server; both pools tainted.
        # Colocated PS keep off servers with any pod of another job, and cannot preempt pods of their own
        # class (PS, chiefs): each PS or chief of a spread job may hold a server of its own.
        general = 1 + 5 + 10 + 20 + (4 + 1) + (2 + 1)
        ps_pool = 1 + 5 + 10 + 20 + 10
        worker_pool = 1 + 4 + 8 + 16 + 7

        def dedicated(value: str) -> list[dict]:
            return [{"key": "dedicated", "value": value, "effect": "NoSchedule"}]
        return (nodes(general, 96, "384Gi", labels=CPU_MANAGER)
                + nodes(ps_pool, 64, "512Gi", prefix="ps-highmem", labels={**CPU_MANAGER, "pool": "ps-highmem"},
                        taints=dedicated("parameter-servers"))
                + nodes(worker_pool, 96, "384Gi", prefix="cpu-workers",
                        labels={**CPU_MANAGER, "pool": "cpu-workers"}, taints=dedicated("cpu-workers")))
    raise KeyError(f"no simulated cluster for overlay {overlay}")


def without_priority_classes(objects: list[dict]) -> list[dict]:
    """The same objects as if the profile named no PriorityClasses."""
    objects = copy.deepcopy(objects)
    for obj in objects:
        for pod_spec in _pod_specs(obj):
            pod_spec.pop("priorityClassName", None)
    return objects


def _pod_specs(value) -> list[dict]:
    """Every pod spec (a dict with containers) inside an object, whatever kind carries it."""
    if isinstance(value, dict):
        if "containers" in value:
            return [value]
        return [spec for v in value.values() for spec in _pod_specs(v)]
    if isinstance(value, list):
        return [spec for v in value for spec in _pod_specs(v)]
    return []


# ---- figures ---------------------------------------------------------------------------------

@dataclass
class Figure:
    """How many runs ended with every pod placed and every layout intact, and what broke in the others."""

    good: int = 0
    runs: int = 0
    failures: list[str] = field(default_factory=list)  # one line per bad run, naming its seed
    preemptions: int = 0

    @property
    def all_good(self) -> bool:
        return self.runs > 0 and self.good == self.runs

    def add(self, run: Run, workload: Workload, jobs: tuple[str, ...] | None = None, what: str = "",
            earlier: list[str] = ()) -> None:
        """Count a run; `earlier`: what was already broken at an earlier check of the same run."""
        found = verdicts(run.state, workload)
        bad = [f"before: {b}" for b in earlier]
        bad += [str(v) for job, v in found.items() if (jobs is None or job in jobs) and not v.ok]
        self.runs += 1
        self.preemptions += sum(n for job, n in run.scheduler.preemptions.items() if jobs is None or job in jobs)
        if bad:
            waiting = [p for p in run.pending if jobs is None or p.job in jobs]
            if waiting:  # why the first of them fits nowhere
                bad.append(f"{waiting[0].task} pending: {run.scheduler.why(waiting[0])}")
            self.failures.append(f"seed {run.seed}{what}: " + " | ".join(bad))
        else:
            self.good += 1

    def __iadd__(self, other: "Figure") -> "Figure":
        self.good += other.good
        self.runs += other.runs
        self.failures += other.failures
        self.preemptions += other.preemptions
        return self

    def __str__(self) -> str:
        return f"{self.good}/{self.runs}"

    def report(self, limit: int = 5) -> str:
        return "\n  ".join([f"{self.good} of {self.runs} runs good"] + self.failures[:limit])


def arrival(workload: Workload, cluster: Callable[[], list[SimNode]], seeds: range = ARRIVAL_SEEDS,
            classes: dict[str, PriorityClass] | None = None) -> Figure:
    figure = Figure()
    for seed in seeds:
        figure.add(arrive(workload, cluster(), seed, classes or {}), workload)
    return figure


def replacement(workload: Workload, job: str, cluster: Callable[[], list[SimNode]], seeds: range = NODE_LOSS_SEEDS,
                classes: dict[str, PriorityClass] | None = None) -> Figure:
    """Place the job, evict one of its PS, then fail a server running its pods: after each, the
    recreated pods must restore the layout (a run is good when both checks are)."""
    figure = Figure()
    for seed in seeds:
        run = arrive(workload, cluster(), seed, classes or {})
        evicted = evict(run, job, "ps", seed)
        after_eviction = [str(v) for v in verdicts(run.state, workload).values() if not v.ok]
        lost = lose_node(run, job, seed)
        figure.add(run, workload, what=f" (evicted {evicted}, lost {lost})", earlier=after_eviction)
    return figure


def shared(workload: Workload, overlay: str, classes: dict[str, PriorityClass], seeds: range = SHARED_SEEDS
           ) -> list[tuple[Run, Workload]]:
    return [(arrive(workload, overlay_cluster(overlay), seed, classes), workload) for seed in seeds]


# ---- the table of docs/design.md ------------------------------------------------------------

ROWS = {  # row -> the example jobs it is measured on
    "colocated": ("scene1-case1", "scene1-case2", "scene1-case3", "scene1-case4"),
    "isolated": ISOLATED,
    "isolated, with pools": ISOLATED,
    "spread (preferred)": ("wide-deep",),
    "spread (required)": ("wide-deep",),
}
REPLACEMENT = "PS evicted, then a node lost"
COLUMNS = ("arrival order", REPLACEMENT, "shared cluster", "shared, no PriorityClasses")
# The overlays whose shared cluster each row is measured in (prod-96c gives isolated jobs pools).
SHARED_IN = {"colocated": ("seed-80c", "prod-96c"), "isolated": ("seed-80c",),
             "isolated, with pools": ("prod-96c",), "spread (preferred)": ("seed-80c", "prod-96c"),
             "spread (required)": ()}
# What the rules promise in each cell (docs/design.md explains why); the tests hold the figures to it.
GUARANTEED, NOT_GUARANTEED = "guaranteed", "not guaranteed"
CLAIMS = {(row, column): GUARANTEED for row in ROWS for column in COLUMNS if SHARED_IN[row] or
          not column.startswith("shared")}
CLAIMS["colocated", "shared, no PriorityClasses"] = NOT_GUARANTEED


def single_job(row: str, job: str) -> tuple[Workload, Callable[[int], list[SimNode]]]:
    """A job as a row measures it alone, and its cluster (given the spare servers per pool)."""
    need = NEEDS[job]
    if row == "isolated, with pools":
        return Workload.of(render(job, POOLS_PROFILE)), lambda spare: pools_cluster(need, spare)
    patch = required_spread if row == "spread (required)" else None
    return Workload.of(render(job, patch=patch)), lambda spare: seed_cluster(need.servers + spare)


def figures(overlays: dict[str, list[dict]], progress: Callable[[str], None] = lambda line: None
            ) -> dict[tuple[str, str], Figure]:
    """Every cell of the table: (row, column) -> Figure. `overlays`: each overlay's built objects."""
    result: dict[tuple[str, str], Figure] = {}
    classes = load_priority_classes()
    for row, jobs in ROWS.items():
        result[row, "arrival order"], result[row, REPLACEMENT] = Figure(), Figure()
        for job in jobs:
            workload, cluster = single_job(row, job)
            result[row, "arrival order"] += arrival(workload, lambda: cluster(0))
            result[row, REPLACEMENT] += replacement(workload, job, lambda: cluster(1))
        progress(f"{row}: arrival order {result[row, 'arrival order']}, replacement {result[row, REPLACEMENT]}")
    for column, prepare, with_classes in (("shared cluster", lambda o: o, classes),
                                          ("shared, no PriorityClasses", without_priority_classes, {})):
        runs = {}
        for overlay, objects in sorted(overlays.items()):
            runs[overlay] = shared(Workload.of(prepare(objects)), overlay, with_classes)
            progress(f"{column}: {overlay}, {len(runs[overlay])} runs")
        for row, jobs in ROWS.items():
            figure = Figure()
            for overlay in SHARED_IN[row]:
                for run, workload in runs.get(overlay, ()):
                    figure.add(run, workload, jobs, what=f" ({overlay})")
            result[row, column] = figure
    return result


def table(found: dict[tuple[str, str], Figure]) -> str:
    """The markdown table of docs/design.md: per row and column, the claim and the runs that bear it out."""
    lines = ["| topology | " + " | ".join(COLUMNS) + " |", "| --- |" + " --- |" * len(COLUMNS)]
    for row in ROWS:
        cells = []
        for column in COLUMNS:
            figure = found.get((row, column))
            if (row, column) not in CLAIMS or not figure or not figure.runs:
                cells.append("-")
                continue
            preempted = f", {figure.preemptions} preemptions" if figure.preemptions else ""
            cells.append(f"{CLAIMS[row, column]}: {figure.good}/{figure.runs} held{preempted}")
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
