"""Root filesystems: Debian by mmdebstrap, changes in an overlay, and each as a reproducible layer tar.

A stage's changes are made in an overlay over the stages below (their folders as lowerdirs), so its
upper folder is exactly its layer: nothing walks the 1.7 GB below it to find what changed. Every
mount happens in a private mount namespace (inside.py): nothing stays mounted, whatever happens.

Reproducible: the base's files keep the mtimes of their .deb files, and what the build itself
touched is set to the stage's epoch; an overlay stage's files all get its epoch; GNU tar writes
names sorted, numeric owners, no atime or ctime.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from pathlib import Path

from . import recipe
from .steps import BuildFailed, Steps

ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LANG": "C.UTF-8",
       "PYTHONDONTWRITEBYTECODE": "1", "PIP_NO_CACHE_DIR": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def run(steps: Steps, spec: dict, env: dict | None = None) -> None:
    """inside.py's SPEC, in a private mount namespace that dies with this build (`env`: for host steps)."""
    package_root = Path(__file__).resolve().parents[3]
    steps.run(["unshare", "--mount", "--propagation", "private", "--fork", "--kill-child", "--",
               sys.executable, "-m", "tfjobgen.artifacts.images.inside", json.dumps(spec)],
              env={**(env or {}), "PYTHONPATH": str(package_root), "PYTHONDONTWRITEBYTECODE": "1"})


def debian(steps: Steps, target: Path, debs: Path) -> None:
    """Debian (recipe.SUITES, minbase, recipe.INCLUDE) into `target`, the .deb files cached in `debs`."""
    debs.mkdir(parents=True, exist_ok=True)
    argv = ["mmdebstrap", "--mode=root", f"--variant={recipe.VARIANT}", f"--include={','.join(recipe.INCLUDE)}",
            '--aptopt=Acquire::Languages "none"', *(f"--dpkgopt={o}" for o in recipe.DPKG_OPTIONS),
            # the .deb files stay outside: in before apt runs, out after it (essential/unlink would delete them)
            "--skip=essential/unlink", '--setup-hook=mkdir -p "$1"/var/cache/apt/archives/',
            f"--setup-hook=sync-in {debs} /var/cache/apt/archives/",
            f"--customize-hook=sync-out /var/cache/apt/archives {debs}",
            recipe.SUITES[0], str(target),
            *(f"deb {recipe.SECURITY_MIRROR if s.endswith('-security') else recipe.MIRROR} {s} main"
              for s in recipe.SUITES)]
    # SOURCE_DATE_EPOCH: mmdebstrap removes dpkg's and apt's logs and caches and empties machine-id
    run(steps, {"root": None, "steps": [{"run": argv}]}, env={"SOURCE_DATE_EPOCH": str(recipe.BASE_EPOCH)})
    for host_file in ("etc/resolv.conf", "etc/hostname"):  # the host's, copied in
        (target / host_file).unlink(missing_ok=True)
    for entry in (target / "dev").iterdir():  # runtimes mount /dev: no device nodes in a layer
        entry.unlink() if not entry.is_dir() or entry.is_symlink() else _remove_tree(entry)


def _remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path)


def add_user(root: Path, name: str, uid: int, home: str, shell: str) -> None:
    """useradd --user-group, written directly (the base has no shadow tools' locks to respect)."""
    day = recipe.BASE_EPOCH // 86400
    with open(root / "etc/passwd", "a") as handle:
        handle.write(f"{name}:x:{uid}:{uid}:{name}:{home}:{shell}\n")
    with open(root / "etc/group", "a") as handle:
        handle.write(f"{name}:x:{uid}:\n")
    with open(root / "etc/shadow", "a") as handle:
        handle.write(f"{name}:!:{day}:0:99999:7:::\n")


def clamp_newer(root: Path, since: float, epoch: int) -> int:
    """Set every mtime under `root` newer than `since` to `epoch`: what the build wrote, not what .debs
    unpacked (their mtimes are the packages': Debian's .pyc files check them). Returns how many."""
    count = 0
    for path in _walk(root):
        if os.lstat(path).st_mtime > since:
            os.utime(path, (epoch, epoch), follow_symlinks=False)
            count += 1
    return count


def clamp_all(root: Path, epoch: int) -> None:
    for path in _walk(root):
        os.utime(path, (epoch, epoch), follow_symlinks=False)


def _walk(root: Path):
    for folder, dirs, files in os.walk(root):
        yield folder
        for name in dirs + files:
            path = os.path.join(folder, name)
            if os.path.isdir(path) and not os.path.islink(path):
                continue  # yielded as a folder
            yield path
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]


def mark() -> float:
    """A time strictly before anything written from now on (mtimes have coarse ticks on some file systems)."""
    now = time.time()
    time.sleep(0.02)
    return now


def check_upper(upper: Path) -> None:
    """An upper folder holds only additions and changes: a deletion (an overlay whiteout) would need its
    .wh. entry in the layer, which no build here makes."""
    for path in _walk(upper):
        info = os.lstat(path)
        if stat.S_ISCHR(info.st_mode) and info.st_rdev == 0:
            raise BuildFailed(f"the stage deleted {Path(path).relative_to(upper)} from the layers below: "
                              "not supported in a layer")
        if stat.S_ISDIR(info.st_mode):
            try:
                opaque = os.getxattr(path, "trusted.overlay.opaque", follow_symlinks=False)
            except OSError:
                continue
            if opaque == b"y":
                raise BuildFailed(f"the stage replaced the folder {Path(path).relative_to(upper)}: not supported")


def tidy_upper(upper: Path) -> None:
    """What a build leaves that no image should hold: /tmp's files, root's caches."""
    import shutil

    for leftover in (upper / "root" / ".cache", *(upper / "tmp").glob("*")):
        if leftover.is_dir() and not leftover.is_symlink():
            shutil.rmtree(leftover)
        elif leftover.exists() or leftover.is_symlink():
            leftover.unlink()
    for folder in (upper / "root", upper / "tmp"):
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()


def layer_tar(steps: Steps, root: Path, target: Path, mtime: int | None = None) -> int:
    """`root`'s tree as a layer tar (names sorted, numeric owners, no atime/ctime); returns its size."""
    top = sorted(p.name for p in root.iterdir())
    listing = target.with_suffix(".list")
    listing.write_text("".join(f"{name}\n" for name in top))
    steps.run(["tar", "--create", "--file", target, "--directory", root, "--sort=name", "--format=posix",
               "--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime", "--numeric-owner",
               *([f"--mtime=@{mtime}"] if mtime is not None else []), "--files-from", listing])
    listing.unlink()
    return target.stat().st_size


def debian_packages(root: Path) -> list[str]:
    """`package version` of every installed Debian package, from dpkg's status file."""
    found, name, version, installed = [], "", "", False
    for line in (root / "var/lib/dpkg/status").read_text().splitlines() + [""]:
        if not line:
            if name and installed:
                found.append(f"{name} {version}")
            name, version, installed = "", "", False
        elif line.startswith("Package: "):
            name = line.split(": ", 1)[1]
        elif line.startswith("Version: "):
            version = line.split(": ", 1)[1]
        elif line.startswith("Status: "):
            installed = line.endswith(" installed")
    return sorted(found)


def python_packages(site: Path) -> list[str]:
    """`python:name version` of every distribution installed in a site-packages folder."""
    found = []
    for info in sorted(site.glob("*.dist-info")):
        fields = {}
        for line in (info / "METADATA").read_text(errors="replace").splitlines():
            if not line:
                break
            key, _, value = line.partition(": ")
            fields.setdefault(key, value)
        found.append(f"python:{fields.get('Name', info.name)} {fields.get('Version', '?')}")
    return found
