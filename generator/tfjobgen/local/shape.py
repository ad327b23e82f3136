"""How many tasks of each role run here: the job's own shape, or a smaller one this machine can hold.

Every task is a TensorFlow process of about 600 MB that takes 3-6 s to import
TensorFlow (measured on 2 cores). A job sized for a cluster (the README's has
38 tasks and 164 CPUs) is scaled down automatically to about two tasks per
core, keeping its chief and at least two PS when it has them, so the PS
balance still shows. A person may ask for more with --scale-workers/--scale-ps,
up to four tasks per core; beyond that TensorFlow's RPCs starve and the run
would only be slow and misleading, so it is refused with a suggestion.
Memory is the hard limit: every process, plus the model's variables twice
(on the PS, and once more while the chief writes a checkpoint).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..shared.contract import ROLES, SINGLE_ROLES, TABLE_ROLES
from ..shared.variable_placement.reference_model import SLOTS
from .machine import Machine

PROCESS_BYTES = 700 << 20  # one TF task's memory besides the model (measured RSS: about 600 MB)
AUTO_TASKS_PER_CORE = 2  # what an automatic scale-down aims for (plus one)
MAX_TASKS_PER_CORE = 4  # what an explicit request may reach
MEMORY_SHARE = 0.8  # of MemAvailable a run may plan to use


class LocalError(Exception):
    """The job cannot run here as asked: one line saying why, with what to do instead."""


@dataclass(frozen=True)
class Shape:
    counts: dict[str, int]  # tasks per role that run here
    asked: dict[str, int]  # tasks per role the job has
    notices: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def scaled(self) -> bool:
        return self.counts != self.asked


def gib(amount: int) -> str:
    return f"{amount / (1 << 30):.1f} GiB"


def model_bytes(training: dict | None) -> int:
    """Bytes of the reference model's tables and their optimizer slots (0 for a job's own program)."""
    if not training:
        return 0
    model = training["model"]
    table = model["vocabularySize"] * (model["embeddingDim"] + 1) * 4
    return table * (1 + len(SLOTS.get(training["optimizer"], SLOTS["adam"])))


def describe_counts(counts: dict[str, int]) -> str:
    """{'ps': 2, 'worker': 2, 'chief': 1} -> '2 PS + 2 workers + chief'."""
    parts = []
    for role in TABLE_ROLES:
        n = counts.get(role, 0)
        if n and role in SINGLE_ROLES and n == 1:
            parts.append(role)
        elif n:
            parts.append(f"{n} PS" if role == "ps" else f"{n} {role}s" if n > 1 else f"{n} {role}")
    return " + ".join(parts)


def choose(asked: dict[str, int], machine: Machine, model_size: int, scale_ps: int | None = None,
           scale_workers: int | None = None, with_evaluator: bool = False) -> Shape:
    """The local shape, with a notice for every change; LocalError when nothing sensible fits."""
    memory_room = int(machine.memory_available * MEMORY_SHARE) - 2 * model_size
    by_memory = max(0, memory_room // PROCESS_BYTES)
    chief = asked.get("chief", 0)
    smallest = chief + 2  # one PS, one worker
    if by_memory < smallest:
        raise LocalError(
            f"the model's variables ({gib(model_size)} with optimizer slots) and {smallest} TensorFlow "
            f"processes need more than the {gib(machine.memory_available)} of memory available here: "
            "lower training.model.vocabularySize or embeddingDim for a local run")
    auto_limit = min(AUTO_TASKS_PER_CORE * machine.cores + 1, by_memory)
    hard_limit = min(max(MAX_TASKS_PER_CORE * machine.cores, smallest), by_memory)

    for flag, value, role in (("--scale-ps", scale_ps, "ps"), ("--scale-workers", scale_workers, "worker")):
        if value is not None and not 1 <= value <= asked[role]:
            raise LocalError(f"{flag} {value}: the job has {asked[role]} {role} task(s); choose 1 to {asked[role]}")
    ps = scale_ps or min(asked["ps"], max(1, (auto_limit - chief) // 2))
    workers = scale_workers or min(asked["worker"], max(1, auto_limit - chief - ps))
    counts = {"chief": chief, "ps": ps, "worker": workers}
    evaluator = asked.get("evaluator", 0)
    fits_anyway = sum(counts.values()) + evaluator <= auto_limit and counts == {
        "chief": chief, "ps": asked["ps"], "worker": asked["worker"]}
    if evaluator and (with_evaluator or fits_anyway):
        counts["evaluator"] = evaluator
    counts = {role: counts[role] for role in ROLES if counts.get(role)}
    total = sum(counts.values())
    if total > hard_limit:
        room = max(1, hard_limit - chief - ps - counts.get("evaluator", 0))
        raise LocalError(
            f"{describe_counts(counts)} is {total} TensorFlow processes; this machine "
            f"({machine.cores} CPUs, {gib(machine.memory_available)} free) holds at most {hard_limit}: "
            f"use --scale-workers {min(room, asked['worker'])}" + (" or fewer --scale-ps" if ps > 1 else ""))

    notices = []
    asked_ordered = {role: asked[role] for role in ROLES if asked.get(role)}
    if (ps, workers) != (asked["ps"], asked["worker"]):
        notices.append(
            f"scaled down to {describe_counts(counts)} from the job's {describe_counts(asked_ordered)}: "
            f"this machine has {machine.cores} CPUs and {gib(machine.memory_available)} free "
            f"(about {AUTO_TASKS_PER_CORE} TensorFlow processes per CPU run well; "
            "--scale-workers N / --scale-ps N choose other counts)")
    if evaluator and "evaluator" not in counts:
        notices.append("the evaluator is left out of the scaled-down run (--with-evaluator runs it)")
    return Shape(counts, asked_ordered, tuple(notices))
