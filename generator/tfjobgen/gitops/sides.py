"""One side of `tfjobgen diff`: a tree (the base commit's, or the working tree) built as Argo CD would get it.

Each overlay is built with the tree's own generator and put through deliver.py's checks,
as Argo CD's path does. Only the jobs a change can affect are built (affected_files);
the jobs of jobs/ are also validated on their own (intent_problems), and a job that moves
namespace is refused (namespace_moves).
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from ..inputs import intents, source
from ..inputs.problems import InvalidInput, Problem
from . import build, checks, clusters, deliver, rollout, tree


@dataclass
class Side:
    """A tree built: per overlay, the objects Argo CD would get (absent when the build failed)."""

    label: str
    overlays: list[str]
    jobs: list[tree.JobFile]
    objects: dict[str, list[dict]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    refused: set[str] = field(default_factory=set)  # built, but refused by the checks of deliver.py
    intents: dict[str, list[dict] | None] = field(default_factory=dict)  # per overlay, as built (build.Build)
    unbuilt: int = 0  # jobs left out of the builds: the change cannot affect them
    routes: dict[str, clusters.Cluster] = field(default_factory=dict)  # per overlay: which jobs it runs

    @property
    def predates_project(self) -> bool:
        return not self.overlays and not self.jobs


def load_side(root: Path, label: str, files: frozenset[str] | None = None) -> Side:
    """The tree at root built: every job, or only the jobs of `files` (the others cannot have changed)."""
    overlays = tree.overlay_names(root)
    jobs, problems = tree.job_files(root)
    readable = not problems  # an unreadable job file would make every patch of it look orphaned
    side = Side(label, overlays, jobs, problems=problems + intents.duplicate_names(jobs))
    built_jobs = jobs if files is None else [job for job in jobs if job.file in files]
    side.unbuilt = len(jobs) - len(built_jobs)
    selection = build.EVERYTHING if files is None else build.Selection(files=files)
    side.routes = routes = {cluster.overlay: cluster for cluster in clusters.read(root, overlays)}
    # A side builds a cluster only when a changed job runs on it (every cluster, when any job may have changed).
    wanted = [o for o in overlays if files is None or clusters.jobs_on(built_jobs, routes[o])]
    builds = build.build_overlays(root, wanted, selection) if wanted else {}
    for overlay in overlays:
        if overlay not in builds:
            side.objects[overlay] = []
            continue
        result = builds[overlay]
        side.intents[overlay] = result.intents
        side.problems += result.problems + (checks.patch_problems(root, result.path, jobs) if readable else [])
        if not result.ok:
            continue
        delivered, found = deliver.deliver(result.objects, clusters.jobs_on(built_jobs, routes[overlay]), result.path)
        side.problems += found
        if any(p.is_error for p in found):  # still worth showing; the report says Argo CD would get nothing
            side.refused.add(overlay)
            delivered = rollout.annotate(result.objects)
        side.objects[overlay] = delivered
    return side


def affected_files(root: Path, base_root: Path, commit: str) -> frozenset[str] | None:
    """The job files a change between `commit` and the working tree can affect; None: it can affect any job.

    Only changes to jobs/ can be narrowed down: a changed or added or deleted job file affects its own
    jobs, and a kustomization in jobs/ whose only change is its list of resources affects the files it
    lists or stops listing. A change to overlays, bases, plugins, the schemas or the generator may
    change every job, and so may a changed file in jobs/ that holds anything but TrainingJobs.
    """
    changed = tree.changed_paths(root, commit)
    if changed is None:
        return None
    affected: set[str] = set()
    for path in sorted(p for p in changed if p.split("/")[0] in tree.BUILD_INPUTS):
        if path.split("/")[0] != tree.JOBS:
            return None
        folder, name = path.rpartition("/")[::2]
        if name in intents.KUSTOMIZATION_FILES:
            before, after = (intents.read_kustomization(str(r / folder)) or {} for r in (base_root, root))
            if {k: v for k, v in before.items() if k != "resources"} != \
                    {k: v for k, v in after.items() if k != "resources"}:
                return None
            listed = [{posixpath.normpath(f"{folder}/{e}") for e in (data.get("resources") or []) if isinstance(e, str)}
                      for data in (before, after)]
            affected |= listed[0] ^ listed[1]
        else:
            affected.add(path)
    for path in affected:
        for side in (base_root, root):
            if (side / path).is_file() and not _only_intents(side / path):
                return None
    return frozenset(affected)


def _only_intents(path: Path) -> bool:
    try:
        documents = source.parse_documents(source.read_text(str(path)), str(path))
    except InvalidInput:
        return True  # the build reports it, at its line
    return all(intents.is_intent(d.data) for d in documents)


def intent_problems(root: Path, files: frozenset[str] | None = None,
                    overlays: list[clusters.Cluster] | None = None) -> list[Problem]:
    """What `tfjobgen validate jobs/` reports (each job against the profile of every cluster it runs on, and
    where jobs go: gitops/clusters.py), with paths relative to root.

    With `files`, only the jobs in those files are checked (the others have not changed); `overlays`: the
    tree's clusters, when the caller has read them already.
    """
    from ..expand import pipeline

    folder = root / tree.JOBS
    if not folder.is_dir():
        return []
    every, problems = pipeline.load_intents([str(folder)], relative_to=str(root))
    found = [intent for intent in every if files is None or intent.file in files]
    overlays = clusters.read(root) if overlays is None else overlays
    # A profile's own rules are reported by its cluster's build; here only the jobs' problems count.
    problems += [p for p in clusters.validate(root, found, overlays, whole=False, name_clusters=False)
                 if not (p.ref and p.ref.kind == pipeline.PROFILE_KIND)] if found else []
    problems += clusters.check(root, [tree.job_file(intent) for intent in every], overlays)
    problems += intents.unlisted([str(folder)]) + intents.missing_listed([str(folder)])
    return [tree.relative(p, root) for p in problems]


def namespace_moves(base: list[tree.JobFile], head: list[tree.JobFile]) -> list[Problem]:
    """A job whose name stays but whose namespace changes: Argo CD would kill it and start it elsewhere."""
    before = {job.name: job for job in base}
    counts = defaultdict(int)
    for job in head:
        counts[job.name] += 1
    problems = []
    for job in head:
        old = before.get(job.name) if counts[job.name] == 1 else None  # duplicates are their own error
        if old and old.namespace != job.namespace:
            problems.append(Problem(
                f"job '{job.name}' moves from namespace {old.namespace} to {job.namespace}: Argo CD would delete "
                f"the running job in {old.namespace} and start it from scratch in {job.namespace}. Retire it (delete "
                "its file) in one pull request and add it in the new namespace in a later one, or give it a new name",
                "metadata.namespace", file=job.file, line=job.line))
    return problems
