"""Backends: which Kubernetes objects carry a planned job, and how to read them back.

Each backend is one module with a `BACKEND` (see base.py for what it provides):
its naming, the checks of what it cannot express, `encode` (plan -> objects)
and `decode` (objects -> jobs, each task as the pod its controller creates).
Everything outside this package reads rendered objects only through `decode`.

Adding a backend: write the module, list it in BACKENDS below, add its name to
spec.backend's enum in schemas/trainingjob.schema.json, and it is held to the
tests every backend meets (tests/test_backends.py, tests/test_backend_objects.py).
Nothing outside this package branches on a backend's name (tests/test_layers.py):
what the rest needs to know of one is on its Backend (base.py).
native.py, jobset.py and tfjob.py are the three there are (docs/design.md, "Three backends"); base.py
declares what a backend provides, common.py the objects every backend emits alike (the Service, the
ConfigMap, the NetworkPolicy).
"""

from __future__ import annotations

import importlib

from ..concerns.pods import Pod
from .base import Backend, DecodedJob

# name -> module. A backend is imported when a job names it: the KRM function, started by every
# kustomize build, loads only the backends that build uses.
BACKENDS: dict[str, str] = {"native": ".native", "jobset": ".jobset", "tfjob": ".tfjob"}


def get(name: str) -> Backend:
    return importlib.import_module(BACKENDS[name], __name__).BACKEND


def decode(objects: list[dict]) -> list[DecodedJob]:
    """Every job found among rendered objects, whichever backend made it, sorted by namespace/name."""
    found = [job for name in BACKENDS for job in get(name).decode(objects)]
    return sorted(found, key=lambda job: (job.namespace, job.name))


def pods_of(objects: list[dict]) -> list[Pod]:
    """Every task's pod of every job among `objects`, in job order, then role and index."""
    return [pod for job in decode(objects) for pod in job.pods]


__all__ = ["BACKENDS", "Backend", "DecodedJob", "decode", "get", "pods_of"]
