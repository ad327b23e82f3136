"""What Argo CD itself would refuse, found before the merge: the AppProject's limits.

The AppProject in argocd/ lists, per cluster, the namespaces a training
Application may sync to and the kinds it may create. A job in a namespace the
project does not permit would fail to sync after the merge; the PR diff says so
before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from ..inputs import source
from ..inputs.problems import InvalidInput, Problem
from .object_meta import group_kind

ARGOCD = "argocd"
# The AppProject's annotation naming the destination namespace that is not a team's: where the profiles put
# the jobs' Grafana dashboards (spec.monitoring.dashboards.namespace). The ApplicationSets' list generator
# leaves it out (its selector gets this value from kustomize), so it is permitted but gets no Application.
DASHBOARDS_ANNOTATION = "tfjobgen.dev/dashboards-namespace"


@dataclass(frozen=True)
class Project:
    name: str
    file: str
    spec: dict
    lines: dict = field(default_factory=dict, compare=False, repr=False)  # spec field path -> line in file
    dashboards_namespace: str = ""  # DASHBOARDS_ANNOTATION's value ("": none)

    def line_of(self, path: str) -> int:
        return self.lines.get(path, 0)

    def destination_pairs(self) -> list[tuple[str, str]]:
        """(cluster, namespace) of each destination, in order, as written (patterns included)."""
        return [(str(d.get("name", "")), str(d.get("namespace", "")))
                for d in self.spec.get("destinations") or [] if isinstance(d, dict)]

    def destinations(self, cluster: str) -> list[str]:
        """Namespace patterns the project permits on `cluster` (a cluster is named as in Argo CD)."""
        found = []
        for destination in self.spec.get("destinations") or []:
            if isinstance(destination, dict) and fnmatchcase(cluster, str(destination.get("name", ""))):
                found.append(str(destination.get("namespace", "")))
        return found

    def permits_kind(self, group: str, kind: str, namespaced: bool) -> bool:
        key = "namespaceResourceWhitelist" if namespaced else "clusterResourceWhitelist"
        allowed = self.spec.get(key)
        if allowed is None and namespaced:
            return True  # Argo CD: no namespaced whitelist means every namespaced kind
        return any(isinstance(entry, dict) and fnmatchcase(group, str(entry.get("group", "")))
                   and fnmatchcase(kind, str(entry.get("kind", ""))) for entry in allowed or [])


def projects(root: Path) -> list[Project]:
    """The AppProjects under argocd/ that training Applications belong to: those the ApplicationSets'
    templates name (argocd/bootstrap's project, which only keeps argocd/ synced, is not one), or every
    AppProject when no ApplicationSet names one. None when the folder is absent."""
    found, named = [], set()
    folder = root / ARGOCD
    if not folder.is_dir():
        return found
    for path in sorted(folder.rglob("*.yaml")):
        try:
            documents = source.parse_documents(source.read_text(str(path)), str(path))
        except InvalidInput:
            continue
        for document in documents:
            data = document.data
            if isinstance(data, dict) and data.get("kind") == "ApplicationSet":
                template = ((data.get("spec") or {}).get("template") or {}).get("spec") or {}
                if isinstance(template, dict) and isinstance(template.get("project"), str):
                    named.add(template["project"])
            if isinstance(data, dict) and data.get("kind") == "AppProject" and isinstance(data.get("spec"), dict):
                lines = {key.removeprefix("spec."): line for key, line in document.lines.items()
                         if key.startswith("spec.")}
                meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
                notes = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
                found.append(Project(str(meta.get("name", "")), path.relative_to(root).as_posix(), data["spec"],
                                     lines, str(notes.get(DASHBOARDS_ANNOTATION) or "")))
    return [project for project in found if not named or project.name in named]


def refuses(project: Project, obj: dict) -> str:
    """The whitelist of the project that leaves out `obj`'s kind, "" when Argo CD may sync it."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    namespaced = bool(meta.get("namespace"))
    if project.permits_kind(*group_kind(obj), namespaced):
        return ""
    return "namespaceResourceWhitelist" if namespaced else "clusterResourceWhitelist"


def check(project: Project, cluster: str, objects: list[dict]) -> list[Problem]:
    """Objects of one cluster's build that the project would refuse to sync."""
    patterns = project.destinations(cluster)
    if not patterns:
        return [Problem(f"AppProject {project.name} has no destination for cluster '{cluster}', so Argo CD would "
                        f"refuse its Application: add destinations with name: {cluster}", file=project.file)]
    problems, reported = [], set()
    for obj in objects:
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        namespace = str(meta.get("namespace") or "")
        group, kind = group_kind(obj)
        if namespace and not any(fnmatchcase(namespace, p) for p in patterns) and namespace not in reported:
            reported.add(namespace)
            problems.append(Problem(
                f"namespace {namespace} is not a destination of AppProject {project.name} on cluster '{cluster}' "
                f"(it permits {', '.join(sorted(patterns))}), so Argo CD would refuse to sync it: add "
                f"{{name: {cluster}, namespace: {namespace}}} to its destinations", file=project.file))
        scope = refuses(project, obj)
        if scope and (group, kind) not in reported:
            reported.add((group, kind))
            problems.append(Problem(
                f"AppProject {project.name} does not permit kind {kind} (group '{group}') in its {scope}, so Argo "
                f"CD would refuse to sync {cluster}", file=project.file))
    return problems
