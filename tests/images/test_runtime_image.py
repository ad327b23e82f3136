"""The runtime image runs as the generated pods run it: runc, a read-only root, /tmp a tmpfs (the pods'
scratch emptyDir, also HOME), every capability dropped, no new privileges, the profile's default uid
10000 (which the image does not know), the image's own entrypoint (contract.RUNTIME_COMMAND).

Needs the image (`make images`), runc, umoci and root: without them the tests say so and are skipped
(a failure under TFJOBGEN_REQUIRE_TOOLS=1). The unpacked bundle and runc's state are removed whatever
happens: success, failure or Ctrl-C.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import need, uses

from tfjobgen.artifacts.images import catalog, oci, store
from tfjobgen.shared import contract

POD_UID = 10000  # schemas/clusterprofile.schema.json's runAsUser default


@uses("images")
def runtime_image() -> store.BuiltImage:
    image = store.built(catalog.RUNTIME)
    need("the tfjobgen-runtime image", "built" if image else None,
         f"run `make images` (images go to {store.cache_root()})")
    need("runc", shutil.which("runc"), "apt-get install runc")
    need("umoci", shutil.which("umoci"), "apt-get install umoci")
    need("root", "root" if os.geteuid() == 0 else None, "runc runs the image as root here")
    return image


@pytest.fixture(scope="module")
def bundle():
    """The image unpacked into a runc bundle (rootfs only: `umoci raw unpack`), removed at the end."""
    image = runtime_image()
    folder = Path(tempfile.mkdtemp(prefix="tfjobgen-image-bundle-"))
    try:
        subprocess.run(["umoci", "raw", "unpack", "--image", f"{image.layout}:{image.tag}", str(folder / "rootfs")],
                       check=True, capture_output=True, timeout=600)
        subprocess.run(["runc", "spec", "--bundle", str(folder)], check=True, capture_output=True)
        yield image, folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def image_config(image: store.BuiltImage) -> dict:
    _, manifest = oci.manifest(image.layout, image.tag)
    return json.loads(oci.blob(image.layout, manifest["config"]["digest"]).read_text())["config"]


def run_in(image: store.BuiltImage, folder: Path, uid: int, args: list[str]) -> subprocess.CompletedProcess:
    """runc run: the image's env and entrypoint (`args` after it), the pods' security context."""
    config = json.loads((folder / "config.json").read_text())
    process = config["process"]
    process.update(terminal=False, args=list(image_config(image)["Entrypoint"]) + args, cwd="/",
                   user={"uid": uid, "gid": uid, "additionalGids": [uid]}, noNewPrivileges=True,
                   env=image_config(image)["Env"] + [f"HOME={contract.SCRATCH_DIR}", "TF_CPP_MIN_LOG_LEVEL=2"],
                   capabilities={k: [] for k in ("bounding", "effective", "inheritable", "permitted", "ambient")})
    process.pop("oomScoreAdj", None)
    config["root"] = {"path": "rootfs", "readonly": True}  # readOnlyRootFilesystem: true
    config["mounts"].append({"destination": contract.SCRATCH_DIR, "type": "tmpfs", "source": "tmpfs",
                             "options": ["nosuid", "nodev", "mode=1777", "size=256m"]})
    config["hostname"] = "tfjobgen-image-test"
    (folder / "config.json").write_text(json.dumps(config))
    state, name = folder.parent / f"{folder.name}-runc", f"tfjobgen-test-{os.getpid()}"
    try:
        return subprocess.run(["runc", "--root", str(state), "run", "--bundle", str(folder), name],
                              capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    finally:
        subprocess.run(["runc", "--root", str(state), "delete", "--force", name], capture_output=True)
        shutil.rmtree(state, ignore_errors=True)


def test_the_image_runs_tfjobgens_runtime_as_a_numeric_non_root_user():
    image = runtime_image()
    config = image_config(image)
    assert tuple(config["Entrypoint"]) == contract.RUNTIME_COMMAND
    assert config["User"] == "65532:65532", "numeric: runAsNonRoot can check it"
    assert image.archive.is_file() and image.digest.startswith("sha256:")


def test_sample_data_runs_as_the_pods_uid_on_a_read_only_root(bundle):
    image, folder = bundle
    done = run_in(image, folder, POD_UID, ["sample-data", "/tmp/x", "--examples", "10"])
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
