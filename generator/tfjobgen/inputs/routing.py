"""Which clusters a job runs on: the one rule, read by a cluster's build and by the repository's checks.

A job runs on a cluster when both agree:

- the cluster's ClusterProfile runs the job's namespace (`spec.namespaces`; left out: every namespace);
- the job names the cluster (`spec.clusters`; left out: every cluster that runs its namespace).

A cluster is named by its ClusterProfile's metadata.name, which is also its overlay folder's name and
its name in Argo CD. A job that names a cluster whose profile does not run its namespace is an error
on that cluster (`conflict`), never silently dropped: the two files disagree about where it runs.

The rule reads the intent as written, before the schema: a cluster must neither check nor refuse a
job that is not for it. A `spec.clusters` that is not a list of names counts as naming no cluster, so
the job stays on every cluster and each one's schema check says what is wrong with it.
"""

from __future__ import annotations

from typing import Any

from .problems import Problem


def named_clusters(data: Any) -> tuple[str, ...] | None:
    """spec.clusters as written, or None when it is left out or is not a list of names."""
    spec = data.get("spec") if isinstance(data, dict) else None
    named = spec.get("clusters") if isinstance(spec, dict) else None
    if not isinstance(named, list) or not named or not all(isinstance(n, str) for n in named):
        return None
    return tuple(named)


def _namespace(data: Any) -> str:
    meta = data.get("metadata") if isinstance(data, dict) else None
    return str(meta.get("namespace", "")) if isinstance(meta, dict) else ""


def goes_to(namespace: str, named: tuple[str, ...] | None, cluster: str, namespaces: tuple[str, ...] | None) -> bool:
    """Whether a job of `namespace` that names `named` clusters (None: none) runs on `cluster`, whose profile
    runs `namespaces` (None: every one). A job that names the cluster runs on it even when the namespaces
    disagree: `conflict` then says so."""
    if named is not None:
        return cluster in named
    return namespaces is None or namespace in namespaces


def runs_on(data: Any, cluster: str, namespaces: tuple[str, ...] | None) -> bool:
    """goes_to, for an intent as written."""
    return goes_to(_namespace(data), named_clusters(data), cluster, namespaces)


def conflict(data: Any, cluster: str, namespaces: tuple[str, ...] | None) -> Problem | None:
    """The job names `cluster`, but that cluster's profile does not run the job's namespace."""
    named = named_clusters(data)
    if named is None or cluster not in named or namespaces is None or _namespace(data) in namespaces:
        return None
    namespace = _namespace(data)
    return Problem(f"this job names cluster {cluster}, but {cluster}'s ClusterProfile runs only namespaces "
                   f"{', '.join(namespaces)} (spec.namespaces), not {namespace}: add {namespace} to that profile's "
                   f"spec.namespaces (and {{name: {cluster}, namespace: {namespace}}} to the AppProject's "
                   "destinations), or name another cluster", f"spec.clusters[{named.index(cluster)}]")
