"""Every way build.py builds an overlay gives kustomize's own output, byte for byte.

kustomize's cost grows with the square of the objects a plugin returns, so build.py
uses as little of it as an overlay needs (layout.py): `direct` expands the intent files
in-process, `intents` lets kustomize stop at the ClusterProfile and expands its output
in-process, `shards` builds shares of the intents with the plugin, `whole` is one
ordinary build. Each is compared here with `kubectl kustomize --enable-alpha-plugins`
of the same overlay: on the sample repository's overlays (tests/fixtures/sample-repo), and on a generated
repository of jobs of every topology, team and size made from it (tfjobgen/harness/synthetic.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import OVERLAYS, SAMPLE, kustomize_build, uses
from gitops_support import copy_repo

from tfjobgen.expand import emit
from tfjobgen.gitops import build, layout
from tfjobgen.harness import synthetic



@pytest.fixture(scope="module")
@uses("kubectl")
def generated(tmp_path_factory, sample_tree):
    """A repository of 30 jobs (about 300 objects) and what kustomize builds from each overlay."""
    # made from the sample's jobs and overlays (harness/sample.py), not the repository's own
    root = synthetic.write_repo(tmp_path_factory.mktemp("generated") / "repo", jobs=30, originals=synthetic.PATCHED)
    whole = {}
    for overlay in OVERLAYS:
        proc = kustomize_build(root / "overlays" / overlay, env={"KUSTOMIZE_PLUGIN_HOME": str(root / "plugins")})
        assert proc.returncode == 0, proc.stderr
        whole[overlay] = proc.stdout
    return root, whole


@uses("kubectl")  # build_overlays runs kubectl's kustomize for every mode but direct
def _build(*args, **kwargs) -> dict:
    return build.build_overlays(*args, **kwargs)


def _text(builds) -> dict[str, str]:
    for name, result in builds.items():
        assert result.ok, [p.format() for p in result.problems]
    return {name: emit.to_yaml(result.objects) for name, result in builds.items()}


def test_the_overlays_of_the_sample_need_no_kustomize_run_per_object(built_overlays):
    # The sample as it is: no generator/ of its own (a team's repository with tfjobgen installed), so the running
    # generator expands in-process, as in a repository whose generator/ is the running one.
    assert {o: layout.NEEDS[layout.read(SAMPLE, f"overlays/{o}").need] for o in OVERLAYS} == \
        {"seed-80c": "passive", "prod-96c": "per-object"}
    builds = _build(SAMPLE, OVERLAYS)
    assert {o: b.mode for o, b in builds.items()} == {"seed-80c": build.DIRECT, "prod-96c": build.INTENTS}
    assert _text(builds) == built_overlays, "byte for byte what kubectl kustomize prints"


@pytest.mark.parametrize("mode", [build.INTENTS, build.SHARDS, build.WHOLE])
def test_every_mode_gives_kustomizes_bytes_on_a_generated_repository(generated, mode, monkeypatch):
    root, whole = generated
    monkeypatch.setattr(layout, "SHARD_WEIGHT", 100)  # several shares even for 30 jobs
    builds = _build(root, OVERLAYS, mode=mode)
    assert _text(builds) == whole
    if mode == build.SHARDS:
        assert all(b.shards >= 3 for b in builds.values()), {o: b.shards for o, b in builds.items()}


def test_direct_applies_only_where_kustomize_does_nothing_to_the_intents(generated):
    root, whole = generated
    builds = _build(root, ["seed-80c"], mode=build.DIRECT)
    assert _text(builds) == {"seed-80c": whole["seed-80c"]}
    with pytest.raises(ValueError, match="prod-96c cannot be built direct"):
        build.build_overlays(root, ["prod-96c"], mode=build.DIRECT)


def test_a_selection_is_the_part_of_the_whole_build_it_names(generated):
    root, whole = generated
    team = build.Selection(namespaces=frozenset({"team-03"}))
    files = build.Selection(files=frozenset({"jobs/wide-deep.yaml", "jobs/deeprec-starserver.yaml"}))
    for selection, keep in ((team, lambda o: o["metadata"]["namespace"] == "team-03"),
                            (files, lambda o: o["metadata"]["labels"]["tfjobgen.dev/job"] in ("wide-deep",
                                                                                             "deeprec-ctr"))):
        expected = {o: emit.to_yaml([obj for obj in _objects(text) if keep(obj)]) for o, text in whole.items()}
        assert all(expected.values())
        for mode in (None, build.SHARDS):
            assert _text(_build(root, OVERLAYS, selection, mode=mode)) == expected, mode


def _objects(text: str) -> list[dict]:
    from conftest import load_yaml_stream

    return load_yaml_stream(text)


@pytest.mark.parametrize("addition, need", [
    ("replacements:\n- source: {kind: TrainingJob, name: wide-deep, fieldPath: metadata.name}\n"
     "  targets: [{select: {kind: TrainingJob, name: deeprec-ctr}, fieldPaths: [metadata.labels.copied]}]\n",
     "before"),
    ("configMapGenerator:\n- name: extra\n  literals: [a=b]\n", "before"),
    ("namespace: elsewhere\n", "per-object"),
    ("commonLabels: {owner: ml}\n", "per-object"),
    ("validators:\n- cluster-profile.yaml\n", "opaque"),
    ("sortOptions: {order: fifo}\n", "opaque"),
    ("components:\n- ../../bases\n", "opaque"),
])
def test_what_an_overlay_does_decides_how_much_kustomize_it_needs(tmp_path, addition, need):
    repo = copy_repo(tmp_path / "repo")
    kustomization = repo / "overlays" / "seed-80c" / "kustomization.yaml"
    kustomization.write_text(kustomization.read_text() + addition)
    plan = layout.read(repo, "overlays/seed-80c")
    assert layout.NEEDS[plan.need] == need, plan.reason
    assert build.mode_of(plan, in_process=True) == {"before": build.INTENTS, "per-object": build.INTENTS,
                                                    "opaque": build.WHOLE}[need]


def test_intent_files_with_other_objects_or_kustomize_annotations_are_not_direct(tmp_path):
    repo = copy_repo(tmp_path / "repo")
    job = repo / "jobs" / "wide-deep.yaml"
    job.write_text(job.read_text().replace("  labels:\n", "  annotations:\n    config.kubernetes.io/local-config: "
                                                          "\"true\"\n  labels:\n", 1))
    assert layout.read(repo, "overlays/seed-80c").need == layout.PER_OBJECT
    job.write_text(job.read_text() + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: y}\n")
    assert layout.read(repo, "overlays/seed-80c").need == layout.BEFORE, "intents beside other objects"


def test_a_tree_with_another_generator_is_built_by_kustomize_with_that_generator(tmp_path):
    """A base commit of `tfjobgen diff` brings its own generator/: unless it is byte for byte the running one
    (another install of the same commit), nothing is expanded in-process."""
    in_process = {"seed-80c": build.DIRECT, "prod-96c": build.INTENTS}
    repo = copy_repo(tmp_path / "repo")
    assert {o: b.mode for o, b in _build(repo, OVERLAYS).items()} == in_process, "the same code, another folder"
    module = repo / "generator" / "tfjobgen" / "expand" / "emit.py"
    module.write_text(module.read_text() + "# another generator\n")
    assert {o: b.mode for o, b in _build(repo, OVERLAYS).items()} == {o: build.SHARDS for o in OVERLAYS}
    module.write_text(module.read_text().removesuffix("# another generator\n"))
    schema = repo / "schemas" / "trainingjob.schema.json"
    schema.write_text(schema.read_text() + "\n")  # the generator reads its tree's schemas
    assert {o: b.mode for o, b in _build(repo, OVERLAYS).items()} == {o: build.SHARDS for o in OVERLAYS}
    shutil.rmtree(repo / "generator")  # no generator of its own: the installed one builds it
    assert {o: b.mode for o, b in _build(repo, OVERLAYS).items()} == in_process


def test_an_invalid_job_is_located_in_every_mode(generated, tmp_path):
    root = Path(shutil.copytree(generated[0], tmp_path / "repo"))
    job = root / "jobs" / "wide-deep.yaml"
    job.write_text(job.read_text().replace("qos: cpuset", "qos: turbo"))
    for mode in (build.DIRECT, build.INTENTS, build.SHARDS, build.WHOLE):
        result = _build(root, ["seed-80c"], mode=mode)["seed-80c"]
        assert not result.ok and result.objects == []
        assert [p.format().split(": ")[0:2] for p in result.problems if p.is_error] == \
            [["jobs/wide-deep.yaml:13", "spec.qos"]], (mode, [p.format() for p in result.problems])


@pytest.mark.parametrize("mode", [build.SHARDS, build.WHOLE])
def test_a_kustomize_error_is_said_once_with_the_repositorys_paths(tmp_path, mode, monkeypatch):
    """Every share of an overlay meets the same broken patch; the user reads it once, at the repository's
    own path, never at a share's temporary copy (issue 33: 3 to 6 times, each naming /tmp/tfjobgen-shares-*)."""
    root = synthetic.write_repo(tmp_path / "repo", jobs=30, originals=synthetic.PATCHED)
    kustomization = root / "overlays" / "prod-96c" / "kustomization.yaml"
    kustomization.write_text(kustomization.read_text() + "patchesStrategicMerge:\n- gone.yaml\n")
    monkeypatch.setattr(layout, "SHARD_WEIGHT", 100)
    result = _build(root, ["prod-96c"], mode=mode)["prod-96c"]
    assert mode != build.SHARDS or result.shards >= 3, result.shards
    [problem] = [p.format() for p in result.problems]
    assert "overlays/prod-96c/gone.yaml" in problem, problem
    assert str(tmp_path) not in problem and "tfjobgen-shares-" not in problem, problem
