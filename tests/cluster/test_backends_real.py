"""Each backend held to its real controller: what `decode` predicts is what the controller creates.

A sample of the matrix (benchmarks/real_controllers.py runs all of it: every job of jobs/ on every
backend under both profiles): a job with a chief (ctr-jobset), one with a chief and an evaluator
on cpuset QoS (wide-deep), and a tf1 job without a chief on isolated node pools (scene2-case1),
each on native (the Job controller), jobset (the JobSet controller) and tfjob (the training-operator),
under seed-80c and prod-96c, and ctr-jobset under prod-96c with each gang scheduler
(Volcano, Coscheduling, Kueue: what their admission adds to the pods is checked too). Every cell is applied server-side into a namespace that
enforces Pod Security "restricted"; then:

- the controller created exactly the pods and Services decode predicts, by name, with the labels
  and annotations decode predicts, and every pod's environment, expanded as the kubelet would,
  is decode's: TF_CONFIG byte for byte (tfjobgen.cluster.measure.conformance);
- TensorFlow (TFConfigClusterResolver, multi_worker_util) reads each real pod's TF_CONFIG as
  the task of that pod, its own address the one that names its host.
"""

from __future__ import annotations

import json

import pytest
from conftest import need, uses
from real_support import GANGS, Cell, Clusters

from tfjobgen.harness import tf_resolver
from tfjobgen import backends
from tfjobgen.harness import conformance
from tfjobgen.shared import contract

SAMPLE_JOBS = ("ctr-jobset", "wide-deep", "scene2-case1")
BACKENDS = ("native", "jobset", "tfjob")
NODES = {"seed-80c": 20, "prod-96c": 10}  # every cell of a setting at once: seed-80c's group, prod-96c's each pool
SETTINGS = [("seed-80c", "none"), ("prod-96c", "none")]
GANG_JOB = "ctr-jobset"  # under each gang scheduler, one job on every backend (the matrix script runs all)
CELLS = ([Cell(job, backend, profile, gang) for profile, gang in SETTINGS for job in SAMPLE_JOBS for backend in BACKENDS]
         + [Cell(GANG_JOB, backend, "prod-96c", gang) for gang in GANGS if gang != "none" for backend in BACKENDS])
RUNNING_WITHIN = 180  # seconds from apply to every pod of a cell Running, on 2 shared cores


@pytest.fixture(scope="module")
def clusters():
    pool = Clusters(CELLS, NODES)
    yield pool
    pool.close()


@pytest.fixture(scope="module")
@uses("tensorflow")
def tensorflow():
    import importlib.util

    need("tensorflow", "tensorflow" if importlib.util.find_spec("tensorflow") else None,
         "install the runtime extra: pip install -e '.[runtime]'")
    with tf_resolver.Reader() as reader:
        yield reader


def on_its_cluster(setting: tuple[str, str]):
    """The tests of one setting share a process (--dist loadgroup), so its cluster starts once; settings
    go to whichever process is free."""
    return pytest.mark.xdist_group(f"backends-real-{'-'.join(setting)}")


@pytest.mark.parametrize("cell", [pytest.param(c, marks=on_its_cluster(c.setting)) for c in CELLS], ids=str)
def test_the_controller_creates_what_decode_predicts(cell, clusters, tensorflow):
    running = clusters.get(cell.setting)
    applied = running.cells[cell]
    objects = running.cluster.objects
    conformance.wait_running(objects, cell.namespace, len(applied.decoded.pods), RUNNING_WITHIN)
    found, observed = conformance.settled_differences(objects, cell.namespace, applied.decoded, gang=cell.gang)
    assert found == []
    assert len([p for p in observed.pods if conformance.live(p)]) == len(applied.decoded.pods)

    by_host = {p.hostname: p for p in applied.decoded.pods}
    listed = tf_resolver.cluster_roles({p.role for p in applied.decoded.pods},
                                       backends.get(cell.backend).naming.evaluator_in_cluster)
    cases = []
    for pod in observed.pods:
        task = by_host[conformance.host_of(pod)]
        env, _ = conformance.real_env(pod, observed.config_maps)
        assert json.loads(env[contract.TF_CONFIG])["task"] == {"type": task.role, "index": task.index}
        cases.append(tf_resolver.case(pod["metadata"]["name"], env[contract.TF_CONFIG], task.role, task.index,
                                      conformance.host_of(pod), listed))
    assert tensorflow.misread(cases) == []


@on_its_cluster(CELLS[0].setting)  # the first setting's cluster, which clusters.any() starts when none runs
def test_the_training_operators_webhook_refuses_a_tfjob_it_cannot_run(clusters):
    """Served on 127.0.0.1 and registered by URL: the API server calls it, and its answer reaches the user."""
    cluster = clusters.any().cluster
    cluster.restricted_namespace("webhook-check")
    tfjob = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "no-tensorflow", "namespace":
             "webhook-check"}, "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "template": {"spec": {
                 "containers": [{"name": "trainer", "image": "registry.example.com/x:1"}]}}}}}}
    refused = cluster.apply(json.dumps(tfjob), check=False)
    assert refused.returncode != 0
    assert 'admission webhook "validator.tfjob.training-operator.kubeflow.org" denied the request' in refused.stderr
    assert "must have at least one container with name tensorflow" in refused.stderr
