"""The pod fields a TrainingJob cannot hold today, each read by one function.

Issue 32 adds volumes, pod annotations and labels, imagePullSecrets, per-role image and command,
and tolerations and nodeSelector to the schema. Until a field is there, its function reports the
source's value as needing a decision, naming the field that is missing and the closest one that
exists. When the schema gains one, its function here becomes the one that carries it (writing into
the intent through the same `Builder` the rest of the conversion uses); nothing else changes.
"""

from __future__ import annotations

from ..inputs.problems import field_path
from .report import DECIDE, DROPPED, Row

RESTRICTED = "restricted Pod Security refuses it, and tfjobgen's pods are restricted"


def volumes(pod: dict, pod_path: str, mounts: list, mounts_path: str) -> list[Row]:
    """spec.volumes and the container's volumeMounts: missing from the TrainingJob."""
    rows = []
    for i, volume in enumerate(pod.get("volumes") or []):
        where = field_path(pod_path, "volumes", i)
        kind = next((k for k in volume if k != "name"), "?") if isinstance(volume, dict) else "?"
        if kind == "hostPath":
            rows.append(Row(where, DROPPED, "", f"hostPath: {RESTRICTED}; put the data on a PersistentVolumeClaim"))
        else:
            rows.append(Row(where, DECIDE, "spec.volumes (missing)",
                            f"volume {volume.get('name', i)} ({kind}): a TrainingJob has no volumes yet; data on storage every pod reaches "
                            "(gs://, s3://, hdfs://) needs none"))
    for i, _ in enumerate(mounts or []):
        rows.append(Row(field_path(mounts_path, i), DECIDE, "spec.volumeMounts (missing)",
                        "a TrainingJob mounts no volumes yet"))
    return rows


def pod_metadata(meta: dict, meta_path: str) -> list[Row]:
    """The pod template's labels and annotations: a TrainingJob's land on every object, not on pods only."""
    rows = []
    for key in sorted((meta.get("annotations") or {})):
        where = field_path(meta_path, "annotations", key)
        if key == "scheduling.k8s.io/group-name":
            rows.append(Row(where, DROPPED, "", "the gang's PodGroup: tfjobgen's gang admission is the cluster "
                                                "profile's spec.gang"))
        else:
            rows.append(Row(where, DECIDE, "spec pod annotations (missing); closest metadata.annotations",
                            "metadata.annotations land on the generated objects, not the pods"))
    for key in sorted((meta.get("labels") or {})):
        rows.append(Row(field_path(meta_path, "labels", key), DECIDE, "spec pod labels (missing); closest metadata.labels",
                        "metadata.labels label every generated object as well as the pods"))
    for key in sorted(set(meta) - {"annotations", "labels"}):
        rows.append(Row(field_path(meta_path, key), DROPPED, "", "set by the API server or the operator"))
    return rows


def pull_secrets(pod: dict, pod_path: str) -> list[Row]:
    return [Row(field_path(pod_path, "imagePullSecrets"), DECIDE, "spec.imagePullSecrets (missing)",
                "a TrainingJob names no pull secrets yet; the namespace's default ServiceAccount can carry them")] \
        if "imagePullSecrets" in pod else []


def placement(pod: dict, pod_path: str) -> list[Row]:
    """nodeSelector, tolerations and affinity: tfjobgen places pods from the profile's pools and the topology."""
    rows = []
    for key in ("nodeSelector", "tolerations"):
        if key in pod:
            rows.append(Row(field_path(pod_path, key), DECIDE, f"spec {key} (missing); closest spec.topology.nodePools",
                            "a TrainingJob has no per-job placement yet: name a node pool of the cluster profile, "
                            "whose nodeSelector and tolerations every pod of the role gets"))
    if "affinity" in pod:
        rows.append(Row(field_path(pod_path, "affinity"), DECIDE, "spec.topology.mode",
                        "tfjobgen writes the affinity of the topology it is given (colocated, isolated, spread); "
                        "pick the one this affinity meant"))
    return rows


def per_role(role: str, what: str, where: str, chosen_from: str) -> Row:
    """An image, command or args of one role that differs from the job-wide one chosen."""
    return Row(where, DECIDE, f"spec.roles.{role}.{what} (missing); closest spec.{what}",
               f"a TrainingJob has one {what} for every role yet; the {chosen_from}'s was taken")
