"""A team's own program (spec.command) on real nodes, in an image with nothing of tfjobgen in it, under tfjobgen's
entrypoint (cluster-tools/entry) on each backend (issue 32): its job ends as a job of tfjobgen's runtime does.

- success: the chief's program trains and exits 0; the entrypoint tells the PS and the worker DONE, each stops its
  program (a TF server that never ends by itself) and exits 0: every Job Complete, the JobSet Completed, the TFJob
  Succeeded, within seconds of the chief;
- a permanent failure: the chief's program exits 42 (declared permanent): its Job fails at once, the entrypoint
  tells the others ABORT, they exit 4 and every Job of the job fails; nothing runs on;
- a PS killed by SIGKILL (native): as with the runtime, the task gets a new pod, and the job completes;
- the two examples of examples/ (a custom loop, and tf_keras's model.fit) train as docs/own-code.md gives them.

One cluster of two real nodes serves the module (as test_real_nodes.py's; they never run side by side). Wall times
are printed (pytest -s) and written to $TFJOBGEN_TIMES when it is set.
"""

from __future__ import annotations

import json
import os
import signal
import time

import pytest
from cluster import cluster_support
from nodes_support import (COMPLETED, PROFILE, apply, container_pid, job_objects, need_real_nodes, remove_namespace,
                           terminated, wait_complete)

import machine
from tfjobgen.concerns import labels
from tfjobgen.harness import conformance
from tfjobgen.shared import contract

pytestmark = pytest.mark.xdist_group("real-nodes")

JOB = PROFILE.parent.parent / "jobs" / "team.yaml"
TIMES: dict[str, float] = {}


@pytest.fixture(scope="module")
def cluster():
    need_real_nodes()
    before = machine.snapshot()
    with cluster_support.local_cluster(PROFILE, 2, "--real-nodes", "2") as up:
        yield up
    path = os.environ.get("TFJOBGEN_TIMES")
    if path:
        with open(path, "w") as handle:
            json.dump(TIMES, handle, indent=1, sort_keys=True)
    left = machine.differences(before, machine.snapshot())
    assert left == [], "after cluster down:\n" + "\n".join(left)


def _with_args(objects: list[dict], args: list[str]) -> list[dict]:
    """The rendered objects with the team program's arguments replaced in every pod template."""
    def visit(node):
        if isinstance(node, dict):
            for container in node.get("containers") or []:
                if container.get("name") == contract.CONTAINER_NAME:
                    container["args"] = list(args)
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)
    visit(objects)
    return objects


def _start(cluster, backend: str, namespace: str, args: list[str]) -> float:
    cluster.restricted_namespace(namespace)
    apply(cluster, job_objects(_with_args(conformance.render(JOB, PROFILE, backend, namespace), args)))
    return time.monotonic()


def _conditions(obj: dict) -> set[str]:
    return {c["type"] for c in (obj.get("status") or {}).get("conditions") or [] if c.get("status") == "True"}


def _ended_at(pod: dict) -> float:
    """When the pod's training container ended (the kubelet's finishedAt), in seconds since the epoch."""
    import datetime

    text = terminated(pod)["finishedAt"]
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()


@pytest.mark.parametrize("backend", ["native", "jobset", "tfjob"])
def test_a_team_program_that_succeeds_completes_its_job_and_its_ps_and_worker_exit_0(cluster, backend):
    namespace = f"team-ok-{backend}"
    started = _start(cluster, backend, namespace, ["--steps", "200"])
    _, kind, condition = COMPLETED[backend]
    wait_complete(cluster, backend, namespace, 300)
    TIMES[f"success {backend}: apply to {kind} {condition} (s)"] = round(time.monotonic() - started, 1)
    pods = {p["metadata"]["labels"][labels.ROLE]: p for p in cluster.pods(namespace)
            if not p["metadata"].get("deletionTimestamp") and terminated(p)}
    assert terminated(pods["chief"])["exitCode"] == 0
    log = cluster.kubectl("logs", "-n", namespace, pods["chief"]["metadata"]["name"]).stdout
    assert "team: trained 200 steps" in log and "told every task DONE" in log, log[-2000:]
    # The TFJob operator deletes the pods still running once the chief succeeds, and JobSet the child Jobs
    # still running once the JobSet completes: on native every task's pod must be there, ended well.
    for role in ("ps", "worker") if backend == "native" else ():
        assert role in pods, f"no ended {role} pod"
    for role in ("ps", "worker") if backend != "tfjob" else ():
        if role in pods:
            assert terminated(pods[role])["exitCode"] == 0, pods[role]["status"]
            lag = _ended_at(pods[role]) - _ended_at(pods["chief"])
            TIMES[f"success {backend}: {role} ended after the chief (s)"] = lag
            assert -1 <= lag <= 15, lag  # DONE within a heartbeat, SIGTERM ends a TF server at once
    remove_namespace(cluster, namespace)


@pytest.mark.parametrize("backend", ["native", "jobset", "tfjob"])
def test_a_team_program_that_fails_for_good_fails_its_job_and_stops_every_task(cluster, backend):
    namespace = f"team-fail-{backend}"
    started = _start(cluster, backend, namespace, ["--fail-with", "42"])
    api_version, kind, _ = COMPLETED[backend]

    def failed():
        found = cluster.objects.list(api_version, kind, namespace)
        return found if found and all("Failed" in _conditions(o) for o in found) else None

    cluster.wait(failed, f"every {kind} of {namespace} Failed", 240)
    TIMES[f"permanent failure {backend}: apply to {kind} Failed (s)"] = round(time.monotonic() - started, 1)
    if backend == "native":
        jobs = cluster.objects.list("batch/v1", "Job", namespace)
        reasons = {j["metadata"]["name"]: next(c["reason"] for c in j["status"]["conditions"] if c["type"] == "Failed")
                   for j in jobs}
        assert set(reasons.values()) == {"PodFailurePolicy"}, reasons
        codes = {p["metadata"]["labels"][labels.ROLE]: terminated(p).get("exitCode") for p in cluster.pods(namespace)}
        assert codes == {"chief": 42, "ps": 4, "worker": 4}, codes
        assert all(j["status"].get("failed", 0) <= 1 for j in jobs), "no task got a second pod"

    def nothing_runs():
        return not [p for p in cluster.pods(namespace) if p["status"].get("phase") in ("Running", "Pending")]

    cluster.wait(nothing_runs, f"no pod of {namespace} running", 60)
    remove_namespace(cluster, namespace)


def test_a_ps_killed_by_sigkill_gets_a_new_pod_and_the_job_completes(cluster):
    """As the runtime's job (test_real_nodes.py): the PS's new pod serves again; the chief's program, whose
    coordinator lost the PS, fails (exit 1, retried) and trains again in its new pod."""
    namespace = "team-killed"
    started = _start(cluster, "native", namespace, ["--steps", "3000"])

    def training():
        chief = [p for p in cluster.pods(namespace, f"{labels.ROLE}=chief") if p["status"].get("phase") == "Running"]
        if not chief:
            return None
        log = cluster.kubectl("logs", "-n", namespace, chief[0]["metadata"]["name"], check=False).stdout
        return chief if "team: training" in log else None

    cluster.wait(training, "the chief's program training", 240)
    [ps] = [p for p in cluster.pods(namespace, f"{labels.ROLE}=ps") if p["status"].get("phase") == "Running"]
    os.kill(container_pid(ps), signal.SIGKILL)

    def replaced():
        found = cluster.pods(namespace, f"{labels.ROLE}=ps")
        old = next((p for p in found if p["metadata"]["uid"] == ps["metadata"]["uid"]), None)
        return old if old and terminated(old) and len(found) > 1 else None

    old = cluster.wait(replaced, "the killed PS's exit and its new pod", 90)
    assert terminated(old)["exitCode"] == 137

    wait_complete(cluster, "native", namespace, 420)
    TIMES["SIGKILLed PS native: apply to every Job Complete (s)"] = round(time.monotonic() - started, 1)
    chiefs = cluster.pods(namespace, f"{labels.ROLE}=chief")
    TIMES["SIGKILLed PS native: chief pods"] = len(chiefs)
    remove_namespace(cluster, namespace)


EXAMPLES = PROFILE.parents[3] / "examples"
# What each example's chief says once it trained and saved (docs/own-code.md), at the steps given below.
TRAINED = {"custom-loop": ("trained 100 steps", "checkpoint /tmp/model/ckpt-1"),
           "keras-fit": ("keras 2.21.0 (tf_keras", "trained 100 steps", "weights /tmp/model")}


@pytest.fixture(scope="module")
def examples(cluster, tmp_path_factory) -> dict[str, float]:
    """Both examples of examples/ as docs/own-code.md gives them, started side by side (each waits on the API and
    the kubelets more than it computes): the job's own file, in the team fixture, which carries their programs at
    /opt/team/examples (artifacts/images/recipe.py's TEAM_SCRIPTS) and tf-keras. Changed only to fit two small
    nodes: the fixture's image and python3, shared CPUs, 100 steps. When each was applied."""
    import yaml

    team = yaml.safe_load(JOB.read_text())
    started = {}
    for example in TRAINED:
        job = yaml.safe_load((EXAMPLES / example / "job.yaml").read_text())
        job["spec"].update(image=team["spec"]["image"], command=["python3", f"/opt/team/examples/{example}/train.py"],
                           args=["--steps", "100", "--model-dir", "/tmp/model"], qos="shared")
        for role in job["spec"]["roles"].values():
            role.update(cpu=0.1, memory="1Gi")
        written = tmp_path_factory.mktemp("examples") / f"{example}.yaml"
        written.write_text(yaml.safe_dump(job))
        namespace = f"team-{example}"
        cluster.restricted_namespace(namespace)
        started[example] = time.monotonic()
        apply(cluster, job_objects(conformance.render(written, PROFILE, "native", namespace)))
    return started


@pytest.mark.parametrize("example", sorted(TRAINED))
def test_each_example_trains_on_real_nodes_and_its_job_completes(cluster, examples, example):
    """custom-loop: 2 PS, 2 workers, a chief, the embedding split over the PS; keras-fit: the same under tf_keras's
    model.fit (TF_USE_LEGACY_KERAS=1 in its spec.env). Every Job completes and every task exits 0."""
    namespace = f"team-{example}"

    wait_complete(cluster, "native", namespace, 420)
    TIMES[f"{example} example native: apply to every Job Complete (s)"] = round(time.monotonic() - examples[example], 1)
    pods = [p for p in cluster.pods(namespace) if terminated(p)]
    assert sorted(p["metadata"]["labels"][labels.ROLE] for p in pods) == ["chief", "ps", "ps", "worker", "worker"]
    assert all(terminated(p)["exitCode"] == 0 for p in pods), [p["status"] for p in pods]
    [chief] = [p for p in pods if p["metadata"]["labels"][labels.ROLE] == "chief"]
    log = cluster.kubectl("logs", "-n", namespace, chief["metadata"]["name"]).stdout
    assert all(said in log for said in TRAINED[example]), log[-2000:]
    remove_namespace(cluster, namespace)
