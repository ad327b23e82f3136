"""Ending a KWOK pod, for tests and benchmarks: a KWOK pod runs no process, so the harness says how its
container ends, with the labels kwok.yaml's stages select on (cluster/plane/stages.py holds them).
"""

from __future__ import annotations

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
