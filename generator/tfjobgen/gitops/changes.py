"""What changed between two builds of one cluster, job by job: added, removed, or which objects and fields;
and the diff report that gathers every cluster's changes (Report: diff.py makes it, markdown.py writes it)."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from ..expand import summary
from ..inputs.problems import Problem
from . import object_meta, rollout

IGNORED_PATHS = {f"metadata.annotations.{rollout.REVISION}"}  # derived from the rest; shown as "restarts"
MAX_PATHS = 6


@dataclass
class JobChange:
    change: str  # added, removed, changed
    key: str  # namespace/name
    old: summary.JobSummary | None
    new: summary.JobSummary | None
    details: list[str] = field(default_factory=list)  # "Job x: spec.completions, ..."
    runs: Counter = field(default_factory=Counter)  # run objects (Jobs) recreated, created, deleted

    @property
    def restarts(self) -> bool:
        """Any of the job's run objects changes: its pods are replaced (deliver.py's revision makes that all)."""
        return sum(self.runs.values()) > 0


def _by_job(objects: list[dict]) -> dict[str, dict[tuple[str, str], dict]]:
    grouped: dict[str, dict[tuple[str, str], dict]] = defaultdict(dict)
    for obj in objects:
        job = object_meta.job_of(obj)
        if job:
            meta = obj.get("metadata") or {}
            grouped[f"{meta.get('namespace', '')}/{job}"][(str(obj.get("kind", "")), str(meta.get("name", "")))] = obj
    return grouped


def changed_paths(old, new, prefix: str = "") -> list[str]:
    """Dotted paths where two objects differ (a list of another length is one path)."""
    if isinstance(old, dict) and isinstance(new, dict):
        paths = []
        for key in sorted(set(old) | set(new)):
            path = f"{prefix}.{key}" if prefix else str(key)
            if key not in old or key not in new:
                paths.append(path)
            else:
                paths += changed_paths(old[key], new[key], path)
        return [p for p in paths if p not in IGNORED_PATHS]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [p for i, (a, b) in enumerate(zip(old, new, strict=True)) for p in changed_paths(a, b, f"{prefix}[{i}]")]
    return [] if old == new else [prefix or "(whole object)"]


def _details(old: dict[tuple[str, str], dict], new: dict[tuple[str, str], dict]) -> tuple[list[str], Counter]:
    """Object changes of one job (objects with the same change grouped), and what happens to its run objects."""
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    runs: Counter = Counter()  # recreated, created, deleted
    for key in sorted(set(old) | set(new)):
        kind, name = key
        is_run = any(k == kind for _, k in object_meta.RUN_KINDS)
        if key not in old:
            groups[(kind, "added")].append(name)
            runs["created"] += is_run
        elif key not in new:
            groups[(kind, "removed")].append(name)
            runs["deleted"] += is_run
        elif old[key] != new[key]:
            paths = changed_paths(old[key], new[key])
            shown = ", ".join(paths[:MAX_PATHS]) + (f" and {len(paths) - MAX_PATHS} more" if len(paths) > MAX_PATHS
                                                      else "")
            groups[(kind, shown or "annotations")].append(name)
            runs["recreated"] += is_run
    lines = []
    for (kind, what), names in groups.items():
        who = ", ".join(names[:2]) + (f" and {len(names) - 2} more" if len(names) > 2 else "")
        lines.append(f"{kind} {who}: {what}")
    return lines, runs


def compare(old_objects: list[dict], new_objects: list[dict]) -> list[JobChange]:
    old_jobs, new_jobs = _by_job(old_objects), _by_job(new_objects)
    old_summary = {s.key: s for s in summary.jobs(old_objects)}
    new_summary = {s.key: s for s in summary.jobs(new_objects)}
    changes = []
    for key in sorted(set(old_jobs) | set(new_jobs)):
        if key not in old_jobs:
            changes.append(JobChange("added", key, None, new_summary.get(key)))
        elif key not in new_jobs:
            changes.append(JobChange("removed", key, old_summary.get(key), None))
        elif old_jobs[key] != new_jobs[key]:
            details, runs = _details(old_jobs[key], new_jobs[key])
            changes.append(JobChange("changed", key, old_summary.get(key), new_summary.get(key), details, runs))
    return changes


@dataclass
class Cluster:
    """One cluster (overlay) of the report: its changed jobs, and their plans and placement."""

    overlay: str
    changes: list[JobChange]
    unchanged: int
    note: str = ""
    plans: list[str] = field(default_factory=list)  # `tfjobgen plan` of each added or changed job, Markdown
    placement: str = ""  # `tfjobgen place` of the added and changed jobs on a local cluster, Markdown


@dataclass
class Report:
    """`tfjobgen diff`'s report: base and head, every cluster's changes, and the problems found."""

    base: str
    head: str
    clusters: list[Cluster]
    problems: list[Problem]

    @property
    def errors(self) -> int:
        return sum(p.is_error for p in self.problems)

    @property
    def warnings(self) -> int:
        return len(self.problems) - self.errors
