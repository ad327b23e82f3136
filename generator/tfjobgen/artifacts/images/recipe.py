"""What goes into each image, and the digest of it: the key a built image or stage is found by.

Like cluster-tools' recipe.sha256: a digest of everything that goes in, so a changed input rebuilds
and an unchanged one is reused. The inputs are data here; build.py does what they say.

    base     Debian (SUITES, INCLUDE, the dpkg excludes) at BASE_EPOCH, the nonroot user
    deps     base + pyproject.toml's requirements of an image + constraints.txt + pip's pin
    runtime  runtime deps + tfjobgen's sources (the files its wheel is made of) + the commit's time
    plugin   plugin deps + tfjobgen's sources + kustomize's bytes + argocd/plugin/plugin.yaml
    single   one binary's bytes + where it goes + name and tag
    fixture  runtime deps + tf-keras + the team's training scripts (recipe.TEAM_SCRIPTS): no tfjobgen

What is not in a key: the Debian archive's state (a point release moves it; packages.txt says
what was installed), and the host's tools' versions (mmdebstrap, umoci, GNU tar).
"""

from __future__ import annotations

import hashlib
import subprocess
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[4]
# Bump when a build step changes what it writes: every image built before is rebuilt.
RECIPE_VERSION = "2"
BASE_EPOCH = 1735689600  # 2025-01-01T00:00:00Z: base and dependency layers keep their digests across commits
MIRROR = "http://deb.debian.org/debian"
SECURITY_MIRROR = "http://deb.debian.org/debian-security"
SUITES = ("bookworm", "bookworm-updates", "bookworm-security")
VARIANT = "minbase"
# python-is-python3: the pods run `python` (contract.RUNTIME_COMMAND); Debian has only python3 without it.
INCLUDE = ("python3", "python-is-python3", "ca-certificates", "netbase")
DPKG_OPTIONS = ("path-exclude=/usr/share/man/*", "path-exclude=/usr/share/info/*", "path-exclude=/usr/share/locale/*",
                "path-exclude=/usr/share/doc/*", "path-include=/usr/share/doc/*/copyright")
NONROOT = 65532  # the image's own user and group (distroless' nonroot); pods run as the profile's uid anyway
ARGOCD_USER = 999  # Argo CD runs plugin sidecars as its argocd user
PIP = "pip==25.3"  # runs from its wheel in the chroot: no pip in the images
PYTHON = "3.11"  # bookworm's python3: the wheels' cp311 tags
SITE_PACKAGES = f"/usr/local/lib/python{PYTHON}/dist-packages"
# What the dependencies install that no task uses, left out of the dependency layers (globs in SITE_PACKAGES):
# TensorFlow's C++ headers, 287 MB, for compiling custom ops (tf.sysconfig.get_include()). A fifth less for
# every node to unpack (docs/images.md). libclang (62 MB, which tensorflow-cpu requires for its own code
# generators) stays: the runtime image's `pip check` holds every requirement installed.
UNUSED = ("tensorflow/include",)


def _wheel_sources() -> tuple[str, ...]:
    """What the wheel is made of: pyproject.toml's sdist list (schemas, plugins, cluster-tools, the package ...),
    read from there so that a folder the wheel gains is in the image's key and its wheel build at once."""
    with open(REPO / "pyproject.toml", "rb") as handle:
        listed = tomllib.load(handle)["tool"]["hatch"]["build"]["targets"]["sdist"]["only-include"]
    return ("pyproject.toml", ".gitignore", *listed)


SOURCE_FILES = _wheel_sources()


def digest(*parts: tuple[str, bytes | str]) -> str:
    """sha256 of labelled parts (a label keeps two inputs from swapping places unnoticed)."""
    h = hashlib.sha256()
    for label, value in parts:
        data = value.encode() if isinstance(value, str) else value
        h.update(label.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    return h.hexdigest()


def file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def sources(repo: Path = REPO) -> list[Path]:
    """The files tfjobgen's wheel is made of, sorted, without caches."""
    found = []
    for name in SOURCE_FILES:
        path = repo / name
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found += [p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                      and p.suffix != ".pyc" and not any(part.endswith(".egg-info") for part in p.parts)]
    return sorted(found)


def source_digest(repo: Path = REPO) -> str:
    return digest(*((str(p.relative_to(repo)), p.read_bytes()) for p in sources(repo)))


def requirements(extras: tuple[str, ...], repo: Path = REPO) -> list[str]:
    """tfjobgen's dependencies with these extras, as pyproject.toml writes them (constraints.txt pins them)."""
    with open(repo / "pyproject.toml", "rb") as handle:
        project = tomllib.load(handle)["project"]
    found = list(project.get("dependencies", []))
    for extra in extras:
        found += project.get("optional-dependencies", {})[extra]
    return found


GIT = "git"  # build_all checks it is installed before anything reads a key


def commit_epoch(repo: Path = REPO) -> int:
    """HEAD's commit time: the epoch of tfjobgen's layer and of the image's `created` (BASE_EPOCH outside git)."""
    found = subprocess.run([GIT, "-C", str(repo), "log", "-1", "--format=%ct"], capture_output=True, text=True)
    return int(found.stdout.strip()) if found.returncode == 0 and found.stdout.strip().isdigit() else BASE_EPOCH


def revision(repo: Path = REPO) -> str:
    found = subprocess.run([GIT, "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True)
    return found.stdout.strip() if found.returncode == 0 else "unknown"


def base_key() -> str:
    return digest(("recipe", RECIPE_VERSION), ("epoch", str(BASE_EPOCH)), ("mirrors", f"{MIRROR} {SECURITY_MIRROR}"),
                  ("suites", " ".join(SUITES)), ("variant", VARIANT), ("include", ",".join(INCLUDE)),
                  ("dpkg", "\n".join(DPKG_OPTIONS)), ("nonroot", str(NONROOT)))


def deps_key(extras: tuple[str, ...], repo: Path = REPO) -> str:
    return digest(("base", base_key()), ("requirements", "\n".join(requirements(extras, repo))),
                  ("constraints", (repo / "constraints.txt").read_bytes()), ("pip", PIP),
                  ("unused", "\n".join(UNUSED)))


def runtime_key(command: tuple[str, ...], repo: Path = REPO) -> str:
    return digest(("deps", deps_key(("runtime",), repo)), ("sources", source_digest(repo)),
                  ("epoch", str(commit_epoch(repo))), ("revision", revision(repo)), ("command", "\0".join(command)))


def plugin_key(kustomize: Path, repo: Path = REPO) -> str:
    return digest(("deps", deps_key((), repo)), ("sources", source_digest(repo)),
                  ("epoch", str(commit_epoch(repo))), ("revision", revision(repo)),
                  ("kustomize", file_digest(kustomize)),
                  ("plugin.yaml", (repo / "argocd" / "plugin" / "plugin.yaml").read_bytes()),
                  ("argocd user", str(ARGOCD_USER)))


def single_binary_key(binary: Path, name: str, tag: str, entrypoint: tuple[str, ...], user: str) -> str:
    return digest(("recipe", RECIPE_VERSION), ("binary", file_digest(binary)), ("name", name), ("tag", tag),
                  ("entrypoint", "\0".join(entrypoint)), ("user", user), ("epoch", str(BASE_EPOCH)))


# The team fixture's programs: where each is in the image, and its source here. The node tier's own script, and
# the two examples of examples/ (a team's programs as docs/own-code.md shows them), trained on real nodes.
TEAM_SCRIPTS = {"/opt/team/train.py": Path("tests/nodes/team/train.py"),
                "/opt/team/examples/custom-loop/train.py": Path("examples/custom-loop/train.py"),
                "/opt/team/examples/keras-fit/train.py": Path("examples/keras-fit/train.py")}
# Keras 2 for the keras-fit example (docs/own-code.md): the release matching TensorFlow 2.21. Installed without its
# dependencies: it requires the `tensorflow` distribution, and the image holds tensorflow-cpu (the same modules).
TF_KERAS = "tf-keras==2.21.0"


def team_fixture_key(repo: Path = REPO) -> str:
    return digest(("deps", deps_key(("runtime",), repo)),
                  *((f"script {at}", (repo / source).read_bytes()) for at, source in sorted(TEAM_SCRIPTS.items())),
                  ("tf-keras", TF_KERAS), ("nonroot", str(NONROOT)))
