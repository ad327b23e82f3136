"""tfjobgen's rules for what reaches an object, held to a real kube-apiserver's answers, so that the two
cannot drift: a rule tfjobgen keeps (inputs/kubernetes_syntax.py) that the server no longer keeps, or one
the server gained, fails here on the release the local cluster runs (TFJOBGEN_TEST_KUBERNETES: another).

Each env `valueFrom` case of tests/env_value_from_cases.py goes to the server as a Pod's one env entry,
created with server-side dry run and strict field validation (what `kubectl apply`, and Argo CD, send);
the server's verdict must be the table's and tfjobgen's.
"""

from __future__ import annotations

import json

import pytest
from cluster_support import local_cluster
from env_value_from_cases import CASES
from test_env_rules import admitted

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
