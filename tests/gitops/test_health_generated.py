"""Argo CD's view of the JobSet and TFJob tfjobgen generates: the health scripts of argocd/argocd-cm-patch.yaml
run (in the real Lua of test_health_lua.py) on the generated objects, with the status each controller writes.

The statuses follow the controllers' own types: JobSet (api/jobset/v1alpha2: conditions Completed,
Failed, Suspended; terminalState; replicatedJobsStatus per replicatedJob) and the TFJob operator
(kubeflow.org/v1 JobStatus: conditions Created, Running, Restarting, Succeeded, Failed;
replicaStatuses per replica type). Kueue holds a job it has not admitted by setting spec.suspend
(on the JobSet, on the TFJob's runPolicy): Argo CD must show it Suspended, not Progressing.
"""

from __future__ import annotations

import copy
import json

from test_health_lua import JOBSET, TFJOB, health

from conftest import JOBS
from tfjobgen import pipeline, source


def generated(kind: str) -> dict:
    """The JobSet of jobs/ctr-jobset.yaml, or the TFJob the same intent becomes on backend tfjob."""
    path = JOBS / "ctr-jobset.yaml"
    document = source.parse_documents(source.read_text(str(path)), str(path))[0]
    data = json.loads(json.dumps(document.data))
    data["spec"]["backend"] = "jobset" if kind == "JobSet" else "tfjob"
    expansion = pipeline.expand([pipeline.Intent(data, str(path), document)], pipeline.load_profile(None))
    (obj,) = [o for o in expansion.objects[0] if o["kind"] == kind]
    return copy.deepcopy(obj)


def condition(kind: str, reason: str, message: str, status: str = "True") -> dict:
    return {"lastTransitionTime": "2026-11-23T10:00:00Z", "message": message, "reason": reason, "status": status,
            "type": kind}


def with_status(obj: dict, status: dict) -> dict:
    return {**obj, "status": status}


def replicated(obj: dict, **counts) -> list[dict]:
    """replicatedJobsStatus for every replicatedJob of the generated JobSet."""
    return [{"name": rj["name"], "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0,
             **counts.get(rj["name"], {})} for rj in obj["spec"]["replicatedJobs"]]


def test_generated_jobset_health_through_its_life():
    obj = generated("JobSet")
    assert health(JOBSET, obj)["status"] == "Progressing"  # just created: no status yet
    running = with_status(obj, {"replicatedJobsStatus": replicated(obj, ps={"active": 1, "ready": 1},
                                                                     worker={"active": 1}, chief={"active": 1}),
                                "restarts": 0})
    assert health(JOBSET, running)["status"] == "Progressing"
    # successPolicy met (the chief's child Job completed): JobSet deletes the PS and says Completed.
    done = with_status(obj, {"conditions": [condition("Completed", "AllJobsCompleted", "jobset completed successfully")],
                             "terminalState": "Completed",
                             "replicatedJobsStatus": replicated(obj, chief={"succeeded": 1})})
    assert health(JOBSET, done)["status"] == "Healthy"
    # failurePolicy FailJobSet on a permanent exit code
    failed = with_status(obj, {"conditions": [condition("Failed", "FailedJobs", "jobset failed due to job failure")],
                               "terminalState": "Failed", "replicatedJobsStatus": replicated(obj, worker={"failed": 1})})
    assert health(JOBSET, failed) == {"status": "Degraded", "message": "jobset failed due to job failure"}


def test_generated_jobset_held_by_kueue_is_suspended():
    obj = generated("JobSet")
    held = {**obj, "spec": {**obj["spec"], "suspend": True},
            "status": {"conditions": [condition("Suspended", "SuspendedJobs", "jobset is suspended")]}}
    assert health(JOBSET, held)["status"] == "Suspended"


def test_generated_tfjob_health_through_its_life():
    obj = generated("TFJob")
    assert sorted(obj["spec"]["tfReplicaSpecs"]) == ["Chief", "PS", "Worker"]
    assert health(TFJOB, obj)["status"] == "Progressing"
    created = condition("Created", "TFJobCreated", "TFJob ctr-jobset is created.")
    running = with_status(obj, {"conditions": [created, condition("Running", "TFJobRunning",
                                                                  "TFJob ml-training/ctr-jobset is running.")],
                                "replicaStatuses": {"Chief": {"active": 1}, "PS": {"active": 2}, "Worker": {"active": 6}}})
    assert health(TFJOB, running)["status"] == "Progressing"
    restarting = with_status(obj, {"conditions": [created, condition("Restarting", "TFJobRestarting",
                                                                     "TFJob ctr-jobset is restarting because 1 Worker replica(s) failed.")]})
    assert health(TFJOB, restarting)["status"] == "Progressing", "an exit of 128+ gives a new pod: still going"
    done = with_status(obj, {"conditions": [created, condition("Running", "TFJobRunning", "", "False"),
                                            condition("Succeeded", "TFJobSucceeded", "TFJob ctr-jobset successfully completed.")],
                             "replicaStatuses": {"Chief": {"succeeded": 1}, "PS": {}, "Worker": {"succeeded": 6}}})
    assert health(TFJOB, done)["status"] == "Healthy"
    failed = with_status(obj, {"conditions": [created, condition("Failed", "TFJobFailed",
                                                                 "TFJob ctr-jobset has failed because 1 PS replica(s) failed.")]})
    assert health(TFJOB, failed) == {"status": "Degraded",
                                     "message": "TFJob ctr-jobset has failed because 1 PS replica(s) failed."}


def test_generated_tfjob_held_by_kueue_is_suspended():
    obj = generated("TFJob")
    held = {**obj, "spec": {**obj["spec"], "runPolicy": {**obj["spec"]["runPolicy"], "suspend": True}}}
    assert health(TFJOB, held)["status"] == "Suspended"
