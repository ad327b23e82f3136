"""The small building blocks, one behaviour each."""

from __future__ import annotations

from fractions import Fraction

import pytest

from conftest import problems_of
from tfjobgen import quantity, schema
from tfjobgen.problems import Problem, ResourceRef, field_path


@pytest.mark.parametrize("text, value", [
    (2, Fraction(2)), ("2", Fraction(2)), ("300m", Fraction(3, 10)), (0.5, Fraction(1, 2)), ("2000m", Fraction(2)),
    ("4Gi", Fraction(4 * 2**30)), ("1.5Gi", Fraction(3 * 2**29)), ("1e3", Fraction(1000)), ("512Mi", Fraction(2**29)),
    ("100k", Fraction(100_000)), (".5", Fraction(1, 2)),
])
def test_quantities_parse_exactly(text, value):
    assert quantity.parse(text) == value


@pytest.mark.parametrize("text", ["", "2 cores", "-1", "4GB", "Gi", True, None, float("inf")])
def test_non_quantities_are_refused(text):
    assert quantity.parse(text) is None


def test_cpu_text_is_canonical():
    assert [quantity.cpu_text(Fraction(x)) for x in (2, Fraction(3, 10), Fraction(5, 2))] == ["2", "300m", "2500m"]


def test_field_paths_read_like_kubectl():
    assert field_path("spec", "env", 2, "name") == "spec.env[2].name"


def test_problem_format():
    ref = ResourceRef("tfjobgen.dev/v1alpha1", "TrainingJob", "x", "ml")
    assert Problem("bad", "spec.qos", file="jobs/x.yaml", line=7).format() == "jobs/x.yaml:7: spec.qos: bad"
    assert Problem("bad", "spec.qos", severity="warning", ref=ref).format() == "TrainingJob ml/x: warning: spec.qos: bad"


def _named(name: str, workers: int = 10) -> str:
    return (f"apiVersion: tfjobgen.dev/v1alpha1\nkind: TrainingJob\nmetadata: {{name: {name}, namespace: t}}\n"
            f"spec:\n  image: x/y:1\n  api: tf1\n  roles:\n    ps: {{replicas: 1, cpu: 1, memory: 1Gi}}\n"
            f"    worker: {{replicas: {workers}, cpu: 1, memory: 1Gi}}\n")


def test_the_longest_generated_name_decides_the_limit(tmp_path):
    fits = "a" * (63 - len("-worker-9"))  # worker-9 is the longest generated name with 10 workers
    assert problems_of(_named(fits), tmp_path) == []
    [problem] = problems_of(_named(fits + "b"), tmp_path)
    assert problem.field == "metadata.name" and "64 characters" in problem.message
    assert [p.field for p in problems_of(_named(fits, workers=11), tmp_path)] == ["metadata.name"], "worker-10 is longer"


def test_defaults_come_from_the_schema():
    filled = schema.with_defaults({"spec": {"roles": {"chief": {}}}}, schema.TRAINING_JOB)
    spec = filled["spec"]
    assert spec["qos"] == "cpuset" and spec["protocol"] == "grpc" and spec["topology"]["mode"] == "spread"
    assert spec["topology"]["workersPerServer"] == 10 and spec["roles"]["chief"]["replicas"] == 1
    assert spec["training"]["model"]["hiddenUnits"] == [64, 32]
    assert "api" not in spec, "api's default depends on the protocol: the model decides it"
