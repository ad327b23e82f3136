"""The intent's pod fields (pull secrets, podMetadata, nodeSelector, tolerations) are held to the API
server's validation, so that what the server would refuse is refused at validate, on its line.

The cases and the server's verdicts are tests/pod_field_cases.py; tests/cluster/test_api_server_agrees.py
sends each to a real kube-apiserver and holds these verdicts to its answers. What tfjobgen refuses of its
own (keys it reads back, placements that break the topology) is in tests/refusals.
"""

from __future__ import annotations

import json

import pytest
from conftest import problems_of
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
