"""`tfjobgen status` on a real control plane: every phase produced for real, read back through the CLI.

One seed-80c cluster for the module. Every scenario's job is applied at once on every backend
(native Jobs, a JobSet, a TFJob), each in a namespace of its own, and brought to its phase by what
KWOK's stages let a test do to a pod (cluster_support): Running; Pending for room (a worker bigger
than any node); a worker failed with each of the runtime's exit codes; a worker evicted; the chief
succeeded. Each test then reads the job back with `tfjobgen status` and holds it to what the real
controllers did: the pods, their exit codes, the conditions, what contract.py says the code means.
Besides: the metrics of a real tfjobgen metrics server through the API server's pod proxy (the
cluster's pod network serves the pod from 127.0.0.1), the errors a user meets (no cluster, no such
job, no permission), the list, and `--watch` driven in tmux.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from cluster_support import local_cluster, signals_as_a_terminal_gives_them, tfjobgen
from conftest import REPO, SAMPLE, need, tfjobgen_command

from tfjobgen.cluster import home
from tfjobgen.harness import conformance
from tfjobgen.cluster.plane import pki
from tfjobgen.concerns import labels, promises
from tfjobgen.expand import pipeline
from tfjobgen.kit import owned
from tfjobgen.shared import contract

SEED = SAMPLE / "overlays" / "seed-80c" / "cluster-profile.yaml"
BACKENDS = ("native", "jobset", "tfjob")
CODES = (contract.EXIT_FAILED, contract.EXIT_SETUP, contract.EXIT_CHIEF_GONE, contract.EXIT_ABORTED,
         contract.EXIT_INTERRUPTED)  # every exit of the runtime's but success
# What each scenario does once its job runs: (task, action).
SCENARIOS = {"running": None, "pending": None, "evicted": ("worker:1", "evict"), "succeeded": ("chief:0", "succeed"),
             **{f"exit{code}": ("worker:1", code) for code in CODES}}
WITHIN = 90  # seconds for the controllers to act on what a pod did
LOCAL_PORT = "cluster.tfjobgen.dev/local-port"


def job_text(name: str, backend: str, pending: bool = False, ps: int = 1) -> str:
    # 79: a whole seed-80c node, and every node already runs pods of other jobs. Shared CPUs: a Guaranteed (cpuset)
    # pod that large is refused, as the profile's Topology Manager admits one on a single NUMA node (40 CPUs).
    worker_cpu = 79 if pending else 2
    qos = "shared" if pending else "cpuset"
    return f"""apiVersion: tfjobgen.dev/v1alpha1
kind: TrainingJob
metadata: {{name: {name}, namespace: {name}}}
spec:
  image: registry.example.com/ml/tfjobgen-runtime:0.1.0
  backend: {backend}
  qos: {qos}
  roles:
    ps: {{replicas: {ps}, cpu: 2, memory: 4Gi}}
    worker: {{replicas: 2, cpu: {worker_cpu}, memory: 4Gi}}
    chief: {{cpu: 2, memory: 4Gi}}
  failurePolicy: {{backoffLimitPerTask: 1}}
  training: {{partitioner: none}}
"""


def render(folder: Path, text: str) -> list[dict]:
    path = folder / "job.yaml"
    path.write_text(text)
    intents, problems = pipeline.load_intents([str(path)])
    expansion = pipeline.expand(intents, pipeline.load_profile(str(SEED)))
    assert expansion.ok, [p.format() for p in problems + expansion.problems]
    return expansion.in_order()


def name_of(scenario: str, backend: str) -> str:
    return f"st-{scenario}-{backend}"


@pytest.fixture(scope="module")
def cluster():
    with local_cluster(SEED, 4) as running:
        yield running


def live_pod(cluster, namespace: str, task: str) -> dict | None:
    return next((p for p in cluster.pods(namespace) if conformance.live(p) and promises.task_of(p).name == task
                 and p["status"].get("phase") == "Running"), None)


@pytest.fixture(scope="module")
def jobs(cluster, tmp_path_factory):
    """Every scenario on every backend, applied at once, then each brought to its phase. Each acted-on pod is
    kept, by namespace, in `cluster.acted`."""
    folder = tmp_path_factory.mktemp("status-jobs")
    cluster.acted = {}
    # The jobs Pending for room come last, once every node runs pods of the others: no node is empty then.
    order = [s for s in SCENARIOS if s != "pending"] + ["pending"]
    for scenario in order:
        for backend in BACKENDS:
            name = name_of(scenario, backend)
            if scenario == "pending":
                conformance.wait_running(cluster.objects, name_of("running", backend), 4, WITHIN)
            cluster.restricted_namespace(name)
            conformance.apply(cluster.objects, render(folder, job_text(name, backend, pending=scenario == "pending")))
    for scenario in order:
        act = SCENARIOS[scenario]
        for backend in BACKENDS:
            name = name_of(scenario, backend)
            conformance.wait_running(cluster.objects, name, 2 if scenario == "pending" else 4, WITHIN)
            if act is None:
                continue
            task, action = act
            found = cluster.wait(lambda: live_pod(cluster, name, task), f"{name}: {task} Running")
            cluster.acted[name], pod = found, found["metadata"]["name"]
            if action == "evict":
                cluster.evict_pod(name, pod)
            elif action == "succeed":
                cluster.succeed_pod(name, pod)
            else:
                cluster.fail_pod(name, pod, action)
    return cluster


def status(cluster, *args: str, kubeconfig: Path | None = None) -> subprocess.CompletedProcess:
    return tfjobgen("status", *args, "--kubeconfig", str(kubeconfig or cluster.kubeconfig), timeout=60)


def read(cluster, name: str) -> dict:
    """`tfjobgen status NAME -n NAME --format json`: exit 0, nothing on stderr, the JSON."""
    proc = status(cluster, name, "-n", name, "--format", "json")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return json.loads(proc.stdout)


def until(cluster, name: str, check, what: str, timeout: float = WITHIN) -> dict:
    """The job's status once `check(status)` holds, read in this process (the CLI reads it last, once)."""
    from tfjobgen.status import derive, render
    from tfjobgen.status import read as reading

    reader = reading.Reader(str(cluster.kubeconfig))
    last = {}

    def seen() -> bool:
        last["status"] = render.as_json(derive.job_status(reader.job(name, name, metrics=False)))
        return check(last["status"])

    try:
        cluster.wait(seen, f"{name}: {what}", timeout)
    except TimeoutError:
        pytest.fail(f"{name}: {what}: not after {timeout} s; status says {json.dumps(last.get('status'))[:3000]}")
    return read(cluster, name)


def task(found: dict, name: str) -> dict:
    return next(t for t in found["tasks"] if f"{t['role']}:{t['index']}" == name)


def api_pod(cluster, namespace: str, pod: str) -> dict:
    return cluster.objects.get_json(f"/api/v1/namespaces/{namespace}/pods/{pod}")


# ---- each phase, on each backend ------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_a_running_job_is_running_on_the_nodes_its_pods_are_bound_to(jobs, backend):
    name = name_of("running", backend)
    found = until(jobs, name, lambda s: s["job"]["state"] == "running", "running")
    pods = {promises.task_of(p).name: p for p in jobs.pods(name) if conformance.live(p)}
    assert {f"{t['role']}:{t['index']}" for t in found["tasks"]} == set(pods) == {"ps:0", "worker:0", "worker:1",
                                                                                  "chief:0"}
    for entry in found["tasks"]:
        pod = pods[f"{entry['role']}:{entry['index']}"]
        assert (entry["phase"], entry["pod"], entry["node"]) == ("Running", pod["metadata"]["name"], pod["spec"]["nodeName"])
        assert entry["restarts"] == 0 and entry["exitCode"] is None
    assert found["job"]["placement"] == {"topology": "spread", "holds": True, "placed": 4, "tasks": 4, "broken": []}
    # KWOK runs no process in a pod: the pod network refuses it, and status says so rather than guessing.
    assert set(found["job"]["metrics"]["unreachable"]) == {"chief:0", "ps:0"}
    assert "no process listens" in found["job"]["metrics"]["unreachable"]["chief:0"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_job_pending_for_room_says_so_in_the_schedulers_words(jobs, backend):
    name = name_of("pending", backend)
    found = until(jobs, name, lambda s: all(task(s, w)["phase"] == "Pending" and task(s, w)["reason"]
                                            for w in ("worker:0", "worker:1")), "workers Pending")
    assert found["job"]["state"] == "starting"
    for worker in ("worker:0", "worker:1"):
        entry = task(found, worker)
        condition = next(c for c in api_pod(jobs, name, entry["pod"])["status"]["conditions"]
                         if c["type"] == "PodScheduled")
        assert condition["status"] == "False" and condition["reason"] == "Unschedulable"
        assert entry["reason"] == condition["message"] and "Insufficient cpu" in entry["reason"]
        assert entry["node"] is None
    assert "2 of 4 training tasks not running" in found["job"]["reason"]
    assert "Insufficient cpu" in found["job"]["reason"] and "the other 2 wait for them" in found["job"]["reason"]
    table = status(jobs, name, "-n", name)
    assert table.returncode == 0
    assert any(line.startswith("worker:1") and "Pending" in line and "Insufficient cpu" in line
               for line in table.stdout.splitlines()), table.stdout


def _permanent(backend: str, code: int) -> bool:
    """Whether the job's controller fails the job on this exit (tfjob: ExitCode, 1-127; else the runtime's)."""
    return 1 <= code < 128 if backend == "tfjob" else code in contract.PERMANENT_EXIT_CODES


@pytest.mark.parametrize("code", CODES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_each_exit_code_of_the_runtime_is_shown_with_its_meaning(jobs, backend, code):
    name = name_of(f"exit{code}", backend)
    meaning = contract.exit_meaning(code)
    assert meaning, f"contract.py gives exit {code} no meaning"
    if _permanent(backend, code):
        found = until(jobs, name, lambda s: s["job"]["state"] == "failed" and s["job"]["cause"], "failed")
        assert found["job"]["cause"] == "worker:1"
        assert found["job"]["reason"].startswith(f"worker:1 exit {code}: {meaning}")
        assert f"exit code {code} is permanent" in found["job"]["reason"]
        kind = {"native": "Job", "jobset": "JobSet", "tfjob": "TFJob"}[backend]
        assert any(c["type"] == "Failed" and c["object"].startswith(kind) for c in found["job"]["conditions"])
        worker = task(found, "worker:1")
        assert worker["exitCode"] == code and worker["meaning"] == meaning
        if worker["pod"]:  # the failed pod stays (restartPolicy Never): its container's own exit code
            real = api_pod(jobs, name, worker["pod"])["status"]["containerStatuses"][0]["state"]["terminated"]
            assert real["exitCode"] == code and worker["phase"] == "Failed"
        return
    # A new pod may do better: the task is replaced, and shows its new pod and the exit before it.
    found = until(jobs, name, lambda s: task(s, "worker:1")["phase"] == "Running" and task(s, "worker:1")["restarts"],
                  "worker:1 replaced", timeout=WITHIN + 30)
    worker = task(found, "worker:1")
    assert found["job"]["state"] == "running"
    assert worker["restarts"] == 1 and worker["failures"] == {"counted": 1, "notCounted": 0}
    assert worker["lastFailure"]["exitCode"] == code and worker["lastFailure"]["meaning"] == meaning
    assert worker["reason"] == f"replaced after exit {code}: {meaning}"
    if backend != "tfjob":  # the Job controller keeps the failed pod beside the new one
        old = api_pod(jobs, name, worker["lastFailure"]["pod"])
        assert old["status"]["phase"] == "Failed" and worker["pod"] != worker["lastFailure"]["pod"]
        assert api_pod(jobs, name, worker["pod"])["metadata"]["annotations"][labels.JOB_INDEX_FAILURE_COUNT] == "1"


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_evicted_task_is_replaced_and_not_counted_but_fails_a_tfjob(jobs, backend):
    name = name_of("evicted", backend)
    if backend == "tfjob":
        # What the operator makes of it depends on what its informer saw (kubeflow/trainer#999), and status says
        # what it recorded: the deleted pod still Running counted as failed (the TFJob fails, naming the role
        # only); the pod's SIGTERM exit seen first (the TFJob fails, and its ExitedWithCode event names the pod);
        # or only the deletion seen (worker 1 gets a new pod of the same name, and nothing is counted), or both:
        # the exit recorded (status counts it, from the ExitedWithCode event) and the pod replaced all the same.
        evicted = jobs.acted[name]["metadata"]["uid"]
        found = until(jobs, name, lambda s: s["job"]["state"] == "failed" and all(t["phase"] != "Running"
                                                                                  for t in s["tasks"])
                      or s["job"]["state"] == "running" and _replaced(jobs, name, evicted), "failed or replaced")
        if found["job"]["state"] == "running":
            worker = task(found, "worker:1")
            assert worker["phase"] == "Running" and worker["pod"] == f"{name}-worker-1"
            assert worker["restarts"] == 0 or (worker["restarts"] == 1 and worker["lastFailure"]["exitCode"] == 143), \
                worker
        elif found["job"]["cause"]:
            assert found["job"]["cause"] == "worker:1" and task(found, "worker:1")["exitCode"] == 143
            assert found["job"]["reason"] == f"worker:1 exit 143: {contract.exit_meaning(143)}"
        else:
            assert found["job"]["reason"] == f"TFJob {name}/{name} has failed because 1 Worker replica(s) failed."
            assert all(t["phase"] == "NoPod" and "deleted it once the job ended" in t["reason"] for t in found["tasks"])
        return
    found = until(jobs, name, lambda s: task(s, "worker:1")["phase"] == "Running" and task(s, "worker:1")["restarts"],
                  "worker:1 replaced")
    worker = task(found, "worker:1")
    assert found["job"]["state"] == "running"
    assert worker["failures"] == {"counted": 0, "notCounted": 1} and worker["restarts"] == 1
    assert "taken away by the cluster" in worker["reason"] and "not counted" in worker["reason"]
    annotations = api_pod(jobs, name, worker["pod"])["metadata"]["annotations"]
    assert annotations[labels.JOB_INDEX_IGNORED_FAILURE_COUNT] == "1"
    assert annotations.get(labels.JOB_INDEX_FAILURE_COUNT, "0") == "0"


def _replaced(cluster, name: str, uid: str) -> bool:
    pod = live_pod(cluster, name, "worker:1")
    return bool(pod) and pod["metadata"]["uid"] != uid


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_chief_succeeding_succeeds_the_job(jobs, backend):
    name = name_of("succeeded", backend)
    if backend == "native":
        # A native job's PS and worker run on until the chief's DONE ends them (no runtime hears it under KWOK):
        # until then the job is running, as Argo CD's health of its Jobs says; it succeeded once they ended.
        found = until(jobs, name, lambda s: s["job"]["state"] == "running"
                      and s["job"]["reason"].startswith("chief:0 completed (exit 0)"), "running, its chief completed")
        assert "still running" in found["job"]["reason"], found["job"]["reason"]
        for other in [t for t in found["tasks"] if t["role"] != "chief"]:
            other_task = f"{other['role']}:{other['index']}"
            pod = jobs.wait(lambda: live_pod(jobs, name, other_task), f"{name}: {other_task} Running")
            jobs.succeed_pod(name, pod["metadata"]["name"])  # as the task does on DONE: exit 0
    found = until(jobs, name, lambda s: s["job"]["state"] == "succeeded", "succeeded")
    chief = task(found, "chief:0")
    assert found["job"]["reason"] == "chief:0 completed (exit 0): training is done"
    assert (chief["phase"], chief["exitCode"], chief["restarts"]) == ("Succeeded", 0, 0)
    done = {"native": ("Job", "Complete"), "jobset": ("JobSet", "Completed"), "tfjob": ("TFJob", "Succeeded")}[backend]
    assert any(c["object"].startswith(done[0]) and c["type"] == done[1] for c in found["job"]["conditions"])
    if backend != "native":  # their controllers delete the tasks still running; native's ended on the chief's DONE
        found = until(jobs, name, lambda s: all(t["phase"] == "NoPod" for t in s["tasks"] if t["role"] != "chief"),
                      "the other tasks deleted")
        assert all("deleted it once the job ended" in t["reason"] for t in found["tasks"] if t["role"] != "chief")


# ---- metrics, through the API server -------------------------------------------------------

def test_a_running_jobs_metrics_come_through_the_pod_proxy_as_the_plan_predicts(cluster, tmp_path):
    pytest.importorskip("prometheus_client", reason="the runtime extra brings prometheus-client")
    from tfjobgen.runtime import events, metrics, settings

    name = "st-metrics"
    cluster.restricted_namespace(name)
    text = job_text(name, "native", ps=2)
    conformance.apply(cluster.objects, render(tmp_path, text))
    conformance.wait_running(cluster.objects, name, 5, WITHIN)
    config_maps = conformance.observe(cluster.objects, name).config_maps
    served, servers = {}, []
    try:
        for task_name in ("chief:0", "ps:0", "ps:1"):
            pod = live_pod(cluster, name, task_name)
            env, _ = conformance.real_env(pod, config_maps)  # the pod's environment, as its kubelet gives it
            port = owned.free_ports(1)[0]
            task_of_pod = dataclasses.replace(settings.from_env(env, 2), metrics_port=port)
            served[task_name] = metrics.Metrics(task_of_pod, started=time.monotonic())
            servers.append(served[task_name].serve("127.0.0.1"))
            cluster.objects.patch("v1", "Pod", pod["metadata"]["name"],
                                  {"metadata": {"annotations": {LOCAL_PORT: str(port)}}}, name)
        chief = served["chief:0"]
        chief.observe(events.UP, {})
        for step in (100, 200, 300):
            time.sleep(0.05)
            chief.observe(events.STEP, {"step": step, "loss": 0.5 - step / 1000})
        found = read(cluster, name)
        plan_file = tmp_path / "plan-job.yaml"
        plan_file.write_text(text)
        plan = json.loads(tfjobgen("plan", str(plan_file), "--profile", str(SEED), "--format", "json").stdout)
        table = status(cluster, name, "-n", name)
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
    got = found["job"]["metrics"]
    registry = chief.registry
    labels_of_chief = {"training_job": name, "role": "chief", "index": "0"}
    count = registry.get_sample_value("tfjobgen_step_duration_seconds_count", labels_of_chief)
    seconds = registry.get_sample_value("tfjobgen_step_duration_seconds_sum", labels_of_chief)
    assert got["unreachable"] == {} and got["chief"] == "chief:0"
    assert got["step"] == 300 and got["loss"] == pytest.approx(0.2)
    assert got["stepsPerSecond"] == pytest.approx(count / seconds)
    assert list(got["psBytes"].values()) == plan["ps_bytes"] and list(got["psBytes"]) == ["ps:0", "ps:1"]
    assert got["psMaxOverMean"] == pytest.approx(plan["max_over_mean"], abs=1e-4) and got["partitioner"] == "none"
    assert "step 300 at" in table.stdout and f"PS balance max/mean {plan['max_over_mean']:.2f} (partitioner none)" \
        in table.stdout, table.stdout


# ---- listing, errors ---------------------------------------------------------------------------

def test_the_list_names_every_job_with_its_state(jobs):
    proc = status(jobs, "-A", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    listed = {j["name"]: j for j in json.loads(proc.stdout)["jobs"]}
    for backend in BACKENDS:
        assert listed[name_of("running", backend)]["state"] == "running"
        assert listed[name_of("running", backend)]["running"] == listed[name_of("running", backend)]["tasks"] == 4
        assert listed[name_of("pending", backend)]["state"] == "starting"
        assert listed[name_of("pending", backend)]["backend"] == backend
    one = status(jobs, "-n", name_of("running", "jobset"))
    assert one.returncode == 0 and one.stdout.splitlines()[0].split() == ["NAME", "BACKEND", "STATE", "TASKS", "AGE"]
    assert one.stdout.splitlines()[2].split()[:4] == [name_of("running", "jobset"), "jobset", "running", "4/4"]


def test_no_such_job_and_no_cluster_are_one_line_each(jobs, tmp_path):
    missing = status(jobs, "nothing-here", "-n", name_of("running", "native"))
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr.splitlines() == [
        f"tfjobgen status: no job 'nothing-here' in namespace '{name_of('running', 'native')}' (no TFJob, JobSet or "
        f"Job labelled tfjobgen.dev/job=nothing-here); jobs there: {name_of('running', 'native')}"]
    port = owned.free_ports(1)[0]  # nothing listens there
    config = yaml.safe_load(jobs.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{port}"
    unreachable = tmp_path / "unreachable"
    unreachable.write_text(json.dumps(config))
    down = status(jobs, "anything", "-n", "default", kubeconfig=unreachable)
    assert down.returncode == 1 and down.stderr.splitlines() == [
        f"tfjobgen status: cannot reach the cluster at https://127.0.0.1:{port}: connection refused"]
    nothing = status(jobs, "anything", kubeconfig=tmp_path / "no-such-kubeconfig")
    assert nothing.returncode == 1 and len(nothing.stderr.splitlines()) == 1 and "Traceback" not in nothing.stderr


def _kubeconfig_of(cluster, tmp_path: Path, user: str) -> Path:
    """A kubeconfig for `user`, a client certificate of the cluster's CA: authenticated, allowed what RBAC says."""
    ca = pki.Pair(cluster.home / "pki" / "ca.crt", cluster.home / "pki" / "ca.key")
    pair = pki.issue(ca, tmp_path / user, user, user, client=True)
    server = f"https://127.0.0.1:{cluster.state()['api_port']}"
    path = tmp_path / f"{user}.kubeconfig"
    path.write_text(home.kubeconfig_text(cluster.name, server, ca.cert.read_bytes(), pair.cert.read_bytes(),
                                         pair.key.read_bytes()))
    return path


def test_without_permission_one_line_and_with_a_readers_role_what_it_may_not_read_is_a_note(jobs, tmp_path):
    name = name_of("running", "native")
    nobody = status(jobs, name, "-n", name, kubeconfig=_kubeconfig_of(jobs, tmp_path, "nobody"))
    assert nobody.returncode == 1 and nobody.stderr.splitlines() == [
        'tfjobgen status: not allowed: tfjobs.kubeflow.org is forbidden: User "nobody" cannot list resource "tfjobs" '
        f'in API group "kubeflow.org" in the namespace "{name}"'], nobody.stderr
    # A namespace reader: the job's objects, not the nodes (cluster-scoped), not the pod proxy.
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "reader", "namespace": name},
            "rules": [{"apiGroups": ["", "batch", "jobset.x-k8s.io", "kubeflow.org"], "verbs": ["get", "list"],
                       "resources": ["pods", "events", "configmaps", "jobs", "jobsets", "tfjobs"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "reader", "namespace": name},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "reader"}]}
    for obj in (role, binding):
        jobs.objects.apply(obj)
    reader = _kubeconfig_of(jobs, tmp_path, "reader")
    found = jobs.wait(lambda: _json_or_none(status(jobs, name, "-n", name, "--format", "json", kubeconfig=reader)),
                      "the reader's RBAC in effect")
    assert found["job"]["state"] == "running" and len(found["tasks"]) == 4
    assert any(n.startswith('nodes: not allowed: nodes is forbidden: User "reader" cannot list resource "nodes"')
               for n in found["job"]["notes"]), found["job"]["notes"]
    assert found["job"]["placement"] is None  # spread needs the node count
    assert all(why.startswith("not allowed to use the API server's pod proxy")
               for why in found["job"]["metrics"]["unreachable"].values())


def _json_or_none(proc: subprocess.CompletedProcess) -> dict | None:
    return json.loads(proc.stdout) if proc.returncode == 0 else None


# ---- gang admission ----------------------------------------------------------------------------

@pytest.mark.parametrize("gang", ("volcano", "scheduler-plugins", "kueue"))
def test_a_gang_too_big_for_the_cluster_waits_for_admission(gang, tmp_path):
    from real_support import Clusters, profile_file, skip_unless_gang_runs

    skip_unless_gang_runs(gang, "seed-80c")
    profile = profile_file("seed-80c", gang)
    backend = "jobset"  # admitted as one Workload by Kueue, one PodGroup by the gang schedulers
    name = f"st-gang-{gang}"
    with local_cluster(profile, 2) as running:
        Clusters.namespace(running, name)
        # Shared CPUs: a 60-CPU Guaranteed pod would be refused, as larger than one of the profile's NUMA nodes.
        text = job_text(name, backend).replace("worker: {replicas: 2, cpu: 2,", "worker: {replicas: 3, cpu: 60,") \
            .replace("qos: cpuset", "qos: shared")
        folder = tmp_path / "job"
        folder.mkdir()
        path = folder / "job.yaml"
        path.write_text(text)
        conformance.apply(running.objects, conformance.render(path, profile, backend, name))
        found = until(running, name, lambda s: s["job"]["state"] == "waiting for admission", "waiting for admission")
        assert ("Kueue" if gang == "kueue" else "PodGroup") in found["job"]["reason"]
        assert all(t["node"] is None for t in found["tasks"]), "a gang binds none of its pods until all fit"


# ---- --watch, in a terminal -------------------------------------------------------------------

def _tmux() -> str:
    return need("tmux", shutil.which("tmux"), "Debian's tmux drives --watch in a terminal (apt-get install tmux; "
                                              ".ci/run installs it)")


def test_watch_redraws_in_place_until_the_job_ends_and_ctrl_c_ends_it_quietly(cluster, tmp_path):
    tmux = _tmux()
    socket_name = f"tfjobgen-status-{os.getpid()}"
    name = "st-watch"
    cluster.restricted_namespace(name)
    conformance.apply(cluster.objects, render(tmp_path, job_text(name, "jobset")))
    conformance.wait_running(cluster.objects, name, 4, WITHIN)
    def command(job: str) -> str:
        """The watch, then a line with its exit status. tmux's own "Pane is dead (status N)" is not always
        written: tmux 3.3 may see the pane's output end before it collects the exit status. The shell's
        handler for SIGINT (not an ignore, which the watch would inherit) lets it report after a Ctrl-C."""
        # COLUMNS and LINES would outweigh the pane's own size (rich reads them first): the pane's size is the test's.
        watch = ["env", "-u", "COLUMNS", "-u", "LINES", f"PYTHONPATH={REPO / 'generator'}",
                 *tfjobgen_command(), "status", job, "-n", job,
                 "--watch", "--interval", "0.5", "--kubeconfig", str(cluster.kubeconfig)]
        return shlex.join(["sh", "-c", 'trap : INT; "$@"; echo "watch exited with $?"', "sh", *watch])

    def run(*args: str) -> str:
        # The first call starts tmux's server, which must see its panes' processes exit (SIGCHLD).
        return subprocess.run([tmux, "-L", socket_name, *args], capture_output=True, text=True, check=True,
                              timeout=30, preexec_fn=signals_as_a_terminal_gives_them).stdout

    def screen(window: str) -> str:
        """The pane and its history: a frame appended rather than redrawn would show there."""
        return run("capture-pane", "-p", "-S", "-", "-t", window)

    def ended(window: str, what: str, timeout: float) -> str:
        """The screen once the watch exited (the pane stays: remain-on-exit)."""
        try:
            return cluster.wait(lambda: _exit_status(screen(window)) is not None and screen(window), what, timeout)
        except TimeoutError:
            pytest.fail(f"{what}: not after {timeout} s; the screen:\n{screen(window)}")

    try:
        run("new-session", "-d", "-s", "keep")  # the server, so that remain-on-exit holds before a watch starts
        run("set-option", "-g", "remain-on-exit", "on")
        run("new-session", "-d", "-s", "ends", "-x", "200", "-y", "50", command(name))
        first = cluster.wait(lambda: "every task of the training cluster runs" in screen("ends")
                             and screen("ends"), "the watch's first frame", 30)
        assert "Ctrl-C to stop" in first and first.count("STATE") == 1
        cluster.succeed_pod(name, live_pod(cluster, name, "chief:0")["metadata"]["name"])
        last = ended("ends", "the watch to end with the job", WITHIN)
        assert "the job has succeeded: watching no more" in last
        assert last.count("STATE") == 1 and last.count("TASK      PHASE") == 1, "redrawn in place, not appended"
        assert "succeeded: chief:0 completed (exit 0)" in last
        assert _exit_status(last) == 0
        # Ctrl-C while watching a job that runs on: it stops at once, exit 0, no traceback.
        other = "st-watch-running"
        cluster.restricted_namespace(other)
        conformance.apply(cluster.objects, render(tmp_path, job_text(other, "native")))
        conformance.wait_running(cluster.objects, other, 4, WITHIN)
        run("new-session", "-d", "-s", "interrupted", "-x", "200", "-y", "50", command(other))
        cluster.wait(lambda: "Ctrl-C to stop" in screen("interrupted"), "the second watch's first frame", 30)
        run("send-keys", "-t", "interrupted", "C-c")
        stopped = ended("interrupted", "the watch to stop on Ctrl-C", 15)
        assert "Traceback" not in stopped and "KeyboardInterrupt" not in stopped, stopped
        assert _exit_status(stopped) == 0
    finally:
        subprocess.run([tmux, "-L", socket_name, "kill-server"], capture_output=True, timeout=30)


def _exit_status(screen: str) -> int | None:
    """The watch's exit status, as the pane's shell reports it after the watch."""
    found = re.search(r"^watch exited with (\d+)$", screen, re.MULTILINE)
    return int(found.group(1)) if found else None
