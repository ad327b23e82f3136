"""Find where an intent was written, for error messages from inside `kustomize build`.

kustomize hands a transformer the objects, not their files. When (and only
when) an intent has errors, we walk the kustomization that ran us, following
its local `resources:`, to find the file and line the user should edit; and
when the value at fault was written by one of its patches rather than by the
job file, the patch's file and line (`from_patches`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from typing import Any, Iterator

from ..inputs import intents, source
from ..inputs.problems import InvalidInput, Problem


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


def _kustomizations(root: str) -> Iterator[tuple[str, dict, str]]:
    """(folder, kustomization, the folder that listed it: "" for root) for every kustomization reached from root
    through local resources, an overlay before its bases, each once."""
    pending, seen = [(os.path.abspath(root), "")], set()
    while pending:
        folder, parent = pending.pop()
        if folder in seen or not os.path.isdir(folder):
            continue
        seen.add(folder)
        data = intents.read_kustomization(folder)
        if data is None:
            continue
        yield folder, data, parent
        pending.extend((path, folder) for path in reversed(intents.local_resources(folder, data)))


def name_affixes(root: str) -> list[tuple[str, str]]:
    """Every (prefix, suffix) the kustomizations reached from root may have added to a name, longest first:
    kustomize adds a base's namePrefix and nameSuffix, then its overlay's around them."""
    chains = {"": ("", "")}
    for folder, data, parent in _kustomizations(root):
        above_prefix, above_suffix = chains[parent]
        own_prefix, own_suffix = (data.get(key) if isinstance(data.get(key), str) else "" for key in NAME_CHANGES)
        chains[folder] = (above_prefix + own_prefix, own_suffix + above_suffix)
    return sorted(set(chains.values()), key=lambda chain: -len(chain[0] + chain[1]))


def find_annotated(root: str, path: str, index: int | None, ref,
                   limit: int = 2000) -> tuple[str, source.Document] | None:
    """The document of `ref` in the file an orchestrator's path annotation names. kpt names files relative to
    the package it runs on and runs the function in its own working folder (root): the package is root or a
    folder under it, so `path` is looked for under each folder (hidden ones skipped), nearest first. `path` is
    relative and inside root (krm.inside); a file it reaches through a link out of root is not read."""
    top = os.path.realpath(root)
    folders, seen = [os.path.abspath(root)], 0
    while folders and seen < limit:
        folder = folders.pop(0)
        seen += 1
        candidate = os.path.join(folder, path)
        # `path` comes from the input: read it only where it really is inside root, a link followed included.
        if os.path.isfile(candidate) and os.path.commonpath([top, os.path.realpath(candidate)]) == top:
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


def profile_listings(root: str, name: str) -> dict[str, tuple[str, int]]:
    """Where the kustomization in root lists ClusterProfile `name`: {"transformers" or "generators": (its file as
    the user knows it, the line of the entry)}."""
    data = intents.read_kustomization(root)
    kustomization = intents.kustomization_file(root)
    parsed = _documents(kustomization) if kustomization else []
    found = {}
    for key in ("transformers", "generators"):
        entries = data.get(key) if isinstance(data, dict) else None
        for i, entry in enumerate(entries if isinstance(entries, list) else []):
            candidate = os.path.normpath(os.path.join(root, entry)) if isinstance(entry, str) else ""
            if os.path.isfile(candidate) and any(intents.kind_of(d.data) == "profile" and
                                                 intents.ref_of(d.data).name == name for d in _documents(candidate)):
                found[key] = (display_path(kustomization), parsed[0].line_of(f"{key}[{i}]") if parsed else 0)
    return found


def _documents(path: str) -> list[source.Document]:
    """The documents of a file, none when it cannot be read or parsed (its own build reports that)."""
    try:
        return source.parse_documents(source.read_text(path), path)
    except InvalidInput:
        return []


# ---- values an overlay's patch wrote ---------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class _Patched:
    field: str  # the dotted field the patch writes (and everything under it)
    file: str  # where, as the user knows the path
    line: int
    kind: str  # the target's kind and name ("" or a regular expression for the name: any)
    name: str
    by: str = "patch"  # what in the kustomization writes it: a patch, or its namePrefix or nameSuffix


NAME_CHANGES = ("namePrefix", "nameSuffix")
_IDENTITY = ("apiVersion", "kind", "metadata.name", "metadata.namespace")  # what a strategic merge patch targets
_BLOCK = re.compile(r":\s*[|>][-+0-9]*\s*(#.*)?$")  # a key whose value is a block scalar: text from the next line


def from_patches(problems: list[Problem], sources: dict, root: str) -> list[Problem]:
    """Problems whose field an overlay's patch wrote, moved to the patch's line and saying what the job file
    has. `sources`: (kind, name) of each intent -> (its document in the job file, the intent as built)."""
    patched: list[_Patched] | None = None
    moved = []
    for problem in problems:
        document, built = sources.get((problem.ref.kind, problem.ref.name), (None, None)) if problem.ref and \
            problem.field else (None, None)
        if document is not None:
            patched = _patches(root) if patched is None else patched  # read once, when there is something to move
            found = [p for p in patched if _targets(p, problem.ref) and _within(problem.field, p.field)]
            written = _value_at(document.data, problem.field)
            here = problem.file
            has = (f"{here}:{document.line_of(problem.field)} has {_shown(written)}" if written is not _ABSENT
                   else f"{here} has no such field")
            if found:
                patch = found[-1]  # kustomize applies patches in order: the last one wins
                problem = dataclasses.replace(problem, file=patch.file, line=patch.line,
                                              message=f"{problem.message} (set by this overlay's {patch.by}; {has})")
            elif _value_at(built, problem.field) != written and not isinstance(written, (dict, list)):
                # Another transformer of the overlay (replicas:, a plugin) wrote it: say so where the line is.
                now = _shown(_value_at(built, problem.field))
                problem = dataclasses.replace(
                    problem, message=f"{problem.message} (the build has {now}: the overlay changed it; {has})")
        moved.append(problem)
    return moved


def _patches(root: str) -> list[_Patched]:
    """What every patch of the kustomizations reached from root writes, in the order kustomize applies them:
    a kustomization's resources (its bases) are built, patches and all, before its own patches run."""
    by_folder: list[list[_Patched]] = []  # in the order folders are reached: an overlay before its bases
    for folder, data, _ in _kustomizations(root):
        kustomization = intents.kustomization_file(folder)
        parsed = _documents(kustomization)
        if not parsed:
            continue
        own: list[_Patched] = []
        for key in NAME_CHANGES:  # kustomize writes these into every name, the intent's included
            if isinstance(data.get(key), str) and data[key]:
                own.append(_Patched("metadata.name", display_path(kustomization), parsed[0].line_of(key), "", "", key))
        for key in intents.PATCH_FIELDS:
            entries = data.get(key)
            for i, entry in enumerate(entries if isinstance(entries, list) else []):
                own += _written_by(key, entry, f"{key}[{i}]", folder, kustomization, parsed[0])
        by_folder.append(own)
    return [patch for own in reversed(by_folder) for patch in own]


def _written_by(key: str, entry: Any, at: str, folder: str, kustomization: str,
                document: source.Document) -> list[_Patched]:
    """The fields one patch entry writes, each with the file and line that writes it."""
    target = entry.get("target") if isinstance(entry, dict) and isinstance(entry.get("target"), dict) else {}
    path, text = intents.patch_source(key, entry)
    offset, key_line = 0, 0
    if path is not None:
        file = os.path.normpath(os.path.join(folder, path))
        patch_documents = _documents(file)
    elif text is not None:
        file = kustomization
        key_line = document.line_of(f"{at}.patch" if isinstance(entry, dict) else at)
        lines = _read_lines(kustomization)
        block = 0 < key_line <= len(lines) and _BLOCK.search(lines[key_line - 1])
        offset = key_line if block else 0  # a block scalar's text starts on the line after its key
        try:
            patch_documents = source.parse_documents(text, file)
        except InvalidInput:
            return []
    else:
        return []
    shown = display_path(file)
    written = []
    for patch in patch_documents:
        def line(field: str, patch: source.Document = patch) -> int:
            return offset + patch.line_of(field) if offset else (key_line or patch.line_of(field))

        if isinstance(patch.data, list):  # JSON 6902: a list of operations
            for i, op in enumerate(patch.data):
                if isinstance(op, dict) and isinstance(op.get("path"), str) and op.get("op") != "test":
                    written.append(_Patched(_dotted(op["path"]), shown, line(f"[{i}].path"),
                                            str(target.get("kind", "")), str(target.get("name", ""))))
        elif isinstance(patch.data, dict):  # strategic merge: every field it writes
            ref = intents.ref_of(patch.data)
            kind, name = str(target.get("kind", ref.kind)), str(target.get("name", ref.name))
            written += [_Patched(field, shown, line(field), kind, name) for field in patch.lines
                        if field not in _IDENTITY and not isinstance(_value_at(patch.data, field), dict)]
    return written


def _targets(patch: _Patched, ref) -> bool:
    if patch.kind and patch.kind != ref.kind:
        return False
    if not patch.name:
        return True
    try:
        return re.fullmatch(patch.name, ref.name) is not None  # kustomize's target names are regular expressions
    except re.error:
        return patch.name == ref.name


def _within(field: str, written: str) -> bool:
    """A problem's field is what a patch wrote, or lies inside it."""
    return field == written or field.startswith((written + ".", written + "["))


def _dotted(pointer: str) -> str:
    """A JSON pointer (/spec/env/0/name) as a dotted field (spec.env[0].name)."""
    out = ""
    for part in pointer.strip("/").split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        out += f"[{part}]" if part.isdigit() or part == "-" else (f".{part}" if out else part)
    return out


_ABSENT = object()


def _value_at(data: Any, field: str) -> Any:
    for key, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", field):
        if index:
            data = data[int(index)] if isinstance(data, list) and int(index) < len(data) else _ABSENT
        else:
            data = data.get(key, _ABSENT) if isinstance(data, dict) else _ABSENT
        if data is _ABSENT:
            break
    return data


def _shown(value: Any) -> str:
    text = json.dumps(value, default=str) if isinstance(value, (dict, list)) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _read_lines(path: str) -> list[str]:
    try:
        return source.read_text(path).splitlines()
    except InvalidInput:
        return []
