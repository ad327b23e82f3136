"""Real nodes under a control plane of another release: the nodes' kubelet is the default release's (v1.34), and
Kubernetes' version skew policy lets a kubelet join an API server up to 3 minor releases newer, never an older one.
`--real-nodes 1 --kubernetes 1.37` once called the v1.34 kubelet "newer than" v1.37 and refused; it runs now, and
a pod runs on the real node to completion.
"""

from __future__ import annotations

import json

import pytest
from cluster import cluster_support
from nodes_support import PROFILE, need_real_nodes, probe_pod, run_probe

import machine
from tfjobgen.artifacts import programs
from tfjobgen.cluster.plane import release

# The machine holds one cluster with real nodes at a time: in the process of the tier's other real-node tests.
pytestmark = pytest.mark.xdist_group("real-nodes")


@pytest.mark.parametrize("kubelet, api_server, refused", [
    ("v1.34.12", "v1.37.2", ""),  # 3 minors older: allowed
    ("v1.34.12", "v1.34.12", ""),
    ("v1.34.12", "v1.30.14", "the nodes' kubelet is v1.34.12, newer than the API server (v1.30.14)"),
    ("v1.9.0", "v1.30.0", "more than 3 minor releases older than the API server (v1.30.0)"),  # 9 < 30 as numbers
    ("v1.34.12", "v1.38.0", "more than 3 minor releases older than the API server (v1.38.0)"),
])
def test_the_kubelet_is_held_to_the_version_skew_policy_compared_as_numbers(kubelet, api_server, refused):
    said = release.kubelet_skew_problem(kubelet, api_server)
    assert refused in said and said if refused else said == ""


def test_a_real_node_of_the_default_kubelet_runs_a_pod_under_a_newer_control_plane(tmp_path):
    need_real_nodes()
    newest = max(programs.releases("kube-apiserver"), key=lambda f: release.release(f.version))
    assert not release.kubelet_skew_problem(programs.family_of("kubelet").version, newest.version)
    cluster_support.need_cluster_tools()
    if not newest.is_built():
        pytest.skip(f"{newest.name} not built: run `tfjobgen cluster tools {newest.name}`")
    before = machine.snapshot()
    with cluster_support.local_cluster(PROFILE, 1, "--real-nodes", "1", "--kubernetes", newest.release) as cluster:
        served = json.loads(cluster.kubectl("version", "-o", "json").stdout)["serverVersion"]["gitVersion"]
        assert served == newest.version
        [node] = cluster.objects.list("v1", "Node")
        assert node["status"]["nodeInfo"]["kubeletVersion"] == programs.family_of("kubelet").version
        cluster.restricted_namespace("skew")
        phase, output = run_probe(cluster, probe_pod("hello", "skew", "print('ran on', 40 + 2)"))
        assert (phase, output.strip()) == ("Succeeded", "ran on 42"), output
    left = machine.differences(before, machine.snapshot())
    assert left == [], "after cluster down:\n" + "\n".join(left)
