"""What runs inside a build's private mount namespace: mounts, then steps, then nothing is left.

rootfs.run() starts `unshare --mount --propagation private --fork --kill-child -- python -m
tfjobgen.artifacts.images.inside SPEC`. The mounts made here (an overlay, bind mounts of the wheels, /dev,
/proc) belong to that namespace alone and vanish when its last process ends, on success, on a
failure or on Ctrl-C: nothing is ever left mounted on the host. Each child gets SIGKILL when this
process dies (PR_SET_PDEATHSIG), so a killed build leaves no process holding the namespace.

SPEC is JSON: {"root": PATH or null, "overlay": {"lower": [...], "upper": ..., "work": ...} or null,
"binds": [[host, in_root, read_only]], "env": {...}, "steps": [...]}; a step is one of
    {"run": [argv...]}                     a command in the root (chroot, `env -i` with "env"); with no
                                           root, on the host (mmdebstrap)
    {"append": "/etc/passwd", "text": ...} append to a file of the root
    {"install": HOST_FILE, "to": PATH, "mode": 0o644, "owner": [uid, gid]}
    {"mkdir": PATH, "mode": 0o755, "owner": [uid, gid]}
Argument lists only: no step goes through a shell.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _call(argv: list[str]) -> None:
    print("+ " + " ".join(argv), flush=True)
    code = subprocess.call(argv, preexec_fn=_die_with_parent)
    if code != 0:
        print(f"inside: `{argv[0]}` exited {code}", file=sys.stderr, flush=True)
        sys.exit(code if 0 < code < 128 else 1)


def _path(root: str, path: str) -> str:
    return os.path.join(root, path.lstrip("/"))


def main(spec: dict) -> None:
    os.environ.pop("PYTHONPATH", None)  # this package's path is for this process, not for what it runs
    root, overlay = spec.get("root"), spec.get("overlay")
    if overlay:
        options = f"lowerdir={':'.join(overlay['lower'])},upperdir={overlay['upper']},workdir={overlay['work']}"
        _call(["mount", "-t", "overlay", "overlay", "-o", options, root])
    if root:
        for host, inner, read_only in spec.get("binds", []):
            _call(["mount", "--bind", host, _path(root, inner)])
            if read_only:
                _call(["mount", "-o", "remount,bind,ro", _path(root, inner)])
        _call(["mount", "--rbind", "/dev", _path(root, "/dev")])  # /dev/null, /dev/shm (compileall -j)
        _call(["mount", "-t", "proc", "proc", _path(root, "/proc")])
    env = [f"{k}={v}" for k, v in sorted(spec.get("env", {}).items())]
    for step in spec["steps"]:
        if "run" in step:
            _call(["chroot", root, "/usr/bin/env", "-i", *env, *step["run"]] if root else step["run"])
        elif "append" in step:
            with open(_path(root, step["append"]), "a", encoding="utf-8") as handle:
                handle.write(step["text"])
        elif "install" in step:
            target = _path(root, step["to"])
            shutil.copyfile(step["install"], target)
            os.chmod(target, step["mode"])
            os.chown(target, *step["owner"])
        elif "mkdir" in step:
            target = _path(root, step["mkdir"])
            os.makedirs(target, exist_ok=True)
            os.chmod(target, step["mode"])
            os.chown(target, *step["owner"])
        else:
            raise SystemExit(f"inside: unknown step {step}")


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
