"""Every imported job together: names that collide, and the round trip through tfjobgen's render.

Pure: imported jobs in, the problems and, per job, what tfjobgen adds of its own out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..expand import pipeline
from ..inputs.intents import Intent
from ..inputs.problems import Problem
from ..inputs.profile import default_profile
from . import roundtrip
from .files import Job


@dataclass
class Checked:
    problems: list[Problem] = field(default_factory=list)
    additions: dict[str, list[str]] = field(default_factory=dict)  # by job name


def all_jobs(jobs: list[Job]) -> Checked:
    checked = Checked()
    seen: dict[tuple[str, str], Job] = {}
    for job in jobs:
        key = (job.namespace, job.name)
        if key in seen:
            checked.problems.append(Problem(
                f"a second job named {job.namespace}/{job.name} (the first is in {seen[key].file}): a TrainingJob's "
                "name is its file's name; rename one", "metadata.name", file=job.file,
                line=next((r.line for r in job.rows if r.field in ("metadata.name", "metadata.generateName")), 0)))
            continue
        seen[key] = job
        expansion = pipeline.expand([Intent(job.intent, job.file)], default_profile())
        if not expansion.ok:  # validated already: a job that renders nothing is import's bug, said as one
            raise AssertionError(f"{job.name}: {[p.format() for p in expansion.problems]}")
        differences = roundtrip.compare(job.source, job.rows, expansion.in_order())
        checked.problems += [Problem(f"round trip: {d}", file=job.file) for d in differences]
        checked.additions[job.name] = roundtrip.additions(job.source, expansion.in_order())
    return checked
