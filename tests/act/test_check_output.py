"""The jobs pipeline's output check (.github/scripts/check_output.py): every object of rendered/ against
Kubernetes' schemas and its CRD, one line per problem, and a kind with no CRD an error."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import REPO, crd_dir

SCRIPT = REPO / ".github" / "scripts" / "check_output.py"


@pytest.mark.slow
def test_a_bad_field_and_a_kind_with_no_crd_are_one_line_each(tmp_path):
    rendered = tmp_path / "rendered" / "seed-80c" / "ml-training"
    rendered.mkdir(parents=True)
    job = (REPO / "rendered" / "seed-80c" / "ml-training" / "wide-deep.yaml").read_text()
    bad = job.replace("parallelism: 1\n", 'parallelism: "many"\n', 1)
    assert bad != job
    (rendered / "wide-deep.yaml").write_text(bad + "---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n")
    env = {**os.environ, "PYTHONPATH": str(REPO / "generator")}
    proc = subprocess.run([sys.executable, str(SCRIPT), str(crd_dir()), "rendered"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc
    assert proc.stderr.splitlines() == [
        "rendered/seed-80c/ml-training/wide-deep.yaml: Job ml-training/wide-deep-chief: spec.parallelism: "
        "'many' is not of type 'integer', 'null'",
        f"rendered/seed-80c/ml-training/wide-deep.yaml: Widget /w: no CRD in {crd_dir()} for Widget (example.com/v1): "
        "is it in fetch_crds.py?"], proc.stderr
    objects = job.count("\nkind: ") + job.startswith("kind: ") + 1  # the job's, and the Widget
    assert proc.stdout.startswith(f"{objects} objects of rendered checked"), proc.stdout


@pytest.mark.slow
def test_this_repository_s_output_passes():
    env = {**os.environ, "PYTHONPATH": str(REPO / "generator")}
    proc = subprocess.run([sys.executable, str(SCRIPT), str(crd_dir())], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0 and proc.stderr == "", proc
