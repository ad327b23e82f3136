"""The plugin's sidecar as a container: `cluster up --argocd REPO --argocd-plugin-image`.

What repo-server-patch.yaml makes of the tfjobgen-argocd-plugin image in a pod, run here by runc (no
container runtime serves the local cluster's pods; runc is what `make images` and the node tier use):

- the image's root file system (`make images`' OCI layout, `umoci raw unpack`ed once per cluster), read-only;
- /var/run/argocd/argocd-cmp-server: Argo CD's own binary (the argocd family's build, the one the
  repo-server runs), mounted read-only where the repo-server's copyutil puts it in a pod; started by that
  name, as the patch's `command:` does, so it reads the image's plugin.yaml at
  /home/argocd/cmp-server/config/plugin.yaml;
- /home/argocd/cmp-server/plugins: the folder the repo-server finds the plugin's socket in (the pod's
  shared `plugins` volume);
- /tmp: a tmpfs (the patch's emptyDir); uid and gid 999, no capabilities, no new privileges;
- namespaces of its own (runc's default but the PID one: mount, IPC, UTS and network, a loopback only).

`runc run` stays in the foreground under a small supervisor (supervise), the cluster's process: `cluster
down`'s SIGTERM makes it kill the container, which runc then removes with its cgroups. runc's state is
under the cluster's folder, so nothing of it outlives `cluster down`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

UID = 999  # Argo CD runs plugin sidecars as its argocd user (recipe.ARGOCD_USER)
BINARY = "/var/run/argocd/argocd-cmp-server"
PLUGINS = "/home/argocd/cmp-server/plugins"


class SidecarError(Exception):
    """The image, runc or umoci is missing, or the image cannot be unpacked."""


def image():
    """The built plugin image (store.BuiltImage), or SidecarError saying how to get one."""
    from ...artifacts.images import catalog, store

    built = store.built(catalog.PLUGIN)
    if built is None:
        raise SidecarError(f"--argocd-plugin-image: no {catalog.PLUGIN} image in {store.cache_root()}: run "
                           f"`tfjobgen images build {catalog.PLUGIN}` (make images) first")
    lacking = [tool for tool in ("runc", "umoci") if shutil.which(tool) is None]
    if lacking:
        raise SidecarError(f"--argocd-plugin-image needs {' and '.join(lacking)} (apt-get install {' '.join(lacking)})")
    if os.geteuid() != 0:
        raise SidecarError("--argocd-plugin-image runs the image with runc, which needs root here")
    return built


def command(folder: Path, argocd_binary: Path, plugins: Path, marker: tuple[str, str], log_args: list[str]) -> list[str]:
    """`runc run` of the sidecar: the image unpacked into `folder`/bundle, its config written, the socket folder
    `plugins` made writable by uid 999. `marker`: the environment entry `cluster down` finds processes by."""
    from ...artifacts.images import oci

    built = image()
    bundle = folder / "bundle"
    if not (bundle / "rootfs").is_dir():
        bundle.mkdir(parents=True, exist_ok=True)
        unpacked = subprocess.run(["umoci", "raw", "unpack", "--image", f"{built.layout}:{built.tag}",
                                   str(bundle / "rootfs")], capture_output=True, text=True, timeout=600)
        if unpacked.returncode != 0:
            raise SidecarError(f"umoci raw unpack {built.layout}: {unpacked.stderr.strip()[-500:]}")
    spec = subprocess.run(["runc", "spec", "--bundle", str(bundle)], capture_output=True, text=True, timeout=60)
    if spec.returncode != 0 and not (bundle / "config.json").is_file():
        raise SidecarError(f"runc spec: {spec.stderr.strip()}")
    _, manifest = oci.manifest(built.layout, built.tag)
    env = json.loads(oci.blob(built.layout, manifest["config"]["digest"]).read_text())["config"].get("Env", [])
    config = json.loads((bundle / "config.json").read_text())
    config["process"].update(
        terminal=False, args=[BINARY, *log_args], cwd="/home/argocd", noNewPrivileges=True,
        user={"uid": UID, "gid": UID, "additionalGids": [UID]}, env=[*env, "TMPDIR=/tmp", "=".join(marker)],
        capabilities={k: [] for k in ("bounding", "effective", "inheritable", "permitted", "ambient")})
    config["process"].pop("oomScoreAdj", None)
    config["root"] = {"path": "rootfs", "readonly": True}  # readOnlyRootFilesystem: true
    config["hostname"] = "tfjobgen-cmp"
    # No PID namespace: there the cmp-server would be PID 1, which ignores SIGTERM (it sets no handler), and
    # only a SIGKILL of runc and it together would end it, leaving runc's cgroup behind. A pod's container is
    # PID 1 too; the kubelet kills it after the grace period, as `cluster down` would.
    config["linux"]["namespaces"] = [n for n in config["linux"]["namespaces"] if n["type"] != "pid"]
    config["mounts"] += [
        {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev", "mode=1777"]},
        {"destination": BINARY, "type": "bind", "source": str(argocd_binary), "options": ["rbind", "ro"]},
        {"destination": PLUGINS, "type": "bind", "source": str(plugins), "options": ["rbind", "rw"]}]
    (bundle / "config.json").write_text(json.dumps(config))
    os.chown(plugins, UID, UID)
    name = "tfjobgen-cmp-" + hashlib.sha256(str(folder).encode()).hexdigest()[:12]  # one per cluster
    runc = shutil.which("runc") or "runc"
    state = str(folder / "runc")
    return [sys.executable, "-m", __name__, runc, state, name, "--",
            runc, "--root", state, "run", "--bundle", str(bundle), name]


def environment() -> dict[str, str]:
    """What command()'s supervisor needs in the cluster's clean environment: this tfjobgen importable."""
    return {"PYTHONPATH": str(Path(__file__).resolve().parents[3])}


def supervise(runc: str, state: str, name: str, run: list[str]) -> int:
    """`runc run`, ended for good on SIGTERM or SIGINT: argocd-cmp-server only removes its socket on SIGTERM and
    keeps serving, and a SIGKILL of runc with it (what `cluster down` does after its grace) would leave the
    container's cgroups behind. So the container gets SIGKILL from runc, which then removes it and its cgroups."""
    child = subprocess.Popen(run, stdin=subprocess.DEVNULL)

    def stop(signum, frame) -> None:
        subprocess.run([runc, "--root", state, "kill", name, "KILL"], capture_output=True, timeout=30)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    code = child.wait()
    subprocess.run([runc, "--root", state, "delete", "--force", name], capture_output=True, timeout=30)
    return code


def describe() -> str:
    """Which image runs, for `cluster up`'s progress line and the state."""
    built = image()
    return f"{built.name}:{built.tag} ({built.digest[:19]})"


if __name__ == "__main__":  # command()'s supervisor: RUNC STATE NAME -- RUNC-RUN-COMMAND...
    sys.exit(supervise(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[5:]))
