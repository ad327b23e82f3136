"""`tfjobgen diff BASE_REF`: what a change does to each cluster's jobs, as one Markdown report.

The base revision is read from git (`git archive`, no network, no checkout)
and built with its own generator; the working tree is built with the current
one. Both builds go through the same checks Argo CD's path does (deliver.py),
and the report lists, per cluster: jobs added, removed and changed (per role
replicas, CPU and memory, topology, QoS, protocol, object counts), what Argo CD
will do to each running job, and every problem with its file and line.

The pull-request workflow posts the report as one comment, found again on the
next push by MARKER, and fails when the report has errors.
"""

from __future__ import annotations

import dataclasses
import json
import posixpath
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from .. import contract, describe, intents, source
from ..problems import WARNING, InvalidInput, Problem, distinct
from . import build, deliver, policy, tree

MARKER = "<!-- tfjobgen-diff -->"
IGNORED_PATHS = {f"metadata.annotations.{deliver.REVISION}"}  # derived from the rest; shown as "restarts"
MAX_PATHS = 6


# ---- one side of the comparison ------------------------------------------------------

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
    wanted = overlays if files is None or built_jobs else []  # a side without the changed files builds nothing
    builds = build.build_overlays(root, wanted, selection) if wanted else {}
    for overlay in overlays:
        if overlay not in builds:
            side.objects[overlay] = []
            continue
        result = builds[overlay]
        side.intents[overlay] = result.intents
        side.problems += result.problems + (deliver.patch_problems(root, result.path, jobs) if readable else [])
        if not result.ok:
            continue
        delivered, found = deliver.deliver(result.objects, built_jobs, result.path)
        side.problems += found
        if any(p.is_error for p in found):  # still worth showing; the report says Argo CD would get nothing
            side.refused.add(overlay)
            delivered = deliver.annotate(result.objects)
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


def intent_problems(root: Path, files: frozenset[str] | None = None) -> list[Problem]:
    """What `tfjobgen validate jobs/` reports (with the embedded profile), with paths relative to root.

    With `files`, only the jobs in those files are checked (the others have not changed).
    """
    from .. import pipeline

    folder = root / tree.JOBS
    if not folder.is_dir():
        return []
    found, problems = pipeline.load_intents([str(folder)], relative_to=str(root))
    found = [intent for intent in found if files is None or intent.file in files]
    # The embedded profile is no cluster's: its own rules are not this change's problems.
    problems += [p for p in pipeline.expand(found, pipeline.load_profile(None)).problems
                 if not (p.ref and p.ref.kind == pipeline.PROFILE_KIND)] if found else []
    problems += intents.unlisted([str(folder)])
    return [dataclasses.replace(p, file=Path(p.file).relative_to(root).as_posix())
            if Path(p.file).is_absolute() else p for p in problems]


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


# ---- comparing two builds ---------------------------------------------------------------

@dataclass
class JobChange:
    change: str  # added, removed, changed
    key: str  # namespace/name
    old: describe.JobSummary | None
    new: describe.JobSummary | None
    details: list[str] = field(default_factory=list)  # "Job x: spec.completions, ..."
    runs: Counter = field(default_factory=Counter)  # run objects (Jobs) recreated, created, deleted

    @property
    def restarts(self) -> bool:
        """Any of the job's run objects changes: its pods are replaced (deliver.py's revision makes that all)."""
        return sum(self.runs.values()) > 0


def _by_job(objects: list[dict]) -> dict[str, dict[tuple[str, str], dict]]:
    grouped: dict[str, dict[tuple[str, str], dict]] = defaultdict(dict)
    for obj in objects:
        job = deliver.job_of(obj)
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
        is_run = any(k == kind for _, k in deliver.RUN_KINDS)
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
    old_summary = {s.key: s for s in describe.jobs(old_objects)}
    new_summary = {s.key: s for s in describe.jobs(new_objects)}
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


# ---- the report -------------------------------------------------------------------------

@dataclass
class Cluster:
    overlay: str
    changes: list[JobChange]
    unchanged: int
    note: str = ""
    plans: list[str] = field(default_factory=list)  # `tfjobgen plan` of each added or changed job, Markdown


@dataclass
class Report:
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


def _dedupe(problems: list[Problem]) -> list[Problem]:
    return sorted(distinct(problems), key=lambda p: (not p.is_error, p.file, p.line, p.field, p.message))


def make_report(root: Path, base_ref: str, crd_dir: str | None = None) -> Report:
    commit = tree.resolve_commit(root, base_ref)
    with tempfile.TemporaryDirectory(prefix="tfjobgen-base-") as scratch:
        base_root = Path(scratch)
        tree.extract_commit(root, commit, base_root)
        files = affected_files(root, base_root, commit)  # build only what the change can affect
        base = load_side(base_root, f"{base_ref} ({commit[:8]})", files)
    head = load_side(root, _head_label(root), files)
    problems = list(head.problems) + intent_problems(root, files) + namespace_moves(base.jobs, head.jobs)
    clusters = []
    for overlay in sorted(set(base.overlays) | set(head.overlays)):
        old, new = base.objects.get(overlay, []), head.objects.get(overlay)
        if overlay not in head.overlays:
            clusters.append(Cluster(overlay, compare(old, []), 0,
                                    "overlay removed: the ApplicationSet stops managing its Application "
                                    "(applicationsSync: create-update), which keeps its resources; delete "
                                    "the Application by hand to retire the cluster"))
            continue
        if new is None:
            clusters.append(Cluster(overlay, [], 0, "does not build (see the problems above)"))
            continue
        note = ""
        if overlay in head.refused:
            note = "builds, but Argo CD would get nothing: the build is refused (see the problems above)"
        elif base.predates_project:
            note = "the base revision predates tfjobgen (no jobs/ or overlays/): every job is new"
        elif overlay not in base.overlays:
            note = "new cluster: its Application is created on merge"
        elif overlay not in base.objects:
            note = "the base revision does not build this overlay, so rows marked added may already run"
        changes = compare(old, new)
        unchanged = len(describe.jobs(new)) - sum(c.change != "removed" for c in changes) + head.unbuilt
        keys = [c.key for c in changes if c.change != "removed"]
        clusters.append(Cluster(overlay, changes, unchanged, note,
                                plans_of(root, overlay, head.jobs, keys, head.intents.get(overlay))))
        for project in policy.projects(root):
            problems += policy.check(project, overlay, new)
    problems += output_problems(base, head, crd_dir)
    return Report(base.label, head.label, clusters, _dedupe(problems))


def plans_of(root: Path, overlay: str, jobs: list[tree.JobFile], keys: list[str],
             built: list[dict] | None = None) -> list[str]:
    """`tfjobgen plan` (Markdown) of the jobs `keys` against the overlay's profile: of each job as the
    overlay built it (`built`: its intents, patches applied), so the plan and the table above it agree;
    from the job file, with a note, when the build does not show its intents (an opaque overlay).
    Jobs with errors get none (their problems are in the report already).
    """
    from .. import pipeline
    from ..planner import report, workload

    profile_file = next((str(path) for path in sorted((root / tree.OVERLAYS / overlay).glob("*.y*ml"))
                         if _is_profile(path)), None)
    try:
        profile = pipeline.load_profile(profile_file)
    except InvalidInput:
        return []
    files = {job.key: job.file for job in jobs}
    if built is None and keys:
        built = build.intents_as_built(root, overlay)
    as_built = {f"{intents.ref_of(data).namespace}/{intents.ref_of(data).name}": data for data in built or []}
    plans = []
    for key in keys:
        notes: tuple[str, ...] = ()
        if key in as_built:
            found = [pipeline.Intent(as_built[key])]
        elif key in files:
            found = [i for i in pipeline.load_intents([str(root / files[key])])[0]
                     if f"{i.ref.namespace}/{i.ref.name}" == key]
            notes = (f"planned from {files[key]}: kustomize could not show {tree.OVERLAYS}/{overlay}'s jobs as "
                     "patched, so changes its kustomization makes to them are not in this plan",)
        else:
            continue
        for intent in found:
            job, problems = pipeline.validate(intent, profile)
            if job is not None:
                plan = report.make(job, profile, workload.of_job(job), intent.data)
                plan = dataclasses.replace(plan, notes=plan.notes + notes)
                plans.append(report.markdown(plan, heading="####"))
    return plans


def _is_profile(path: Path) -> bool:
    try:
        return any(intents.kind_of(d.data) == "profile"
                   for d in source.parse_documents(source.read_text(str(path)), str(path)))
    except InvalidInput:
        return False


def output_problems(base: Side, head: Side, crd_dir: str | None) -> list[Problem]:
    """Schema problems of the objects this change adds or changes (unchanged objects were checked before)."""
    before = {json.dumps(o, sort_keys=True) for objects in base.objects.values() for o in objects}
    fresh = [(overlay, o) for overlay, objects in head.objects.items() for o in objects
             if json.dumps(o, sort_keys=True) not in before]
    if not fresh:
        return []
    try:
        from . import crds

        schemas = crds.load(Path(crd_dir)) if crd_dir else {}
        found = crds.validate([o for _, o in fresh], schemas)
    except ImportError as err:
        return [Problem(f"rendered objects were not validated: {err.name} is not installed "
                        "(pip install kubernetes-validate)", severity=WARNING)]
    where = {id(o): overlay for overlay, o in fresh}
    return [Problem(f"{deliver.describe_object(obj)}: {message}", severity=severity,
                    file=f"{tree.OVERLAYS}/{where.get(id(obj), '?')}") for obj, severity, message in found]


def _head_label(root: Path) -> str:
    try:
        proc = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=8", "HEAD"], capture_output=True,
                              text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "working tree"
    return f"working tree ({proc.stdout.strip()})" if proc.returncode == 0 else "working tree"


# ---- Markdown -----------------------------------------------------------------------------

def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ") or "-"


def _change(old: str, new: str) -> str:
    return new if old == new else f"{old} → **{new}**"


def _row(change: JobChange) -> list[str]:
    old, new = change.old, change.new
    now = new or old
    cells = []
    for role in contract.TABLE_ROLES:
        before = describe.role_text(old.roles.get(role)) if old else "-"
        after = describe.role_text(new.roles.get(role)) if new else "-"
        cells.append(_change(before, after) if old and new else (after if new else before))
    for attribute in ("topology", "qos"):
        before, after = (getattr(old, attribute) if old else ""), (getattr(new, attribute) if new else "")
        cells.append(_change(before, after) if old and new else (after or before))
    protocol = [f"{s.protocol} ({s.api})" if s else "" for s in (old, new)]
    cells.append(_change(*protocol) if old and new else (protocol[1] or protocol[0]))
    counts = [str(sum(s.objects.values())) if s else "" for s in (old, new)]
    cells.append(_change(*counts) if old and new else (counts[1] or counts[0]))
    if change.change == "added":
        rollout = "starts"
    elif change.change == "removed":
        rollout = "**stops**: pruned, its pods are deleted"
    elif change.restarts:
        counts = [f"{change.runs[what]} Job(s) {what}" for what in ("recreated", "created", "deleted")
                  if change.runs[what]]
        rollout = "**restarts**: " + ", ".join(counts)
    else:
        rollout = "updated in place"
    return [change.change, f"`{now.key if now else change.key}`", *cells, rollout]


def to_markdown(report: Report) -> str:
    out = [MARKER, "## tfjobgen: what this change does to the clusters", "",
           f"Base `{report.base}` → head `{report.head}`.", ""]
    if report.errors:
        out.append(f"**{report.errors} error(s)** must be fixed before merging"
                   + (f"; {report.warnings} warning(s)." if report.warnings else "."))
    elif report.warnings:
        out.append(f"No errors; {report.warnings} warning(s).")
    else:
        out.append("No problems found.")
    out += ["", "| cluster | added | changed | removed | unchanged |", "|---|---|---|---|---|"]
    for cluster in report.clusters:
        count = {c: sum(1 for x in cluster.changes if x.change == c) for c in ("added", "changed", "removed")}
        out.append(f"| {cluster.overlay} | {count['added']} | {count['changed']} | {count['removed']} | "
                   f"{cluster.unchanged} |")
    if report.problems:
        out += ["", "### Problems", "", "| | where | field | problem |", "|---|---|---|---|"]
        for p in report.problems:
            where = f"{p.file}:{p.line}" if p.file and p.line else p.file
            out.append(f"| {'error' if p.is_error else 'warning'} | {_cell(f'`{where}`' if where else '')} | "
                       f"{_cell(f'`{p.field}`' if p.field else '')} | {_cell(p.message)} |")
    headers = ["change", "job", "PS", "workers", "chief", "evaluator", "topology", "QoS", "protocol", "objects",
               "rollout"]
    for cluster in report.clusters:
        out += ["", f"### Cluster `{cluster.overlay}`", ""]
        if cluster.note:
            out += [f"_{cluster.note}_", ""]
        if not cluster.changes:
            out.append("No job changes.")
            continue
        out += ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        out += ["| " + " | ".join(_cell(c) for c in _row(change)) + " |" for change in cluster.changes]
        detailed = [c for c in cluster.changes if c.details]
        if detailed:
            out += ["", f"<details><summary>Object changes in {cluster.overlay}</summary>", ""]
            for change in detailed:
                out.append(f"- `{change.key}`")
                out += [f"  - {line}" for line in change.details]
            out += ["", "</details>"]
        if cluster.plans:
            out += ["", f"<details><summary>Plans of the added and changed jobs in {cluster.overlay} "
                        "(<code>tfjobgen plan</code>)</summary>", ""]
            out += [plan for plan in cluster.plans] + ["</details>"]
    if any(c.restarts for cluster in report.clusters for c in cluster.changes):
        out += ["", "A job that **restarts** loses the progress since its last checkpoint: Argo CD deletes and "
                    "recreates all its Jobs together (docs/gitops.md, \"Changing a running job\")."]
    return "\n".join(out) + "\n"


def run(root: Path, base_ref: str, output: str | None = None, crd_dir: str | None = None,
        out=sys.stdout, err=sys.stderr) -> int:
    """The command: write the report; 0 without errors, 1 with errors, 2 when it cannot run."""
    if not tree.is_tree(root):
        print(f"tfjobgen diff: run it from the repository root (the folder with {tree.OVERLAYS}/); {root} has none",
              file=err)
        return 2
    report = make_report(root, base_ref, crd_dir)
    text = to_markdown(report)
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        out.write(text)
    for problem in report.problems:
        print(problem.format(), file=err)
    if report.errors:
        print(f"tfjobgen diff: {report.errors} error(s)", file=err)
        return 1
    return 0
