"""One answer to "is this a TrainingJob?", whoever asks: validate, the KRM function, locate and the GitOps tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from tfjobgen.expand import emit, locate, pipeline
from tfjobgen.gitops import tree
from tfjobgen.inputs import intents

JOB = {"apiVersion": "tfjobgen.dev/v1alpha1", "kind": "TrainingJob", "metadata": {"name": "a", "namespace": "ml"},
       "spec": {"image": "registry.example.com/x:1", "roles": {"ps": {"cpu": 1, "memory": "1Gi"},
                                                               "worker": {"cpu": 1, "memory": "1Gi"}}}}
CASES = [
    (JOB, "intent"),
    ({**JOB, "apiVersion": "tfjobgen.dev/v9"}, "intent"),  # the schema names the wrong version
    ({**JOB, "kind": "TrainingJobs"}, "intent"),  # ours, misspelt: the schema says so
    ({**JOB, "apiVersion": "example.com/v1"}, "intent"),  # a TrainingJob of another group: the schema says so
    ({**JOB, "kind": "ClusterProfile"}, "profile"),
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}, "other"),
    ({"apiVersion": 7, "kind": None}, "other"),
    (["a", "list"], "other"),
]


@pytest.mark.parametrize("document, kind", CASES)
def test_every_caller_tells_an_intent_the_same_way(tmp_path, document, kind):
    assert intents.kind_of(document) == kind
    if not isinstance(document, dict):
        return
    text = emit.to_yaml([document])
    assert intents.may_be_ours(text) == (kind != "other"), "the KRM plugin's pre-filter"
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "a.yaml").write_text(text)
    (tmp_path / "jobs" / "kustomization.yaml").write_text("resources:\n- a.yaml\n")
    found, _ = pipeline.load_intents([str(tmp_path / "jobs")])
    assert len(found) == (kind == "intent"), "tfjobgen validate"
    jobs, _ = tree.job_files(tmp_path)
    assert len(jobs) == (kind == "intent"), "the GitOps commands' inventory of jobs"
    assert len(locate.find_intents(str(tmp_path / "jobs"))) == (kind == "intent"), "error locations in kustomize"


def test_intent_files_leave_out_kustomizations_and_hidden_files(tmp_path):
    for name in ("b.yaml", "a.yml", "kustomization.yaml", ".#a.yaml", "notes.txt", ".hidden/c.yaml", "sub/d.yaml"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("{}\n")
    assert [Path(p).relative_to(tmp_path).as_posix() for p in intents.files([str(tmp_path)])] == \
        ["a.yml", "b.yaml", "sub/d.yaml"]


def test_duplicate_names_are_one_rule_whatever_the_order(tmp_path):
    for name, namespace in (("b.yaml", "ml"), ("a.yaml", "other")):
        (tmp_path / name).write_text(emit.to_yaml([{**JOB, "metadata": {"name": "a", "namespace": namespace}}]))
    found, _ = pipeline.load_intents([str(tmp_path)], relative_to=str(tmp_path))
    forward, backward = intents.duplicate_names(found), intents.duplicate_names(list(reversed(found)))
    assert [p.format() for p in forward] == [p.format() for p in backward] == [
        "b.yaml:4: metadata.name: job name 'a' is already used by a.yaml:4 (in namespace other): job names must be "
        "unique in the repository, so that a job can never be mistaken for another or silently change namespace"]
    assert forward[0].ref.namespace == "ml"
