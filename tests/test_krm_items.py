"""A ResourceList's items are objects (KRM functions spec: each a mapping with apiVersion, kind and metadata);
an item that is text, null, a number or a list is refused in one line naming items[i], and never passed into the
output, where kustomize or kpt would then write it out as a resource."""

from __future__ import annotations

import copy
import io

import pytest
import yaml
from conftest import JOBS, SAMPLE, load_yaml_stream

from tfjobgen.expand import krm

JOB = yaml.safe_load((JOBS / "scene1-case1.yaml").read_text())
CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "b"}}


def run(*items) -> tuple[str, int, str]:
    text = yaml.safe_dump({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
                           "items": [copy.deepcopy(i) for i in items]})
    stderr = io.StringIO()
    output, code = krm.run_resource_list(text, str(SAMPLE), stderr=stderr)
    return output, code, stderr.getvalue()


@pytest.mark.parametrize("item, said", [("just a string", "the text 'just a string'"), (None, "null"),
                                        ([1, 2], "a list"), (7, "a number"), (True, "true/false")],
                         ids=["string", "null", "list", "number", "boolean"])
def test_an_item_that_is_no_object_is_refused_naming_it(item, said):
    output, code, stderr = run(JOB, CONFIG_MAP, item)
    lines = [line for line in stderr.splitlines() if not line.startswith("tfjobgen: ")]
    assert code == 1 and len(lines) == 1, stderr
    assert lines[0].startswith(f"<stdin>: items[2]: is {said}; every item of a ResourceList is an object"), stderr
    answer = load_yaml_stream(output)[0]
    assert answer["items"] == [] and answer["results"][0]["severity"] == "error"


def test_every_such_item_is_named():
    _, code, stderr = run(None, JOB, "x")
    assert code == 1 and "items[0]: is null" in stderr and "items[2]: is the text 'x'" in stderr, stderr


def test_objects_still_pass_through():
    output, code, stderr = run(JOB, CONFIG_MAP)
    assert code == 0, stderr
    assert CONFIG_MAP in load_yaml_stream(output)[0]["items"]


def test_a_job_given_as_the_function_config_is_called_a_job():
    """kpt fn eval --fn-config jobs/x.yaml: the job was judged as a profile, and called "ClusterProfile <job>"."""
    text = yaml.safe_dump({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [JOB],
                           "functionConfig": copy.deepcopy(JOB)})
    stderr = io.StringIO()
    output, code = krm.run_resource_list(text, str(SAMPLE), stderr=stderr)
    lines = [line for line in stderr.getvalue().splitlines() if not line.startswith("tfjobgen: ")]
    assert code == 1 and lines == [
        f"<stdin>: functionConfig: the function config is TrainingJob {JOB['metadata']['name']}, not a ClusterProfile: "
        "give kpt --fn-config the cluster's profile (overlays/<cluster>/cluster-profile.yaml); the jobs are the "
        "package's resources"], stderr.getvalue()
    assert "ClusterProfile " + JOB["metadata"]["name"] not in stderr.getvalue()
