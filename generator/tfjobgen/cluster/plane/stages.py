"""What moves a KWOK pod or node on to its next stage (kwok.yaml): the labels its stages select on.

A KWOK pod runs no process, so a test or a benchmark says how it ends (harness/pods.py writes these labels);
a node has no kubelet, so `tfjobgen place` says it is lost (lose_node). Each writes exactly what kwok.yaml's
stages wait for.
"""

from __future__ import annotations

from ...kube import api

FAIL_LABEL = "pod-container-running-failed.stage.kwok.x-k8s.io"  # KWOK's chaos contract, with its annotations
SUCCEED_LABEL = "tfjobgen.dev/succeed"  # ours: kwok.yaml ends such a pod with exit 0
LOSE_NODE_LABEL = "node-not-ready.stage.kwok.x-k8s.io"  # KWOK's: the node turns NotReady


def lose_node(objects: api.Objects, node: str) -> None:
    """The server is lost: NotReady, then tainted by the node lifecycle controller, its pods evicted."""
    objects.patch("v1", "Node", node, {"metadata": {"labels": {LOSE_NODE_LABEL: "true"}}})
