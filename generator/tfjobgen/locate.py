"""Find where an intent was written, for error messages from inside `kustomize build`.

kustomize hands a transformer the objects, not their files. When (and only
when) an intent has errors, we walk the kustomization that ran us, following
its local `resources:`, to find the file and line the user should edit.
"""

from __future__ import annotations

import os

from . import source
from .problems import InvalidInput

_KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


def _resources(directory: str) -> list[str]:
    for name in _KUSTOMIZATION_FILES:
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            try:
                documents = source.parse_documents(source.read_text(path), path)
            except InvalidInput:
                return []
            data = documents[0].data if documents and isinstance(documents[0].data, dict) else {}
            entries = [e for key in ("resources", "components") for e in (data.get(key) or [])]
            return [os.path.normpath(os.path.join(directory, e)) for e in entries
                    if isinstance(e, str) and "://" not in e and not e.startswith("github.com/")]
    return []


def _display_path(path: str) -> str:
    """A path as the user knows it: relative to the repository root when inside one (kustomize changed our cwd).

    The root is the nearest folder with .git, or with both jobs/ and overlays/ (an Argo CD checkout has no .git).
    """
    folder = os.path.dirname(path)
    while folder != os.path.dirname(folder):
        if os.path.exists(os.path.join(folder, ".git")) or all(
                os.path.isdir(os.path.join(folder, part)) for part in ("jobs", "overlays")):
            return os.path.relpath(path, folder)
        folder = os.path.dirname(folder)
    return os.path.relpath(path)


def find_intents(root: str, limit: int = 2000) -> dict[tuple[str, str], tuple[str, source.Document]]:
    """(namespace, name) -> (file as the user knows it, document) for every TrainingJob under root."""
    found: dict[tuple[str, str], tuple[str, source.Document]] = {}
    pending, seen = [os.path.abspath(root)], set()
    while pending and len(seen) < limit:
        path = pending.pop()
        if path in seen:
            continue
        seen.add(path)
        if os.path.isdir(path):
            pending.extend(reversed(_resources(path)))
            continue
        try:
            documents = source.parse_documents(source.read_text(path), path)
        except InvalidInput:
            continue
        for document in documents:
            data = document.data if isinstance(document.data, dict) else {}
            meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
            if data.get("kind") == "TrainingJob":
                key = (str(meta.get("namespace", "")), str(meta.get("name", "")))
                found.setdefault(key, (_display_path(path), document))
    return found


def find_profile(root: str, name: str) -> tuple[str, source.Document] | None:
    """The file (as the user knows it) and document of ClusterProfile `name` among the local
    `transformers:` of the kustomization in root: kustomize hands a legacy plugin a temporary
    copy of it, whose lines are not the user's."""
    for kustomization in _KUSTOMIZATION_FILES:
        path = os.path.join(root, kustomization)
        if not os.path.isfile(path):
            continue
        try:
            data = source.parse_documents(source.read_text(path), path)[0].data
        except (InvalidInput, IndexError):
            return None
        entries = data.get("transformers") if isinstance(data, dict) else None
        for entry in entries if isinstance(entries, list) else []:
            candidate = os.path.normpath(os.path.join(root, entry)) if isinstance(entry, str) else ""
            if not os.path.isfile(candidate):
                continue
            try:
                documents = source.parse_documents(source.read_text(candidate), candidate)
            except InvalidInput:
                continue
            for document in documents:
                found = document.data if isinstance(document.data, dict) else {}
                meta = found.get("metadata") if isinstance(found.get("metadata"), dict) else {}
                if found.get("kind") == "ClusterProfile" and meta.get("name") == name:
                    return _display_path(candidate), document
        return None
    return None
