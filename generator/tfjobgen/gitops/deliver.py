"""The last step before Argo CD: refuse a build that would prune running training, then annotate it.

Both delivery modes end here: `tfjobgen build` (what the CMP plugin runs) and
`tfjobgen hydrate` call deliver() on the same build (hydrate.delivered), so Argo CD
gets the same objects either way.

Checks (each an error, so Argo CD gets nothing rather than a set it would prune against):

- the tfjobgen function ran: no TrainingJob came out of kustomize unexpanded;
- the build is not empty while jobs/ defines jobs;
- no job of jobs/ is missing from the build (a job leaves a cluster when its file is deleted);
- a job stays in the namespace its file names, all its objects agree on it, and the
  fully qualified names in its ConfigMap (StarServer's seastar addresses) name it.

Checks of the sources, run before the build's own (a failed build still gets them):

- job names are unique in jobs/, across namespaces too (intents.duplicate_names);
- a patch of the overlay that targets a job by name finds it (patch_problems).

Annotations, on the objects that run pods (batch Jobs; TFJobs and JobSets later):

- `argocd.argoproj.io/sync-options: Force=true,Replace=true`: a Job's pod template is
  immutable, so Argo CD deletes and recreates a changed Job instead of failing to patch it;
- `tfjobgen.dev/revision`: a hash of everything the job's pods read at start (its Jobs and
  its cluster ConfigMap), so a change to any part of a job changes every one of its Jobs, and
  the whole job restarts together instead of old PS meeting new workers.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from pathlib import Path

from .. import contract, intents, labels, model, source
from ..problems import WARNING, InvalidInput, Problem
from . import tree

SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
REVISION = "tfjobgen.dev/revision"
REPLACE_OPTIONS = ("Force=true", "Replace=true")
# Kinds whose objects run a job's pods; their pod templates are immutable once created.
RUN_KINDS = {("batch", "Job"), ("kubeflow.org", "TFJob"), ("jobset.x-k8s.io", "JobSet")}
# Kinds a job's pods read when they start: a change to any of them must restart the job.
POD_INPUT_KINDS = RUN_KINDS | {("", "ConfigMap")}


def group_kind(obj: dict) -> tuple[str, str]:
    api_version = str(obj.get("apiVersion", ""))
    return (api_version.split("/")[0] if "/" in api_version else "", str(obj.get("kind", "")))


def _meta(obj: dict) -> dict:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def job_of(obj: dict) -> str:
    """The tfjobgen job an object belongs to ('' for objects tfjobgen did not generate)."""
    found = _meta(obj).get("labels")
    return str(found.get(labels.JOB, "")) if isinstance(found, dict) else ""


def describe_object(obj: dict) -> str:
    meta = _meta(obj)
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj.get('kind', '?')} {where}{meta.get('name', '?')}"


# ---- checks ---------------------------------------------------------------------------

def check(objects: list[dict], jobs: list[tree.JobFile], overlay: str) -> list[Problem]:
    """Everything that makes a build unsafe to hand to Argo CD (`overlay` names it in messages)."""
    leftover = [o for o in objects if intents.kind_of(o) != "other"]
    if leftover:
        shown = ", ".join(describe_object(o) for o in leftover[:3]) + (", ..." if len(leftover) > 3 else "")
        return [Problem(
            f"the tfjobgen function did not run: {len(leftover)} object(s) came out of kustomize unexpanded "
            f"({shown}). Build with --enable-alpha-plugins and KUSTOMIZE_PLUGIN_HOME set to the repository's "
            "plugins/ folder, and keep cluster-profile.yaml under transformers:", file=overlay)]
    problems: list[Problem] = []
    namespaces: dict[str, set[str]] = defaultdict(set)
    for obj in objects:
        if job_of(obj):
            namespaces[job_of(obj)].add(str(_meta(obj).get("namespace", "")))
    if not namespaces:
        if jobs:
            problems.append(Problem(
                f"the build has no training job objects although jobs/ defines {len(jobs)}: refusing an empty "
                "set (Argo CD would prune every running job)", file=overlay))
        else:
            problems.append(Problem(
                "jobs/ defines no job, so this cluster gets nothing; Argo CD's allowEmpty: false keeps the "
                "last objects until someone syncs with prune by hand", severity=WARNING, file=overlay))
        return problems
    missing = [job for job in jobs if job.name not in namespaces]
    if missing:
        shown = "; ".join(f"{job.key} ({job.where})" for job in missing)
        problems.append(Problem(
            f"{len(missing)} of the {len(jobs)} job(s) in jobs/ are missing from the build: {shown}. A job "
            "leaves a cluster only when its file is deleted: check that jobs/kustomization.yaml lists it and "
            "that no patch of this overlay deletes it", file=overlay))
    problems += _namespace_problems(objects, jobs, namespaces, overlay)
    return problems


def _namespace_problems(objects, jobs, namespaces, overlay) -> list[Problem]:
    problems = []
    written = {job.name: job for job in jobs}
    duplicated = {job.name for job in jobs if sum(other.name == job.name for other in jobs) > 1}
    for name, found in sorted(namespaces.items()):
        if name in duplicated:
            continue  # two jobs of one name: intents.duplicate_names reports it
        if len(found) > 1:
            problems.append(Problem(
                f"the objects of job '{name}' are split across namespaces {', '.join(sorted(found))}: a "
                "kustomization applied after tfjobgen moved some of them", file=overlay))
            continue
        namespace = next(iter(found))
        job = written.get(name)
        if job and job.namespace != namespace:
            problems.append(Problem(
                f"job '{name}' is written for namespace {job.namespace}, but {overlay} puts it in {namespace}: a "
                "job must not move namespace (Argo CD would delete the running job and start a new one); "
                "change metadata.namespace in the job file if that is what you mean",
                "metadata.namespace", file=job.file, line=job.line))
    # TF_CONFIG's addresses are relative to the namespace (`<pod>.<service>:<port>`) and resolve
    # wherever the job runs, so objects moved after expansion keep working there; only fully
    # qualified names (`...<service>.<namespace>.svc...`, the seastar side of StarServer's
    # endpoint map) would point back at the namespace the job was expanded for.
    for obj in objects:
        name, namespace = job_of(obj), str(_meta(obj).get("namespace", ""))
        data = obj.get("data") if group_kind(obj) == ("", "ConfigMap") else None
        if not name or not isinstance(data, dict) or contract.CLUSTER_KEY not in data:
            continue
        strays = [host for host in _qualified_hosts(data) if f".{name}.{namespace}.svc" not in host]
        if strays:
            problems.append(Problem(
                f"{describe_object(obj)}: the fully qualified addresses of job '{name}' name another namespace "
                f"({strays[0]}): its objects were moved after tfjobgen expanded it; set the namespace in the "
                "job file, not in a kustomization above the ClusterProfile", file=overlay))
    return problems


def _qualified_hosts(data: dict) -> list[str]:
    """Every fully qualified host (one with `.svc`) among the addresses of a job's ConfigMap."""
    addresses = []
    try:
        addresses += [a for tasks in json.loads(data[contract.CLUSTER_KEY]).values() for a in tasks]
    except (ValueError, AttributeError, TypeError):
        pass
    for line in str(data.get(contract.ENDPOINT_MAP_KEY, "")).splitlines():
        addresses += line.split("=")
    return [str(a).rsplit(":", 1)[0] for a in addresses if ".svc" in str(a)]


def patch_problems(root: Path, overlay: str, jobs: list[tree.JobFile]) -> list[Problem]:
    """Patches of an overlay whose target names a TrainingJob that jobs/ does not have.

    kustomize applies a patch with a `target:` selector to whatever matches,
    which may be nothing: a misspelt job name would silently leave production
    with the base's sizes. Call it only when every job file could be read.
    """
    import re

    folder = root / overlay
    path = intents.kustomization_file(str(folder))
    path = Path(path) if path else None
    if path is None or not jobs:
        return []
    relative = path.relative_to(root).as_posix()
    try:
        document = source.parse_documents(source.read_text(str(path)), relative)[0]
    except (InvalidInput, IndexError):
        return []  # kustomize reports an unreadable kustomization itself
    patches = document.data.get("patches") if isinstance(document.data, dict) else None
    problems = []
    for index, patch in enumerate(patches if isinstance(patches, list) else []):
        target = patch.get("target") if isinstance(patch, dict) else None
        if not isinstance(target, dict) or target.get("kind") != model.KIND or not target.get("name"):
            continue
        if target.get("labelSelector") or target.get("annotationSelector"):
            continue
        try:
            pattern = re.compile(f"^(?:{target['name']})$")
        except re.error:
            continue  # kustomize reports a bad pattern itself
        if not any(pattern.match(job.name) for job in jobs):
            names = ", ".join(sorted(job.name for job in jobs))
            problems.append(Problem(
                f"this patch targets TrainingJob '{target['name']}', which no file in jobs/ defines, so it changes "
                f"nothing (jobs: {names})", f"patches[{index}].target.name", file=relative,
                line=document.line_of(f"patches[{index}].target.name")))
    return problems


# ---- annotations ----------------------------------------------------------------------

def revision(job_objects: list[dict]) -> str:
    """A short hash of what a job's pods read when they start."""
    inputs = []
    for obj in job_objects:
        if group_kind(obj) not in POD_INPUT_KINDS:
            continue
        copy = json.loads(json.dumps(obj))
        annotations = _meta(copy).get("annotations")
        if isinstance(annotations, dict):
            annotations.pop(REVISION, None)
            annotations.pop(SYNC_OPTIONS, None)
        inputs.append(json.dumps(copy, sort_keys=True, separators=(",", ":")))
    return hashlib.sha256("\n".join(sorted(inputs)).encode()).hexdigest()[:12]


def merge_sync_options(current: str, wanted: tuple[str, ...]) -> str:
    """`current` plus each wanted `Key=value` whose key it does not set already (its own choice wins)."""
    options = [o.strip() for o in current.split(",") if o.strip()]
    keys = {o.split("=", 1)[0] for o in options}
    return ",".join(options + [o for o in wanted if o.split("=", 1)[0] not in keys])


def annotate(objects: list[dict]) -> list[dict]:
    """Add the Argo CD sync options and the job revision to every object that runs pods (in place)."""
    by_job: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for obj in objects:
        if job_of(obj):
            by_job[(str(_meta(obj).get("namespace", "")), job_of(obj))].append(obj)
    for members in by_job.values():
        stamp = revision(members)
        for obj in members:
            if group_kind(obj) not in RUN_KINDS:
                continue
            meta = obj.setdefault("metadata", {})
            annotations = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
            annotations.setdefault(REVISION, stamp)
            annotations[SYNC_OPTIONS] = merge_sync_options(annotations.get(SYNC_OPTIONS, ""), REPLACE_OPTIONS)
            meta["annotations"] = dict(sorted(annotations.items()))
    return objects


def deliver(objects: list[dict], jobs: list[tree.JobFile], overlay: str) -> tuple[list[dict], list[Problem]]:
    """The objects Argo CD should get (none when any check fails) and every problem found."""
    problems = check(objects, jobs, overlay)
    if any(p.is_error for p in problems):
        return [], problems
    return annotate(objects), problems


# ---- finding the repository -------------------------------------------------------------

def find_root(start: Path) -> Path | None:
    """The nearest folder at or above `start` laid out like this repository."""
    for folder in (start, *start.parents):
        if tree.is_tree(folder) and (folder / tree.JOBS).is_dir():
            return folder
    return None
