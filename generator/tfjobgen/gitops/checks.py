"""Fail-loud checks on a build before Argo CD gets it, and on the overlay's patches (see deliver.py)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from ..inputs import intents, source, trainingjob
from ..inputs.problems import WARNING, InvalidInput, Problem
from ..shared import contract
from . import tree
from .object_meta import describe_object, group_kind, is_dashboard, job_of, metadata_of


def check(objects: list[dict], jobs: list[tree.JobFile], overlay: str) -> list[Problem]:
    """Everything that makes a build unsafe to hand to Argo CD (`overlay` names it in messages; `jobs`: the
    jobs of jobs/ that run on its cluster, gitops/clusters.py)."""
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
        if job_of(obj) and not is_dashboard(obj):  # a dashboard goes where the profile says Grafana reads it
            namespaces[job_of(obj)].add(str(metadata_of(obj).get("namespace", "")))
    if not namespaces:
        if jobs:
            problems.append(Problem(
                f"the build has no training job objects although {len(jobs)} job(s) of jobs/ run on this cluster: "
                "refusing an empty set (Argo CD would prune every running job)", file=overlay))
        else:
            problems.append(Problem(
                "no job of jobs/ runs on this cluster, so it gets nothing; Argo CD's allowEmpty: false keeps the "
                "last objects until someone syncs with prune by hand", severity=WARNING, file=overlay))
        return problems
    missing = [job for job in jobs if job.name not in namespaces]
    if missing:
        shown = "; ".join(f"{job.key} ({job.where})" for job in missing)
        problems.append(Problem(
            f"{len(missing)} of the {len(jobs)} job(s) in jobs/ are missing from the build (counting the jobs that "
            f"run on this cluster): {shown}. A job leaves a cluster only when its file is deleted or its "
            "spec.clusters no longer names it: check that jobs/kustomization.yaml lists it and that no patch of "
            "this overlay deletes it",
            file=overlay))
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
        name, namespace = job_of(obj), str(metadata_of(obj).get("namespace", ""))
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
        if not isinstance(target, dict) or target.get("kind") != trainingjob.KIND or not target.get("name"):
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
