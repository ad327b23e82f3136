"""How a job ends on the real JobSet controller and training-operator, and the statuses they write.

On one seed-80c cluster, jobs/ctr-jobset.yaml (a chief) and jobs/scene2-case1.yaml (tf1, no chief)
on backends jobset and tfjob; KWOK's stages end a pod as a test says (cluster_support):

- the chief succeeding completes the JobSet / TFJob and its controller deletes every other task;
  without a chief, the TFJob succeeds with worker 0, the JobSet only once every worker has (its
  successPolicy counts whole child Jobs);
- a permanent exit code (the runtime's 3) fails it, and every other task ends;
- an eviction (a disruption) does not fail a JobSet: the task gets a new pod and the job runs on;
  it does fail a TFJob (the operator counts the deleted pod as failed while it still runs);
- suspended (as Kueue holds a job), it creates no pod.

The statuses the controllers write at each of these points are the fixtures of the Argo CD health
checks (tests/gitops/statuses/, read by tests/gitops/test_health_generated.py): each test checks
that the controller still writes the recorded one, and UPDATE_STATUSES=1 records them anew.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import yaml
from cluster_support import RELEASE
from conftest import REPO
from real_support import Cell, Clusters

from tfjobgen.artifacts import programs
from tfjobgen.harness import conformance

STATUSES = REPO / "tests" / "gitops" / "statuses"
UPDATE = os.environ.get("UPDATE_STATUSES") == "1"
RECORDED_AS = "ml-training"  # the namespace the recorded messages name (jobs/ctr-jobset.yaml's own)
KINDS = {"jobset": ("jobset.x-k8s.io/v1alpha2", "JobSet"), "tfjob": ("kubeflow.org/v1", "TFJob")}
DONE = {"jobset": "Completed", "tfjob": "Succeeded"}  # the condition each writes when the job succeeded
# Who writes the statuses: the releases a cluster of this run's Kubernetes runs (cluster-tools/versions.yaml).
VERSIONS = {"jobset": f"JobSet {programs.family_for('jobset-controller', RELEASE).version}",
            "tfjob": f"the training-operator {programs.family_of('training-operator').version}"}
SCENARIOS = [("chief-succeeds", "ctr-jobset", False), ("worker-0-succeeds", "scene2-case1", False),
             ("permanent-exit", "ctr-jobset", False), ("evicted", "ctr-jobset", False),
             ("suspended", "ctr-jobset", True)]
CELLS = [Cell(job, backend, "seed-80c", scenario=scenario, suspend=suspend)
         for scenario, job, suspend in SCENARIOS for backend in KINDS]
WITHIN = 60  # seconds for a controller to act on what a pod did


@pytest.fixture(scope="module")
def clusters():
    pool = Clusters(CELLS, {"seed-80c": 12})
    yield pool
    pool.close()


def cell(scenario: str, backend: str) -> Cell:
    return next(c for c in CELLS if c.scenario == scenario and c.backend == backend)


class Job:
    """A cell's job on the cluster: its pods by task, its status."""

    def __init__(self, clusters: Clusters, scenario: str, backend: str):
        self.cell = cell(scenario, backend)
        running = clusters.get(self.cell.setting)
        self.cluster, self.applied = running.cluster, running.cells[self.cell]
        self.backend, self.namespace = backend, self.cell.namespace
        self.name = self.applied.decoded.name
        self.hosts = {p.task: p.hostname for p in self.applied.decoded.pods}

    def wait_running(self) -> None:
        conformance.wait_running(self.cluster.objects, self.namespace, len(self.hosts), 120)

    def live(self) -> dict[str, dict]:
        """task -> its live pod."""
        by_host = {conformance.host_of(p): p for p in self.cluster.pods(self.namespace) if conformance.live(p)}
        return {task: by_host[host] for task, host in self.hosts.items() if host in by_host}

    def pod(self, task: str) -> str:
        return self.live()[task]["metadata"]["name"]

    def status(self) -> dict:
        return (self.cluster.objects.get(*KINDS[self.backend], self.name, self.namespace) or {}).get("status") or {}

    def condition(self, kind: str) -> dict | None:
        return next((c for c in self.status().get("conditions") or [] if c["type"] == kind and c["status"] == "True"),
                    None)

    def wait_condition(self, kind: str) -> dict:
        return self.cluster.wait(lambda: self.condition(kind), f"{self.backend} {self.namespace}: condition {kind}",
                                 WITHIN)

    def wait_only(self, tasks: set[str], what: str) -> None:
        """Until the live pods are exactly those of `tasks`."""
        self.cluster.wait(lambda: set(self.live()) == tasks, f"{self.namespace}: {what}", WITHIN)

    def holds(self, state: str, why: str) -> None:
        """The status now is the recorded one (settled: asked until it is, for a while)."""
        path = STATUSES / f"{self.backend}-{state}.yaml"
        if UPDATE:
            self._record(path, why)
        recorded = yaml.safe_load(path.read_text())["status"]
        last = {}

        def same() -> bool:
            last["seen"] = normalized(self.status(), self.namespace)
            return last["seen"] == recorded

        try:
            self.cluster.wait(same, f"{self.backend} status {state}", 30)
        except TimeoutError:
            assert last["seen"] == recorded, f"{VERSIONS[self.backend]} no longer writes {path.name}"

    def _record(self, path: Path, why: str) -> None:
        settled = {}

        def steady() -> bool:
            now = normalized(self.status(), self.namespace)
            stable = settled.get("status") == now
            settled["status"] = now
            return stable

        self.cluster.wait(steady, f"{self.backend} status settled", 30)
        time.sleep(3)  # and still the same a while later
        if normalized(self.status(), self.namespace) != settled["status"]:
            self._record(path, why)
            return
        STATUSES.mkdir(exist_ok=True)
        header = (f"# The status {VERSIONS[self.backend]} wrote for jobs/{self.cell.job}.yaml on backend {self.backend}"
                  f" {why}.\n# Recorded on a local cluster by tests/cluster/test_lifecycle_real.py (UPDATE_STATUSES=1),"
                  f" which checks it\n# still holds; times replaced by one fixed time, the namespace by "
                  f"{RECORDED_AS}.\n")
        path.write_text(header + yaml.safe_dump({"status": settled["status"]}, sort_keys=False, width=120))


def normalized(status: dict, namespace: str) -> dict:
    """A status as recorded: times fixed, the cell's namespace named as recorded, lists by name."""
    def walk(value, key=""):
        if isinstance(value, dict):
            return {k: walk(v, k) for k, v in value.items()}
        if isinstance(value, list):
            items = [walk(v) for v in value]
            return sorted(items, key=lambda i: i.get("name", "")) if key == "replicatedJobsStatus" else items
        if isinstance(value, str) and key.endswith("Time"):
            return "2026-01-01T00:00:00Z"
        if isinstance(value, str):
            return value.replace(f"{namespace}/", f"{RECORDED_AS}/")
        return value
    return walk(status)


@pytest.mark.parametrize("backend", KINDS)
def test_the_chief_succeeding_completes_the_job_and_ends_every_other_task(clusters, backend):
    job = Job(clusters, "chief-succeeds", backend)
    job.wait_running()
    job.holds("running", "once every pod was Running")
    job.cluster.succeed_pod(job.namespace, job.pod("chief:0"))
    job.wait_condition(DONE[backend])
    job.wait_only(set(), "every other task deleted by the controller")
    assert not job.condition("Failed")
    job.holds("succeeded", "after the chief exited 0")


@pytest.mark.parametrize("backend", KINDS)
def test_without_a_chief_worker_0_succeeds_the_tfjob_and_every_worker_the_jobset(clusters, backend):
    job = Job(clusters, "worker-0-succeeds", backend)
    job.wait_running()
    job.cluster.succeed_pod(job.namespace, job.pod("worker:0"))
    others = set(job.hosts) - {"worker:0"}
    if backend == "tfjob":
        job.wait_condition(DONE[backend])
        job.wait_only(set(), "every other task deleted by the operator")
        return
    # successPolicy targets the worker Job, which completes only when all of its pods have.
    job.wait_only(others, "worker 0 done")
    time.sleep(3)  # long enough for JobSet to act, had it taken worker 0 for the whole Job
    assert not job.condition(DONE[backend]) and set(job.live()) == others
    for task in sorted(t for t in others if t.startswith("worker:")):
        job.cluster.succeed_pod(job.namespace, job.pod(task))
    job.wait_condition(DONE[backend])
    job.wait_only(set(), "the PS deleted by JobSet")


@pytest.mark.parametrize("backend", KINDS)
def test_a_permanent_exit_code_fails_the_job_and_ends_every_other_task(clusters, backend):
    job = Job(clusters, "permanent-exit", backend)
    job.wait_running()
    job.cluster.fail_pod(job.namespace, job.pod("worker:1"), 3)  # the runtime's "a restart will not help"
    failed = job.wait_condition("Failed")
    job.wait_only(set(), "every other task deleted by the controller")
    assert not job.condition(DONE[backend])
    assert failed["message"]
    job.holds("failed", "after worker 1 exited 3")


@pytest.mark.parametrize("backend", KINDS)
def test_an_eviction_gives_a_jobset_task_a_new_pod_but_fails_a_tfjob(clusters, backend):
    job = Job(clusters, "evicted", backend)
    job.wait_running()
    evicted = job.live()["worker:2"]["metadata"]["uid"]
    job.cluster.evict_pod(job.namespace, job.pod("worker:2"))
    if backend == "tfjob":
        # The operator counts the deleted, still Running pod as failed before any exit code: the job fails.
        failed = job.wait_condition("Failed")
        assert failed["message"].endswith("has failed because 1 Worker replica(s) failed.")
        job.wait_only(set(), "every other task deleted by the operator")
        job.holds("evicted", "after worker 2 was evicted")
        return
    job.cluster.wait(lambda: job.live().get("worker:2", {}).get("metadata", {}).get("uid") not in (None, evicted)
                     and job.live()["worker:2"].get("status", {}).get("phase") == "Running",
                     "a new pod for worker 2", WITHIN)
    assert set(job.live()) == set(job.hosts), "no other task ended"
    assert not job.condition("Failed") and not job.condition(DONE[backend])
    job.holds("evicted", "once the evicted worker 2 ran again in a new pod")


@pytest.mark.parametrize("backend", KINDS)
def test_a_suspended_job_creates_no_pods(clusters, backend):
    job = Job(clusters, "suspended", backend)
    job.wait_condition("Suspended")
    assert job.live() == {}
    job.holds("suspended", "applied suspended, as Kueue holds a job it has not admitted")
