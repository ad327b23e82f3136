"""The metadata of every object a job becomes, whoever makes it: the backends, gang.py's PodGroup, the
add-ons (monitoring.py, tensorboard.py).

One rule for all of them, so every object of a job is named, placed and annotated alike: its name,
the job's namespace, its labels, and the annotations written on the intent, minus the bookkeeping
ones that describe the intent itself (kustomize's, kpt's, kubectl's).
"""

from __future__ import annotations

from ..inputs.trainingjob import TrainingJob

# Intent annotations that describe the intent itself, not its objects.
_BOOKKEEPING_PREFIXES = ("kustomize.config.k8s.io/", "config.kubernetes.io/", "internal.config.kubernetes.io/",
                         "config.k8s.io/", "kubectl.kubernetes.io/")


def of(job: TrainingJob, name: str, object_labels: dict) -> dict:
    """An object's metadata: its name, the job's namespace, its labels, the intent's own annotations."""
    meta = {"labels": object_labels, "name": name, "namespace": job.namespace}
    annotations = {k: v for k, v in job.annotations.items() if not k.startswith(_BOOKKEEPING_PREFIXES)}
    if annotations:
        meta["annotations"] = annotations
    return meta
