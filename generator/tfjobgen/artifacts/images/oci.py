"""OCI image layouts through umoci: a new image, a layer added, its config, its digest, one tar of it.

Layers are tars made here (rootfs.layer_tar); umoci gzips them (deterministically) and writes the
manifest and config. Every time umoci records comes from an argument, never the clock.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from .steps import Steps


def iso(epoch: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def new(steps: Steps, layout: Path, tag: str) -> None:
    """An empty image (no layer, an empty config) at layout:tag."""
    steps.run(["umoci", "init", "--layout", layout])
    steps.run(["umoci", "new", "--image", f"{layout}:{tag}"])


def copy(source: Path, target: Path) -> None:
    """A copy of a layout whose blobs are hard links (blobs are never written twice; umoci writes new ones
    and rewrites index.json, which is copied)."""
    (target / "blobs" / "sha256").mkdir(parents=True)
    for blob in (source / "blobs" / "sha256").iterdir():
        os.link(blob, target / "blobs" / "sha256" / blob.name)
    for name in ("oci-layout", "index.json"):
        shutil.copyfile(source / name, target / name)


def add_layer(steps: Steps, layout: Path, tag: str, layer: Path, created: int, created_by: str,
              new_tag: str = "") -> None:
    steps.run(["umoci", "raw", "add-layer", "--image", f"{layout}:{tag}", *(["--tag", new_tag] if new_tag else []),
               "--history.created", iso(created), "--history.created_by", created_by, layer])


def configure(steps: Steps, layout: Path, tag: str, created: int, user: str, env: dict[str, str],
              entrypoint: tuple[str, ...] = (), workdir: str = "/", labels: dict[str, str] | None = None) -> None:
    argv = ["umoci", "config", "--image", f"{layout}:{tag}", "--no-history", "--created", iso(created),
            "--author", "tfjobgen", "--config.user", user, "--config.workingdir", workdir]
    argv += [f"--config.env={k}={v}" for k, v in env.items()]
    argv += [f"--config.entrypoint={part}" for part in entrypoint]
    argv += [f"--config.label={k}={v}" for k, v in sorted((labels or {}).items())]
    steps.run(argv)


def remove_tag(steps: Steps, layout: Path, tag: str) -> None:
    steps.run(["umoci", "rm", "--image", f"{layout}:{tag}"])


def gc(steps: Steps, layout: Path) -> None:
    steps.run(["umoci", "gc", "--layout", layout])


def blob(layout: Path, digest: str) -> Path:
    return layout / "blobs" / digest.replace(":", "/", 1)


def manifest(layout: Path, tag: str) -> tuple[str, dict]:
    """The digest and the manifest of layout:tag."""
    for entry in json.loads((layout / "index.json").read_text())["manifests"]:
        if entry.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag:
            return entry["digest"], json.loads(blob(layout, entry["digest"]).read_text())
    raise KeyError(f"{layout}: no tag {tag}")


def compressed_bytes(layout: Path, tag: str) -> int:
    """What a pull moves: the config and the gzip layers."""
    _, found = manifest(layout, tag)
    return found["config"]["size"] + sum(layer["size"] for layer in found["layers"])


def archive(steps: Steps, layout: Path, target: Path, epoch: int) -> None:
    """The layout as one tar (an oci-archive: skopeo's oci-archive: transport, `ctr images import`)."""
    steps.run(["tar", "--create", "--file", target, "--directory", layout, "--sort=name", "--format=posix",
               "--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime", f"--mtime=@{epoch}",
               "--owner=0", "--group=0", "--numeric-owner", "oci-layout", "index.json", "blobs"])
