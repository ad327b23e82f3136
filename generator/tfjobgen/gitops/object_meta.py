"""The generated objects as gitops reads them: their kind, their job, a name for messages."""

from __future__ import annotations

from ..concerns import labels

# Kinds whose objects run a job's pods; their pod templates are immutable once created.
RUN_KINDS = {("batch", "Job"), ("kubeflow.org", "TFJob"), ("jobset.x-k8s.io", "JobSet")}


def group_kind(obj: dict) -> tuple[str, str]:
    api_version = str(obj.get("apiVersion", ""))
    return (api_version.split("/")[0] if "/" in api_version else "", str(obj.get("kind", "")))


def metadata_of(obj: dict) -> dict:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def job_of(obj: dict) -> str:
    """The tfjobgen job an object belongs to ('' for objects tfjobgen did not generate)."""
    found = metadata_of(obj).get("labels")
    return str(found.get(labels.JOB, "")) if isinstance(found, dict) else ""


def is_dashboard(obj: dict) -> bool:
    """A job's Grafana dashboard ConfigMap (addons/monitoring.py): the one object of a job that may live in
    another namespace than the job (the profile's spec.monitoring.dashboards.namespace). It still belongs to
    its job's team: it is delivered with the job's other objects, in the team's Application."""
    job = job_of(obj)
    return bool(job) and group_kind(obj) == ("", "ConfigMap") and metadata_of(obj).get("name") == f"{job}-dashboard"


def describe_object(obj: dict) -> str:
    meta = metadata_of(obj)
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj.get('kind', '?')} {where}{meta.get('name', '?')}"
