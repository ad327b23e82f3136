"""tfjobgen's rules for what reaches an object, held to a real kube-apiserver's answers, so that the two
cannot drift: a rule tfjobgen keeps (inputs/kubernetes_syntax.py) that the server no longer keeps, or one
the server gained, fails here on the release the local cluster runs (TFJOBGEN_TEST_KUBERNETES: another).

Each env `valueFrom` case of tests/env_value_from_cases.py goes to the server as a Pod's one env entry,
created with server-side dry run and strict field validation (what `kubectl apply`, and Argo CD, send);
the server's verdict must be the table's and tfjobgen's. So does each pod-field case of
tests/pod_field_cases.py (pull secrets as the Secrets they name, the rest as a Pod carrying them).
"""

from __future__ import annotations

import json

import pod_field_cases
import pytest
from cluster_support import local_cluster
from conftest import REPO, load_yaml_stream
from env_value_from_cases import CASES
from test_env_rules import admitted
from test_pod_fields import admitted as fields_admitted

from tfjobgen import backends
from tfjobgen.kube import api


@pytest.fixture(scope="module")
def api_server():
    """One local cluster (its real kube-apiserver) for every case; no node is needed for a dry run."""
    with local_cluster(None, 1) as cluster:
        # The ServiceAccount admission plugin refuses pods until the controller-manager makes `default`.
        api.wait_until(lambda: cluster.objects.get("v1", "ServiceAccount", "default", "default"), 60,
                       "the default ServiceAccount")
        yield cluster


def server_admits(cluster, value_from: dict) -> tuple[bool, str]:
    """The API server's verdict on a Pod whose container has this one env entry, and what it said."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "env-case", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "registry.example.com/x:1",
                                    "env": [{"name": "X", "valueFrom": value_from}]}]}}
    proc = cluster.kubectl("create", "--dry-run=server", "--validate=strict", "-o", "name", "-f", "-",
                           stdin=json.dumps(pod), check=False)
    return proc.returncode == 0, proc.stderr.strip()


@pytest.mark.parametrize("what, value_from, expected", CASES, ids=[c[0] for c in CASES])
def test_tfjobgen_judges_env_value_from_as_the_api_server_does(api_server, what, value_from, expected, tmp_path):
    server, said = server_admits(api_server, value_from)
    assert server == expected, f"the API server {'admits' if server else 'refuses'} {value_from}: {said}"
    assert admitted(value_from, tmp_path) == server, said


RESTRICTED = "pod-fields"  # a namespace enforcing Pod Security "restricted"


def restricted(cluster, namespace: str) -> None:
    """A namespace enforcing Pod Security "restricted", once its default ServiceAccount is there (pods wait for it)."""
    cluster.restricted_namespace(namespace)
    api.wait_until(lambda: cluster.objects.get("v1", "ServiceAccount", "default", namespace), 60,
                   f"the default ServiceAccount of {namespace}")


def server_admits_all(cluster, objects: list[dict]) -> tuple[bool, str]:
    """The API server's verdict on creating every object (dry run): admitted only when it admits each."""
    said = []
    for obj in objects:
        proc = cluster.kubectl("create", "--dry-run=server", "--validate=strict", "-o", "name", "-f", "-",
                               stdin=json.dumps(obj), check=False)
        said.append(proc.stderr.strip())
        if proc.returncode != 0:
            return False, "\n".join(said)
    return True, "\n".join(said)


@pytest.mark.parametrize("what, fields, expected", pod_field_cases.CASES, ids=[c[0] for c in pod_field_cases.CASES])
def test_tfjobgen_judges_pod_fields_as_the_api_server_does(api_server, what, fields, expected, tmp_path):
    restricted(api_server, RESTRICTED)
    server, said = server_admits_all(api_server, pod_field_cases.server_objects(fields, RESTRICTED))
    assert server == expected, f"the API server {'admits' if server else 'refuses'} {fields}: {said}"
    assert fields_admitted(fields, tmp_path) == server, said


@pytest.mark.parametrize("case", ["pod-fields-native", "pod-fields-jobset", "pod-fields-tfjob", "per-role-programs-native",
                                  "per-role-programs-tfjob"])
def test_pods_with_the_intents_fields_meet_restricted_pod_security(api_server, case):
    """Every pod a golden case with the new pod fields becomes is admitted, without a warning, where Pod Security
    "restricted" is enforced."""
    golden = REPO / "tests" / "golden" / case
    objects = load_yaml_stream((golden / "expected.yaml").read_text())
    pods = [pod for job in backends.decode(objects) for pod in job.pods]
    assert pods
    for namespace in sorted({pod.namespace for pod in pods}):
        restricted(api_server, namespace)
    for pod in pods:
        obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": pod.hostname, "namespace": pod.namespace, "labels": pod.labels, "annotations": pod.annotations},
            "spec": pod.spec}
        proc = api_server.kubectl("create", "--dry-run=server", "--validate=strict", "-o", "name", "-f", "-",
                                  stdin=json.dumps(obj), check=False)
        assert proc.returncode == 0 and "Warning" not in proc.stderr, f"{case} {pod.task}: {proc.stderr}"
