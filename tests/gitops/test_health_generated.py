"""Argo CD's view of the JobSet and TFJob tfjobgen generates: the health scripts of argocd/argocd-cm-patch.yaml
run (in the real Lua of test_health_lua.py) on the generated objects, with the statuses the real controllers wrote.

The statuses are recorded from JobSet v0.12.0 and the training-operator v1.9.4 on a local cluster, at
each point of a job's life (tests/gitops/statuses/; tests/cluster/test_lifecycle_real.py checks they
still hold and records them anew with UPDATE_STATUSES=1). Kueue holds a job it has not admitted by
setting spec.suspend (on the JobSet, on the TFJob's runPolicy): Argo CD must show it Suspended.
"""

from __future__ import annotations

import copy

import yaml
from conftest import JOBS, REPO
from test_health_lua import JOBSET, TFJOB, health

from jobs import example
from tfjobgen.expand import pipeline

STATUSES = REPO / "tests" / "gitops" / "statuses"


def generated(kind: str) -> dict:
    """The JobSet of jobs/ctr-jobset.yaml, or the TFJob the same intent becomes on backend tfjob."""
    intent = example(JOBS / "ctr-jobset.yaml", backend="jobset" if kind == "JobSet" else "tfjob")
    expansion = pipeline.expand([intent], pipeline.load_profile(None))
    (obj,) = [o for o in expansion.objects[0] if o["kind"] == kind]
    return copy.deepcopy(obj)


def recorded(kind: str, state: str, suspend: bool = False) -> dict:
    """The generated object with the status its controller wrote at that point (spec.suspend as Kueue sets it)."""
    obj = generated(kind)
    obj["status"] = yaml.safe_load((STATUSES / f"{kind.lower()}-{state}.yaml").read_text())["status"]
    if suspend and kind == "JobSet":
        obj["spec"]["suspend"] = True
    elif suspend:
        obj["spec"]["runPolicy"]["suspend"] = True
    return obj


def test_every_recorded_status_is_one_a_test_reads():
    states = {"running", "succeeded", "failed", "evicted", "suspended"}
    assert sorted(p.name for p in STATUSES.glob("*.yaml")) == sorted(
        f"{kind}-{state}.yaml" for kind in ("jobset", "tfjob") for state in states)


def test_generated_jobset_health_through_its_life():
    obj = generated("JobSet")
    assert health(JOBSET, obj)["status"] == "Progressing"  # just created: no status yet
    assert health(JOBSET, recorded("JobSet", "running")) == {
        "status": "Progressing",
        "message": "Running; chief: 1 active, 0 succeeded, 0 failed; ps: 1 active, 0 succeeded, 0 failed; "
                   "worker: 1 active, 0 succeeded, 0 failed"}  # JobSet counts child Jobs, not pods
    assert health(JOBSET, recorded("JobSet", "evicted"))["status"] == "Progressing", "a new pod: still going"
    assert health(JOBSET, recorded("JobSet", "succeeded")) == {"status": "Healthy",
                                                                "message": "jobset completed successfully"}
    assert health(JOBSET, recorded("JobSet", "failed")) == {
        "status": "Degraded",
        "message": "applying FailJobSet failure policy action (first failed job: ctr-jobset-worker-0)"}


def test_generated_jobset_held_by_kueue_is_suspended():
    assert health(JOBSET, recorded("JobSet", "suspended", suspend=True)) == {"status": "Suspended",
                                                                             "message": "jobset is suspended"}


def test_generated_tfjob_health_through_its_life():
    obj = generated("TFJob")
    assert sorted(obj["spec"]["tfReplicaSpecs"]) == ["Chief", "PS", "Worker"]
    assert health(TFJOB, obj)["status"] == "Progressing"
    assert health(TFJOB, recorded("TFJob", "running")) == {
        "status": "Progressing",
        "message": "TFJob ml-training/ctr-jobset is running. Chief: 1 active, 0 succeeded, 0 failed; "
                   "PS: 2 active, 0 succeeded, 0 failed; Worker: 6 active, 0 succeeded, 0 failed;"}
    assert health(TFJOB, recorded("TFJob", "succeeded")) == {
        "status": "Healthy", "message": "TFJob ml-training/ctr-jobset successfully completed."}
    assert health(TFJOB, recorded("TFJob", "failed")) == {
        "status": "Degraded", "message": 'job "ctr-jobset" is failing because "Worker" replica(s) failed.'}
    # An eviction fails a TFJob (the operator counts the deleted pod as failed): Degraded, not Progressing.
    assert health(TFJOB, recorded("TFJob", "evicted")) == {
        "status": "Degraded", "message": "TFJob ml-training/ctr-jobset has failed because 1 Worker replica(s) failed."}


def test_generated_tfjob_held_by_kueue_is_suspended():
    assert health(TFJOB, recorded("TFJob", "suspended", suspend=True)) == {"status": "Suspended",
                                                                           "message": "TFJob ctr-jobset is suspended."}
