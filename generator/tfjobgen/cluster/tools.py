"""The cluster's programs: which versions, where their binaries are, and how they are built.

cluster-tools/versions.yaml names every family of programs (Kubernetes, etcd, KWOK, the
controllers); cluster-tools/<family>/ is the Go module each is built in. Built binaries live
outside the clone, one folder per family and version, with a digest of the recipe (go.mod,
go.sum, link flags) beside them: a fresh clone on the same machine finds them and builds
nothing, and a changed recipe is rebuilt rather than silently reused.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..inputs.profile import release

REPO = Path(__file__).resolve().parents[3]
TOOLS_DIR = REPO / "cluster-tools"
VERSIONS_FILE = TOOLS_DIR / "versions.yaml"
CACHE_ENV = "TFJOBGEN_TOOLS_CACHE"
RECIPE_FILE = "recipe.sha256"
LOCAL = "local"  # the version of a family that is a program of ours (its module is its folder), not an upstream release


class ToolsMissing(Exception):
    """A program the cluster needs was not built; the message says how to build it."""


class TooOld(Exception):
    """No release of a program's family works with the cluster's Kubernetes; the message says what it needs."""


@dataclasses.dataclass(frozen=True)
class Family:
    """Programs built from one Go module of ours (cluster-tools/<name>/)."""

    name: str
    module: str  # the upstream module the programs come from (or, version `local`, the family's own)
    version: str  # its release, as the family's go.mod requires it (or `local`)
    programs: dict[str, str]  # binary name -> Go package
    stamp: str = ""  # which version keys to set at link time ("" for none)
    required: bool = True  # False: a cluster can run without it
    toolchain: str = ""  # GOTOOLCHAIN for modules that need a newer Go than the machine's
    assets: tuple[str, ...] = ()  # files or folders of the module copied beside the binaries (CRDs, webhooks)
    edits: tuple[tuple[str, str, str], ...] = ()  # (file, old, new): changes to the module's source, compiled in
    release_of: str = ""  # another release of that family's programs, run when a cluster asks for it (--kubernetes)
    on_request: bool = False  # built only when named (`tfjobgen cluster tools NAME`), not by `make cluster-tools`
    needs_kubernetes: str = ""  # the oldest Kubernetes release its programs work with ("": every supported one)

    def runs_on(self, kubernetes: str) -> bool:
        """Whether a cluster of that Kubernetes release ("": the default) can run this family's programs."""
        return not kubernetes or not self.needs_kubernetes or release(kubernetes) >= release(self.needs_kubernetes)

    @property
    def release(self) -> str:
        """The minor release, "1.30" of v1.30.14."""
        return ".".join(self.version.lstrip("v").split(".")[:2])

    @property
    def folder(self) -> Path:
        return TOOLS_DIR / self.name

    @property
    def installed_in(self) -> Path:
        return cache_root() / f"{self.name}-{self.version}"

    def ldflags(self) -> str:
        flags = ["-s", "-w", *_STAMPS.get(self.stamp, lambda v: [])(self.version)]
        return " ".join(flags)

    def recipe(self) -> str:
        """A digest of everything the binaries depend on besides the Go toolchain's patch level."""
        digest = hashlib.sha256()
        for path in sorted(p for p in self.folder.rglob("*") if p.is_file()):
            digest.update(str(path.relative_to(self.folder)).encode() + b"\0" + path.read_bytes() + b"\0")
        digest.update(f"{self.ldflags()}\0{self.toolchain}\0{sorted(self.programs.items())}\0{self.assets}".encode())
        if self.edits:  # only then: the other families' recipes (and their built binaries) stay as they were
            digest.update(f"\0{self.edits}".encode())
        return digest.hexdigest()

    def asset(self, path: str) -> Path:
        """A file or folder of the module, as the build copied it (assets/<its path in the module>)."""
        return self.installed_in / "assets" / path

    def is_built(self) -> bool:
        stamp = self.installed_in / RECIPE_FILE
        return (stamp.is_file() and stamp.read_text().strip() == self.recipe()
                and all((self.installed_in / p).is_file() for p in self.programs))


def _kubernetes_stamp(version: str) -> list[str]:
    """The keys upstream's hack/lib/version.sh sets: Kueue and others parse the API server's version."""
    major, minor = version.lstrip("v").split(".")[:2]
    keys = {"gitVersion": version, "gitMajor": major, "gitMinor": minor, "gitTreeState": "clean",
            "buildDate": "1970-01-01T00:00:00Z"}
    return [f"-X {package}.{key}={value}" for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
            for key, value in keys.items()]


_STAMPS = {
    "kubernetes": _kubernetes_stamp,
    "kustomize": lambda version: [f"-X sigs.k8s.io/kustomize/api/provenance.version={version}"],
    "kube-router": lambda version: [f"-X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version={version}"],
}


def cache_root() -> Path:
    from ..kit import caches

    return caches.folder("cluster-tools", CACHE_ENV)


def families() -> list[Family]:
    import yaml

    with open(VERSIONS_FILE, encoding="utf-8") as handle:
        entries = yaml.safe_load(handle)
    return [Family(name=name, **{**entry, "assets": tuple(entry.get("assets", ())),
                                 "edits": tuple((e["file"], e["old"], e["new"]) for e in entry.get("edits", ()))})
            for name, entry in entries.items()]


def family_of(program: str, release: str = "") -> Family:
    """The family that builds `program`: the default one, or the one of that release ("1.30" or "v1.30.14")."""
    found = [f for f in families() if program in f.programs]
    default = next((f for f in found if not f.release_of), None)
    if not release or default is None:
        if default is None:
            raise KeyError(f"no family in {VERSIONS_FILE.name} builds {program!r}")
        return default
    for family in found:
        if release in (family.release, family.version, family.version.lstrip("v")):
            return family
    raise KeyError(f"{VERSIONS_FILE.name} has no release {release} of {program} "
                   f"(it has {', '.join(sorted({f.version for f in found}))})")


def releases(program: str) -> list[Family]:
    """Every family that builds `program`, the default first."""
    found = [f for f in families() if program in f.programs]
    return sorted(found, key=lambda f: (bool(f.release_of), f.version))


def family_for(program: str, kubernetes: str) -> Family:
    """The family whose `program` a cluster of that Kubernetes release runs: the default when the cluster
    meets its needs_kubernetes, else the newest other release of it that the cluster meets; TooOld when none."""
    found = releases(program)  # the default first
    fitting = [f for f in found if f.runs_on(kubernetes)]
    if not fitting:
        default = found[0]
        raise TooOld(f"{default.module} {default.version} needs Kubernetes {default.needs_kubernetes} or newer, "
                     f"and this cluster runs {kubernetes}")
    if fitting[0] is found[0]:
        return fitting[0]
    return max(fitting, key=lambda f: tuple(int(n) for n in f.version.lstrip("v").split(".")))


def program(name: str, release: str = "") -> Path:
    """The built binary `name` (of that release), or ToolsMissing saying how to build it."""
    family = family_of(name, release)
    if not family.is_built():
        how = f"`tfjobgen cluster tools {family.name}`" if family.on_request else "`make cluster-tools`"
        raise ToolsMissing(f"{name} ({family.module} {family.version}) is not built: run {how} "
                           f"(binaries go to {family.installed_in.parent})")
    return family.installed_in / name


def missing(names: list[str], kubernetes: str = "") -> list[str]:
    """The programs among `names` that are not built (in the release a cluster of that Kubernetes runs)."""
    return [n for n in names if not family_for(n, kubernetes).is_built()]


# ---- building ----------------------------------------------------------------------------------

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


def main(argv: list[str] | None = None) -> int:
    """`tfjobgen cluster tools`: build what is missing; list what is built."""
    import argparse

    parser = argparse.ArgumentParser(prog="tfjobgen cluster tools")
    parser.add_argument("--list", action="store_true", help="say what is built, build nothing")
    parser.add_argument("families", nargs="*", metavar="FAMILY",
                        help="only these (default: all but those built on request)")
    args = parser.parse_args(argv)
    return build_all(args.families, list_only=args.list)


def build_all(only: list[str], list_only: bool = False) -> int:
    from ..kit import table

    chosen = [f for f in families() if f.name in only or not only and not f.on_request]
    unknown = set(only) - {f.name for f in families()}
    if unknown:
        print(f"tfjobgen cluster tools: no family {', '.join(sorted(unknown))} in {VERSIONS_FILE}", file=sys.stderr)
        return 2
    if not list_only and shutil.which("go") is None and not all(f.is_built() for f in chosen):
        print("tfjobgen cluster tools: the go command is not on PATH (Go 1.24 or newer builds these)", file=sys.stderr)
        return 1
    log_dir = cache_root() / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    rows, failed_required = [], False
    for family in chosen:
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
