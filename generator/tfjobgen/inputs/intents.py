"""Which documents are TrainingJob intents, where a repository keeps them, and that their names are unique.

Every part of tfjobgen asks these questions, and this module is the only one that
answers them: `tfjobgen validate` and `render` (files and folders), the KRM function
(the objects of a build), error locations from inside kustomize (the resources of a
kustomization), and the GitOps commands (jobs/ of a repository).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass
from typing import Any, Protocol, Sequence

from . import source
from .problems import InvalidInput, Problem, ResourceRef
from .profile import KIND as PROFILE_KIND
from .trainingjob import API_VERSION, KIND

GROUP = API_VERSION.split("/")[0]
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")

# A cheap test on kustomize's canonical YAML, where top-level keys start a line: a document that
# does not match is no intent (and the KRM plugin passes it through unparsed). It matches every
# document kind_of() calls an intent, and profiles too; tests hold it to that.
_MAY_BE_OURS = re.compile(r"^(kind: *[\"']?TrainingJob\b|apiVersion: *[\"']?tfjobgen\.dev/)", re.MULTILINE)


# ---- documents ---------------------------------------------------------------------------

def kind_of(document: Any) -> str:
    """'intent', 'profile' or 'other' for one parsed document.

    Anything of our API group but the profile counts as an intent, and so does a TrainingJob of
    another group: the schema then says what is wrong with it, instead of it vanishing unexpanded.
    """
    if not isinstance(document, dict):
        return "other"
    api_version, kind = document.get("apiVersion"), document.get("kind")
    ours = isinstance(api_version, str) and api_version.split("/")[0] == GROUP
    if ours and kind == PROFILE_KIND:
        return "profile"
    if kind == KIND or ours:
        return "intent"
    return "other"


def is_intent(document: Any) -> bool:
    return kind_of(document) == "intent"


def may_be_ours(text: str) -> bool:
    """False only for YAML in kustomize's style that holds no intent and no profile."""
    return _MAY_BE_OURS.search(text) is not None


# ---- files and folders -----------------------------------------------------------------------

def _is_candidate(name: str) -> bool:
    """A file name that may hold intents: YAML, not hidden, not a kustomization."""
    return name.endswith((".yaml", ".yml")) and not name.startswith(".") and name not in KUSTOMIZATION_FILES


def files(paths: list[str]) -> list[str]:
    """Files named, and the YAML files under folders named (hidden ones and kustomizations left out), sorted;
    each file once, however often it is named (a folder and a file in it, `job.yaml ./job.yaml`).

    A path that is not there raises FileNotFoundError; anything else named is listed, whatever it is, so
    that the one reader (source.read_bytes) says what it is when it is no regular file. A folder that
    cannot be listed is InvalidInput: its files are not "none".
    """
    found, seen = [], set()

    def add(file: str) -> None:
        real = os.path.realpath(file)
        if real not in seen:
            seen.add(real)
            found.append(file)

    for path in paths:
        try:
            is_folder = stat.S_ISDIR(os.stat(path).st_mode)
        except FileNotFoundError:
            raise FileNotFoundError(errno.ENOENT, "no such file or folder", path) from None
        except OSError:
            is_folder = False  # a path that cannot be looked at: the reader says why
        if not is_folder:
            add(path)
            continue
        for folder, subfolders, names in os.walk(path, onerror=_unlistable):
            subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
            for name in sorted(names):
                if _is_candidate(name):
                    add(os.path.join(folder, name))
    return found


def _unlistable(err: OSError) -> None:
    why = source.cannot_read(err).removeprefix("cannot read: ")
    raise InvalidInput([Problem(f"cannot list the folder: {why}", file=err.filename or "")])


def kustomization_file(directory: str) -> str | None:
    """The kustomization file of a folder (kustomize's own order of names), or None."""
    return next((os.path.join(directory, n) for n in KUSTOMIZATION_FILES
                 if os.path.isfile(os.path.join(directory, n))), None)


def read_kustomization(directory: str) -> dict | None:
    """A folder's kustomization as data; None when it has none or it cannot be read."""
    path = kustomization_file(directory)
    if path is None:
        return None
    try:
        documents = source.parse_documents(source.read_text(path), path)
    except InvalidInput:
        return None
    data = documents[0].data if documents else None
    return data if isinstance(data, dict) else None


def local_resources(directory: str, data: dict, keys: tuple[str, ...] = ("resources", "components")) -> list[str]:
    """The local entries of a kustomization's `resources` (and `components`), as normalized paths."""
    entries = [e for key in keys for e in (data.get(key) or []) if isinstance(e, str)]
    return [os.path.normpath(os.path.join(directory, e)) for e in entries if not is_remote(e)]


# In the order kustomize applies them (api/internal/target/kusttarget_configplugin.go, configureBuiltinTransformers).
PATCH_FIELDS = ("patchesStrategicMerge", "patches", "patchesJson6902")


def patch_source(key: str, entry: Any) -> tuple[str | None, str | None]:
    """(file it reads, inline text) of one entry of a kustomization's patch field `key`: a strategic merge
    entry is a path unless it spans lines; the others name a `path` or hold a `patch`."""
    if key == "patchesStrategicMerge" and isinstance(entry, str):
        return (entry, None) if "\n" not in entry.strip() else (None, entry)
    if isinstance(entry, dict):
        if isinstance(entry.get("path"), str):
            return entry["path"], None
        if isinstance(entry.get("patch"), str):
            return None, entry["patch"]
    return None, None


def is_remote(entry: str) -> bool:
    """A kustomization entry kustomize fetches (a URL, a GitHub path, a git@ remote), not a path in this tree."""
    return "://" in entry or entry.startswith(("github.com/", "git@"))


def unlisted(paths: list[str]) -> list[Problem]:
    """Intent files in a folder whose kustomization does not list them: kustomize would never build them."""
    problems = []
    for folder in (p for p in paths if os.path.isdir(p)):
        data = read_kustomization(folder)
        if data is None:
            continue
        kustomization = kustomization_file(folder)
        listed = {os.path.normpath(e) for e in data.get("resources") or [] if isinstance(e, str)}
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue  # files() said why it cannot be listed
        for name in names:
            if _is_candidate(name) and name not in listed:
                problems.append(Problem(
                    f"not listed in {kustomization}, so no overlay builds it: add '- {name}' under resources",
                    file=os.path.join(folder, name), line=1))
    return problems


def missing_listed(paths: list[str]) -> list[Problem]:
    """Entries a folder's kustomization lists (resources, components) that are not there: kustomize fails every
    build that includes the folder, however valid the jobs that are there. The reverse of `unlisted`."""
    problems = []
    for folder in (p for p in paths if os.path.isdir(p)):
        kustomization = kustomization_file(folder)
        try:
            documents = source.parse_documents(source.read_text(kustomization), kustomization) if kustomization \
                else []
        except InvalidInput:
            continue  # kustomize says what is wrong with it; nothing here can be counted as listed
        if not documents or not isinstance(documents[0].data, dict):
            continue
        for key in ("resources", "components"):
            entries = documents[0].data.get(key)
            for index, entry in enumerate(entries if isinstance(entries, list) else []):
                if not isinstance(entry, str) or is_remote(entry) or os.path.lexists(os.path.join(folder, entry)):
                    continue
                at = f"{key}[{index}]"
                problems.append(Problem(
                    f"'{entry}' is not there, so every overlay's build that includes {os.path.normpath(folder)} "
                    "fails: restore the file, or remove this line", at, file=kustomization,
                    line=documents[0].line_of(at)))
    return problems


# ---- the rule of unique names --------------------------------------------------------------------

class Named(Protocol):
    """A job as written: its name, its namespace, and where its name is (file "" and line 0 when unknown)."""

    name: str
    namespace: str
    file: str
    line: int


def duplicate_names(jobs: Sequence[Named]) -> list[Problem]:
    """A job name used twice in the repository, in any namespaces: a problem at each use after the first.

    Names are unique in the repository, not only per namespace: a job is known by its name in
    reviews and diffs, and a name that reappears elsewhere is how a job would silently move.
    The first use is the first by file and line when the files are known, so every caller,
    whatever order it reads the jobs in, reports the same problem.
    """
    ordered = sorted(jobs, key=lambda job: (job.file, job.line)) if all(j.file for j in jobs) else list(jobs)
    first: dict[str, Named] = {}
    problems = []
    for job in ordered:
        other = first.setdefault(job.name, job)
        if other is job:
            continue
        where = (f"{other.file}:{other.line}" if other.line else other.file) or "another job"
        also = "in the same namespace" if other.namespace == job.namespace else f"in namespace {other.namespace}"
        problems.append(Problem(
            f"job name '{job.name}' is already used by {where} ({also}): job names must be unique in the "
            "repository, so that a job can never be mistaken for another or silently change namespace",
            "metadata.name", file=job.file, line=job.line, ref=getattr(job, "ref", None)))
    return problems


def ref_of(document: Any) -> ResourceRef:
    """The KRM resourceRef of a document, whatever its shape."""
    data = document if isinstance(document, dict) else {}
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    return ResourceRef(str(data.get("apiVersion", "")), str(data.get("kind", "")),
                       str(meta.get("name", "")), str(meta.get("namespace", "")))


@dataclass(frozen=True)
class Intent:
    """A TrainingJob document as it arrived: from a file (with lines) or from a ResourceList."""

    data: Any
    file: str = ""
    document: source.Document | None = None

    @property
    def ref(self) -> ResourceRef:
        return ref_of(self.data)

    @property
    def name(self) -> str:
        return self.ref.name

    @property
    def namespace(self) -> str:
        return self.ref.namespace

    @property
    def line(self) -> int:
        """The line of metadata.name (0 when the intent came without its file)."""
        return self.document.line_of("metadata.name") if self.document else 0

    def locate(self, problem: Problem) -> Problem:
        line = self.document.line_of(problem.field) if self.document else 0
        return problem.located(self.file, line, self.ref)
