"""Building the programs of programs.py from their Go modules into the cache: `tfjobgen cluster tools`,
`make cluster-tools`. Each family's build is atomic (a failed one leaves nothing) and logged.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .programs import LOCAL, RECIPE_FILE, VERSIONS_FILE, Family, cache_root, families


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
    source = _module_dir(family, env)
    for path in family.assets:
        origin, copy = source / path, target / path
        copy.parent.mkdir(parents=True, exist_ok=True)
        if origin.is_dir():
            shutil.copytree(origin, copy)
        else:
            shutil.copyfile(origin, copy)
    for path in target.rglob("*"):  # the module cache is read-only; the copies need not be
        path.chmod(0o755 if path.is_dir() else 0o644)


def _module_dir(family: Family, env: dict) -> Path:
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
    shutil.copytree(_module_dir(family, env), copy)
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
    process = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log,
                               stderr=subprocess.PIPE, text=True)
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
        if process.poll() is None:
            process.kill()
            process.wait()


class BuildFailed(Exception):
    pass


def chosen(found: list[Family], named: list[str], on_request: bool = False) -> list[Family]:
    """The families a build takes, in versions.yaml's order: those named, and with on_request every family
    marked `on_request: true`; with neither, every family but those (what `make cluster-tools` builds)."""
    if not named and not on_request:
        return [f for f in found if not f.on_request]
    return [f for f in found if f.name in named or on_request and f.on_request]


def build_all(only: list[str], list_only: bool = False, on_request: bool = False) -> int:
    from ..kit import table

    chosen_families = chosen(families(), only, on_request)
    unknown = set(only) - {f.name for f in families()}
    if unknown:
        print(f"tfjobgen cluster tools: no family {', '.join(sorted(unknown))} in {VERSIONS_FILE}", file=sys.stderr)
        return 2
    if not list_only and shutil.which("go") is None and not all(f.is_built() for f in chosen_families):
        print("tfjobgen cluster tools: the go command is not on PATH (Go 1.24 or newer builds these)", file=sys.stderr)
        return 1
    log_dir = cache_root() / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    rows, failed_required = [], False
    for family in chosen_families:
        started = time.monotonic()
        if family.is_built():
            state = "built"
        elif list_only:
            state = "not built"
        else:
            state = _build_with_progress(family, log_dir)
            failed_required |= state != "built" and family.required
        rows.append([family.name, family.version, ", ".join(family.programs), state,
                     f"{time.monotonic() - started:.0f}s" if not list_only else "-"])
    print(table.render(["FAMILY", "VERSION", "PROGRAMS", "STATE", "TIME"], rows))
    print(f"binaries in {cache_root()}")
    return 1 if failed_required else 0


def _build_with_progress(family: Family, log_dir: Path) -> str:
    started = time.monotonic()
    interactive = sys.stderr.isatty()
    last_print = [0.0]

    def progress(compiled: int) -> None:
        elapsed = time.monotonic() - started
        if interactive:
            print(f"\rbuilding {family.name} {family.version}: {compiled} packages compiled, {elapsed:.0f}s",
                  end="", file=sys.stderr, flush=True)
        elif elapsed - last_print[0] >= 30:
            last_print[0] = elapsed
            print(f"building {family.name} {family.version}: {compiled} packages compiled, {elapsed:.0f}s",
                  file=sys.stderr, flush=True)

    print(f"building {family.name} {family.version} ({', '.join(family.programs)}) ...", file=sys.stderr, flush=True)
    try:
        build(family, log_dir, progress)
    except (BuildFailed, OSError) as err:
        tail = (log_dir / f"{family.name}.log").read_text(errors="replace").splitlines()[-15:]
        print(("\n" if interactive else "") + f"could not build {family.name} {family.version}: {err}\n  "
              + "\n  ".join(tail) + f"\n(full log: {log_dir / family.name}.log)", file=sys.stderr)
        return "FAILED" if family.required else "failed (optional)"
    if interactive:
        print(file=sys.stderr)
    return "built"
