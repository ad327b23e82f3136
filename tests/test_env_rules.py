"""env `valueFrom` is held to the API server's validation (pkg/apis/core/validation), so that an entry the
server would refuse is refused at validate, on its line, and never reaches a sync.

The cases and the server's verdicts are tests/env_value_from_cases.py; tests/cluster/test_api_server_agrees.py
sends each to a real kube-apiserver and holds these verdicts to its answers.
"""

from __future__ import annotations

import json

import pytest
from conftest import problems_of, run_tfjobgen
from env_value_from_cases import CASES
from jobs import job_yaml


def with_env(value_from: dict) -> str:
    """A job whose one env entry, on line 6, has this valueFrom. In JSON, which YAML reads as flow style, so that
    every string stays a string (PyYAML leaves 1e3 unquoted: a number in YAML 1.2)."""
    return job_yaml().replace("  roles:\n", f"  env: {json.dumps([{'name': 'X', 'valueFrom': value_from}])}\n"
                              "  roles:\n", 1)


def env_errors(value_from: dict, tmp_path) -> list:
    """The errors tfjobgen finds in a job whose one env entry has this valueFrom."""
    text = with_env(value_from)
    return [p for p in problems_of(text, tmp_path) if p.is_error]


def admitted(value_from: dict, tmp_path) -> bool:
    """tfjobgen's verdict on a valueFrom: True when validate admits the job, as the API server would the pod."""
    errors = env_errors(value_from, tmp_path)
    assert all(p.field.startswith("spec.env[0]") for p in errors), [p.format() for p in errors]
    return not errors


@pytest.mark.parametrize("what, value_from, expected", CASES, ids=[c[0] for c in CASES])
def test_value_from_as_the_api_server_judges_it(what, value_from, expected, tmp_path):
    assert admitted(value_from, tmp_path) == expected, [p.format() for p in env_errors(value_from, tmp_path)]


@pytest.mark.parametrize("value_from, field, says", [
    ({"fieldRef": {"fieldPath": "status.phase"}}, "spec.env[0].valueFrom.fieldRef.fieldPath",
     "env supports metadata.name"),
    ({"secretKeyRef": {"name": "Bad_Name", "key": "k"}}, "spec.env[0].valueFrom.secretKeyRef.name",
     "Secret name 'Bad_Name' is not a DNS subdomain"),
    ({"secretKeyRef": {"name": "s", "key": "k/../x"}}, "spec.env[0].valueFrom.secretKeyRef.key",
     "key 'k/../x' is not valid"),
    ({"configMapKeyRef": {"name": "", "key": "k"}}, "spec.env[0].valueFrom.configMapKeyRef.name",
     "name the ConfigMap"),
    ({"resourceFieldRef": {"resource": "limits.nvidia.com/gpu"}}, "spec.env[0].valueFrom.resourceFieldRef.resource",
     "limits.cpu"),
    ({"secretKeyRef": {"name": "s", "key": "k", "nme": "x"}}, "spec.env[0].valueFrom.secretKeyRef.nme",
     "unknown field"),
])
def test_each_refusal_names_the_field_and_what_is_right(value_from, field, says, tmp_path):
    errors = env_errors(value_from, tmp_path)
    assert len(errors) == 1 and errors[0].field == field, [p.format() for p in errors]
    assert says in errors[0].message and errors[0].line == 6


def test_a_role_env_entry_is_held_to_the_same_rules(tmp_path):
    text = job_yaml(roles={"worker": {"env": [{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "metadata.x"}}}]}})
    (tmp_path / "job.yaml").write_text(text)
    proc = run_tfjobgen("validate", "job.yaml", cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "job.yaml:9: spec.roles.worker.env[0].valueFrom.fieldRef.fieldPath: " in proc.stderr, proc.stderr
