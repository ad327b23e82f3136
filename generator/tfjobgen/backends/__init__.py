"""Backends: which Kubernetes objects carry a planned job.

A backend is one module with `render(plan: JobPlan) -> list[dict]`. To add
one (JobSet, Kubeflow TFJob), write the module, register it here and add its
name to spec.backend's enum in schemas/trainingjob.schema.json.
"""

from __future__ import annotations

from ..plan import JobPlan
from . import native

BACKENDS = {
    "native": native.render,
}


def render(plan: JobPlan) -> list[dict]:
    return BACKENDS[plan.job.backend](plan)
