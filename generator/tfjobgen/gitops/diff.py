"""`tfjobgen diff BASE_REF`: what a change does to each cluster's jobs, as one Markdown report.

The base revision is read from git (`git archive`, no network, no checkout)
and built with its own generator; the working tree is built with the current
one. Both builds go through the same checks Argo CD's path does (deliver.py),
and the report lists, per cluster: jobs added, removed and changed (per role
replicas, CPU and memory, topology, QoS, protocol, object counts), what Argo CD
will do to each running job, and every problem with its file and line.

The pull-request workflow posts the report as one comment, found again on the
next push by markdown.MARKER, and fails when the report has errors.

    sides.py     each side built: the base commit's tree and the working tree
    changes.py   two builds of a cluster compared, job by job
    diff.py      the report: per cluster, the changes, a note, the placement, the plans; every problem; the command
    markdown.py  the report as the pull-request comment
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..expand import summary
from ..inputs import intents
from ..inputs.problems import WARNING, InvalidInput, Problem, distinct
from . import build, clusters, markdown, object_meta, policy, tree
from .changes import Cluster, Report, compare
from .sides import Side, affected_files, intent_problems, load_side, namespace_moves

PLACEMENTS_AT_ONCE = 2  # local clusters started at once for the placement preview


def _dedupe(problems: list[Problem]) -> list[Problem]:
    return sorted(distinct(problems), key=lambda p: (not p.is_error, p.file, p.line, p.field, p.message))


def make_report(root: Path, base_ref: str, schemas: dict | None = None, place: bool = True) -> Report:
    """The report of the change from `base_ref` to the working tree (`schemas`: crds.load of --crds)."""
    commit = tree.resolve_commit(root, base_ref)
    with tempfile.TemporaryDirectory(prefix="tfjobgen-base-") as scratch:
        base_root = Path(scratch)
        tree.extract_commit(root, commit, base_root)
        files = affected_files(root, base_root, commit)  # build only what the change can affect
        base = load_side(base_root, f"{base_ref} ({commit[:8]})", files)
    head = load_side(root, _head_label(root), files)
    problems = (list(head.problems) + intent_problems(root, files, list(head.routes.values()))
                + namespace_moves(base.jobs, head.jobs))
    sections = []
    # Each cluster's placement starts a local cluster of its own (6 s or so): two at once, beside the rest.
    pool = ThreadPoolExecutor(max_workers=PLACEMENTS_AT_ONCE)
    placements = {}
    for overlay in sorted(set(base.overlays) | set(head.overlays)):
        old, new = base.objects.get(overlay, []), head.objects.get(overlay)
        if overlay not in head.overlays:
            sections.append(Cluster(overlay, compare(old, []), 0,
                                    "overlay removed: the ApplicationSet stops managing its Application "
                                    "(applicationsSync: create-update), which keeps its resources; delete "
                                    "the Application by hand to retire the cluster"))
            continue
        if new is None:
            sections.append(Cluster(overlay, [], 0, "does not build (see the problems above)"))
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
        unchanged = len(summary.jobs(new)) - sum(c.change != "removed" for c in changes) + head.unbuilt
        keys = [c.key for c in changes if c.change != "removed"]
        if place and keys:
            placements[overlay] = pool.submit(placement_of, root, overlay, new, keys, head.intents.get(overlay))
        sections.append(Cluster(overlay, changes, unchanged, note,
                                plans_of(root, overlay, head.jobs, keys, head.intents.get(overlay))))
        for project in policy.projects(root):
            problems += policy.check(project, overlay, new)
    with pool:  # waits for every placement, each of which stops its own cluster, also on Ctrl-C
        for section in sections:
            if section.overlay in placements:
                section.placement = placements[section.overlay].result()
    changed = [job for job in head.jobs if files is None or job.file in files]  # the others were checked before
    problems += clusters.shared_model_dirs(changed, list(head.routes.values()), head.intents,
                                           lambda overlay: build.intents_as_built(root, overlay))
    problems += output_problems(base, head, schemas or {})
    return Report(base.label, head.label, sections, _dedupe(problems))


def placement_of(root: Path, overlay: str, objects: list[dict], keys: list[str], built: list[dict] | None) -> str:
    """Where the real scheduler puts the added and changed jobs, on a local cluster of the overlay's
    profile (`tfjobgen place`, two creation orders): "" when no job was added or changed."""
    if not keys:
        return ""
    from ..place import place

    wanted = set(keys)
    mine = [o for o in objects if f"{o['metadata'].get('namespace', '')}/{_job_label(o)}" in wanted]
    if built is None:
        built = build.intents_as_built(root, overlay)
    intents_of_keys = [d for d in built or [] if f"{intents.ref_of(d).namespace}/{intents.ref_of(d).name}" in wanted]
    return place.for_review(mine, intents_of_keys, _profile_file(root, overlay), cluster=overlay)


def _job_label(obj: dict) -> str:
    from ..concerns import labels

    return (obj["metadata"].get("labels") or {}).get(labels.JOB, "")


def _profile_file(root: Path, overlay: str) -> str | None:
    path = clusters.profile_file(root, overlay)
    return str(path) if path else None


def plans_of(root: Path, overlay: str, jobs: list[tree.JobFile], keys: list[str],
             built: list[dict] | None = None) -> list[str]:
    """`tfjobgen plan` (Markdown) of the jobs `keys` against the overlay's profile: of each job as the
    overlay built it (`built`: its intents, patches applied), so the plan and the table above it agree;
    from the job file, with a note, when the build does not show its intents (an opaque overlay).
    Jobs with errors get none (their problems are in the report already).
    """
    from ..concerns import workload
    from ..expand import pipeline
    from ..planner import report

    try:
        profile = pipeline.load_profile(_profile_file(root, overlay))
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
            found = [intents.Intent(as_built[key])]
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


def output_problems(base: Side, head: Side, schemas: dict) -> list[Problem]:
    """Schema problems of the objects this change adds or changes (unchanged objects were checked before)."""
    before = {json.dumps(o, sort_keys=True) for objects in base.objects.values() for o in objects}
    fresh = [(overlay, o) for overlay, objects in head.objects.items() for o in objects
             if json.dumps(o, sort_keys=True) not in before]
    if not fresh:
        return []
    try:
        from . import crds

        found = crds.validate([o for _, o in fresh], schemas)
    except ImportError as err:
        return [Problem(f"rendered objects were not validated: {err.name} is not installed "
                        "(pip install kubernetes-validate)", severity=WARNING)]
    where = {id(o): overlay for overlay, o in fresh}
    return [Problem(f"{object_meta.describe_object(obj)}: {message}", severity=severity,
                    file=f"{tree.OVERLAYS}/{where.get(id(obj), '?')}") for obj, severity, message in found]


def _head_label(root: Path) -> str:
    try:
        proc = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=8", "HEAD"], capture_output=True,
                              text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "working tree"
    return f"working tree ({proc.stdout.strip()})" if proc.returncode == 0 else "working tree"


def run(root: Path, base_ref: str, output: str | None = None, crd_dir: str | None = None,
        out=None, err=None, place: bool = True) -> int:
    """The command: write the report; 0 without errors, 1 with errors, 2 when it cannot run."""
    out, err = out or sys.stdout, err or sys.stderr  # looked up at each call: a caller may have redirected them
    if not tree.is_tree(root):
        print(f"tfjobgen diff: run it from the repository root (the folder with {tree.OVERLAYS}/); {root} has none",
              file=err)
        return 2
    try:  # before any git or build work: a wrong --crds is said at once
        from . import crds

        schemas = crds.load(Path(crd_dir)) if crd_dir is not None else {}
    except InvalidInput as refused:
        for problem in refused.problems:
            print(problem.format(), file=err)
        return 2
    report = make_report(root, base_ref, schemas, place)
    text = markdown.to_markdown(report)
    if output:
        from ..kit import files

        try:
            files.write_file(output, text)
        except files.WriteFailed as failed:
            print(f"tfjobgen diff: {failed}", file=err)
            return 2
    else:
        out.write(text)
    for problem in report.problems:
        print(problem.format(), file=err)
    if report.errors:
        print(f"tfjobgen diff: {report.errors} error(s)", file=err)
        return 1
    return 0
