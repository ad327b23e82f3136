"""The Go programs `make cluster-tools` builds: which versions, and where their binaries are.

cluster-tools/versions.yaml names every family of programs (Kubernetes, etcd, KWOK, the
controllers); cluster-tools/<family>/ is the Go module each is built in. Built binaries live
outside the clone, one folder per family and version, with a digest of the recipe (go.mod,
go.sum, link flags) beside them: a fresh clone on the same machine finds them and builds
nothing, and a changed recipe is rebuilt rather than silently reused. go_build.py builds them.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

from ..inputs.profile import release
from ..shared import package_data

REPO = Path(__file__).resolve().parents[3]
# The recipes: a wheel carries them (an installed tfjobgen builds and finds the same programs), a checkout has them
# at its root (shared/package_data.py).
TOOLS_DIR = Path(package_data.find("cluster-tools"))
VERSIONS_FILE = TOOLS_DIR / "versions.yaml"
CACHE_ENV = "TFJOBGEN_TOOLS_CACHE"
RECIPE_FILE = "recipe.sha256"
LOCAL = "local"  # the version of a family that is a program of ours (its module is its folder), not an upstream release


class ToolsMissing(Exception):
    """A program the cluster needs was not built; the message says how to build it."""


class CacheUnusable(Exception):
    """One line: a cache of built programs or images is a file, or cannot be written where a build must write."""


def check_cache(root: Path, variable: str, what: str, writing: bool) -> Path:
    """A cache folder (the programs', the images'), checked for what the caller does: a file there is refused
    (nothing can be built or found in it); a build must be able to write there, a listing writes nothing (so a
    read-only cache lists)."""
    import os

    if root.exists() and not root.is_dir():
        raise CacheUnusable(f"the {what} cache {root} is a file, not a folder: remove it, or point {variable} at a "
                            "folder")
    if writing:
        existing = next((p for p in (root, *root.parents) if p.exists()), root)
        if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
            raise CacheUnusable(f"cannot write to the {what} cache {root} ({existing} is "
                                f"{'read-only for this user' if existing.is_dir() else 'a file'}): point {variable} "
                                "at a folder you can write")
    return root


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
    "act": lambda version: [f"-X main.version={version}"],
    "kube-router": lambda version: [f"-X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version={version}"],
    "prometheus": lambda version: [f"-X github.com/prometheus/common/version.Version={version.lstrip('v')}"],
    # the server's module is tagged v0.MMM.P for release M.MM.P (v0.305.0: 3.5.0)
    "prometheus-server": lambda version: [
        "-X github.com/prometheus/common/version.Version="
        f"{int(version.split('.')[1]) // 100}.{int(version.split('.')[1]) % 100}.{version.split('.')[2]}"],
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
