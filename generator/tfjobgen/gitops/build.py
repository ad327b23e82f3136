"""Build overlays the way `make build` does, with the generator of the tree being built.

`make build` runs `kubectl kustomize --enable-alpha-plugins overlays/<cluster>`
with KUSTOMIZE_PLUGIN_HOME=plugins/, whose ClusterProfile plugin runs
`tfjobgen krm`. Here the same kustomize runs the same plugins, with two
differences that make a build depend on the tree alone:

- the plugins are run from a private copy of the tree's plugins/ with their
  exec bits set (a checkout or an archive may have lost them);
- the `tfjobgen` they call is the tree's own generator/ (a base commit is built
  with the generator it had, not with the one installed).

The CMP plugin (argocd/plugin/plugin.yaml) does the same steps in shell.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .. import source
from ..problems import WARNING, InvalidInput, Problem
from .tree import OVERLAYS

BUILD_TIMEOUT_SECONDS = 600
# tfjobgen's own problem lines (`file:line: [warning: ]field: message`), as kustomize relays them.
_LOCATED = re.compile(r"^(?P<file>[^\s:][^:]*\.ya?ml):(?P<line>\d+): (?P<rest>.*)$")
_KLOG_PREFIX = re.compile(r"^[EWI]\d{4} [\d:.]+ +\d+ [\w.]+:\d+\] ")
_FIELD = re.compile(r"^(?P<field>[A-Za-z_][\w.\[\]/-]*): (?P<message>.+)$")


class ToolMissing(Exception):
    """Neither kubectl nor kustomize is installed."""


@dataclass
class Build:
    """One overlay's build: its objects in kustomize's order, or the problems that stopped it."""

    overlay: str
    objects: list[dict] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(p.is_error for p in self.problems)

    @property
    def path(self) -> str:
        return f"{OVERLAYS}/{self.overlay}"


def kustomize_command() -> list[str]:
    """kubectl's embedded kustomize (what `make build` uses), else a standalone kustomize."""
    kubectl = shutil.which("kubectl")
    if kubectl:
        return [kubectl, "kustomize", "--enable-alpha-plugins"]
    kustomize = shutil.which("kustomize")
    if kustomize:
        return [kustomize, "build", "--enable-alpha-plugins"]
    raise ToolMissing("building overlays needs kubectl (1.27 or later) or kustomize on PATH")


@contextmanager
def plugin_environment(root: Path):
    """Environment for kustomize: a private plugin home and a `tfjobgen` that runs root's generator."""
    with tempfile.TemporaryDirectory(prefix="tfjobgen-plugins-") as scratch:
        home, bin_dir = Path(scratch, "plugins"), Path(scratch, "bin")
        if (root / "plugins").is_dir():
            shutil.copytree(root / "plugins", home)
            for folder, _, names in os.walk(home):
                for name in names:
                    os.chmod(os.path.join(folder, name), 0o755)
        else:
            home.mkdir()
        bin_dir.mkdir()
        generator = root / "generator"
        prefix = ""
        if (generator / "tfjobgen").is_dir():
            prefix = f"PYTHONPATH={shlex.quote(str(generator.resolve()))}${{PYTHONPATH:+:$PYTHONPATH}} "
        wrapper = bin_dir / "tfjobgen"
        wrapper.write_text(f'#!/bin/sh\n{prefix}exec {shlex.quote(sys.executable)} -m tfjobgen "$@"\n')
        wrapper.chmod(0o755)
        env = {**os.environ, "KUSTOMIZE_PLUGIN_HOME": str(home),
               "PATH": str(bin_dir) + os.pathsep + os.environ.get("PATH", "")}
        yield env


def build_overlays(root: Path, overlays: list[str]) -> dict[str, Build]:
    """Each overlay of `root` built (in parallel), by name."""
    command = kustomize_command()
    with plugin_environment(root) as env:
        workers = max(1, min(len(overlays), os.cpu_count() or 1))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            builds = list(pool.map(lambda name: _build(root, name, command, env), overlays))
    return {build.overlay: build for build in builds}


def _build(root: Path, overlay: str, command: list[str], env: dict) -> Build:
    build = Build(overlay)
    directory = root / OVERLAYS / overlay
    try:
        proc = subprocess.run([*command, str(directory)], capture_output=True, text=True, cwd=root, env=env,
                              timeout=BUILD_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        build.problems.append(Problem(f"kustomize build took longer than {BUILD_TIMEOUT_SECONDS} s", file=build.path))
        return build
    if proc.returncode != 0:
        build.problems = _stderr_problems(proc.stderr, root, directory, build.path)
        return build
    # A build that worked may still have warnings from tfjobgen on stderr.
    build.problems = [_located_problem(m, root, directory) for m in map(_LOCATED.match, proc.stderr.splitlines()) if m]
    try:
        build.objects = [d for d in source.parse_stream(proc.stdout, build.path) if isinstance(d, dict)]
    except InvalidInput as err:
        build.problems += err.problems
    return build


def _stderr_problems(stderr: str, root: Path, directory: Path, overlay_path: str) -> list[Problem]:
    """kustomize's error output as problems: tfjobgen's located lines one by one, else kustomize's message."""
    located, other = [], []
    for line in stderr.splitlines():
        match = _LOCATED.match(line.strip())
        if match:
            located.append(_from_patch(_located_problem(match, root, directory), root, directory))
        elif line.strip() and not line.strip().startswith("tfjobgen: "):
            other.append(_KLOG_PREFIX.sub("", line.strip()))
    if any(p.is_error for p in located):
        return located  # the rest is kustomize saying that the plugin failed
    message = " ".join(o for o in other if o not in (">", "")).strip()
    return located + [Problem("kustomize build failed: " + (message[:2000] or "no error message"), file=overlay_path)]


def _from_patch(problem: Problem, root: Path, directory: Path) -> Problem:
    """A field the job file does not have came from a patch of the overlay: point at the patch instead."""
    if not problem.field or not problem.file.endswith((".yaml", ".yml")) or not (root / problem.file).is_file():
        return problem
    try:
        documents = source.parse_documents(source.read_text(str(root / problem.file)), problem.file)
    except InvalidInput:
        return problem
    if any(problem.field in document.lines for document in documents):
        return problem
    needle = re.split(r"[.\[\]]", problem.field.rstrip("]"))[-1]
    for path in sorted(directory.glob("*.y*ml")):
        for number, text in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if re.search(rf"(^|[/\s{{,]){re.escape(needle)}\b", text):
                return Problem(f"{problem.message} (set by this overlay's patch; {problem.file} has no such field)",
                               problem.field, problem.severity, path.relative_to(root).as_posix(), number,
                               problem.ref)
    return problem


def _located_problem(match: re.Match, root: Path, directory: Path) -> Problem:
    rest, severity = match["rest"], "error"
    if rest.startswith("warning: "):
        rest, severity = rest[len("warning: "):], WARNING
    field_match = _FIELD.match(rest)
    field_path, message = (field_match["field"], field_match["message"]) if field_match else ("", rest)
    return Problem(message, field_path, severity, display_path(match["file"], root, directory), int(match["line"]))


def display_path(path: str, root: Path, directory: Path) -> str:
    """A file named in an error, relative to the tree's root (kustomize ran the plugin in the overlay)."""
    candidate = Path(path)
    for base in ((root,) if candidate.is_absolute() else (root, directory)):
        full = (base / candidate).resolve()
        if full.is_file():
            try:
                return full.relative_to(root.resolve()).as_posix()
            except ValueError:
                return path
    return path
