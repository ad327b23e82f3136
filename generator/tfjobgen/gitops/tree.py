"""The repository's GitOps layout, read from a folder: a checkout, or a commit extracted from git.

    jobs/<job>.yaml                  one TrainingJob per file: the inventory of jobs
    overlays/<cluster>/              one kustomization per cluster (Argo CD: one Application each)
    rendered/<cluster>/<ns>/<job>.yaml   what `tfjobgen hydrate` writes

A base commit is read with `git archive` into a temporary folder, so a diff
never touches the repository's index, worktrees or refs.
"""

from __future__ import annotations

import dataclasses
import io
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

from ..inputs import intents, routing
from ..inputs.problems import Problem
from ..kit import files

JOBS, OVERLAYS, RENDERED = "jobs", "overlays", "rendered"
# What a build needs from a commit (everything else, rendered/ included, is not read).
BUILD_INPUTS = (JOBS, "bases", OVERLAYS, "plugins", "generator", "schemas", "pyproject.toml")


class GitError(Exception):
    """A git command failed; the message says what to do."""


@dataclass(frozen=True)
class JobFile:
    """A TrainingJob as written in jobs/: its name, namespace and where its name is written."""

    name: str
    namespace: str
    file: str  # relative to the tree's root, with '/'
    line: int
    clusters: tuple[str, ...] | None = None  # spec.clusters (inputs/routing.py); None: left out
    clusters_line: int = 0
    model_dir: str = ""  # spec.training.modelDir, where the job's checkpoints go ("" when it sets none)
    model_dir_line: int = 0
    namespace_line: int = 0

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def relative(problem: Problem, root: Path) -> Problem:
    """The problem with its file as the user knows it, relative to the tree's root (as it was, when outside)."""
    if problem.file and Path(problem.file).is_absolute():
        try:
            return dataclasses.replace(problem, file=Path(problem.file).relative_to(root).as_posix())
        except ValueError:
            pass
    return problem


def is_tree(root: Path) -> bool:
    """A folder laid out like this repository (an overlays/ folder is what every mode builds)."""
    return (root / OVERLAYS).is_dir()


def overlay_names(root: Path) -> list[str]:
    """Clusters: the folders under overlays/ that hold a kustomization, sorted."""
    folder = root / OVERLAYS
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir()
                  if p.is_dir() and intents.kustomization_file(str(p)))


def job_files(root: Path) -> tuple[list[JobFile], list[Problem]]:
    """Every TrainingJob under jobs/ (sorted by file), and problems of files that cannot be read."""
    from ..expand import pipeline

    if not (root / JOBS).is_dir():
        return [], []
    found, problems = pipeline.load_intents([str(root / JOBS)], relative_to=str(root))
    return [job_file(intent) for intent in found], problems


def job_file(intent: intents.Intent) -> JobFile:
    """What the GitOps checks read of a TrainingJob as written."""
    data = intent.data if isinstance(intent.data, dict) else {}
    spec = data.get("spec") if isinstance(data.get("spec"), dict) else {}
    training = spec.get("training") if isinstance(spec.get("training"), dict) else {}
    model_dir = training.get("modelDir") if isinstance(training.get("modelDir"), str) else ""
    line_of = intent.document.line_of if intent.document else (lambda _: 0)
    return JobFile(intent.name, intent.namespace, intent.file, intent.line, routing.named_clusters(intent.data),
                   line_of("spec.clusters"), model_dir, line_of("spec.training.modelDir") if model_dir else 0,
                   line_of("metadata.namespace"))


# ---- git (read-only) ------------------------------------------------------------

def _git(root: Path, *args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, timeout=120)
    except FileNotFoundError:
        raise GitError("git is not installed") from None


def resolve_commit(root: Path, ref: str) -> str:
    """The full commit id `ref` names, or a GitError that says how to get it."""
    if _git(root, "rev-parse", "--git-dir").returncode != 0:
        raise GitError(f"{root} is not inside a git repository")
    proc = _git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    if proc.returncode != 0:
        raise GitError(f"unknown revision '{ref}': fetch it first (git fetch origin <branch>; in GitHub Actions "
                       "check out with fetch-depth: 0)")
    return proc.stdout.decode().strip()


def changed_paths(root: Path, commit: str) -> set[str] | None:
    """Paths under root (relative, with '/') that differ between `commit` and the working tree.

    Tracked files changed, added or deleted since the commit (staged or not), and untracked files
    git does not ignore. None when git cannot say.
    """
    changed = _git(root, "diff", "--name-only", "--no-renames", "--relative", commit, "--")
    untracked = _git(root, "ls-files", "--others", "--exclude-standard")
    if changed.returncode != 0 or untracked.returncode != 0:
        return None
    return {line for proc in (changed, untracked) for line in proc.stdout.decode().splitlines() if line}


def extract_commit(root: Path, commit: str, destination: Path) -> None:
    """Write the build inputs of `commit` under `destination` (nothing, for a commit that predates them)."""
    listing = _git(root, "ls-tree", "--name-only", commit)
    if listing.returncode != 0:
        raise GitError(f"git ls-tree {commit} failed: {listing.stderr.decode().strip()}")
    present = [name for name in listing.stdout.decode().splitlines() if name in BUILD_INPUTS]
    if not present:
        return
    archive = _git(root, "archive", "--format=tar", commit, "--", *present)
    if archive.returncode != 0:
        raise GitError(f"git archive {commit} failed: {archive.stderr.decode().strip()}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        members = tar.getmembers()
        if not hasattr(tarfile, "data_filter"):  # Python before 3.11.4: refuse anything that would land outside
            for member in members:
                target = (destination / member.name).resolve()
                if not str(target).startswith(str(destination.resolve())) or member.issym() or member.islnk():
                    raise GitError(f"refusing to extract {member.name} from {commit}")
        for member in members:  # one at a time: tarfile's errors do not say which file they stopped at
            try:
                if hasattr(tarfile, "data_filter"):
                    tar.extract(member, destination, filter="data")
                else:
                    tar.extract(member, destination)  # noqa: S202 - members checked above
            except OSError as err:
                raise files.WriteFailed(f"{destination / member.name} (the base revision's files, copied to build "
                                        "them)", files.why(err, str(destination / member.name))) from None


def find_root(start: Path) -> Path | None:
    """The nearest folder at or above `start` laid out like this repository."""
    for folder in (start, *start.parents):
        if is_tree(folder) and (folder / JOBS).is_dir():
            return folder
    return None
