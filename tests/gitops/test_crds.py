"""--crds folders are input too: read with inputs/source.py's safe reader, refused in one line each."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from conftest import TESTS

from tfjobgen.gitops import crds
from tfjobgen.inputs.problems import InvalidInput

CASES = TESTS / "refusals"


def test_an_alias_bomb_is_refused_at_once():
    """Nine levels of nine aliases: about 387 million nodes once expanded (30 to 40 s to a MemoryError before)."""
    started = time.monotonic()
    with pytest.raises(InvalidInput) as refused:
        crds.load(CASES / "a-crd-alias-bomb" / "crds")
    assert time.monotonic() - started < 5
    assert "YAML anchors and aliases are not allowed" in refused.value.problems[0].format()


@pytest.mark.parametrize("case, said", [
    ("a-crd-whose-spec-is-a-number", "widgets.yaml:4: spec: a CustomResourceDefinition's spec is a mapping, not 5"),
    ("a-crd-file-with-a-yaml-error", "widgets.yaml:7: YAML syntax:"),
])
def test_a_broken_crd_is_one_located_line(case, said):
    with pytest.raises(InvalidInput) as refused:
        crds.load(CASES / case / "crds")
    [problem] = refused.value.problems
    assert said in problem.format()


def test_a_folder_that_is_not_there_is_refused(tmp_path: Path):
    with pytest.raises(InvalidInput, match="names no folder"):
        crds.load(tmp_path / "nowhere")


def test_the_upstream_crds_still_load(tmp_path: Path):
    from gitops_support import crd_dir

    schemas = crds.load(crd_dir())
    assert ("argoproj.io", "v1alpha1", "Application") in schemas
