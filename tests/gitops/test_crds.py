"""--crds folders are input too: read with inputs/source.py's safe reader, refused in one line each."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest
import yaml
from conftest import SAMPLE, TESTS

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


def _broken(obj: dict):
    """Variants of a valid object that kubernetes-validate --strict refuses, at the root and deep down."""
    yield {**obj, "unknownField": 1}
    yield {**obj, "metadata": {**obj["metadata"], "name": 5}}
    spec = obj.get("spec")
    if isinstance(spec, dict):
        yield {**obj, "spec": {**spec, "nosuch": True}}
        template = (spec.get("template") or {}).get("spec")
        if isinstance(template, dict) and template.get("containers"):
            first = {**template["containers"][0], "resources": {"limits": {"cpu": []}}}
            yield {**obj, "spec": {**spec, "template": {**spec["template"],
                                                        "spec": {**template, "containers": [first]}}}}


def test_a_built_in_kind_gets_kubernetes_validates_own_verdict():
    """builtin_errors compiles each schema once; kubernetes_validate.validate, which reads them for every object,
    is the reference: one object of each built-in kind the sample's rendered/ holds, valid and broken, and kinds it
    lacks. (The sample's, not the repository's: another team's repository runs this tier on its own rendered/.)"""
    import kubernetes_validate

    kinds = {}
    for path in sorted((SAMPLE / "rendered").rglob("*.yaml")):
        for obj in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if isinstance(obj, dict) and crds.crd_errors(obj, {}) is None:
                kinds.setdefault((obj["apiVersion"], obj["kind"]), obj)
    assert {("v1", "Service"), ("networking.k8s.io/v1", "NetworkPolicy"), ("batch/v1", "Job")} <= set(kinds), kinds
    # A group with a domain (its schema files drop it: role-rbac-v1.json), a kind with none, an empty kind.
    kinds[("rbac.authorization.k8s.io/v1", "Role")] = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r"}, "rules": []}
    cases = [variant for obj in kinds.values() for variant in (obj, *_broken(obj))]
    cases += [{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}},
              {"apiVersion": "v1", "kind": "", "metadata": {"name": "w"}}]
    verdicts = Counter()
    for obj in cases:
        try:
            kubernetes_validate.validate(obj, crds.KUBERNETES_VERSION, strict=True)
            expected = []
        except kubernetes_validate.SchemaNotFoundError:
            expected = None
        except kubernetes_validate.ValidationError as err:
            expected = [f"{'.'.join(str(p) for p in err.path) or '(root)'}: {err.message}"]
        assert crds.builtin_errors(obj) == expected, obj
        verdicts["none" if expected is None else "errors" if expected else "valid"] += 1
    assert verdicts["valid"] >= 5 and verdicts["errors"] >= 12 and verdicts["none"] >= 2, verdicts  # each kind of answer
