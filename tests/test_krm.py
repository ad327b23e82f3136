"""The KRM function's contract: ResourceList in and out, the legacy plugin convention, and kpt.

What a transformer must do: expand every TrainingJob in one call, leave every
other item (and the orchestrator's internal annotations) exactly as given,
drop the intents it expanded, and on bad input report `results` AND exit
non-zero, since kustomize ignores results.
"""

from __future__ import annotations

import copy
import io
import subprocess

import pytest
import yaml
from conftest import JOBS, REPO, SAMPLE, kpt, load_yaml_stream, run_tfjobgen

from tfjobgen.expand import krm, pipeline

JOB = (JOBS / "wide-deep.yaml").read_text()
OTHER = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {
        "name": "unrelated",
        "namespace": "ml-training",
        "annotations": {
            "internal.config.kubernetes.io/path": "other/cm.yaml",
            "internal.config.kubernetes.io/index": "0",
            "config.kubernetes.io/path": "other/cm.yaml",
        },
    },
    "data": {"on": "yes", "n": "0"},
}


# A profile with nothing to warn about (CPU-manager nodes named, their reserved CPU said).
PROFILE = yaml.safe_load((SAMPLE / "overlays" / "seed-80c" / "cluster-profile.yaml").read_text())


def _resource_list(*items, config=None) -> str:
    resource_list = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
                     "items": [copy.deepcopy(i) for i in items]}  # shared dicts would become YAML aliases
    if config is not None:
        resource_list["functionConfig"] = config
    return yaml.safe_dump(resource_list)


def _intent(**changes) -> dict:
    job = yaml.safe_load(JOB)
    for path, value in changes.items():
        node = job
        *parents, last = path.split(".")
        for key in parents:
            node = node[key]
        node[last] = value
    return job


def test_intents_are_expanded_and_everything_else_passes_through():
    text = _resource_list(OTHER, _intent(), OTHER | {"metadata": OTHER["metadata"] | {"name": "after"}}, config=PROFILE)
    output, code = krm.run_resource_list(text, str(SAMPLE), stderr=io.StringIO())
    assert code == 0
    [result] = load_yaml_stream(output)
    items = result["items"]
    assert items[0] == OTHER, "untouched, internal annotations included"
    assert items[-1]["metadata"]["name"] == "after", "order of the other items is kept"
    assert not any(i["kind"] == "TrainingJob" for i in items)
    assert {i["kind"] for i in items[1:-1]} == {"Service", "ConfigMap", "NetworkPolicy", "Job"}
    assert "results" not in result


def test_no_function_config_means_the_embedded_default_profile():
    output, code = krm.run_resource_list(_resource_list(_intent()), str(SAMPLE), stderr=io.StringIO())
    assert code == 0
    jobs = [i for i in load_yaml_stream(output)[0]["items"] if i["kind"] == "Job"]
    assert all("nodeSelector" not in j["spec"]["template"]["spec"] for j in jobs), "default profile: no pools"


def test_kpt_placeholder_config_is_the_default_and_key_value_config_is_refused():
    placeholder = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "function-input"}}
    assert krm.run_resource_list(_resource_list(_intent(), config=placeholder), str(SAMPLE), io.StringIO())[1] == 0
    keyvalue = placeholder | {"data": {"workers": "3"}}
    output, code = krm.run_resource_list(_resource_list(_intent(), config=keyvalue), str(SAMPLE), io.StringIO())
    assert code == 1 and "must be a ClusterProfile" in load_yaml_stream(output)[0]["results"][0]["message"]


def test_invalid_intent_gives_results_and_a_nonzero_exit():
    bad = _intent(**{"spec.roles.worker.cpu": "300m", "metadata.annotations": {
        "internal.config.kubernetes.io/path": "jobs/wide-deep.yaml"}})
    stderr = io.StringIO()
    output, code = krm.run_resource_list(_resource_list(OTHER, bad), str(SAMPLE), stderr=stderr)
    assert code == 1
    [result] = load_yaml_stream(output)
    [entry] = [r for r in result["results"] if r["severity"] == "error"]
    assert entry["resourceRef"] == {"apiVersion": "tfjobgen.dev/v1alpha1", "kind": "TrainingJob",
                                    "name": "wide-deep", "namespace": "ml-training"}
    assert entry["field"] == {"path": "spec.roles.worker.cpu"}
    assert entry["file"] == {"path": "jobs/wide-deep.yaml"}
    assert "qos cpuset needs whole CPUs" in entry["message"]
    assert result["items"][0] == OTHER and len(result["items"]) == 2, "nothing half-expanded"
    assert "jobs/wide-deep.yaml" in stderr.getvalue()


def test_a_build_without_any_intent_is_refused_unless_allowed():
    output, code = krm.run_resource_list(_resource_list(OTHER), str(SAMPLE), stderr=io.StringIO())
    assert code == 1 and "refusing to emit a set without jobs" in load_yaml_stream(output)[0]["results"][0]["message"]
    allow = {"apiVersion": "tfjobgen.dev/v1alpha1", "kind": "ClusterProfile", "metadata": {"name": "p"},
             "spec": {"allowNoJobs": True}}
    output, code = krm.run_resource_list(_resource_list(OTHER, config=allow), str(SAMPLE), stderr=io.StringIO())
    assert code == 0 and load_yaml_stream(output)[0]["items"] == [OTHER]


def test_a_generated_object_that_collides_with_an_existing_one_is_an_error():
    clash = OTHER | {"metadata": {"name": "wide-deep-cluster", "namespace": "ml-training"}}
    output, code = krm.run_resource_list(_resource_list(clash, _intent()), str(SAMPLE), stderr=io.StringIO())
    assert code == 1
    assert "generates ConfigMap ml-training/wide-deep-cluster" in load_yaml_stream(output)[0]["results"][0]["message"]


def test_input_that_is_not_a_resource_list_is_refused():
    for text in ("items: []\n", "a: &x [1]\nb: *x\n", "- just\n- a list\n"):
        output, code = krm.run_resource_list(text, str(SAMPLE), stderr=io.StringIO())
        assert code == 1 and "results" in load_yaml_stream(output)[0]


# Whatever kustomize or kpt hands the function, it answers with a ResourceList: every value YAML can hold,
# in every place of the ResourceList, whole or left out, and bytes that are no YAML or no UTF-8 at all.
GARBAGE = [None, True, 0, -1.5, "", "text", "ResourceList", [], [None], [1, [2, [3]]], {}, {"a": {"b": [None, {}]}},
           {"kind": "ClusterProfile"}, {"apiVersion": "tfjobgen.dev/v1alpha1", "kind": "ClusterProfile",
                                        "spec": [1, 2]}, {"kind": "ConfigMap", "data": [1]}]
SHAPES = ([("functionConfig", g) for g in GARBAGE] + [("items", g) for g in GARBAGE]
          + [("items", [g]) for g in GARBAGE] + [("items", [_intent(), g]) for g in GARBAGE]
          + [("apiVersion", g) for g in GARBAGE] + [("kind", g) for g in GARBAGE])


def _krm_main(stdin: bytes) -> tuple[int, str, str]:
    """`tfjobgen krm` in this process, as kpt runs it: bytes on stdin, a ResourceList expected on stdout."""
    import contextlib
    import sys

    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = krm.main([])
    finally:
        sys.stdin = saved
    return code, out.getvalue(), err.getvalue()


def _answers_with_a_resource_list(stdin: bytes) -> None:
    try:
        code, stdout, stderr = _krm_main(stdin)
    except Exception as err:  # noqa: BLE001 - what the test is about: nothing escapes
        raise AssertionError(f"{type(err).__name__}: {err} for input:\n{stdin[:400]!r}") from None
    assert code in (0, 1), stderr
    [answer] = load_yaml_stream(stdout)
    assert answer["kind"] == "ResourceList" and isinstance(answer["items"], list), stdin[:400]
    if code == 1:
        assert answer["results"] and all(r["severity"] in ("error", "warning") for r in answer["results"])
        assert stderr.strip(), "the same problems on stderr"


@pytest.mark.parametrize("key,value", SHAPES, ids=[f"{k}={str(v)[:30]}" for k, v in SHAPES])
def test_the_function_answers_any_resource_list_with_a_resource_list(key, value):
    resource_list = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [_intent()]}
    resource_list[key] = copy.deepcopy(value)
    _answers_with_a_resource_list(yaml.safe_dump(resource_list).encode())


@pytest.mark.parametrize("key", ["items", "functionConfig", "kind", "apiVersion"])
def test_the_function_answers_a_resource_list_missing_a_part(key):
    resource_list = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [_intent()],
                     "functionConfig": PROFILE}
    del resource_list[key]
    _answers_with_a_resource_list(yaml.safe_dump(resource_list).encode())


@pytest.mark.parametrize("stdin", [b"", b"null\n", b"- 1\n", b"just text\n", b"\xff\xfe not utf-8", b"a: [\n",
                                   b"{}\n", b"---\n---\n", b"kind: ResourceList\n---\nkind: ResourceList\n"])
def test_the_function_answers_input_that_is_no_resource_list_with_one(stdin):
    _answers_with_a_resource_list(stdin)


def test_legacy_plugin_passes_other_documents_through_as_text(tmp_path):
    """kustomize's exec plugin convention: profile file in argv, objects on stdin; other objects are not even parsed."""
    profile = SAMPLE / "overlays" / "seed-80c" / "cluster-profile.yaml"
    other = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: raw\n  namespace: x\ndata:\n  k: 'odd   spacing'\n"
    stdin = other + "---\n" + JOB
    proc = run_tfjobgen("krm", str(profile), stdin=stdin, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("---\n" + other), "byte for byte"
    kinds = [d["kind"] for d in load_yaml_stream(proc.stdout)]
    assert kinds[0] == "ConfigMap" and "TrainingJob" not in kinds and kinds.count("Job") == 4


def test_kpt_runs_the_function_over_the_jobs_folder():
    proc = subprocess.run([kpt(), "fn", "eval", str(JOBS), "--exec", "tfjobgen-krm", "--fn-config",
                           str(SAMPLE / "overlays" / "seed-80c" / "cluster-profile.yaml"), "-o", "stdout"],
                          capture_output=True, text=True, env=_path_with_venv())
    assert proc.returncode == 0, proc.stderr
    items = load_yaml_stream(proc.stdout)[0]["items"]
    kinds = {i["kind"] for i in items}
    assert "TrainingJob" not in kinds and {"Job", "Service", "ConfigMap", "NetworkPolicy"} <= kinds
    assert "Kustomization" in kinds, "kpt hands over jobs/kustomization.yaml too; it passes through"
    cpuset_jobs = [i for i in items if i["kind"] == "Job"]
    assert all(j["spec"]["template"]["spec"]["nodeSelector"].get("cpu-manager-policy") == "static"
               for j in cpuset_jobs), "the --fn-config profile was used"


def test_kpt_reports_errors_as_results_and_fails(tmp_path):
    (tmp_path / "job.yaml").write_text(JOB.replace("cpu: 4, memory: 8Gi", "cpu: 4, memory: 8Gi, replica: 3"))
    proc = subprocess.run([kpt(), "fn", "eval", str(tmp_path), "--exec", "tfjobgen-krm", "-o", "stdout"],
                          capture_output=True, text=True, env=_path_with_venv())
    assert proc.returncode != 0
    assert "[FAIL]" in proc.stderr and "unknown field 'replica'" in proc.stderr


def _path_with_venv() -> dict:
    import os
    import sys
    from pathlib import Path

    return {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]}


def test_krm_without_input_is_invalid_input_and_an_unknown_flag_is_usage(tmp_path):
    empty = run_tfjobgen("krm", stdin="", cwd=tmp_path)
    assert empty.returncode == 1, "no ResourceList on stdin: invalid input"
    assert "<stdin>: expected one ResourceList (config.kubernetes.io/v1) on stdin" in empty.stderr
    assert load_yaml_stream(empty.stdout)[0]["results"], "kpt still gets a ResourceList, with the result"
    flag = run_tfjobgen("krm", "--unknown-flag", stdin="", cwd=tmp_path)
    assert flag.returncode == 2 and "unrecognized arguments: --unknown-flag" in flag.stderr, "a usage error"
    assert "Traceback" not in empty.stderr + flag.stderr


def test_a_profile_rule_is_reported_once_per_build_at_the_profile():
    """Rules about the profile alone are checked once, not once per job, and point at the profile."""
    second = _intent(**{"metadata.name": "wide-deep-2"})
    ports = PROFILE | {"spec": PROFILE["spec"] | {"ports": {"grpc": 2300, "control": 2300}}}
    output, code = krm.run_resource_list(_resource_list(_intent(), second, config=ports), str(SAMPLE), io.StringIO())
    [result] = load_yaml_stream(output)
    [entry] = result["results"]
    assert code == 1 and entry["severity"] == "error"
    assert entry["resourceRef"] == {"apiVersion": "tfjobgen.dev/v1alpha1", "kind": "ClusterProfile", "name": "seed-80c"}
    assert entry["field"] == {"path": "spec.ports.control"}
    assert "port 2300 is also the grpc port" in entry["message"]
    assert result["items"] and not any(i["kind"] == "Job" for i in result["items"]), "nothing generated"


def _as_kpt_gives_it(data: dict, path: str, index: int = 0) -> dict:
    """An item with the annotations kpt puts on it: its file relative to the package, and its index there."""
    annotations = {f"{prefix}config.kubernetes.io/{key}": value for prefix in ("", "internal.")
                   for key, value in (("path", path), ("index", str(index)))}
    return data | {"metadata": data["metadata"] | {"annotations": annotations}}


def test_results_under_kpt_name_the_file_its_index_the_line_and_the_field(tmp_path):
    """kpt runs the function in its own working folder and names files relative to the package: the
    results give kpt's file {path, index}, and the line is found in the package under that folder."""
    package = tmp_path / "package" / "team"
    package.mkdir(parents=True)
    text = "# another document first\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n" + \
        JOB.replace("cpu: 2, memory: 8Gi", "cpu: 300m, memory: 8Gi")
    (package / "jobs.yaml").write_text(text)
    assert "cpu: 300m" in text
    item = _as_kpt_gives_it(load_yaml_stream(text)[1], "team/jobs.yaml", 1)
    stderr = io.StringIO()
    output, code = krm.run_resource_list(_resource_list(item), str(tmp_path), stderr=stderr)
    [entry] = [r for r in load_yaml_stream(output)[0]["results"] if r["severity"] == "error"]
    line = next(n for n, text_line in enumerate(text.splitlines(), 1) if "cpu: 300m" in text_line)
    assert code == 1 and entry["file"] == {"path": "team/jobs.yaml", "index": 1}
    assert entry["field"] == {"path": "spec.roles.evaluator.cpu"} and entry["tags"] == {"line": str(line)}
    assert f"team/jobs.yaml:{line}: spec.roles.evaluator.cpu: qos cpuset needs whole CPUs" in stderr.getvalue()


def test_kpt_shows_the_file_and_line_of_an_error(tmp_path):
    (tmp_path / "job.yaml").write_text(JOB.replace("cpu: 4, memory: 8Gi", "cpu: 4, memory: 8Gi, replica: 3"))
    line = next(n for n, text in enumerate(JOB.splitlines(), 1) if "cpu: 4, memory: 8Gi" in text)
    proc = subprocess.run([kpt(), "fn", "eval", str(tmp_path), "--exec", "tfjobgen-krm", "-o", "stdout"],
                          capture_output=True, text=True, env=_path_with_venv(), cwd=tmp_path)
    assert proc.returncode != 0
    assert f"job.yaml:{line}: spec.roles.worker.replica: unknown field 'replica'" in proc.stderr, proc.stderr


# ---- path annotations are input: nothing outside the tree is read or blamed -----------------------

def _annotated_intent(path: str, key: str = "config.kubernetes.io/path") -> dict:
    bad = _intent(**{"spec.roles.worker.cpu": "300m"})
    bad["metadata"]["annotations"] = {key: path}
    return bad


@pytest.mark.parametrize("key", ["config.kubernetes.io/path", "internal.config.kubernetes.io/path",
                                 "config.k8s.io/path"])
@pytest.mark.parametrize("named", ["absolute", "dot-dot", "link"])
def test_a_path_annotation_outside_the_tree_is_neither_read_nor_blamed(tmp_path, key, named):
    """The job's own file sits outside the folder the function runs in: an annotation may name it (absolute,
    through .., through a link inside the folder), but a function reads only the tree it was given."""
    outside = tmp_path / "outside" / "job.yaml"
    outside.parent.mkdir()
    outside.write_text(JOB.replace("cpu: 2, memory: 8Gi", "cpu: 300m, memory: 8Gi"))
    root = tmp_path / "root"
    root.mkdir()
    (root / "link.yaml").symlink_to(outside)
    path = {"absolute": str(outside), "dot-dot": "../outside/job.yaml", "link": "link.yaml"}[named]
    stderr = io.StringIO()
    output, code = krm.run_resource_list(_resource_list(_annotated_intent(path, key)), str(root), stderr=stderr)
    results = load_yaml_stream(output)[0]["results"]
    [error] = [r for r in results if r["severity"] == "error"]
    assert code == 1 and "qos cpuset needs whole CPUs" in error["message"]
    assert "tags" not in error, "a line found in a file outside the tree"
    assert error.get("file", {}).get("path", "link.yaml") == "link.yaml", error
    assert "outside/job.yaml:" not in stderr.getvalue() and f"{outside}:" not in stderr.getvalue()
    warned = [r for r in results if r["severity"] == "warning" and r.get("field") == {"path": "metadata.annotations"}]
    assert len(warned) == (named != "link") and len(stderr.getvalue().splitlines()) == len(results) + 1
    if warned:
        assert f"{key} names " in warned[0]["message"] and "outside the folder this function was run in" in \
            warned[0]["message"]


def test_an_error_names_the_file_its_line_came_from_not_the_annotations(tmp_path):
    """The walk of the overlay finds the job in jobs/wide-deep.yaml: its line is of that file, and so is the file
    the error names, whatever file (outside the tree or in it) an annotation names."""
    for path in ("/etc/passwd", "jobs/scene1-case1.yaml"):
        stderr = io.StringIO()
        output, code = krm.run_resource_list(_resource_list(_annotated_intent(path)), str(SAMPLE / "overlays" / "seed-80c"),
                                             stderr=stderr)
        [error] = [r for r in load_yaml_stream(output)[0]["results"] if r["severity"] == "error"]
        line = next(n for n, text in enumerate(JOB.splitlines(), 1) if "worker: {" in text)
        assert code == 1 and error["file"]["path"] == "jobs/wide-deep.yaml" and error["tags"] == {"line": str(line)}
        assert f"jobs/wide-deep.yaml:{line}: spec.roles.worker.cpu" in stderr.getvalue()
        assert "/etc/passwd:" not in stderr.getvalue()


def test_an_absolute_path_annotation_inside_the_tree_is_named_relative_to_it(tmp_path):
    assert krm.inside(str(tmp_path / "team" / "jobs.yaml"), str(tmp_path)) == "team/jobs.yaml"
    assert krm.inside("team/../jobs.yaml", str(tmp_path)) == "jobs.yaml"
    assert [krm.inside(p, str(tmp_path)) for p in ("..", "../x.yaml", "/etc/shadow", "", "a/../../b")] == [""] * 5


# ---- blame: a value an overlay patched is reported at the patch ------------------------------------

PATCHES = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../../jobs
patches:
- target: {kind: TrainingJob, name: wide-deep}
  patch: |-
    - op: replace
      path: /spec/roles/worker/replicas
      value: 0
- path: chief.yaml
transformers:
- cluster-profile.yaml
"""
CHIEF_PATCH = """\
apiVersion: tfjobgen.dev/v1alpha1
kind: TrainingJob
metadata: {name: wide-deep, namespace: ml-training}
spec:
  roles:
    chief: {cpu: 500m}
"""


def _repository(tmp_path, jobs_kustomization: str, overlay_kustomization: str):
    """A repository with jobs/wide-deep.yaml and overlays/x, each kustomization as given: overlays/x's folder."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "wide-deep.yaml").write_text(JOB)
    (tmp_path / "jobs" / "kustomization.yaml").write_text(jobs_kustomization)
    overlay = tmp_path / "overlays" / "x"
    overlay.mkdir(parents=True)
    (overlay / "kustomization.yaml").write_text(overlay_kustomization)
    return overlay


def test_a_value_an_overlay_patched_is_reported_at_the_patch(tmp_path):
    """kustomize hands the function the patched intent: a problem of a patched value points at the patch
    (an inline one in the kustomization, or a patch file) and says what the job file has."""
    overlay = _repository(tmp_path, "resources:\n- wide-deep.yaml\n", PATCHES)
    (overlay / "chief.yaml").write_text(CHIEF_PATCH)
    worker_line = next(n for n, text in enumerate(JOB.splitlines(), 1) if "worker: {replicas: 32" in text)
    replicas = _intent(**{"spec.roles.worker.replicas": 0})  # what kustomize makes of it, one patch at a time
    _, problems = krm.expand_items([replicas], pipeline.profile_from(PROFILE), str(overlay))
    assert [p.format() for p in problems if p.is_error] == [
        "overlays/x/kustomization.yaml:9: spec.roles.worker.replicas: 0 is out of range: must be at least 1 (set "
        f"by this overlay's patch; jobs/wide-deep.yaml:{worker_line} has 32)"]
    chief = _intent()
    chief["spec"]["roles"]["chief"]["cpu"] = "500m"
    _, problems = krm.expand_items([chief], pipeline.profile_from(PROFILE), str(overlay))
    assert [p.format() for p in problems if p.is_error] == [
        "overlays/x/chief.yaml:6: spec.roles.chief.cpu: qos cpuset needs whole CPUs for the kubelet's CPU manager, "
        "got 0.5: use 1 or set spec.qos: shared (set by this overlay's patch; jobs/wide-deep.yaml:"
        f"{worker_line + 1} has 2)"]
    # A value no patch of the tree wrote (another transformer of the overlay): said at the job file's line.
    other = _intent(**{"spec.roles.worker.cpu": "4500m"})
    _, problems = krm.expand_items([other], pipeline.profile_from(PROFILE), str(overlay))
    [line] = [p.format() for p in problems if p.is_error]
    assert line.startswith(f"jobs/wide-deep.yaml:{worker_line}: spec.roles.worker.cpu: qos cpuset needs whole CPUs")
    assert line.endswith(f"(the build has 4500m: the overlay changed it; jobs/wide-deep.yaml:{worker_line} has 4)")


def test_a_name_too_long_after_the_overlays_name_prefix_is_reported_at_the_prefix(tmp_path):
    """namePrefix and nameSuffix reach the intent before the function runs: a generated name too long because
    of them points at the kustomization line that adds them (the base's and the overlay's add up), and says
    what the job file has, as a namespace the overlay sets does."""
    overlay = _repository(tmp_path, "resources:\n- wide-deep.yaml\nnameSuffix: -b\n",
                          "resources:\n- ../../jobs\nnamePrefix: team-recommendation-platform-ranking-experiments-\n"
                          "transformers:\n- cluster-profile.yaml\n")
    built = _intent()
    built["metadata"]["name"] = "team-recommendation-platform-ranking-experiments-wide-deep-b"
    _, problems = krm.expand_items([built], pipeline.profile_from(PROFILE), str(overlay))
    [line] = [p.format() for p in problems if p.is_error]
    assert line.startswith("overlays/x/kustomization.yaml:3: metadata.name: "), line
    name_line = next(n for n, text in enumerate(JOB.splitlines(), 1) if text.strip() == "name: wide-deep")
    assert line.endswith(f"(set by this overlay's namePrefix; jobs/wide-deep.yaml:{name_line} has wide-deep)"), line


def test_a_misplaced_profile_is_named_as_misplaced_not_as_a_build_without_jobs(tmp_path):
    """A profile under generators: (run before the resources exist: the jobs would pass through unexpanded) or a
    second profile after the first (it sees only generated objects): each said as it is, even with allowNoJobs,
    whose advice would let the jobs through unchecked."""
    (tmp_path / ".git").mkdir()
    overlay = tmp_path / "overlays" / "x"
    overlay.mkdir(parents=True)
    (overlay / "cluster-profile.yaml").write_text(yaml.safe_dump({**PROFILE, "spec": {**PROFILE["spec"], "allowNoJobs": True}}))
    (overlay / "kustomization.yaml").write_text("resources:\n- ../../jobs\ngenerators:\n- cluster-profile.yaml\n")
    profile = pipeline.load_profile(str(overlay / "cluster-profile.yaml"))
    _, problems = krm.expand_items([], profile, str(overlay))
    [line] = [p.format() for p in problems]
    assert line.startswith("overlays/x/kustomization.yaml:4: generators: ClusterProfile seed-80c is listed under "
                           "generators:"), line
    assert line.endswith("list it under transformers:"), line
    (overlay / "kustomization.yaml").write_text("resources:\n- ../../jobs\ntransformers:\n- first.yaml\n"
                                                "- cluster-profile.yaml\n")
    generated, _ = krm.expand_items([_intent()], pipeline.profile_from(PROFILE), str(overlay))
    _, problems = krm.expand_items(generated, profile, str(overlay))
    [line] = [p.format() for p in problems]
    assert line.startswith("overlays/x/kustomization.yaml:5: transformers: ClusterProfile seed-80c found only "
                           "objects tfjobgen already made"), line


@pytest.mark.slow  # a Python process of its own: sys.modules is only clean in a fresh one
def test_the_krm_function_and_the_command_line_import_no_cluster_client():
    """The Kubernetes client (and rich) load only when `tfjobgen status` or `cluster` runs: the KRM function
    starts in every kustomize build, and its cold start must not pay for them. Nor does it load a layer off the
    generator's path (docs/design.md, "Layers": the commands, cluster, artifacts, kube, harness, kit)."""
    import os
    import sys

    code = ("import sys\nfrom tfjobgen import cli\ncode = cli.main(['krm'])\nafter_krm = sorted(sys.modules)\n"
            "cli._parser()\n"
            "heavy = ('kubernetes', 'rich', 'urllib3', 'tensorflow')\n"
            "path = ('cli', 'expand', 'inputs', 'concerns', 'backends', 'addons', 'shared')\n"
            "off_path = [m for m in after_krm if m.startswith('tfjobgen.') and m.split('.')[1] not in path]\n"
            "print([m for m in after_krm if m.split('.')[0] in heavy], "
            "[m for m in sys.modules if m.split('.')[0] in heavy], off_path, code, file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code], input=_resource_list(_intent(), config=PROFILE),
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO / "generator")})
    assert proc.stderr.strip().splitlines()[-1] == "[] [] [] 0", proc.stderr
    assert load_yaml_stream(proc.stdout)[0]["items"], "the function ran and returned the job's objects"
