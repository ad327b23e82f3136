"""The node tier: tfjobgen's jobs in containers, on real kubelets, pulled from the cluster's registry.

One cluster of two real nodes (tests/nodes/profiles/real-nodes.yaml: each kubelet runs the static CPU
manager keeping CPU 0) serves the module; `cluster down` after it must leave the machine as it was.
One machine holds one cluster with real nodes at a time, so the tests that start their own come first.

- an interrupted `cluster up` leaves nothing behind;
- the README's job, scaled down, trains to completion on each backend, and every address of its
  TF_CONFIG resolves through the cluster's DNS to that task's pod;
- a job reads its examples from a claim bound to a static local PersistentVolume (a folder on one node)
  and writes its checkpoints there;
- a Guaranteed pod's container sees its own CPU (cpuset, nproc, the runtime's thread pools); a shared one does not;
- each kubelet runs the profile's CPU manager and Topology Manager policy and scope (read back from /configz);
- restricted Pod Security as the runtime applies it (/proc/self/status), with no service-account token;
- the job's NetworkPolicy, enforced by kube-router: the job's pods reach each other, nothing else reaches
  the training ports, and only the monitoring namespace reaches the metrics port;
- real failures: a PS killed by SIGKILL, a worker out of memory, a permanent exit code, an eviction, each
  with the exit code a real process gives and the outcome docs/design.md's lifecycle table promises;
  and last, a node lost by stopping its kubelet;
- bad requests (more real nodes than the machine holds, images not built, a second cluster with real
  nodes) get one line and make nothing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from cluster import cluster_support
from nodes_support import (PROFILE, apply, container_pid, exec_in, job_objects, need_real_nodes, probe_pod,
                           remove_namespace, run_probe, running_pods, terminated, wait_complete)

import machine
from tfjobgen.harness import conformance
from tfjobgen.concerns import labels

# One process runs them all, in this order (--dist loadgroup): the machine holds one cluster with real nodes
# at a time (the bridge tfjg0), so the tests that start their own must not run beside the module's cluster
# (seen with 6 processes: the module's cluster refused, 'another cluster with real nodes runs').
pytestmark = pytest.mark.xdist_group("real-nodes")

JOBS = PROFILE.parent.parent / "jobs"
TRAINING_PORT, METRICS_PORT = 2222, 2225


@pytest.fixture(scope="module")
def before():
    need_real_nodes()
    return machine.snapshot()


def test_an_interrupted_cluster_up_leaves_the_machine_as_it_was(before):
    """Ctrl-C once the nodes' namespaces, cgroups and daemons exist: `up` removes all of it on its way out."""
    name = f"int{os.getpid()}"
    process = subprocess.Popen(cluster_support.tfjobgen_command() + [
        "cluster", "up", "--name", name, "--profile", str(PROFILE), "--nodes", "2", "--real-nodes", "2"],
        cwd=cluster_support.REPO, env=cluster_support.cluster_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, preexec_fn=cluster_support.signals_as_a_terminal_gives_them)
    seen = []
    try:
        for line in process.stderr:
            seen.append(line)
            if "real node node-001" in line:  # node-000 is up, node-001 being made
                process.send_signal(signal.SIGINT)
                break
        process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert any("real node node-001" in line for line in seen), "".join(seen)
    assert process.returncode != 0
    assert not cluster_support.leftovers(cluster_support.SESSION_HOME / name)
    assert machine.differences(before, machine.snapshot()) == []


def _refused(*args: str, env: dict | None = None) -> str:
    """`cluster up` with args: it must fail with one line, having made nothing."""
    name = f"bad{os.getpid()}"
    done = cluster_support.tfjobgen("cluster", "up", "--name", name, "--profile", str(PROFILE), *args, env=env)
    assert done.returncode != 0 and done.stdout == ""
    lines = [line for line in done.stderr.splitlines() if line.startswith("tfjobgen cluster up:")]
    assert len(lines) == 1, done.stderr
    assert not (cluster_support.SESSION_HOME / name).exists(), "refused after making the cluster's folder"
    return lines[0]


def test_a_request_the_machine_cannot_hold_gets_one_line_and_makes_nothing(before, tmp_path):
    assert "--real-nodes 3: the main group has 2 node(s); pass --nodes 3" in _refused("--nodes", "2", "--real-nodes", "3")
    said = _refused("--nodes", "200", "--real-nodes", "200")
    assert "each real node needs about 1024 MiB" in said and "ask for at most" in said
    said = _refused("--nodes", "1", "--real-nodes", "1", env={"TFJOBGEN_IMAGES_CACHE": str(tmp_path)})
    assert said.endswith("the images are not built: run `make images`")
    assert machine.differences(before, machine.snapshot()) == []


@pytest.fixture(scope="module")
def cluster(before):
    with cluster_support.local_cluster(PROFILE, 2, "--real-nodes", "2") as up:
        yield up
    left = machine.differences(before, machine.snapshot())
    assert left == [], "after cluster down:\n" + "\n".join(left)


def test_a_second_cluster_with_real_nodes_is_refused_while_one_runs(cluster):
    said = _refused("--nodes", "1", "--real-nodes", "1")
    assert "another cluster with real nodes runs on this machine" in said and "tfjobgen cluster list" in said


def test_every_node_is_a_kubelet_of_the_control_planes_release(cluster):
    server = json.loads(cluster.kubectl("version", "-o", "json").stdout)["serverVersion"]
    nodes = cluster.objects.list("v1", "Node")
    assert {n["metadata"]["name"] for n in nodes} == {"node-000", "node-001"}
    for node in nodes:
        info = node["status"]["nodeInfo"]
        assert info["kubeletVersion"] == server["gitVersion"]
        assert info["containerRuntimeVersion"].startswith("containerd://")
        assert node["metadata"]["labels"]["cpu-manager-policy"] == "static"  # the profile's CPU-manager label
        assert node["status"]["allocatable"]["cpu"] == "1"  # 2 CPUs, CPU 0 kept for the system


def test_every_kubelet_runs_the_profiles_cpu_and_topology_managers(cluster):
    """The profile's spec.node, read back from each running kubelet (/configz): the static CPU manager and the
    Topology Manager's policy and scope. A kubelet that refused them would not have started."""
    for name in ("node-000", "node-001"):
        raw = cluster.kubectl("get", "--raw", f"/api/v1/nodes/{name}/proxy/configz").stdout
        config = json.loads(raw)["kubeletconfig"]
        assert config["cpuManagerPolicy"] == "static"
        assert (config["topologyManagerPolicy"], config["topologyManagerScope"]) == ("single-numa-node", "pod")


def _train(cluster, backend: str, namespace: str, job: str = "tiny") -> list[dict]:
    cluster.restricted_namespace(namespace)
    rendered = conformance.render(JOBS / f"{job}.yaml", PROFILE, backend, namespace)
    apply(cluster, job_objects(rendered))
    return rendered


@pytest.mark.parametrize("backend", ["native", "jobset", "tfjob"])
def test_the_job_trains_to_completion_in_pods_of_the_built_image(cluster, backend):
    namespace = f"train-{backend}"
    _train(cluster, backend, namespace)
    # 20 s alone; once past 240 s under `make test`, with no word of why (the likely cause: pods of 100m requests,
    # cpu.shares 102, weigh little beside the suite's processes). A timeout now describes every pod.
    wait_complete(cluster, backend, namespace, timeout=480)
    # The TFJob operator deletes the pods still running once the chief succeeds (cleanPodPolicy Running):
    # the chief's pod stays, and every pod left ended well.
    def settled():  # the operator's deletions under way: wait until it has asked for every one
        kept = [p for p in cluster.pods(namespace) if not p["metadata"].get("deletionTimestamp")]
        return kept if all(p["status"].get("phase") in ("Succeeded", "Failed") for p in kept) else None

    done = cluster.wait(settled, f"every pod of {namespace} ended or deleted", 60)
    assert all(p["status"].get("phase") == "Succeeded" and terminated(p).get("exitCode") == 0 for p in done)
    chief = next(p for p in done if p["metadata"]["labels"][labels.ROLE] == "chief")
    log = cluster.kubectl("logs", "-n", namespace, chief["metadata"]["name"]).stdout
    assert "event=finished" in log and "step=1500" in log, log[-2000:]
    remove_namespace(cluster, namespace)


CLAIM = "training-store"  # tests/nodes/jobs/on-a-volume.yaml's claim


def _store(folder: Path, rows: int = 256) -> None:
    """The folder a local PersistentVolume serves: the runtime's CSV examples (label, dense_*, id_*) in data/,
    and room for the model; writable by the pods' user, as a volume prepared for a team would be."""
    from tfjobgen.shared.variable_placement.reference_model import DENSE, FIELDS

    (folder / "data").mkdir(parents=True)
    header = ["label"] + [f"dense_{i}" for i in range(DENSE)] + [f"id_{i}" for i in range(FIELDS)]
    lines = [",".join(header)] + [",".join([str(r % 2)] + [f"{(r * 7 + i) % 10 / 10:.1f}" for i in range(DENSE)]
                                           + [str((r * 31 + i * 17) % 1000) for i in range(FIELDS)])
                                  for r in range(rows)]
    (folder / "data" / "train.csv").write_text("\n".join(lines) + "\n")
    for path in (folder, folder / "data", folder / "data" / "train.csv"):
        path.chmod(0o777 if path.is_dir() else 0o644)


def _local_volume(name: str, folder: Path, node: str, namespace: str) -> list[dict]:
    """A static local PersistentVolume of `folder` on `node`, and the claim bound to it in `namespace`."""
    return [{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
             "spec": {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"},
                      "claimRef": {"name": CLAIM, "namespace": namespace}, "local": {"path": str(folder)},
                      "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                          {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}},
                      "persistentVolumeReclaimPolicy": "Retain", "storageClassName": ""}},
            {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": CLAIM, "namespace": namespace},
             "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                      "storageClassName": "", "volumeName": name}}]


def test_the_job_reads_its_data_from_a_claim_and_checkpoints_there(cluster, tmp_path):
    """spec.volumes on real kubelets: a claim bound to a local PersistentVolume (a folder of this machine on
    node-000) holds the examples the runtime reads and receives the checkpoints its chief writes, under
    restricted Pod Security; every pod mounting it runs on that node. The folder and the volume go after."""
    namespace, name, folder = "train-volume", "tfjobgen-test-train-volume", tmp_path / "store"
    _store(folder)
    try:
        cluster.restricted_namespace(namespace)
        apply(cluster, _local_volume(name, folder, "node-000", namespace))
        rendered = conformance.render(JOBS / "on-a-volume.yaml", PROFILE, "native", namespace)
        apply(cluster, job_objects(rendered))
        wait_complete(cluster, "native", namespace, timeout=300)
        pods = cluster.pods(namespace)
        assert pods and {p["spec"]["nodeName"] for p in pods} == {"node-000"}  # where the volume is
        chief = next(p for p in pods if p["metadata"]["labels"][labels.ROLE] == "chief")
        log = cluster.kubectl("logs", "-n", namespace, chief["metadata"]["name"]).stdout
        assert "event=finished" in log and "step=200" in log, log[-2000:]
        written = sorted(p.name for p in (folder / "model").iterdir())
        assert "checkpoint" in written and any(n.startswith("ckpt-") and n.endswith(".index") for n in written), \
            written
        user = chief["spec"]["securityContext"]["runAsUser"]
        assert (folder / "model" / "checkpoint").stat().st_uid == user  # written by the pod's own user
    finally:
        remove_namespace(cluster, namespace)
        cluster.kubectl("delete", "persistentvolume", name, "--ignore-not-found", "--wait=true", check=False)
        subprocess.run(["rm", "-rf", str(folder)], check=False)


@pytest.fixture(scope="class")
def pinned(cluster):
    """The cpuset job, long enough to look at while it trains: one PS and one worker, one whole CPU each."""
    namespace = "pinned"
    cluster.restricted_namespace(namespace)
    apply(cluster, job_objects(conformance.render(JOBS / "pinned.yaml", PROFILE, "native", namespace)))
    pods = running_pods(cluster, namespace, 2, timeout=180)
    yield {p["metadata"]["labels"][labels.ROLE]: p for p in pods}
    remove_namespace(cluster, namespace)


STATUS = "print(open('/proc/self/status').read()); import os; print('nproc', len(os.sched_getaffinity(0)))"


def _status(text: str) -> dict:
    return dict(line.split(":", 1) if ":" in line else line.split(" ", 1) for line in text.splitlines() if line.strip())


# A new pod's address reaches kube-router's sets a moment after the pod starts: "connected" once in 8 s wins,
# "refused" means refused (or dropped) for all of them.
CONNECT = ("import socket, time\n"
           "deadline, said = time.monotonic() + 8, ''\n"
           "while time.monotonic() < deadline:\n"
           "    try:\n"
           "        socket.create_connection((%r, %d), timeout=1).close(); said = 'connected'; break\n"
           "    except OSError as err:\n"
           "        said = f'refused {err}'; time.sleep(0.5)\n"
           "print(said)\n")


class TestAJobOnWholeCPUs:
    """The cpuset job training while the tests look at it: its CPUs, its security, its network, its DNS,
    its metrics. It holds each node's one allocatable CPU, so it goes before the failure cases start theirs."""

    def test_a_guaranteed_pod_gets_a_cpu_of_its_own_and_a_shared_pod_does_not(self, cluster, pinned):
        ps = pinned["ps"]
        status = _status(exec_in(cluster, "pinned", ps["metadata"]["name"], STATUS))
        assert status["Cpus_allowed_list"].strip() == "1"
        assert status["nproc"].strip() == "1"
        up = cluster.wait(lambda: next((line for line in cluster.kubectl("logs", "-n", "pinned", ps["metadata"]["name"])
                                        .stdout.splitlines() if "event=up" in line), None), "the PS's server up", 60)
        assert "threads=1/1" in up, up  # TensorFlow's thread pools: one thread per CPU it has
        node = ps["spec"]["nodeName"]
        phase, output = run_probe(cluster, probe_pod("shared", "pinned", STATUS, node=node))
        assert phase == "Succeeded", output
        assert _status(output)["Cpus_allowed_list"].strip() == "0"  # the node's shared pool: all but the PS's CPU

    def test_the_runtime_applies_restricted_pod_security_and_mounts_no_token(self, cluster, pinned):
        ps = pinned["ps"]
        status = _status(exec_in(cluster, "pinned", ps["metadata"]["name"], STATUS))
        uid = str(ps["spec"]["securityContext"]["runAsUser"])
        assert status["Uid"].split() == [uid] * 4
        assert status["NoNewPrivs"].strip() == "1"
        assert status["Seccomp"].strip() == "2"  # a filter is applied (RuntimeDefault)
        assert {status[k].strip() for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")} == {"0000000000000000"}
        listed = exec_in(cluster, "pinned", ps["metadata"]["name"],
                         "import os; print(os.path.exists('/var/run/secrets/kubernetes.io/serviceaccount'))")
        assert listed.strip() == "False"

    def test_the_jobs_network_policy_is_enforced(self, cluster, pinned):
        ps, worker = pinned["ps"], pinned["worker"]
        ps_ip = ps["status"]["podIP"]
        # The job's own pods reach the training port.
        assert exec_in(cluster, "pinned", worker["metadata"]["name"], CONNECT % (ps_ip, TRAINING_PORT)).strip() == "connected"
        # A pod of another namespace does not, nor does one of the job's namespace that is not the job's.
        cluster.restricted_namespace("elsewhere")
        cluster.restricted_namespace("monitoring")  # the profile's monitoring namespace
        cases = {("elsewhere", TRAINING_PORT): "refused", ("pinned", TRAINING_PORT): "refused",
                 ("elsewhere", METRICS_PORT): "refused", ("monitoring", METRICS_PORT): "connected",
                 ("monitoring", TRAINING_PORT): "refused"}
        seen = {}
        for index, ((namespace, port), _) in enumerate(cases.items()):
            phase, output = run_probe(cluster, probe_pod(f"probe-{index}", namespace, CONNECT % (ps_ip, port)))
            seen[(namespace, port)] = output.split()[0] if output.split() else phase
        assert seen == cases

    def test_status_reads_the_running_pods_metrics_past_the_network_policy(self, cluster, pinned):
        """The policy refuses the API server's pod proxy on the metrics port; status reads it through a forwarded port."""
        shown = cluster_support.tfjobgen("status", "pinned", "-n", "pinned", "--kubeconfig", str(cluster.kubeconfig))
        assert shown.returncode == 0, shown.stderr
        metrics = next(line for line in shown.stdout.splitlines() if line.startswith("METRICS"))
        assert "steps/s" in metrics and "unreachable" not in metrics, shown.stdout
        assert "PS bytes max/mean" in shown.stdout

    def test_every_tf_config_address_resolves_through_the_cluster_dns_to_its_tasks_pod(self, cluster, pinned):
        cluster_map = cluster.objects.get("v1", "ConfigMap", "pinned-cluster", "pinned")["data"]["cluster.json"]
        hosts = sorted({a.rsplit(":", 1)[0] for addresses in json.loads(cluster_map).values() for a in addresses})
        phase, output = run_probe(cluster, probe_pod("resolve", "pinned", (
            "import json, socket; print(json.dumps({h: socket.gethostbyname(h) for h in %r}))" % hosts)))
        assert phase == "Succeeded", output
        pods = pinned.values()
        by_name = {f"{p['spec']['hostname']}.{p['spec']['subdomain']}": p["status"]["podIP"] for p in pods}
        assert json.loads(output.strip().splitlines()[-1]) == {host: by_name[host] for host in hosts}


def test_a_ps_killed_by_sigkill_gets_a_new_pod_and_the_job_completes(cluster):
    namespace = "killed"
    _train(cluster, "native", namespace)
    pods = running_pods(cluster, namespace, 4, timeout=180)
    ps = next(p for p in pods if "-ps-" in p["metadata"]["name"])
    os.kill(container_pid(ps), signal.SIGKILL)

    def replaced():
        found = cluster.pods(namespace, f"{labels.ROLE}=ps")
        old = next((p for p in found if p["metadata"]["uid"] == ps["metadata"]["uid"]), None)
        new = [p for p in found if p["metadata"]["uid"] != ps["metadata"]["uid"]]
        return (old, new) if old and terminated(old) and new else None

    old, new = cluster.wait(replaced, "the killed PS's exit and its new pod", 90)
    assert terminated(old)["exitCode"] == 137  # 128 + SIGKILL, as the kubelet reports a killed process
    assert old["status"]["phase"] == "Failed"
    wait_complete(cluster, "native", namespace)
    remove_namespace(cluster, namespace)


def _next_pod(cluster, namespace: str, old: dict, what: str, timeout: float) -> dict:
    """The pod the Job controller made for the same task (role and completion index) after `old`."""
    task = old["metadata"]["labels"]
    selector = f"{labels.ROLE}={task[labels.ROLE]},{labels.JOB_COMPLETION_INDEX}={task[labels.JOB_COMPLETION_INDEX]}"

    def made():
        return [p for p in cluster.pods(namespace, selector) if p["metadata"]["uid"] != old["metadata"]["uid"]] or None

    return cluster.wait(made, what, timeout)[0]


def test_a_worker_out_of_memory_is_oomkilled_and_replaced(cluster):
    namespace = "oom"
    cluster.restricted_namespace(namespace)
    rendered = conformance.render(JOBS / "tiny.yaml", PROFILE, "native", namespace)
    for obj in rendered:  # TensorFlow alone needs more than 200 MiB: the worker dies as it imports it
        if obj["kind"] == "Job" and obj["metadata"]["name"].endswith("-worker"):
            for container in obj["spec"]["template"]["spec"]["containers"]:
                container["resources"]["limits"]["memory"] = "200Mi"
                container["resources"]["requests"]["memory"] = "200Mi"
    apply(cluster, job_objects(rendered))

    def oom_killed():
        found = [p for p in cluster.pods(namespace, f"{labels.ROLE}=worker") if terminated(p)]
        return found if found else None

    killed = cluster.wait(oom_killed, "a worker killed by the kernel's OOM killer", 120)[0]
    assert terminated(killed)["reason"] == "OOMKilled"
    assert terminated(killed)["exitCode"] == 137
    again = _next_pod(cluster, namespace, killed, "a new pod for the OOM-killed worker", 60)
    assert again["metadata"]["annotations"][labels.JOB_INDEX_FAILURE_COUNT] == "1"  # counted
    remove_namespace(cluster, namespace)


def test_a_permanent_exit_code_fails_its_job_at_once_and_ends_the_others(cluster):
    namespace = "permanent"
    _train(cluster, "native", namespace, job="no-data")

    def all_failed():
        jobs = cluster.objects.list("batch/v1", "Job", namespace)
        failed = [j for j in jobs if any(c["type"] == "Failed" and c["status"] == "True"
                                         for c in (j.get("status") or {}).get("conditions") or [])]
        return jobs if jobs and len(failed) == len(jobs) else None

    jobs = cluster.wait(all_failed, "every Job of the job failed", 180)
    reasons = {j["metadata"]["name"]: next(c["reason"] for c in j["status"]["conditions"] if c["type"] == "Failed")
               for j in jobs}
    assert "PodFailurePolicy" in reasons.values(), reasons
    codes = sorted({terminated(p).get("exitCode") for p in cluster.pods(namespace)})
    assert set(codes) <= {2, 4}, codes  # the failing task's 2, and the others' ABORT (4)
    assert all(j["status"].get("failed", 0) <= 1 for j in jobs), "no task got a second pod"
    remove_namespace(cluster, namespace)


def test_an_evicted_worker_gets_a_new_pod_that_is_not_counted(cluster):
    namespace = "evicted"
    _train(cluster, "native", namespace)
    pods = running_pods(cluster, namespace, 4, timeout=180)
    worker = next(p for p in pods if "-worker-" in p["metadata"]["name"])
    cluster.evict_pod(namespace, worker["metadata"]["name"])
    new = _next_pod(cluster, namespace, worker, "a new pod for the evicted worker", 90)
    assert new["metadata"]["annotations"].get(labels.JOB_INDEX_FAILURE_COUNT, "0") == "0"
    wait_complete(cluster, "native", namespace)
    remove_namespace(cluster, namespace)




def test_a_node_lost_by_stopping_its_kubelet_gets_its_tasks_replaced_once_it_is_declared_out_of_service(cluster):
    """Last: it leaves node-001 without a kubelet. A node whose kubelet is gone cannot confirm its pods ended, so
    they stay Terminating and the Job controller (podReplacementPolicy Failed) waits; the out-of-service taint, what
    an administrator sets for a node that is down for good, lets the pod garbage collector remove them."""
    namespace = "lost"
    _train(cluster, "native", namespace, job="steady")
    pods = running_pods(cluster, namespace, 4, timeout=180)
    lost = "node-001"
    on_lost = {p["metadata"]["uid"] for p in pods if p["spec"]["nodeName"] == lost}
    assert on_lost, "the scheduler put no task on node-001"
    kubelet = [p.pid for p in cluster_support.cluster_processes(cluster.home)
               if p.name == "kubelet" and f"--hostname-override={lost}" in p.argv]
    assert len(kubelet) == 1, kubelet
    os.kill(kubelet[0], signal.SIGKILL)

    def unready_and_terminating():
        node = cluster.objects.get("v1", "Node", lost)
        ready = next(c["status"] for c in node["status"]["conditions"] if c["type"] == "Ready")
        stuck = [p for p in cluster.pods(namespace) if p["metadata"]["uid"] in on_lost
                 and p["metadata"].get("deletionTimestamp")]
        return ready != "True" and len(stuck) == len(on_lost)

    cluster.wait(unready_and_terminating, f"{lost} NotReady and its pods Terminating", 120)
    time.sleep(10)  # nothing replaces them while they are Terminating on a node that cannot say they ended
    assert not [p for p in cluster.pods(namespace) if p["metadata"]["uid"] not in {x["metadata"]["uid"] for x in pods}]
    cluster.kubectl("taint", "node", lost, "node.kubernetes.io/out-of-service=nodeshutdown:NoExecute")

    def replaced():
        now = cluster.pods(namespace)
        gone = not any(p["metadata"]["uid"] in on_lost for p in now)
        running = [p for p in now if p["status"].get("phase") == "Running" and p["spec"]["nodeName"] != lost]
        return gone and len(running) == 4

    cluster.wait(replaced, f"the tasks of {lost} gone and running again on the other node", 180)
    remove_namespace(cluster, namespace)
