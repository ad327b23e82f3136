"""Build overlays the way `make build` does, with the generator of the tree being built, at any scale.

`make build` runs `kubectl kustomize --enable-alpha-plugins overlays/<cluster>`
with KUSTOMIZE_PLUGIN_HOME=plugins/, whose ClusterProfile plugin runs
`tfjobgen krm`. Here the same kustomize runs the same plugins, with two
differences that make a build depend on the tree alone:

- the plugins are run from a private copy of the tree's plugins/ with their
  exec bits set (a checkout or an archive may have lost them);
- the `tfjobgen` they call is the tree's own generator/ (a base commit is built
  with the generator it had, not with the one installed).

And one that makes it scale (layout.py reads the overlay to decide, docs/benchmarks.md
measures it): an overlay that only expands its intents is expanded in-process,
without kustomize, when the tree's generator is the one running (the same bytes,
wherever it is installed); one whose
transformations are all per object is built in shares of about two hundred
objects, in parallel; anything else is built whole. Every way gives the same
objects in kustomize's order (tests/gitops/test_build_modes.py), and a Selection
builds only some namespaces or some job files.

`tfjobgen build` (the Argo CD plugin) and `tfjobgen hydrate` both call build_overlays.
"""

from __future__ import annotations

import dataclasses
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

from ..concerns import labels
from ..expand import emit, pipeline
from ..inputs import intents, routing, source
from ..inputs.problems import WARNING, InvalidInput, Problem, distinct
from . import clusters, layout, object_meta
from .tree import OVERLAYS, relative

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
    mode: str = ""  # DIRECT, INTENTS, SHARDS or WHOLE: how it was built
    shards: int = 0  # kustomize runs it took
    # The selected intents as they reached tfjobgen, overlay patches applied (None: a build with the
    # plugin, SHARDS or WHOLE, never shows them): what `tfjobgen diff` plans.
    intents: list[dict] | None = None

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


# The ClusterProfile plugin of an "intents" build: it hands kustomize back what kustomize gave it, so
# the build's output is exactly what tfjobgen's plugin would have received. (Python, not cat: the
# Argo CD sidecar needs nothing but bash, python3 and kustomize.)
_ECHO_PLUGIN = ("#!{python} -S\n# tfjobgen build: the objects as they reach the ClusterProfile transformer\n"
                "import shutil, sys\nshutil.copyfileobj(sys.stdin.buffer, sys.stdout.buffer)\n")
_PROFILE_PLUGIN = ("tfjobgen.dev", "v1alpha1", "clusterprofile", "ClusterProfile")


@contextmanager
def plugin_environment(root: Path, echo: bool = False):
    """Environment for kustomize: a private plugin home and a `tfjobgen` that runs root's generator.

    With `echo`, the ClusterProfile plugin only prints its input (the intents as kustomize made them).
    """
    with tempfile.TemporaryDirectory(prefix="tfjobgen-plugins-") as scratch:
        home, bin_dir = Path(scratch, "plugins"), Path(scratch, "bin")
        if (root / "plugins").is_dir():
            shutil.copytree(root / "plugins", home)
        else:
            home.mkdir()
        if echo:
            plugin = home.joinpath(*_PROFILE_PLUGIN)
            plugin.parent.mkdir(parents=True, exist_ok=True)
            plugin.write_text(_ECHO_PLUGIN.format(python=sys.executable))
        for folder, _, names in os.walk(home):
            for name in names:
                os.chmod(os.path.join(folder, name), 0o755)
        bin_dir.mkdir()
        generator = root / "generator"
        prefix = ""
        if (generator / "tfjobgen").is_dir():
            prefix = f"PYTHONPATH={shlex.quote(str(generator.resolve()))}${{PYTHONPATH:+:$PYTHONPATH}} "
        wrapper = bin_dir / "tfjobgen"
        wrapper.write_text(f'#!/bin/sh\n{prefix}exec {shlex.quote(sys.executable)} -m tfjobgen "$@"\n')
        wrapper.chmod(0o755)
        temp_dir = Path(scratch, "tmp")  # kustomize leaves a plugin's config file behind when the plugin fails
        temp_dir.mkdir()
        env = {**os.environ, "KUSTOMIZE_PLUGIN_HOME": str(home), "TMPDIR": str(temp_dir),
               "PATH": str(bin_dir) + os.pathsep + os.environ.get("PATH", "")}
        yield env


@dataclass(frozen=True)
class Selection:
    """Which jobs a build is for: every one, or those of some namespaces and/or some job files."""

    namespaces: frozenset[str] | None = None
    files: frozenset[str] | None = None  # intent files, relative to the root

    def picks(self, intent: intents.Intent) -> bool:
        return ((self.namespaces is None or intent.namespace in self.namespaces)
                and (self.files is None or intent.file in self.files))

    def keeps(self, obj: dict, jobs: set[str]) -> bool:
        """Whether an object of the build belongs to the selection (`jobs`: the names of the jobs picked)."""
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        if self.namespaces is not None and meta.get("namespace") not in self.namespaces and not (
                object_meta.is_dashboard(obj) and object_meta.job_of(obj) in jobs):
            return False  # (a picked job's dashboard, in the profile's dashboards namespace, goes with its job)
        if self.files is not None:
            found = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
            return found.get(labels.JOB) in jobs
        return True


EVERYTHING = Selection()


# How an overlay is built (layout.py says what it needs; the tree's generator must be the running one to
# expand in-process: a base commit brings its own):
DIRECT = "direct"  # PASSIVE: the intent files expanded in-process, no kustomize
INTENTS = "intents"  # up to BEFORE: one kustomize build that stops at the ClusterProfile, expanded in-process
SHARDS = "shards"  # up to PER_OBJECT, another generator: kustomize with the plugin, on shares of the intents
WHOLE = "whole"  # anything else: kustomize with the plugin, once, on the overlay as it is


def mode_of(kustomization: layout.Layout, in_process: bool) -> str:
    if in_process and kustomization.need == layout.PASSIVE:
        return DIRECT
    if in_process and kustomization.need <= layout.BEFORE:
        return INTENTS
    if kustomization.need <= layout.PER_OBJECT and kustomization.local:
        return SHARDS
    return WHOLE


def build_overlays(root: Path, overlays: list[str], selection: Selection = EVERYTHING,
                   mode: str | None = None) -> dict[str, Build]:
    """Each overlay of `root` built, by name: the objects of the selected jobs, in kustomize's order.

    `mode` builds every overlay that way instead of the cheapest one (the tests and the benchmark
    compare the ways); ValueError if an overlay cannot be built that way.
    """
    kustomizations = {name: layout.read(root, f"{OVERLAYS}/{name}") for name in overlays}
    in_process = _runs_this_generator(root)
    modes = {name: mode_of(kustomization, in_process) for name, kustomization in kustomizations.items()}
    if mode:
        for name, kustomization in kustomizations.items():
            allowed = {DIRECT: modes[name] == DIRECT, INTENTS: modes[name] in (DIRECT, INTENTS),
                       SHARDS: kustomization.need <= layout.PER_OBJECT and kustomization.local, WHOLE: True}[mode]
            if not allowed:
                why = kustomization.reason or "another generator"
                raise ValueError(f"{OVERLAYS}/{name} cannot be built {mode}: {why}")
            modes[name] = mode
    with plugin_environment(root) as env, plugin_environment(root, echo=True) as echo_env, \
            tempfile.TemporaryDirectory(prefix="tfjobgen-shares-") as scratch:
        runs: list[tuple[str, Path, Path, dict]] = []  # (overlay, tree root, overlay folder, environment)
        for name, kustomization in kustomizations.items():
            shareable = kustomization.need <= layout.PER_OBJECT and kustomization.local
            shared = (modes[name] == INTENTS and selection != EVERYTHING and shareable) or modes[name] == SHARDS
            files = _files_to_share(root, kustomization, selection) if shared else []
            if modes[name] == INTENTS and selection != EVERYTHING and shareable:
                # Some jobs of a big tree (a team's Application, a diff): kustomize reads only their files.
                folder = layout.write_share(root, kustomization, files, Path(scratch, name),
                                             with_others=selection.files is None)
                runs.append((name, Path(scratch, name), folder, echo_env))
            elif modes[name] in (INTENTS, WHOLE):
                runs.append((name, root, root / OVERLAYS / name, echo_env if modes[name] == INTENTS else env))
            elif modes[name] == SHARDS and (files or selection.files is None):  # else: no changed job runs here
                for index, share in enumerate(layout.shares(kustomization, files)):
                    folder = layout.write_share(root, kustomization, share, Path(scratch, f"{name}-{index}"),
                                                 with_others=index == 0 and selection.files is None)
                    runs.append((name, Path(scratch, f"{name}-{index}"), folder, env))
        command = kustomize_command() if runs else []
        with ThreadPoolExecutor(max_workers=max(1, min(len(runs), os.cpu_count() or 1))) as pool:
            pending = [(name, pool.submit(_kustomize, root, tree, folder, command, run_env))
                       for name, tree, folder, run_env in runs]
            builds = {name: _direct(root, kustomizations[name], selection)
                      for name in kustomizations if modes[name] == DIRECT}
            parts: dict[str, list[Build]] = {}
            for name, future in pending:
                parts.setdefault(name, []).append(future.result())
    for name, kustomization in kustomizations.items():
        if modes[name] == INTENTS:
            builds[name] = _expanded(root, kustomization, parts[name][0], selection)
        elif modes[name] != DIRECT:
            builds[name] = _merged(name, kustomization, parts.get(name, []), selection)
        builds[name].mode = modes[name]
    return {name: builds[name] for name in overlays}


def intents_as_built(root: Path, overlay: str) -> list[dict] | None:
    """The overlay's intents as kustomize hands them to the ClusterProfile transformer, its patches applied:
    one kustomize run with the echo plugin, for a build that did not keep them (Build.intents is None).
    None when kustomize cannot build the overlay (its build's problems say why)."""
    with plugin_environment(root, echo=True) as env:
        built = _kustomize(root, root, root / OVERLAYS / overlay, kustomize_command(), env)
    return [obj for obj in built.objects if intents.is_intent(obj)] if built.ok else None


def _files_to_share(root: Path, kustomization: layout.Layout, selection: Selection) -> list[str]:
    """The intent files a share of the overlay holds: the selected ones whose jobs run on its cluster
    (inputs/routing.py; every selected one when the profile cannot be read: the build then says why)."""
    try:
        profile = pipeline.load_profile(str(root / kustomization.profile)) if kustomization.profile else None
    except InvalidInput:
        profile = None
    picked = {intent.file for intent in kustomization.intents if selection.picks(intent) and (
        profile is None or routing.runs_on(intent.data, profile.name, profile.namespaces))}
    return [f for f in kustomization.files() if f in picked]


def _runs_this_generator(root: Path) -> bool:
    """Whether expanding in-process uses the tree's own generator (a base commit brings another).

    The same code, not the same folder: the tree has no generator/ (a jobs-only repository: the installed one
    builds it), or the running package is its generator/, or holds the same bytes (its modules, and the schemas
    they read). Comparing folders alone sent every other install of the very same commit (a wheel in a venv, an
    editable install of another checkout) to kustomize shares, each starting a plugin and an interpreter: 7.5
    times hydrate's time at 300 jobs (docs/benchmarks.md, "Hydrate on every install"). A tree whose generator
    differs by one byte is still built by kustomize with its own (SHARDS or WHOLE).
    """
    own = root / "generator" / "tfjobgen"
    if not own.is_dir():
        return True
    running = Path(__file__).resolve().parents[1]
    return own.resolve() == running or _same_generator(own, running, root / "schemas")


def _same_generator(own: Path, running: Path, own_schemas: Path) -> bool:
    """Whether the tree's generator (`own`, `own_schemas`) is byte for byte the running package and its schemas.

    Every file of the tree's package must be in the running one with the same bytes, and the running one may
    have no module the tree lacks; files a wheel adds beside the modules (its copies of schemas/, plugins/) are
    compared as the schemas, or not at all. About 25 ms: two reads of about 1.7 MB, once per build_overlays.
    """
    from ..shared import package_data

    def files(folder: Path) -> dict[str, Path]:
        return {path.relative_to(folder).as_posix(): path for path in folder.rglob("*")
                if path.is_file() and "__pycache__" not in path.parts}

    ours, theirs = files(own), files(running)
    if {n for n in theirs if n.endswith(".py")} - set(ours):
        return False
    running_schemas = Path(package_data.find("schemas"))
    pairs = [(ours[name], theirs.get(name)) for name in ours]
    for folder, other in ((own_schemas, running_schemas), (running_schemas, own_schemas)):
        pairs += [(path, other / path.name) for path in folder.glob("*.json")] if folder.is_dir() else [(folder, None)]
    return all(theirs_path is not None and theirs_path.is_file() and ours_path.stat().st_size ==
               theirs_path.stat().st_size and ours_path.read_bytes() == theirs_path.read_bytes()
               for ours_path, theirs_path in pairs)


def _direct(root: Path, kustomization: layout.Layout, selection: Selection) -> Build:
    """What kustomize would build from an overlay that only expands its intents, without kustomize."""
    build = Build(kustomization.overlay.removeprefix(f"{OVERLAYS}/"))
    try:
        profile = pipeline.load_profile(str(root / kustomization.profile))
    except InvalidInput as err:
        build.problems = [relative(p, root) for p in err.problems]
        return build
    picked = [intent for intent in kustomization.intents if selection.picks(intent)]
    found, wrong = pipeline.for_cluster(picked, profile)  # only the jobs that run on this cluster
    build.intents = [intent.data for intent in found]
    if wrong:
        build.problems = wrong
        return build
    if not found and not profile.allow_no_jobs and selection.files is None:
        build.problems = [_nothing_selected(root, selection, kustomization, profile, len(picked))]
        return build
    expansion = pipeline.expand(found, profile)
    build.problems = [relative(p, root) for p in expansion.problems]
    if expansion.ok:
        build.objects = expansion.in_order()
    return build


def _expanded(root: Path, kustomization: layout.Layout, intents_build: Build, selection: Selection) -> Build:
    """What kustomize would build, from its build that stopped at the ClusterProfile: the plugin's input.

    tfjobgen's KRM function does in-process what the plugin would do with that input; kustomize's
    only work after the plugin is to sort, which emit.kustomize_order does the same way.
    """
    from ..expand import krm
    from ..inputs import intents

    build = Build(intents_build.overlay, shards=1, problems=list(intents_build.problems))
    if not build.ok:
        return build
    try:
        profile = pipeline.load_profile(str(root / kustomization.profile))
    except InvalidInput as err:
        build.problems = [relative(p, root) for p in err.problems]
        return build
    written = {i.name for i in kustomization.intents if selection.picks(i)} if selection.files is not None else None
    items = [item for item in intents_build.objects if not intents.is_intent(item) or (
        (selection.namespaces is None or intents.ref_of(item).namespace in selection.namespaces)
        and (written is None or intents.ref_of(item).name in written))]
    build.intents = [item for item in items if intents.is_intent(item)
                     and routing.runs_on(item, profile.name, profile.namespaces)]
    jobs = {intents.ref_of(item).name for item in build.intents}
    if not jobs and not profile.allow_no_jobs and (selection.namespaces is not None or selection.files is not None):
        if selection.files is not None:  # none of the changed jobs runs here: nothing of this cluster changed
            return build
        build.problems.append(_nothing_selected(root, selection, kustomization, profile, 0))
        return build
    directory = root / kustomization.overlay
    expanded, problems = krm.expand_items(items, profile, str(directory))
    build.problems += problems  # a value a patch wrote is reported at the patch (locate.from_patches)
    if build.ok:
        build.objects = emit.kustomize_order([obj for obj in expanded if selection.keeps(obj, jobs)])
    return build


def _nothing_selected(root: Path, selection: Selection, kustomization: layout.Layout, profile,
                      elsewhere: int) -> Problem:
    """Why a build of an overlay (or of one team's share of it) has no job to give Argo CD."""
    if selection.namespaces is None:
        return dataclasses.replace(pipeline.no_jobs(0, elsewhere, profile.name), file=kustomization.overlay)
    cluster = clusters.Cluster(kustomization.overlay.removeprefix(f"{OVERLAYS}/"), profile.name, profile.namespaces,
                              profile.allow_no_jobs, kustomization.profile)
    return clusters.no_job_left(root, cluster, ", ".join(sorted(selection.namespaces)))


def _merged(name: str, kustomization: layout.Layout, parts: list[Build], selection: Selection) -> Build:
    """One build from the builds of its shares (or of the whole overlay): the selected jobs' objects, sorted."""
    build = Build(name, shards=len(parts))
    build.problems = distinct([p for part in parts for p in part.problems])  # shares report shared files alike
    if not build.ok:
        return build
    jobs = {i.name for i in kustomization.intents if selection.picks(i)}
    objects = [obj for part in parts for obj in part.objects if selection.keeps(obj, jobs)]
    seen: dict[tuple, int] = {}
    for obj in objects:  # what one kustomize build would refuse: two objects of one identity
        key = (obj.get("apiVersion"), obj.get("kind"), (obj.get("metadata") or {}).get("namespace"),
               (obj.get("metadata") or {}).get("name"))
        seen[key] = seen.get(key, 0) + 1
    twice = sorted(k for k, n in seen.items() if n > 1)
    if twice:
        build.problems += [Problem(f"two objects are {kind} {namespace}/{obj_name} ({api_version}); kustomize "
                                   "refuses a build with one identity twice", file=build.path)
                           for api_version, kind, namespace, obj_name in twice]
        return build
    build.objects = emit.kustomize_order(objects)
    return build


def _kustomize(root: Path, tree: Path, directory: Path, command: list[str], env: dict) -> Build:
    """One kustomize run: of the overlay itself, or of a share's copy of it (`tree` is then the copy's root)."""
    overlay = directory.name
    build = Build(overlay)
    real_directory = root / OVERLAYS / overlay
    try:
        proc = subprocess.run([*command, str(directory)], capture_output=True, text=True, cwd=tree, env=env,
                              timeout=BUILD_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        build.problems.append(Problem(f"kustomize build took longer than {BUILD_TIMEOUT_SECONDS} s", file=build.path))
        return build
    if proc.returncode != 0:
        stderr = _repository_paths(proc.stderr, {tree: "", root: "", Path(env["KUSTOMIZE_PLUGIN_HOME"]): "plugins"})
        build.problems = _stderr_problems(stderr, root, real_directory, build.path)
        return build
    # A build that worked may still have warnings from tfjobgen on stderr.
    build.problems = [_located_problem(m, root, real_directory) for m in map(_LOCATED.match, proc.stderr.splitlines())
                      if m]
    try:
        build.objects = [d for d in source.parse_stream(proc.stdout, build.path) if isinstance(d, dict)]
    except InvalidInput as err:
        build.problems += err.problems
    return build


def _repository_paths(text: str, folders: dict[Path, str]) -> str:
    """kustomize's message with each folder it ran in (a share's temporary copy, the private plugin home, the
    root) written as the repository path it stands for: every share then says the same, once (distinct),
    and the user reads paths of the repository, not of a folder that is gone."""
    prefixes = {}
    for folder, meant in folders.items():
        for spelling in (str(folder), str(folder.resolve())):
            prefixes[spelling + os.sep] = f"{meant}/" if meant else ""
    for prefix in sorted(prefixes, key=len, reverse=True):  # a share lies inside the root's temp folder, say
        text = text.replace(prefix, prefixes[prefix])
    return text


def _stderr_problems(stderr: str, root: Path, directory: Path, overlay_path: str) -> list[Problem]:
    """kustomize's error output as problems: tfjobgen's located lines one by one, else kustomize's message."""
    located, other = [], []
    for line in stderr.splitlines():
        match = _LOCATED.match(line.strip())
        if match:
            located.append(_located_problem(match, root, directory))
        elif line.strip() and not line.strip().startswith("tfjobgen: "):
            other.append(_KLOG_PREFIX.sub("", line.strip()))
    if any(p.is_error for p in located):
        return located  # the rest is kustomize saying that the plugin failed
    message = " ".join(o for o in other if o not in (">", "")).strip()
    return located + [Problem("kustomize build failed: " + (message[:2000] or "no error message"), file=overlay_path)]


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
