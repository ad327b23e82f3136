"""Pods for tests and benchmarks. Ending a KWOK pod: a KWOK pod runs no process, so the harness says how its
container ends, with the labels kwok.yaml's stages select on (cluster/plane/stages.py holds them). Finding a real
node's container process, to signal it as the kernel would (container_pid).
"""

from __future__ import annotations

from pathlib import Path

from ..cluster.plane.stages import FAIL_LABEL, SUCCEED_LABEL
from ..kube import api


def fail_pod(objects: api.Objects, namespace: str, pod: str, exit_code: int, reason: str = "Error") -> None:
    """End a running pod's container with `exit_code`, at once."""
    objects.patch("v1", "Pod", pod, {"metadata": {
        "labels": {FAIL_LABEL: "true"},
        "annotations": {f"{FAIL_LABEL}/exit-code": str(exit_code), f"{FAIL_LABEL}/reason": reason,
                        f"{FAIL_LABEL}/delay": "0", f"{FAIL_LABEL}/jitter-delay": "0"}}}, namespace)


def succeed_pod(objects: api.Objects, namespace: str, pod: str) -> None:
    """End a running pod's container with exit code 0."""
    objects.patch("v1", "Pod", pod, {"metadata": {"labels": {SUCCEED_LABEL: "true"}}}, namespace)


def container_pid(pod: dict) -> int:
    """The host PID of a real node's pod's (first) container's main process, found through its cgroup (the nodes'
    kubelets run under tfjg-n*/kubepods); LookupError when it has none."""
    uid = pod["metadata"]["uid"]
    container = pod["status"]["containerStatuses"][0]["containerID"].split("//")[-1]
    for procs in Path("/sys/fs/cgroup/pids").glob(f"tfjg-n*/kubepods/**/pod{uid}/{container}/cgroup.procs"):
        pids = [int(p) for p in procs.read_text().split()]
        if pids:
            return min(pids)
    raise LookupError(f"no process of container {container} of pod {pod['metadata']['name']}")
