"""What moves a KWOK pod or node on to its next stage (kwok.yaml): the labels its stages select on.

A KWOK pod runs no process, so a test or a benchmark says how it ends; a node has no kubelet, so one
says it is lost. These write exactly what kwok.yaml's stages wait for.
"""

from __future__ import annotations

from .. import api

FAIL_LABEL = "pod-container-running-failed.stage.kwok.x-k8s.io"  # KWOK's chaos contract, with its annotations
SUCCEED_LABEL = "tfjobgen.dev/succeed"  # ours: kwok.yaml ends such a pod with exit 0
LOSE_NODE_LABEL = "node-not-ready.stage.kwok.x-k8s.io"  # KWOK's: the node turns NotReady


def fail_pod(objects: api.Objects, namespace: str, pod: str, exit_code: int, reason: str = "Error") -> None:
    """End a running pod's container with `exit_code`, at once."""
    objects.patch("v1", "Pod", pod, {"metadata": {
        "labels": {FAIL_LABEL: "true"},
        "annotations": {f"{FAIL_LABEL}/exit-code": str(exit_code), f"{FAIL_LABEL}/reason": reason,
                        f"{FAIL_LABEL}/delay": "0", f"{FAIL_LABEL}/jitter-delay": "0"}}}, namespace)


def succeed_pod(objects: api.Objects, namespace: str, pod: str) -> None:
    """End a running pod's container with exit code 0."""
    objects.patch("v1", "Pod", pod, {"metadata": {"labels": {SUCCEED_LABEL: "true"}}}, namespace)


def lose_node(objects: api.Objects, node: str) -> None:
    """The server is lost: NotReady, then tainted by the node lifecycle controller, its pods evicted."""
    objects.patch("v1", "Node", node, {"metadata": {"labels": {LOSE_NODE_LABEL: "true"}}})
