"""Golden examples: tests/golden/<case>/job.yaml (+ profile.yaml) and the expected.yaml it becomes.

Each expected.yaml is meant to be read in review. A case passes only if three
paths give exactly its bytes: the pipeline in-process, `tfjobgen render` in a
fresh process (under two hash seeds), and a real `kubectl kustomize` build with
the tfjobgen plugin. After an intended change of output, regenerate with
UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_golden.py and review the diff.
"""

from __future__ import annotations

import os
import shutil

import pytest
from conftest import REPO, kustomize_build, render, run_tfjobgen

from tfjobgen.expand import emit

GOLDEN = REPO / "tests" / "golden"
# The own-code examples (examples/<name>/job.yaml, docs/own-code.md) are golden cases too, their expected.yaml
# beside them: what a team copies is held to the same bytes.
FOLDERS = {**{p.name: p for p in GOLDEN.iterdir() if (p / "job.yaml").exists()},
           **{f"examples/{p.name}": p for p in (REPO / "examples").iterdir() if (p / "job.yaml").exists()}}
CASES = sorted(FOLDERS)
DEFAULT_PROFILE = "apiVersion: tfjobgen.dev/v1alpha1\nkind: ClusterProfile\nmetadata:\n  name: default\n"


def _profile(case: str):
    path = FOLDERS[case] / "profile.yaml"
    return path if path.exists() else None


def _expected(case: str) -> str:
    path = FOLDERS[case] / "expected.yaml"
    actual = emit.to_yaml(render(FOLDERS[case] / "job.yaml", profile=_profile(case)))
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(actual)
    return path.read_text()


@pytest.mark.parametrize("case", CASES)
def test_pipeline_matches_golden(case):
    actual = emit.to_yaml(render(FOLDERS[case] / "job.yaml", profile=_profile(case)))
    assert actual == _expected(case), f"{FOLDERS[case].relative_to(REPO)}/expected.yaml is out of date (see module docstring)"


@pytest.mark.parametrize("case", CASES)
def test_cli_render_is_byte_identical_across_hash_seeds(case):
    args = ["render", str(FOLDERS[case] / "job.yaml")]
    if _profile(case):
        args += ["--profile", str(_profile(case))]
    outputs = {run_tfjobgen(*args, env={"PYTHONHASHSEED": seed}).stdout for seed in ("0", "12345")}
    assert outputs == {_expected(case)}


@pytest.mark.parametrize("case", CASES)
def test_kustomize_build_gives_the_same_bytes(case, tmp_path):
    """The kustomize path (the plugin inside `kubectl kustomize`) and `tfjobgen render` agree byte for byte."""
    shutil.copy(FOLDERS[case] / "job.yaml", tmp_path / "job.yaml")
    profile = _profile(case)
    (tmp_path / "profile.yaml").write_text(profile.read_text() if profile else DEFAULT_PROFILE)
    (tmp_path / "kustomization.yaml").write_text("resources:\n- job.yaml\ntransformers:\n- profile.yaml\n")
    built = kustomize_build(tmp_path)
    assert built.returncode == 0, built.stderr
    assert built.stdout == _expected(case)
