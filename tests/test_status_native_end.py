"""`tfjobgen status` of a native job at its end agrees with Argo CD's health of the same Jobs (issue 32).

A native job is a batch/v1 Job per role. Argo CD's built-in health of a Job (gitops-engine pkg/health/health_job.go)
is Progressing until the Job has a Complete or Failed condition, then Healthy or Degraded; an Application is as
healthy as its least healthy resource. `status` once said "succeeded" as soon as the chief's pod completed,
while the PS Job still ran (Argo: Progressing) or had failed at its deadline (Argo: Degraded).
"""

from __future__ import annotations

import pytest
from conftest import JOBS, render

from tfjobgen import backends
from tfjobgen.status import derive
from tfjobgen.status.read import Snapshot

NAMESPACE = "ml"
_ORDER = ("Healthy", "Suspended", "Progressing", "Missing", "Degraded", "Unknown")  # gitops-engine's, least to most


def argo_job_health(job: dict) -> str:
    """health_job.go: Failed -> Degraded, Complete -> Healthy, else Progressing (Suspended when suspended)."""
    types = {c["type"] for c in (job.get("status") or {}).get("conditions", []) if c.get("status") == "True"}
    if "Failed" in types:
        return "Degraded"
    if "Complete" in types:
        return "Healthy"
    return "Suspended" if "Suspended" in types else "Progressing"


def argo_app_health(jobs: list[dict]) -> str:
    return max((argo_job_health(j) for j in jobs), key=_ORDER.index)


AGREES = {"succeeded": "Healthy", "failed": "Degraded", "running": "Progressing", "starting": "Progressing"}


def _snapshot(ended: dict[str, tuple[str, int | None]], job_conditions: dict[str, tuple[str, str]],
              job=JOBS / "wide-deep.yaml", ended_at: dict[str, str] | None = None) -> Snapshot:
    """A job on native (the wide & deep job by default): each role's pods in `ended`'s phase (with exit code, ended
    at `ended_at`'s time), each role's Job with `job_conditions`' (type, reason)."""
    objects = render(job)
    jobs = [o for o in objects if o["kind"] == "Job"]
    pods = []
    for pod in backends.pods_of(objects):
        phase, code = ended.get(pod.role, ("Running", None))
        state = {"terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                                "finishedAt": (ended_at or {}).get(pod.role, "2026-01-01T01:00:00Z")}} \
            if code is not None else {"running": {}}
        pods.append({"metadata": {"name": pod.hostname, "namespace": NAMESPACE, "labels": pod.labels,
                                  "annotations": pod.annotations, "creationTimestamp": "2026-01-01T00:00:00Z"},
                     "spec": pod.spec, "status": {"phase": phase, "containerStatuses": [
                         {"name": "tensorflow", "state": state}]}})
    for job in jobs:
        job["metadata"]["namespace"] = NAMESPACE
        role = job["metadata"]["labels"]["tfjobgen.dev/role"]
        if role in job_conditions:
            kind, reason = job_conditions[role]
            job["status"] = {"conditions": [{"type": kind, "status": "True", "reason": reason, "message": "",
                                             "lastTransitionTime": "2026-01-01T01:00:00Z"}]}
    maps = [o for o in objects if o["kind"] == "ConfigMap"]
    name = next(o["metadata"]["name"] for o in objects if o["kind"] == "ConfigMap").removesuffix("-cluster")
    return Snapshot(NAMESPACE, name, "native", jobs, jobs, maps, pods)


CASES = {
    "the chief succeeded, the PS and workers still run": (
        {"chief": ("Succeeded", 0)}, {"chief": ("Complete", "CompletionsReached")}, "running"),
    "the chief succeeded, the PS Job failed at its deadline": (
        {"chief": ("Succeeded", 0), "ps": ("Failed", 137)},
        {"chief": ("Complete", "CompletionsReached"), "ps": ("Failed", "DeadlineExceeded")}, "failed"),
    "every task ended well": (
        {role: ("Succeeded", 0) for role in ("chief", "ps", "worker", "evaluator")},
        {role: ("Complete", "CompletionsReached") for role in ("chief", "ps", "worker", "evaluator")}, "succeeded"),
}


@pytest.mark.parametrize("case", CASES)
def test_status_never_says_succeeded_while_a_task_runs_or_a_job_failed_and_agrees_with_argo_cd(case):
    ended, conditions, expected = CASES[case]
    snapshot = _snapshot(ended, conditions)
    status = derive.job_status(snapshot)
    assert status.state == expected, status.reason
    assert AGREES[status.state] == argo_app_health(snapshot.jobs)
    if expected == "running":
        assert "chief:0 completed (exit 0)" in status.reason and "ps:0" in status.reason


def test_a_program_of_ones_own_that_failed_for_good_is_the_cause_not_the_tasks_its_entrypoint_stopped(tmp_path):
    """Under the entrypoint, as under the runtime, the others exit 4 when the chief says ABORT: often before the
    failing program's own pod has ended (the chief's entry waits for their goodbyes first)."""
    ended = {"ps": ("Failed", 4), "worker": ("Failed", 4), "chief": ("Failed", 42)}
    failed = {role: ("Failed", "PodFailurePolicy") for role in ended}
    at = {"ps": "2026-01-01T01:00:01Z", "worker": "2026-01-01T01:00:01Z", "chief": "2026-01-01T01:00:02Z"}
    own = tmp_path / "own.yaml"
    own.write_text((JOBS / "wide-deep.yaml").read_text().replace("spec:\n", "spec:\n  command: [python, /app/train.py]\n"
                                                                  "  failurePolicy: {permanentExitCodes: [42]}\n", 1))
    status = derive.job_status(_snapshot(ended, failed, own, at))
    assert (status.state, status.cause) == ("failed", "chief:0"), status.reason
