"""How tasks end, on the real Job controller (kube-controller-manager 1.34) with KWOK's pods.

Each case is a small native-backend job in a namespace of its own, all on one cluster, and each
is held twice: to what Kubernetes does, and to lifecycle.after_failure, the Job controller's
decision as run-local plays it (a model stays only where it is held to the real thing).
"""

from __future__ import annotations

import time

import pytest
from cluster_support import local_cluster
from conftest import SAMPLE

from tfjobgen.concerns import labels, lifecycle
from tfjobgen.expand import emit, pipeline
from tfjobgen.shared import contract

SEED = SAMPLE / "overlays" / "seed-80c" / "cluster-profile.yaml"
RETRIES = 1


def small_job(name: str, namespace: str, extra: str = "") -> str:
    return f"""apiVersion: tfjobgen.dev/v1alpha1
kind: TrainingJob
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  image: registry.example.com/ml/tfjobgen-runtime:0.1.0
  roles:
    ps: {{replicas: 1, cpu: 2, memory: 4Gi}}
    worker: {{replicas: 2, cpu: 2, memory: 4Gi}}
    chief: {{cpu: 2, memory: 4Gi}}
  failurePolicy: {{backoffLimitPerTask: {RETRIES}{extra}}}
"""


def rendered(tmp_path, text: str) -> str:
    path = tmp_path / "job.yaml"
    path.write_text(text)
    intents, problems = pipeline.load_intents([str(path)])
    expansion = pipeline.expand(intents, pipeline.load_profile(str(SEED)))
    assert expansion.ok, [p.format() for p in problems + expansion.problems]
    return emit.to_yaml(expansion.in_order())


@pytest.fixture(scope="module")
def cluster():
    with local_cluster(SEED, 3) as running:
        yield running


def start(cluster, tmp_path, name: str, extra: str = "") -> str:
    namespace = f"lifecycle-{name}"
    cluster.restricted_namespace(namespace)
    cluster.apply(rendered(tmp_path, small_job(name, namespace, extra)))
    cluster.wait(lambda: len(_running(cluster, namespace)) == 4, f"{name}: 4 tasks Running")
    return namespace


def _running(cluster, namespace: str, selector: str = "") -> list[dict]:
    return [p for p in cluster.pods(namespace, selector) if p["status"].get("phase") == "Running"
            and not p["metadata"].get("deletionTimestamp")]


def _job(cluster, namespace: str, name: str) -> dict:
    return cluster.objects.get("batch/v1", "Job", name, namespace)


def _condition(job: dict, kind: str) -> dict | None:
    return next((c for c in (job.get("status") or {}).get("conditions") or [] if c["type"] == kind
                 and c["status"] == "True"), None)


def _task(cluster, namespace: str, role: str, index: int, other_than: str = "") -> dict | None:
    return next((p for p in _running(cluster, namespace, f"{labels.ROLE}={role}")
                 if p["metadata"]["labels"][labels.JOB_COMPLETION_INDEX] == str(index)
                 and p["metadata"]["name"] != other_than), None)


def _worker(cluster, namespace: str, index: int) -> dict:
    return cluster.wait(lambda: _task(cluster, namespace, "worker", index), f"worker {index} Running")


@pytest.mark.parametrize("code", contract.PERMANENT_EXIT_CODES)
def test_a_permanent_exit_code_fails_the_job_at_once(cluster, tmp_path, code):
    namespace = start(cluster, tmp_path, f"permanent-{code}")
    rules = lifecycle.Lifecycle(RETRIES, contract.PERMANENT_EXIT_CODES, None)
    assert lifecycle.after_failure(rules, code, disrupted=False, counted=0, ignored=0).fails_job
    cluster.fail_pod(namespace, _worker(cluster, namespace, 0)["metadata"]["name"], code)
    failed = cluster.wait(lambda: _condition(_job(cluster, namespace, f"permanent-{code}-worker"), "Failed"),
                          "the worker Job Failed")
    assert failed["reason"] == "PodFailurePolicy" and f"exit code {code}" in failed["message"]
    # FailJob ends the Job's other pods too: worker 1 does not keep its cores.
    cluster.wait(lambda: not _running(cluster, namespace, f"{labels.ROLE}=worker"), "worker 1 stopped")


def test_an_eviction_is_not_counted_and_the_task_never_has_two_pods(cluster, tmp_path):
    namespace = start(cluster, tmp_path, "evicted")
    old = _worker(cluster, namespace, 1)
    cluster.evict_pod(namespace, old["metadata"]["name"])
    seen_together = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pods = [p for p in cluster.pods(namespace, f"{labels.ROLE}=worker")
                if p["metadata"]["labels"][labels.JOB_COMPLETION_INDEX] == "1"]
        live = [p for p in pods if p["status"].get("phase") not in ("Failed", "Succeeded")]
        if len(live) > 1:
            seen_together.append([p["metadata"]["name"] for p in live])
        replacement = [p for p in live if p["metadata"]["name"] != old["metadata"]["name"]
                       and p["status"].get("phase") == "Running"]
        if replacement:
            break
        time.sleep(0.1)
    else:
        pytest.fail("no replacement for the evicted worker in 60 s")
    assert not seen_together, f"two pods of worker 1 at once (podReplacementPolicy Failed): {seen_together}"
    annotations = replacement[0]["metadata"]["annotations"]
    assert annotations.get(labels.JOB_INDEX_FAILURE_COUNT, "0") == "0", "the eviction is not counted"
    assert annotations.get(labels.JOB_INDEX_IGNORED_FAILURE_COUNT) == "1"
    assert not _condition(_job(cluster, namespace, "evicted-worker"), "Failed")
    rules = lifecycle.Lifecycle(RETRIES, contract.PERMANENT_EXIT_CODES, None)
    assert not lifecycle.after_failure(rules, 143, disrupted=True, counted=0, ignored=0).counted


def test_each_task_has_its_own_budget(cluster, tmp_path):
    namespace = start(cluster, tmp_path, "budget")
    rules = lifecycle.Lifecycle(RETRIES, contract.PERMANENT_EXIT_CODES, None)
    first = _worker(cluster, namespace, 0)
    failed_at = time.monotonic()
    cluster.fail_pod(namespace, first["metadata"]["name"], 1)
    decision = lifecycle.after_failure(rules, 1, disrupted=False, counted=0, ignored=0)
    assert not decision.fails_job and decision.counted
    second = cluster.wait(lambda: _task(cluster, namespace, "worker", 0, other_than=first["metadata"]["name"]),
                          "worker 0's next pod", timeout=decision.delay + 30)
    waited = time.monotonic() - failed_at
    # The model's delay is the Job controller's per-index backoff (10 s for a first failure).
    assert decision.delay - 2 <= waited <= decision.delay + 10, f"replaced after {waited:.1f} s"
    assert second["metadata"]["annotations"][labels.JOB_INDEX_FAILURE_COUNT] == "1"
    # Worker 1's budget is its own: worker 0 failing again fails the Job (maxFailedIndexes 0).
    assert lifecycle.after_failure(rules, 1, disrupted=False, counted=1, ignored=0).fails_job
    cluster.fail_pod(namespace, second["metadata"]["name"], 1)
    failed = cluster.wait(lambda: _condition(_job(cluster, namespace, "budget-worker"), "Failed"), "budget-worker Failed")
    assert failed["reason"] == "MaxFailedIndexesExceeded", failed
    assert _job(cluster, namespace, "budget-worker")["status"]["failedIndexes"] == "0"


def test_the_deadline_ends_a_job_running_its_own_program(cluster, tmp_path):
    namespace = "lifecycle-deadline"
    cluster.restricted_namespace(namespace)
    own = small_job("deadline", namespace, ", activeDeadlineSeconds: 5").replace(
        "  roles:", "  command: [python, train.py]\n  api: tf1\n  roles:")
    cluster.apply(rendered(tmp_path, own))
    failed = cluster.wait(lambda: _condition(_job(cluster, namespace, "deadline-ps"), "Failed"), "deadline-ps Failed",
                          timeout=40)
    assert failed["reason"] == "DeadlineExceeded"
    cluster.wait(lambda: not _running(cluster, namespace, f"{labels.ROLE}=ps"), "the PS stopped")


def test_the_chiefs_success_completes_its_job(cluster, tmp_path):
    namespace = start(cluster, tmp_path, "success")
    chief = _running(cluster, namespace, f"{labels.ROLE}=chief")[0]
    cluster.succeed_pod(namespace, chief["metadata"]["name"])
    complete = cluster.wait(lambda: _condition(_job(cluster, namespace, "success-chief"), "Complete"),
                            "success-chief Complete")
    assert complete and _job(cluster, namespace, "success-chief")["status"]["succeeded"] == 1
