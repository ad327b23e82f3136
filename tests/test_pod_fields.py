"""The intent's pod fields (volumes and mounts, pull secrets, podMetadata, nodeSelector, tolerations) are held
to the API server's validation, so that what the server would refuse is refused at validate, on its line;
and they land where they belong: pod labels and annotations on the pods only, on every backend.

The cases and the server's verdicts are tests/pod_field_cases.py; tests/cluster/test_api_server_agrees.py
sends each to a real kube-apiserver and holds these verdicts to its answers. What tfjobgen refuses of its
own (keys it reads back, placements that break the topology) is in tests/refusals.
"""

from __future__ import annotations

import json

import pytest
from conftest import REPO, problems_of, render
from jobs import job_yaml
from pod_field_cases import CASES


def with_fields(fields: dict) -> str:
    """A job with these spec fields, in JSON (flow style YAML), one line each before roles."""
    extra = "".join(f"  {key}: {json.dumps(value)}\n" for key, value in fields.items())
    return job_yaml().replace("  roles:\n", extra + "  roles:\n", 1)


def field_errors(fields: dict, tmp_path) -> list:
    return [p for p in problems_of(with_fields(fields), tmp_path) if p.is_error]


def admitted(fields: dict, tmp_path) -> bool:
    """tfjobgen's verdict: True when validate admits the job, as the API server would what it becomes."""
    errors = field_errors(fields, tmp_path)
    assert all(p.field.split(".")[1].split("[")[0] in fields for p in errors), [p.format() for p in errors]
    return not errors


@pytest.mark.parametrize("what, fields, expected", CASES, ids=[c[0] for c in CASES])
def test_pod_fields_as_the_api_server_judges_them(what, fields, expected, tmp_path):
    assert admitted(fields, tmp_path) == expected, [p.format() for p in field_errors(fields, tmp_path)]


GPU_MONITORING = REPO / "tests" / "golden" / "gpu-monitoring" / "profile.yaml"  # a profile with monitoring on


def _pod_templates(obj: dict) -> list[dict]:
    spec = obj.get("spec") or {}
    found = [spec["template"]] if obj["kind"] in ("Job", "Deployment") else []
    found += [r["template"]["spec"]["template"] for r in spec.get("replicatedJobs", [])]
    found += [r["template"] for r in (spec.get("tfReplicaSpecs") or {}).values()]
    return found


@pytest.mark.parametrize("backend", ["native", "jobset", "tfjob"])
def test_pod_metadata_lands_on_the_training_pods_and_nowhere_else(backend, tmp_path):
    """Issue 32: an annotation meant for the pods (sidecar.istio.io/inject) written as metadata.annotations landed
    on the Jobs, the ConfigMap, the Service and the PodMonitor; spec.podMetadata's lands on every training pod,
    and on no object, whatever carries the pods."""
    job = tmp_path / "job.yaml"
    job.write_text(with_fields({"backend": backend, "podMetadata": {
        "annotations": {"sidecar.istio.io/inject": "false"}, "labels": {"example.com/mesh": "off"}}}))
    objects = render(job, profile=GPU_MONITORING)
    assert {"PodMonitor", "ConfigMap"} <= {o["kind"] for o in objects}  # and native's Service
    templates = []
    for obj in objects:
        meta = obj["metadata"]
        assert "sidecar.istio.io/inject" not in meta.get("annotations", {}), f"on the {obj['kind']}"
        assert "example.com/mesh" not in meta.get("labels", {}), f"on the {obj['kind']}"
        templates += [t for t in _pod_templates(obj) if "tfjobgen.dev/role" in t["metadata"]["labels"]]
    assert {t["metadata"]["labels"]["tfjobgen.dev/role"] for t in templates} == {"ps", "worker", "chief"}
    for template in templates:
        assert template["metadata"]["annotations"]["sidecar.istio.io/inject"] == "false"
        assert template["metadata"]["labels"]["example.com/mesh"] == "off"
