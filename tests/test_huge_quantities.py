"""A quantity Kubernetes parses but no node holds (memory 1e1000) is refused at the role with its order of
magnitude, not a line of a thousand digits; past 4,300 digits Python would not write the number at all (an
internal error)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from conftest import run_tfjobgen
from jobs import SMALL_JOB

from tfjobgen.inputs import quantity


@pytest.mark.parametrize("amount, shown", [(Fraction(10) ** 1000, "1e1000"), (Fraction(10) ** 5000, "1e5000"),
                                           (2000 * Fraction(2) ** 60, "2.3e21"), (Fraction(10) ** 20, "1e20"),
                                           (Fraction(999) * 10**30, "9.99e32"), (Fraction(10) ** 15, "1e15")])
def test_magnitude(amount, shown):
    assert quantity.magnitude(amount) == shown


def test_ordinary_amounts_are_shown_as_before():
    assert quantity.describe_bytes(Fraction(8 << 30)) == "8Gi" and quantity.describe_bytes(Fraction(8 << 60)) == "8Ei"
    assert quantity.describe_cpu(Fraction(96)) == "96" and quantity.describe_cpu(Fraction(1, 2)) == "0.5"


@pytest.mark.parametrize("field, value, shown", [("memory", "1e1000", "(4 CPU, about 1e1000 bytes)"),
                                                  ("memory", "1e5000", "(4 CPU, about 1e5000 bytes)"),
                                                  ("cpu", "1e1000", "(about 1e1000 CPU, 8Gi)")])
def test_a_huge_role_is_refused_in_a_short_line(field, value, shown, tmp_path):
    old = "memory: 8Gi" if field == "memory" else "cpu: 4"
    (tmp_path / "job.yaml").write_text(SMALL_JOB.replace("ps: {replicas: 2, cpu: 4, memory: 8Gi}",
                                                         "ps: {replicas: 2, cpu: 4, memory: 8Gi}".replace(
                                                             old, f'{field}: "{value}"')))
    proc = run_tfjobgen("validate", "job.yaml", cwd=tmp_path)
    assert proc.returncode == 1 and "internal error" not in proc.stderr, proc.stderr
    line = next(line for line in proc.stderr.splitlines() if "spec.roles.ps:" in line)
    assert f"job.yaml:9: spec.roles.ps: one ps {shown} does not fit on a node" in line and len(line) < 200, line
