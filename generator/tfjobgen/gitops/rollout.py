"""How Argo CD rolls out a changed job: annotations on the objects that run its pods (see deliver.py),
replace rather than patch, and the job's revision, so that a change to any part restarts all of it together."""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict

from .object_meta import RUN_KINDS, group_kind, job_of, metadata_of

SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
REVISION = "tfjobgen.dev/revision"
REPLACE_OPTIONS = ("Force=true", "Replace=true")
# Kinds a job's pods read when they start: a change to any of them must restart the job.
POD_INPUT_KINDS = RUN_KINDS | {("", "ConfigMap")}


def revision(job_objects: list[dict]) -> str:
    """A short hash of what a job's pods read when they start."""
    inputs = []
    for obj in job_objects:
        if group_kind(obj) not in POD_INPUT_KINDS:
            continue
        copy = json.loads(json.dumps(obj))
        annotations = metadata_of(copy).get("annotations")
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
            by_job[(str(metadata_of(obj).get("namespace", "")), job_of(obj))].append(obj)
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
