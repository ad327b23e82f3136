"""Building the programs of programs.py from their Go modules into the cache: `tfjobgen cluster tools`,
`make cluster-tools`. Each family's build is atomic (a failed one leaves nothing) and logged.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from .programs import (
    CACHE_ENV,
    LOCAL,
    RECIPE_FILE,
    VERSIONS_FILE,
    CacheUnusable,
    Family,
    cache_root,
    check_cache,
    families,
)

# The `go build` processes running (families build side by side, build_all), so that Ctrl-C or SIGTERM kills
# every one; once stopping, none starts.
_RUNNING: set[subprocess.Popen] = set()
_RUNNING_LOCK = threading.Lock()
_STOPPING = threading.Event()


def check_pin(family: Family) -> None:
    """The version in versions.yaml is the one the family's go.mod requires; or, for a program of our own
    (version `local`), `module` is the family's own module: its source is the folder, which the recipe digests."""
    import json

    edit = subprocess.run(["go", "mod", "edit", "-json"], cwd=family.folder, capture_output=True, text=True,
                          check=True)
    parsed = json.loads(edit.stdout)
    if family.version == LOCAL or family.module == parsed["Module"]["Path"]:
        if family.version != LOCAL or family.module != parsed["Module"]["Path"] or family.edits or family.assets:
            raise BuildFailed(f"versions.yaml: {family.name}: version {LOCAL} means a program of our own: module is "
                              f"cluster-tools/{family.name}/go.mod's ({parsed['Module']['Path']}), and there is no "
                              f"upstream source to edit or copy assets from")
        return
    required = {r["Version"] for r in parsed.get("Require") or [] if r["Path"] == family.module}
    if required != {family.version}:
        raise BuildFailed(f"cluster-tools/{family.name}/go.mod requires {family.module} "
                          f"{', '.join(sorted(required)) or 'nothing'}, but versions.yaml says {family.version}")


def build(family: Family, log_dir: Path, progress=None) -> None:
    """Build every program of `family` into its cache folder (atomically: a failed build leaves nothing)."""
    check_pin(family)
    target = family.installed_in
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{family.name}-", dir=target.parent))
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly"}
    if family.toolchain:
        env["GOTOOLCHAIN"] = family.toolchain
    command = ["go", "build", "-v", "-trimpath", "-ldflags", family.ldflags(), "-o", str(staging) + "/",
               *family.programs.values()]
    log_path = log_dir / f"{family.name}.log"
    edited = Path(tempfile.mkdtemp(prefix=f".{family.name}-source-", dir=target.parent)) if family.edits else None
    try:
        if edited:
            command.insert(2, f"-modfile={_edited_copy(family, edited, env)}")
        with open(log_path, "w", encoding="utf-8") as log:
            _run_counting_packages(command, family.folder, env, log, progress)
        for name, package in family.programs.items():
            built = staging / _binary_name(package)
            if built.name != name:
                built.rename(staging / name)
        _copy_assets(family, staging / "assets", env)
        (staging / RECIPE_FILE).write_text(family.recipe() + "\n")
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if edited:
            shutil.rmtree(edited, ignore_errors=True)


def _copy_assets(family: Family, target: Path, env: dict) -> None:
    """The module's CRDs and webhook manifests, from the module cache, as the pinned release has them."""
    if not family.assets:
        return
    source = module_dir(family, env)
    for path in family.assets:
        origin, copy = source / path, target / path
        copy.parent.mkdir(parents=True, exist_ok=True)
        if origin.is_dir():
            shutil.copytree(origin, copy)
        else:
            shutil.copyfile(origin, copy)
    for path in target.rglob("*"):  # the module cache is read-only; the copies need not be
        path.chmod(0o755 if path.is_dir() else 0o644)


def module_dir(family: Family, env: dict) -> Path:
    """Where the module cache holds the pinned release's source, downloaded first if it is not there yet
    (`go list -m` names no folder for a module it has not downloaded: a fresh machine's case)."""
    import json

    listed = subprocess.run(["go", "mod", "download", "-json", family.module], cwd=family.folder, env=env,
                            capture_output=True, text=True)
    found = json.loads(listed.stdout or "{}") if listed.stdout.lstrip().startswith("{") else {}
    if listed.returncode or not found.get("Dir"):
        why = found.get("Error") or listed.stderr.strip() or f"exit {listed.returncode}"
        raise BuildFailed(f"{family.module} {family.version}: could not download its source: {why}")
    return Path(found["Dir"])


def _edited_copy(family: Family, folder: Path, env: dict) -> Path:
    """A go.mod building `family.module` from an edited copy of its source (each edit must match once).

    (`go build -overlay` would be shorter, but it refuses to replace files of the module cache.)
    """
    copy = folder / "module"
    shutil.copytree(module_dir(family, env), copy)
    for path in copy.rglob("*"):  # the module cache is read-only
        path.chmod(0o755 if path.is_dir() else 0o644)
    for file, old, new in family.edits:
        text = (copy / file).read_text()
        if text.count(old) != 1:
            raise BuildFailed(f"versions.yaml: the edit of {file} expects its text once in {family.module} "
                              f"{family.version}, found it {text.count(old)} time(s)")
        (copy / file).write_text(text.replace(old, new))
    modfile = folder / "go.mod"
    modfile.write_text((family.folder / "go.mod").read_text() + f"\nreplace {family.module} => {copy}\n")
    shutil.copyfile(family.folder / "go.sum", folder / "go.sum")
    return modfile


def _binary_name(package: str) -> str:
    """The file `go build -o DIR/` writes for a package: its last element, or the one before a /vN suffix."""
    elements = package.split("/")
    if len(elements) > 1 and elements[-1][:1] == "v" and elements[-1][1:].isdigit():
        return elements[-2]
    return elements[-1]


def _run_counting_packages(command, cwd, env, log, progress) -> None:
    """Run `go build -v`, whose stderr names each package as it is compiled: a count to show."""
    with _RUNNING_LOCK:
        if _STOPPING.is_set():
            raise BuildFailed("stopped")
        process = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                   stderr=subprocess.PIPE, text=True, start_new_session=True)
        _RUNNING.add(process)
    compiled = 0
    try:
        for line in process.stderr:
            log.write(line)
            if line.strip() and not line.startswith((" ", "\t", "#", "go:")):
                compiled += 1
                if progress:
                    progress(compiled)
        if process.wait() != 0:
            raise BuildFailed(f"`go build` exited {process.returncode}")
    finally:
        with _RUNNING_LOCK:
            _RUNNING.discard(process)
        if process.poll() is None:
            _kill_group(process)
        process.wait()


def _kill_group(process: subprocess.Popen) -> None:
    import signal

    try:
        os.killpg(process.pid, signal.SIGKILL)  # go and the compilers it started
    except ProcessLookupError:
        pass


class BuildFailed(Exception):
    pass


def chosen(found: list[Family], named: list[str], on_request: bool = False) -> list[Family]:
    """The families a build takes, in versions.yaml's order: those named, and with on_request every family
    marked `on_request: true`; with neither, every family but those (what `make cluster-tools` builds)."""
    if not named and not on_request:
        return [f for f in found if not f.on_request]
    return [f for f in found if f.name in named or on_request and f.on_request]


# Families built at once. One family's build leaves a core idle for much of its time (downloading modules,
# linking each program alone): a first build used 1.1 of 2 cores (2026-11-27, 42 min). Two at once keep both busy.
AT_ONCE = 2


def build_all(only: list[str], list_only: bool = False, on_request: bool = False) -> int:
    from ..kit import table

    chosen_families = chosen(families(), only, on_request)
    unknown = set(only) - {f.name for f in families()}
    if unknown:
        print(f"tfjobgen cluster tools: no family {', '.join(sorted(unknown))} in {VERSIONS_FILE}", file=sys.stderr)
        return 2
    missing = [f for f in chosen_families if not f.is_built()]  # a recipe digest each: read once
    try:
        check_cache(cache_root(), CACHE_ENV, "cluster tools", writing=not list_only and bool(missing))
    except CacheUnusable as err:
        print(f"tfjobgen cluster tools: {err}", file=sys.stderr)
        return 1
    if not list_only and missing and shutil.which("go") is None:
        print("tfjobgen cluster tools: the go command is not on PATH (Go 1.26 or newer builds these)", file=sys.stderr)
        return 1
    states = {f.name: ("not built" if f in missing else "built", 0.0) for f in chosen_families}
    if not list_only:  # a listing writes nothing: not even the logs' folder
        log_dir = cache_root() / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        states.update(_build_missing(missing, log_dir))
    rows = [[f.name, f.version, ", ".join(f.programs), states[f.name][0],
             "-" if list_only else f"{states[f.name][1]:.0f}s"] for f in chosen_families]
    print(table.render(["FAMILY", "VERSION", "PROGRAMS", "STATE", "TIME"], rows))
    print(f"binaries in {cache_root()}")
    return 1 if any(states[f.name][0] != "built" and f.required for f in chosen_families) else 0


def build_order(missing: list[Family], building: set[str], done: set[str]) -> Family | None:
    """The next family to start while `building` run: the first in versions.yaml's order whose module release no
    earlier family still to build shares. Families of one release (kubernetes and the kubelet) compile the same
    packages: one after the other, the second finds them in Go's build cache; side by side, both would compile
    them."""
    for index, family in enumerate(missing):
        if family.name in building or family.name in done:
            continue
        earlier = [f for f in missing[:index] if (f.module, f.version) == (family.module, family.version)
                   and f.name not in done]
        if not earlier:
            return family
    return None


def _build_missing(missing: list[Family], log_dir: Path) -> dict[str, tuple[str, float]]:
    """Build `missing`, AT_ONCE families at a time; each family's state and seconds. Ctrl-C (or SIGTERM) stops
    every `go build` and leaves no partial family (build() removes its staging folder)."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    board = _Board()
    results: dict[str, tuple[str, float]] = {}
    running: dict = {}
    pool = ThreadPoolExecutor(max_workers=AT_ONCE, thread_name_prefix="go-build")
    try:
        while len(results) < len(missing):
            while len(running) < AT_ONCE:
                family = build_order(missing, {f.name for f in running.values()}, set(results))
                if family is None:
                    break
                running[pool.submit(_build_one, family, log_dir, board)] = family
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                results[running.pop(future).name] = future.result()
    except BaseException:
        _stop_all()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        board.close()
    return results


def _build_one(family: Family, log_dir: Path, board: "_Board") -> tuple[str, float]:
    started = time.monotonic()
    board.start(family)
    try:
        build(family, log_dir, lambda compiled: board.update(family, compiled))
        state = "built"
    except (BuildFailed, OSError) as err:
        if _STOPPING.is_set():
            state = "stopped"
        else:
            state = "FAILED" if family.required else "failed (optional)"
            tail = (log_dir / f"{family.name}.log").read_text(errors="replace").splitlines()[-15:]
            board.say(f"could not build {family.name} {family.version}: {err}\n  " + "\n  ".join(tail)
                      + f"\n(full log: {log_dir / family.name}.log)")
    board.finish(family, state)
    return state, time.monotonic() - started


class _Board:
    """The progress of the builds running at once, on stderr: one line rewritten on a terminal, else a line
    every 30 s; a line when each starts and ends."""

    def __init__(self):
        self.lock = threading.Lock()
        self.interactive = sys.stderr.isatty()
        self.active: dict[str, tuple[Family, float, int]] = {}
        self.last_line = 0.0

    def start(self, family: Family) -> None:
        with self.lock:
            self.active[family.name] = (family, time.monotonic(), 0)
            self._line(f"building {family.name} {family.version} ({', '.join(family.programs)}) ...")

    def update(self, family: Family, compiled: int) -> None:
        with self.lock:
            _, started, _ = self.active[family.name]
            self.active[family.name] = (family, started, compiled)
            now = time.monotonic()
            status = "; ".join(f"building {f.name} {f.version}: {n} packages compiled, {now - s:.0f}s"
                               for f, s, n in self.active.values())
            if self.interactive:
                print("\r\033[K" + status, end="", file=sys.stderr, flush=True)
            elif now - self.last_line >= 30:
                self.last_line = now
                print(status, file=sys.stderr, flush=True)

    def finish(self, family: Family, state: str) -> None:
        with self.lock:
            _, started, _ = self.active.pop(family.name)
            self._line(f"{family.name} {family.version}: {state} in {time.monotonic() - started:.0f}s")

    def say(self, text: str) -> None:
        with self.lock:
            self._line(text)

    def close(self) -> None:
        if self.interactive:
            print("\r\033[K", end="", file=sys.stderr, flush=True)

    def _line(self, text: str) -> None:
        print(("\r\033[K" if self.interactive else "") + text, file=sys.stderr, flush=True)


def _stop_all() -> None:
    """Ctrl-C or SIGTERM: no `go build` starts any more, and every running one is killed with its compilers."""
    with _RUNNING_LOCK:
        _STOPPING.set()
        for process in _RUNNING:
            _kill_group(process)
