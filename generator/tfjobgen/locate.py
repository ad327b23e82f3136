"""Find where an intent was written, for error messages from inside `kustomize build`.

kustomize hands a transformer the objects, not their files. When (and only
when) an intent has errors, we walk the kustomization that ran us, following
its local `resources:`, to find the file and line the user should edit.
"""

from __future__ import annotations

import os

from . import intents, source
from .problems import InvalidInput


def display_path(path: str) -> str:
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


def find_intents(root: str, limit: int = 20000) -> dict[tuple[str, str], tuple[str, source.Document]]:
    """(namespace, name) -> (file as the user knows it, document) for every TrainingJob under root."""
    found: dict[tuple[str, str], tuple[str, source.Document]] = {}
    pending, seen = [os.path.abspath(root)], set()
    while pending and len(seen) < limit:
        path = pending.pop()
        if path in seen:
            continue
        seen.add(path)
        if os.path.isdir(path):
            data = intents.read_kustomization(path)
            pending.extend(reversed(intents.local_resources(path, data) if data else []))
            continue
        for document in _documents(path):
            if intents.is_intent(document.data):
                ref = intents.ref_of(document.data)
                found.setdefault((ref.namespace, ref.name), (display_path(path), document))
    return found


def find_annotated(root: str, path: str, index: int | None, ref, limit: int = 2000) -> tuple[str, source.Document] | None:
    """The document of `ref` in the file an orchestrator's path annotation names. kpt names files relative to
    the package it runs on and runs the function in its own working folder (root): the package is root or a
    folder under it, so `path` is looked for under each folder (hidden ones skipped), nearest first."""
    folders, seen = [os.path.abspath(root)], 0
    while folders and seen < limit:
        folder = folders.pop(0)
        seen += 1
        candidate = os.path.join(folder, path)
        if os.path.isfile(candidate):
            documents = _documents(candidate)
            chosen = [documents[index]] if index is not None and index < len(documents) else documents
            for document in chosen:
                found = intents.ref_of(document.data)
                if (found.kind, found.name) == (ref.kind, ref.name):  # a function before may set the namespace
                    return path, document
        try:
            folders += sorted(entry.path for entry in os.scandir(folder)
                              if entry.is_dir(follow_symlinks=False) and not entry.name.startswith("."))
        except OSError:
            continue
    return None


def find_profile(root: str, name: str) -> tuple[str, source.Document] | None:
    """The file (as the user knows it) and document of ClusterProfile `name` among the local
    `transformers:` of the kustomization in root: kustomize hands a legacy plugin a temporary
    copy of it, whose lines are not the user's."""
    data = intents.read_kustomization(root)
    entries = data.get("transformers") if isinstance(data, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        candidate = os.path.normpath(os.path.join(root, entry)) if isinstance(entry, str) else ""
        if not os.path.isfile(candidate):
            continue
        for document in _documents(candidate):
            if intents.kind_of(document.data) == "profile" and intents.ref_of(document.data).name == name:
                return display_path(candidate), document
    return None


def _documents(path: str) -> list[source.Document]:
    """The documents of a file, none when it cannot be read or parsed (its own build reports that)."""
    try:
        return source.parse_documents(source.read_text(path), path)
    except InvalidInput:
        return []
