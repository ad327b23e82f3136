"""TF_CONFIG by TensorFlow's rules, and addresses that reach exactly their pod.

- `cluster` lists the training tasks; the evaluator is outside it and finds itself as
  evaluator:0 (TensorFlow's TFConfigClusterResolver and multi_worker_util want it so; Kubeflow's
  TFJob operator lists it in `cluster` all the same, which TensorFlow accepts too). Checked
  with the real TensorFlow on every pod of every example job.
- every address is namespace-relative (`<pod>.<service>:<port>`) and, through the pod's
  DNS search path (tests/cluster_dns.py), reaches the pod of that very task, in whatever
  namespace the objects end up.
"""

from __future__ import annotations

import json

import pytest
from cluster_dns import ClusterDNS, candidates
from conftest import REPO, need, render

from jobs import JOB_FILES
from tfjobgen.harness import tf_resolver
from tfjobgen import backends
from tfjobgen.shared import contract

GOLDEN = REPO / "tests" / "golden"
EXAMPLES = [(p, None) for p in JOB_FILES] + [
    (case / "job.yaml", case / "profile.yaml" if (case / "profile.yaml").exists() else None)
    for case in sorted(GOLDEN.iterdir()) if (case / "job.yaml").exists()]


def _example_objects() -> list[tuple[str, list[dict]]]:
    return [(path.relative_to(REPO).as_posix(), render(path, profile=profile)) for path, profile in EXAMPLES]


# ---- the DNS model, on the documentation's own cases ----------------------------------------

def _pod_and_service(namespace="my-namespace", publish=True, headless=True):
    from tfjobgen.concerns.pods import make_pod

    template = {"metadata": {"labels": {"name": "busybox"}},
                "spec": {"hostname": "busybox-1", "subdomain": "busybox-subdomain", "containers": [{"name": "c"}]}}
    pod = make_pod("busybox1", namespace, template, {}, index=0, hostname="busybox-1")
    spec = {"selector": {"name": "busybox"}, "publishNotReadyAddresses": publish}
    if headless:
        spec["clusterIP"] = "None"
    service = {"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "busybox-subdomain", "namespace": namespace}, "spec": spec}
    return pod, service


def test_the_dns_model_follows_the_documented_cases():
    pod, service = _pod_and_service()
    dns = ClusterDNS([service], [pod], domain="cluster-domain.example")
    # The documentation's example record, and the short form through the search path.
    assert dns.resolve("busybox-1.busybox-subdomain.my-namespace.svc.cluster-domain.example", "default") is pod
    assert dns.resolve("busybox-1.busybox-subdomain", "my-namespace") is pod
    assert dns.resolve("busybox-1.busybox-subdomain", "default") is None, "the search path is the asking pod's"
    # ndots 5: fewer dots are searched first, five or more are tried as written first.
    assert candidates("a.b", "ns", "cluster.local")[0] == "a.b.ns.svc.cluster.local"
    assert candidates("a.b.c.d.e.f", "ns", "cluster.local")[0] == "a.b.c.d.e.f"
    # No record without a headless Service that publishes the pod before it is ready.
    for changed in (dict(publish=False), dict(headless=False)):
        pod, service = _pod_and_service(**changed)
        assert ClusterDNS([service], [pod]).resolve("busybox-1.busybox-subdomain", "my-namespace") is None


# ---- every example job ---------------------------------------------------------------------

@pytest.mark.slow  # seconds of CPU: every address of every example job through the DNS model
@pytest.mark.parametrize("moved_to", [None, "elsewhere"])
def test_every_address_reaches_its_own_task_through_the_pods_search_path(moved_to):
    """Also after a kustomization moved every object to another namespace: relative names move along."""
    for name, objects in _example_objects():
        if moved_to:
            objects = [{**o, "metadata": {**o["metadata"], "namespace": moved_to}} for o in objects]
        decoded = backends.decode(objects)
        pods = [pod for job in decoded for pod in job.pods]
        created = [o for job in decoded for o in job.created]  # Services a JobSet's controller makes
        by_task = {(p.role, p.index): p for p in pods}
        for domain in ("cluster.local", "k8s.internal"):  # the addresses do not depend on the cluster domain
            # The TFJob operator's Services publish Ready pods only (test_backend_objects.py checks both readings).
            dns = ClusterDNS(objects + created, pods, domain, ready=all(job.backend == "tfjob" for job in decoded))
            for pod in pods:
                cluster = json.loads(pod.env[contract.TF_CONFIG])["cluster"]
                for role, addresses in cluster.items():
                    for index, address in enumerate(addresses):
                        host, port = address.rsplit(":", 1)
                        target = dns.resolve(host, pod.namespace)
                        assert target is by_task[(role, index)], f"{name}: {pod.task} dials {address}"
                        assert int(port) in [p["containerPort"] for p in target.container["ports"]]


def test_the_evaluator_is_outside_the_cluster_and_is_evaluator_0():
    for name, objects in _example_objects():
        for job in backends.decode(objects):
            # tfjobgen's TF_CONFIG lists the training roles; the TFJob operator's lists the evaluator too.
            listed = set(tf_resolver.cluster_roles({p.role for p in job.pods},
                                                   backends.get(job.backend).naming.evaluator_in_cluster))
            for pod in job.pods:
                config = json.loads(pod.env[contract.TF_CONFIG])
                assert set(config["cluster"]) == listed, name
                assert config["task"] == {"type": pod.role, "index": pod.index}, name
    evaluator = [p for _, objects in _example_objects() for p in backends.pods_of(objects) if p.role == "evaluator"]
    assert evaluator, "some example job has an evaluator"


@pytest.mark.tensorflow  # imports it inside the test
def test_tensorflow_reads_every_tf_config_as_the_task_of_its_pod():
    import importlib.util

    need("tensorflow", "tensorflow" if importlib.util.find_spec("tensorflow") else None,
         "install the runtime extra: pip install -e '.[runtime]'")
    cases = []
    for name, objects in _example_objects():
        for job in backends.decode(objects):
            listed = tf_resolver.cluster_roles({p.role for p in job.pods},
                                               backends.get(job.backend).naming.evaluator_in_cluster)
            cases += [tf_resolver.case(f"{name} {pod.task}", pod.env[contract.TF_CONFIG], pod.role, pod.index,
                                       pod.hostname, listed) for pod in job.pods]
    assert tf_resolver.misread(cases) == [], "TensorFlow reads these TF_CONFIGs otherwise"
    assert len(cases) > 500 and any(c["expected"][0] == "evaluator" for c in cases)
