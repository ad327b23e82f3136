"""The Lua health checks of argocd/argocd-cm-patch.yaml, run in a real Lua (lupa) on sample statuses.

The samples here are minimal objects for the scripts' rules (which condition wins, what a message
holds); the statuses the real JobSet controller and training-operator write are recorded in
tests/gitops/statuses/ and run through the same scripts in test_health_generated.py.

Argo CD runs health scripts in gopher-lua (Lua 5.1) with only the base
functions, `table`, a safe `os` and `require` loaded (util/lua/lua.go, unless
useOpenLibs is set); `obj` is the live object. The sandbox below gives the
scripts no more than that, so a script that passes here cannot call something
Argo CD lacks (no `string` library and no string methods, no `math`, no `io`).
"""

from __future__ import annotations

import pytest
import yaml
from conftest import REPO, need

try:
    import lupa
except ImportError:  # skipped here, a failure under .ci/run
    lupa = None

ARGOCD_STATUSES = {"Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown"}
SCRIPTS = yaml.safe_load((REPO / "argocd" / "argocd-cm-patch.yaml").read_text())["data"]
TFJOB = SCRIPTS["resource.customizations.health.kubeflow.org_TFJob"]
JOBSET = SCRIPTS["resource.customizations.health.jobset.x-k8s.io_JobSet"]


def flavour():
    need("lupa", "lupa" if lupa else None, "a real Lua from PyPI, in the test extra: pip install -e '.[test]'")
    try:
        from lupa import lua51  # gopher-lua implements Lua 5.1
    except ImportError:
        return lupa
    return lua51


def runtime():
    lua = flavour().LuaRuntime(unpack_returned_tuples=True)
    lua.execute("""
        local safe_os = {time = os.time, date = os.date, clock = os.clock}
        debug.setmetatable("", nil)  -- no string methods ("x"):upper()
        string, math, io, debug, coroutine, dofile, loadfile = nil, nil, nil, nil, nil, nil, nil
        os = safe_os
    """)
    return lua


def health(script: str, obj: dict) -> dict:
    lua = runtime()
    lua.globals().obj = lua.table_from(obj, recursive=True)
    result = lua.execute(script)
    assert flavour().lua_type(result) == "table", f"the script must return a table, not {result!r}"
    status = {key: result[key] for key in ("status", "message")}
    assert status["status"] in ARGOCD_STATUSES, status
    assert isinstance(status["message"], str)
    return status


def condition(kind: str, status: str = "True", message: str = "") -> dict:
    return {"type": kind, "status": status, "reason": kind, "message": message or f"TFJob is {kind.lower()}"}


def tfjob(*conditions, spec=None, replicas=None) -> dict:
    obj = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "wide-deep"}, "spec": spec or {}}
    if conditions or replicas:
        obj["status"] = {"conditions": list(conditions)}
        if replicas:
            obj["status"]["replicaStatuses"] = replicas
    return obj


@pytest.mark.parametrize("obj, expected", [
    (tfjob(), "Progressing"),
    (tfjob(condition("Created")), "Progressing"),
    (tfjob(condition("Created", "False"), condition("Running")), "Progressing"),
    (tfjob(condition("Created"), condition("Running"), condition("Restarting")), "Progressing"),
    (tfjob(condition("Created"), condition("Running", "False"), condition("Succeeded")), "Healthy"),
    (tfjob(condition("Created"), condition("Running", "False"), condition("Failed", message="PS 0 exited 1")),
     "Degraded"),
    (tfjob(condition("Created"), condition("Suspended")), "Suspended"),
    (tfjob(spec={"runPolicy": {"suspend": True}}), "Suspended"),
    (tfjob(condition("Succeeded", "False"), condition("Failed", "False"), condition("Running")), "Progressing"),
])
def test_tfjob_health(obj, expected):
    assert health(TFJOB, obj)["status"] == expected


def jobset(*conditions, spec=None, **status) -> dict:
    obj = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "wide-deep"},
           "spec": spec or {}}
    if conditions or status:
        obj["status"] = {"conditions": list(conditions), **status}
    return obj


@pytest.mark.parametrize("obj, expected", [
    (jobset(), "Progressing"),
    (jobset(condition("StartupPolicyInProgress")), "Progressing"),
    (jobset(condition("StartupPolicyCompleted"), replicatedJobsStatus=[{"name": "ps", "active": 4}]), "Progressing"),
    (jobset(condition("Completed")), "Healthy"),
    (jobset(terminalState="Completed"), "Healthy"),
    (jobset(condition("Failed", message="worker failed 3 times")), "Degraded"),
    (jobset(terminalState="Failed"), "Degraded"),
    (jobset(condition("Suspended")), "Suspended"),
    (jobset(spec={"suspend": True}), "Suspended"),
    (jobset(condition("Suspended", "False"), condition("Completed", "False")), "Progressing"),
])
def test_jobset_health(obj, expected):
    assert health(JOBSET, obj)["status"] == expected


def test_jobset_health_says_how_far_each_replicated_job_is():
    status = health(JOBSET, jobset(condition("StartupPolicyCompleted"), restarts=1, replicatedJobsStatus=[
        {"name": "ps", "active": 4, "ready": 4}, {"name": "worker", "active": 30, "succeeded": 2}]))
    assert status == {"status": "Progressing", "message": "Running; ps: 4 active, 0 succeeded, 0 failed; worker: 30 "
                                                          "active, 2 succeeded, 0 failed; restarted 1 time(s)"}


def test_the_sandbox_is_as_strict_as_argo_cds():
    """A script that used the string library would fail in Argo CD: it fails here too."""
    with pytest.raises(flavour().LuaError):
        health('return {status = string.upper("healthy"), message = ""}', {})
    with pytest.raises(flavour().LuaError):
        health('local s = "x"; return {status = s:upper(), message = ""}', {})
