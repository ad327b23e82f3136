"""Where built images live, and how other code finds them: `built(name)`, `require(name)`.

One folder per image under the cache (~/.cache/tfjobgen/images, TFJOBGEN_IMAGES_CACHE to move it),
outside the clone, so a fresh clone on the same machine builds nothing:

    <name>/layout/         the OCI image layout (`skopeo copy oci:<name>/layout ...`, `umoci unpack`)
    <name>/image.tar       the same as one file: `ctr -n k8s.io images import --base-name REPOSITORY FILE`,
                           `skopeo copy oci-archive:FILE docker://...`
    <name>/packages.txt    what is inside: Debian packages and Python distributions, one per line
    <name>/image.json      name, tag, reference, manifest digest, sizes, built-at
    <name>/inputs.sha256   the digest of everything that went in (recipe.py): a changed input rebuilds
    debs/ wheelhouse/ pip/ the download caches (.deb files, pinned wheels, pip's HTTP cache)
    stages/                layers shared by builds: the Debian base, each image's dependencies
    logs/<name>.log        the last build's commands and their output

A folder appears whole or not at all: each build writes a staging folder beside it and renames it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
from pathlib import Path

CACHE_ENV = "TFJOBGEN_IMAGES_CACHE"
INPUTS_FILE = "inputs.sha256"


class ImageMissing(Exception):
    """An image other code needs is not built; the message says how to build it."""


def check_cache(writing: bool) -> Path:
    """The cache folder, checked for what the caller does (programs.check_cache: the one check of both caches)."""
    from ..programs import check_cache as check

    return check(cache_root(), CACHE_ENV, "images", writing)


@dataclasses.dataclass(frozen=True)
class BuiltImage:
    name: str  # catalog name, e.g. tfjobgen-runtime
    tag: str
    reference: str  # what a container runtime calls it (catalog.reference)
    digest: str  # the manifest's, sha256:...
    compressed_bytes: int  # config + gzip layers, what a pull moves
    uncompressed_bytes: int  # the layers' tar bytes, about what a node's disk holds
    built_at: str  # UTC, ISO 8601
    folder: Path

    @property
    def layout(self) -> Path:
        """The OCI image layout directory (its one tag is `tag`)."""
        return self.folder / "layout"

    @property
    def archive(self) -> Path:
        """The layout as one tar (an oci-archive)."""
        return self.folder / "image.tar"

    @property
    def packages(self) -> Path:
        return self.folder / "packages.txt"

    @property
    def repository(self) -> str:
        return self.reference.rsplit(":", 1)[0]


def cache_root() -> Path:
    from ...kit import caches

    return caches.folder("images", CACHE_ENV)


def folder(name: str) -> Path:
    return cache_root() / name


def built(name: str) -> BuiltImage | None:
    """The image as `make images` last built it, or None. (It may be older than the clone's sources:
    `make images` rebuilds it when an input changed.)"""
    from . import catalog

    catalog.check(name)
    where = folder(name)
    try:
        meta = json.loads((where / "image.json").read_text())
    except (OSError, ValueError):
        return None
    if unreadable(meta):
        return None
    image = BuiltImage(name=meta["name"], tag=meta["tag"], reference=meta["reference"], digest=meta["digest"],
                       compressed_bytes=meta["compressed_bytes"], uncompressed_bytes=meta["uncompressed_bytes"],
                       built_at=meta["built_at"], folder=where)
    if not (image.archive.is_file() and (image.layout / "index.json").is_file()):
        return None
    return image


_META_TYPES = {"name": str, "tag": str, "reference": str, "digest": str, "compressed_bytes": int,
               "uncompressed_bytes": int, "built_at": str}


def unreadable(meta) -> str:
    """What is wrong with an image.json's content, or "": install() writes an object of _META_TYPES' fields (a
    file of another shape, edited or of another version, is as good as none: a build replaces it)."""
    if not isinstance(meta, dict):
        return f"holds JSON {type(meta).__name__}, not the object `images build` writes"
    for key, kind in _META_TYPES.items():
        if not isinstance(meta.get(key), kind) or isinstance(meta.get(key), bool):
            return f"its {key!r} is {'missing' if key not in meta else type(meta[key]).__name__}, not {kind.__name__}"
    return ""


def problem_of(name: str) -> str:
    """Why the image's image.json is there and unused ("" when it is absent or fine): for a listing to say."""
    path = folder(name) / "image.json"
    try:
        meta = json.loads(path.read_text())
    except FileNotFoundError:
        return ""
    except (OSError, ValueError) as err:
        return f"{path}: cannot read it ({getattr(err, 'strerror', None) or err})"
    problem = unreadable(meta)
    return f"{path}: {problem}" if problem else ""


def require(name: str) -> BuiltImage:
    """The built image, or ImageMissing whose message says to run `make images`."""
    image = built(name)
    if image is None:
        from . import catalog

        raise ImageMissing(f"the image {catalog.reference(name)} is not built: run `make images` "
                           f"(images go to {cache_root()})")
    return image


def inputs_of(name: str) -> str:
    """The input digest the built image was made from ("" when none is built)."""
    try:
        return (folder(name) / INPUTS_FILE).read_text().strip()
    except OSError:
        return ""


def staging(name: str) -> Path:
    """A fresh folder beside the image's, to build in (`install` renames it into place)."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))


def install(staged: Path, name: str, meta: dict, inputs: str) -> BuiltImage:
    """Finish a staged image (image.json, inputs.sha256) and rename it into place, replacing the old one."""
    (staged / "image.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    (staged / INPUTS_FILE).write_text(inputs + "\n")
    target = folder(name)
    if target.exists():
        old = target.with_name(f".{name}-old-{os.getpid()}")
        target.rename(old)
        staged.rename(target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        staged.rename(target)
    image = built(name)
    assert image is not None, f"{target}: installed but unreadable"
    return image
