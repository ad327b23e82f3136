"""The small building blocks, one behaviour each."""

from __future__ import annotations

from fractions import Fraction

import pytest
from conftest import problems_of

from tfjobgen.inputs import quantity, schema
from tfjobgen.inputs.problems import Problem, ResourceRef, field_path


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


def _errors(text: str, tmp_path) -> list:
    return [p for p in problems_of(text, tmp_path) if p.is_error]


def test_the_longest_generated_name_decides_the_limit(tmp_path):
    fits = "a" * (63 - len("-worker-9"))  # worker-9 is the longest generated name with 10 workers
    assert _errors(_named(fits), tmp_path) == []
    [problem] = _errors(_named(fits + "b"), tmp_path)
    assert problem.field == "metadata.name" and "64 characters" in problem.message
    assert [p.field for p in _errors(_named(fits, workers=11), tmp_path)] == ["metadata.name"], "worker-10 is longer"


def test_defaults_come_from_the_schema():
    filled = schema.with_defaults({"spec": {"roles": {"chief": {}}}}, schema.TRAINING_JOB)
    spec = filled["spec"]
    assert spec["qos"] == "cpuset" and spec["protocol"] == "grpc" and spec["topology"]["mode"] == "spread"
    assert spec["topology"]["workersPerServer"] == 10 and spec["roles"]["chief"]["replicas"] == 1
    assert spec["training"]["model"]["hiddenUnits"] == [64, 32]
    assert "api" not in spec, "api's default depends on the protocol: the model decides it"


# ---- image references on a mirror -----------------------------------------------------------

@pytest.mark.parametrize("image, mirrored", [
    # a registry named: replaced, the repository path, tag and digest kept
    ("registry.example.com/ml/wide-deep:1.4", "mirror.example.com/hub/ml/wide-deep:1.4"),
    ("localhost:5000/ml/x@sha256:" + "a" * 64, "mirror.example.com/hub/ml/x@sha256:" + "a" * 64),
    ("gcr.io/project/image", "mirror.example.com/hub/project/image"),
    # none named: Docker Hub's, whose single names live under library/
    ("tensorflow/tensorflow:2.21.0", "mirror.example.com/hub/tensorflow/tensorflow:2.21.0"),
    ("ubuntu:24.04", "mirror.example.com/hub/library/ubuntu:24.04"),
    ("ubuntu", "mirror.example.com/hub/library/ubuntu"),
    # already on the mirror: kept
    ("mirror.example.com/hub/ml/x:1", "mirror.example.com/hub/ml/x:1"),
])
def test_an_image_registry_is_a_mirror_of_every_image(image, mirrored):
    import dataclasses

    from tfjobgen.concerns import container
    from tfjobgen.expand import pipeline
    from tfjobgen.inputs.profile import default_profile

    job = type("Job", (), {"image": image})()
    mirror = dataclasses.replace(default_profile(), image_registry="mirror.example.com/hub")
    assert container.image(job, mirror) == mirrored
    assert container.image(job, pipeline.load_profile(None)) == image, "no imageRegistry: as written"


@pytest.mark.parametrize("registry, image, mirrored", [
    # the mirror's path prefix is a folder of the mirror: a repository path already under it is not put under it twice
    ("harbor.corp.example/ml", "registry.example.com/ml/tfjobgen-runtime:0.1.0", "harbor.corp.example/ml/tfjobgen-runtime:0.1.0"),
    ("harbor.corp.example:8443/ml/cache", "registry.example.com/ml/cache/x:1", "harbor.corp.example:8443/ml/cache/x:1"),
    ("harbor.corp.example/ml", "ml/x:1", "harbor.corp.example/ml/x:1"),
    # a whole folder, not the first letters of one; and elsewhere the repository path goes under the prefix
    ("harbor.corp.example/ml", "registry.example.com/mlops/x:1", "harbor.corp.example/ml/mlops/x:1"),
    ("harbor.corp.example/ml", "registry.example.com/team/ml/x:1", "harbor.corp.example/ml/team/ml/x:1"),
    ("harbor.corp.example/library", "ubuntu", "harbor.corp.example/library/ubuntu"),
])
def test_a_mirror_path_prefix_the_image_already_has_is_not_doubled(registry, image, mirrored):
    import dataclasses

    from tfjobgen.concerns import container
    from tfjobgen.inputs.profile import default_profile

    job = type("Job", (), {"image": image})()
    assert container.image(job, dataclasses.replace(default_profile(), image_registry=registry)) == mirrored


# ---- labels and annotations as the API server judges them ------------------------------------

@pytest.mark.parametrize("key, valid", [
    ("team", True), ("app.kubernetes.io/name", True), ("example.com/Team_1.x", True), ("a" * 63, True),
    ("Bad Key!", False), ("a" * 64, False), ("/team", False), ("Example.com/team", False),
    ("team-", False), ("-team", False), ("a/b/c", False), ("x" * 254 + "/team", False),
])
def test_label_keys_follow_kubernetes(key, valid, tmp_path):
    text = (f"apiVersion: tfjobgen.dev/v1alpha1\nkind: TrainingJob\nmetadata:\n  name: t\n  namespace: t\n"
            f"  labels: {{'{key}': ok}}\nspec:\n  image: x/y:1\n  command: [python, t.py]\n  roles:\n"
            f"    ps: {{replicas: 1, cpu: 1, memory: 1Gi}}\n    worker: {{replicas: 1, cpu: 1, memory: 1Gi}}\n")
    errors = [p for p in problems_of(text, tmp_path) if p.is_error]
    assert (errors == []) is valid, [p.message for p in errors]


# ---- integers written with a decimal point ------------------------------------------------------

def test_a_whole_number_written_as_a_float_is_that_integer(tmp_path):
    """JSON Schema counts 4.0 as an integer, so the schema takes it; Kubernetes' int32 and int64 fields do
    not (the API server cannot decode 4.0 into an integer), so the objects must say 4, as for `4`."""
    from conftest import render

    whole = (tmp_path / "whole.yaml", "replicas: 4, cpu: 2", "activeDeadlineSeconds: 3600")
    dotted = (tmp_path / "dotted.yaml", "replicas: 4.0, cpu: 2", "activeDeadlineSeconds: 3.6e3")
    rendered = []
    for path, worker, deadline in (whole, dotted):
        path.write_text("apiVersion: tfjobgen.dev/v1alpha1\nkind: TrainingJob\nmetadata: {name: t, namespace: t}\n"
                        "spec:\n  image: x/y:1\n  command: [python, t.py]\n"
                        f"  failurePolicy: {{{deadline}}}\n  roles:\n"
                        f"    ps: {{replicas: 1, cpu: 1, memory: 1Gi}}\n    worker: {{{worker}, memory: 1Gi}}\n")
        rendered.append(render(path))
    assert rendered[0] == rendered[1]
    assert all(type(job["spec"]["activeDeadlineSeconds"]) is int for job in rendered[1] if job["kind"] == "Job")


# ---- image references as the kubelet parses them (distribution/reference) -----------------------------

@pytest.mark.parametrize("reference, wrong", [
    ("ubuntu", ""), ("ubuntu:24.04", ""), ("library/ubuntu", ""), ("tensorflow/tensorflow:2.21.0-gpu", ""),
    ("registry.example.com/ml/wide-deep:1.4", ""), ("localhost:5000/x", ""), ("localhost/x:latest", ""),
    ("Registry.Example.com/ml/x", ""), ("[::1]:5000/ml/x:1", ""), ("r.io/a__b/c.d/e---f:_tag.9-x", ""),
    ("r.io/x@sha256:" + "a" * 64, ""), ("r.io/x:1@sha512:" + "0" * 128, ""), ("x" * 255, ""),
    ("registry.example.com/ML/x:1", "upper-case"), ("Ubuntu", "upper-case"), ("r.io/x:größer", "the tag"),
    ("r.io/x:" + "t" * 129, "the tag"), ("r.io/x:-1", "the tag"), ("registry..example.com/x", "empty DNS label"),
    ("registry.example.com./x", "empty DNS label"), ("-r.io/x", "DNS label '-r'"), ("r.io:http/x", "port"),
    ("r.io//x", "empty component"), ("r.io/x/", "empty component"), ("r.io/x_-y", "'x_-y'"), ("r.io/.x", "'.x'"),
    ("r.io/x@sha256:abc", "64 lower-case"), ("r.io/x@sha256:" + "A" * 64, "64 lower-case"),
    ("r.io/x@md5:" + "a" * 32, "algorithm 'md5'"), ("r.io/x@", "algorithm:hex"), ("x" * 256, "at most 255"),
    ("a" * 64, "image ID"), ("r.io/", "empty component"), (":1", "names no repository"),
])
def test_image_references_follow_the_kubelets_grammar(reference, wrong):
    from tfjobgen.inputs import image_reference

    found = image_reference.reference_problem(reference)
    assert (wrong in found and found) if wrong else found == "", found


@pytest.mark.parametrize("registry, wrong", [
    ("mirror.example.com", ""), ("mirror.example.com:5000/hub/ml", ""), ("localhost:5000", ""), ("localhost", ""),
    ("mirror", "Docker Hub"), ("mirror..example.com", "empty DNS label"), ("mirror.example.com/Hub", "upper-case"),
    ("mirror.example.com//hub", "empty component"),
])
def test_an_image_registry_is_a_registry(registry, wrong):
    from tfjobgen.inputs import image_reference

    found = image_reference.registry_problem(registry)
    assert (wrong in found and found) if wrong else found == "", found


def test_an_image_too_long_on_the_mirror_is_refused(tmp_path):
    long_path = "/".join(["team"] * 48)  # 239 characters: fits as written, not behind the mirror's host
    text = (f"apiVersion: tfjobgen.dev/v1alpha1\nkind: TrainingJob\nmetadata: {{name: t, namespace: t}}\n"
            f"spec:\n  image: r.io/{long_path}:1\n  command: [python, t.py]\n  roles:\n"
            f"    ps: {{replicas: 1, cpu: 1, memory: 1Gi}}\n    worker: {{replicas: 1, cpu: 1, memory: 1Gi}}\n")
    assert [p for p in problems_of(text, tmp_path) if p.is_error] == []
    (tmp_path / "profile.yaml").write_text("apiVersion: tfjobgen.dev/v1alpha1\nkind: ClusterProfile\n"
                                           "metadata: {name: p}\nspec: {imageRegistry: mirror.example.com/hub}\n")
    [problem] = [p for p in problems_of(text, tmp_path, profile=str(tmp_path / "profile.yaml")) if p.is_error]
    assert problem.field == "spec.image" and "on the profile's mirror" in problem.message and "at most 255" in problem.message


# ---- the profile's strings as their consumers read them ------------------------------------------------

@pytest.mark.parametrize("name, wrong", [
    ("nvidia.com/gpu", ""), ("amd.com/gpu", ""), ("example.com/Fpga_1", ""),
    ("gpu", "no domain prefix"), ("kubernetes.io/gpu", "kubernetes.io/"), ("gpu.kubernetes.io/a100", "kubernetes.io/"),
    ("requests.nvidia.com/gpu", "'requests.'"), ("nvidia..com/gpu", "not a DNS subdomain"),
    ("nvidia.com/", "characters"), ("x" * 245 + ".io/gpu", "at most 244"),
])
def test_gpu_resources_are_extended_resource_names(name, wrong):
    from tfjobgen.inputs import kubernetes_syntax

    found = kubernetes_syntax.extended_resource_problem(name)
    assert (wrong in found and found) if wrong else found == "", found


@pytest.mark.parametrize("text, nanoseconds", [
    ("30s", 30 * 10**9), ("1m30s", 90 * 10**9), ("1h", 3600 * 10**9), ("500ms", 5 * 10**8), ("0", 0), ("0s", 0),
    ("1y2w3d4h5m6s7ms", ((((365 + 17) * 24 + 4) * 60 + 5) * 60 + 6) * 10**9 + 7 * 10**6),
    ("", None), ("30", None), ("30 s", None), ("1s1m", None), ("1.5m", None), ("30sec", None), ("-1s", None),
])
def test_scrape_intervals_are_prometheus_durations(text, nanoseconds):
    from tfjobgen.inputs import kubernetes_syntax

    assert kubernetes_syntax.duration_ns(text) == nanoseconds
    assert kubernetes_syntax.duration_problem("106751d") == "" and kubernetes_syntax.duration_problem("106752d") != ""
