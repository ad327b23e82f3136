"""A task's environment and resources: thread pools, cpuset QoS, StarServer settings and endpoint map."""

from __future__ import annotations

import json
import math

import pytest
from conftest import JOBS, REPO, problems_of, render

from tfjobgen import backends
from tfjobgen.inputs import quantity

GOLDEN = REPO / "tests" / "golden"


def _pods_of(path, profile=None):
    return backends.pods_of(render(path, profile=profile))


def test_cpuset_pods_are_guaranteed_on_whole_cpus_on_cpu_manager_nodes(overlay_objects):
    for obj in overlay_objects["seed-80c"]:  # every job there is qos cpuset
        if obj["kind"] != "Job":
            continue
        spec = obj["spec"]["template"]["spec"]
        for container in spec["containers"] + spec.get("initContainers", []):
            resources = container["resources"]
            assert resources["requests"] == resources["limits"], "Guaranteed: requests == limits, cpu and memory"
            assert set(resources["limits"]) == {"cpu", "memory"}
            assert quantity.parse(resources["limits"]["cpu"]).denominator == 1, "whole CPUs for the CPU manager"
        assert spec["nodeSelector"]["cpu-manager-policy"] == "static"


def test_shared_qos_requests_cpu_and_limits_memory_only():
    by_role = {p.role: p.container["resources"] for p in _pods_of(GOLDEN / "shared-qos" / "job.yaml")}
    assert by_role["ps"] == {"requests": {"cpu": "500m", "memory": "2Gi"}, "limits": {"memory": "2Gi"}}
    assert by_role["worker"]["limits"] == {"cpu": "2", "memory": "3Gi"}, "the optional cpuLimit"


@pytest.mark.parametrize("job", ["wide-deep.yaml", "scene1-case1.yaml", "deeprec-starserver.yaml"])
def test_thread_pools_equal_the_cpu_limit_less_the_cores_polling_takes(job):
    for pod in _pods_of(JOBS / job):
        cpus = quantity.parse(pod.container["resources"]["limits"]["cpu"])
        polling = "PS_ENABLE_POLLING" if pod.role == "ps" else "WORKER_ENABLE_POLLING"
        network = "NETWORK_PS_CORE_NUMBER" if pod.role == "ps" else "NETWORK_WORKER_CORE_NUMBER"
        taken = int(pod.env[network]) if pod.env.get(polling) == "True" else 0  # a polling thread owns its core
        assert pod.env["TF_NUM_INTRAOP_THREADS"] == pod.env["TF_NUM_INTEROP_THREADS"] == str(cpus - taken)
        assert pod.env["OMP_NUM_THREADS"] == str(cpus - taken)


def test_star_server_polling_cores_are_not_given_to_the_thread_pools_too():
    """deeprec-starserver: 24-CPU PS whose 8 network threads poll: 16 are left for TensorFlow's pools."""
    ps = next(p for p in _pods_of(JOBS / "deeprec-starserver.yaml") if p.role == "ps")
    assert (ps.env["PS_ENABLE_POLLING"], ps.env["NETWORK_PS_CORE_NUMBER"]) == ("True", "8")
    assert (ps.env["TF_NUM_INTRAOP_THREADS"], ps.env["TF_NUM_INTEROP_THREADS"]) == ("16", "16")


def _small_job(tmp_path, worker: str, extra: str = "", api: str = "tf2"):
    path = tmp_path / "job.yaml"
    path.write_text(f"""apiVersion: tfjobgen.dev/v1alpha1
kind: TrainingJob
metadata: {{name: t, namespace: t}}
spec:
  image: x/y:1
  api: {api}
  qos: shared
  roles:
    ps: {{replicas: 1, cpu: 2, memory: 1Gi}}
    worker: {worker}
    chief: {{cpu: 1, memory: 1Gi}}
{extra}""")
    return path


def test_a_tf2_worker_never_gets_one_inter_op_thread(tmp_path):
    """One inter-op thread deadlocks a TF2 ParameterServerStrategy worker; PS and chief may have one."""
    by_role = {p.role: p.env for p in _pods_of(_small_job(tmp_path, "{replicas: 2, cpu: 500m, memory: 1Gi}"))}
    assert (by_role["worker"]["TF_NUM_INTRAOP_THREADS"], by_role["worker"]["TF_NUM_INTEROP_THREADS"]) == ("1", "2")
    assert by_role["chief"]["TF_NUM_INTEROP_THREADS"] == "1"
    tf1 = {p.role: p.env for p in _pods_of(_small_job(tmp_path, "{replicas: 2, cpu: 500m, memory: 1Gi}", api="tf1"))}
    assert tf1["worker"]["TF_NUM_INTEROP_THREADS"] == "1", "tf1 graph mode is fine with one"


def test_thread_overrides_are_used(tmp_path):
    job = _small_job(tmp_path, "{replicas: 2, cpu: 4, memory: 1Gi, threads: {intraOp: 3, interOp: 2}}")
    worker = next(p for p in _pods_of(job) if p.role == "worker")
    assert (worker.env["TF_NUM_INTRAOP_THREADS"], worker.env["TF_NUM_INTEROP_THREADS"], worker.env["OMP_NUM_THREADS"]) \
        == ("3", "2", "3")


def test_oversubscribed_threads_are_a_warning(tmp_path):
    text = _small_job(tmp_path, "{replicas: 2, cpu: 2, memory: 1Gi, threads: {intraOp: 80}}").read_text()
    [warning] = problems_of(text, tmp_path)
    assert warning.severity == "warning" and warning.field == "spec.roles.worker.threads.intraOp"
    assert "80 threads on 2 CPUs" in warning.message


def _endpoint_map(objects) -> str:
    [config] = [o for o in objects if o["kind"] == "ConfigMap"]
    return config["data"][".endpoint_map"]


@pytest.mark.parametrize("path", [JOBS / "deeprec-starserver.yaml", GOLDEN / "star-server" / "job.yaml"])
def test_endpoint_map_matches_tf_config_byte_for_byte_and_is_mounted_where_deeprec_reads_it(path):
    objects = render(path)
    lines = _endpoint_map(objects).splitlines()
    task_pods = backends.pods_of(objects)
    cluster = json.loads(task_pods[0].env["TF_CONFIG"])["cluster"]
    addresses = [a for role in sorted(cluster) for a in cluster[role]]
    assert [line.split("=")[0] for line in lines] == addresses, "one line per task, left side == TF_CONFIG entry"
    namespace = task_pods[0].namespace
    for line in lines:
        grpc, seastar = line.split("=")
        # The same pod, fully qualified: seastar resolves it itself, without the pod's search path.
        assert seastar == f"{grpc.rsplit(':', 1)[0]}.{namespace}.svc.cluster.local:2223"
    for pod in task_pods:
        # Where the kubelet puts the file: the configMap volume's item path under its mountPath.
        mount = next(m for m in pod.container["volumeMounts"] if m["name"] == "cluster")
        volume = next(v for v in pod.spec["volumes"] if v["name"] == "cluster")
        [item] = volume["configMap"]["items"]
        assert f"{mount['mountPath']}/{item['path']}" == pod.env["TF_SEASTAR_ENDPOINT_MAP_PATH"] + "/.endpoint_map"
        assert 2223 in [p["containerPort"] for p in pod.container["ports"]]


def test_star_server_defaults_follow_deeprec_advice():
    env = _pods_of(JOBS / "deeprec-starserver.yaml")[0].env  # 10 PS x 24 CPU, 80 workers x 8 CPU, cpuset
    assert env["PS_ENABLE_POLLING"] == "True" and env["WORKER_ENABLE_POLLING"] == "False"
    assert env["NETWORK_PS_CORE_NUMBER"] == "8" and env["NETWORK_WORKER_CORE_NUMBER"] == "2"
    assert env["PS_DISABLE_PIN_CORES"] == env["WORKER_DISABLE_PIN_CORES"] == "True"
    golden = _pods_of(GOLDEN / "star-server" / "job.yaml")[0].env  # 2 PS: workers talk to 2 PS only
    assert golden["NETWORK_WORKER_CORE_NUMBER"] == str(min(2, 2))
    assert golden["NETWORK_PS_CORE_NUMBER"] == str(min(8, 16, 24))


def test_small_jobs_get_network_threads_within_their_connections_and_cpus(tmp_path):
    text = _small_job(tmp_path, "{replicas: 3, cpu: 2, memory: 1Gi}", "  protocol: star_server\n", api="tf1").read_text()
    path = tmp_path / "star.yaml"
    path.write_text(text)
    env = _pods_of(path)[0].env
    connections = 3 + 1  # 3 workers and the chief talk to each PS
    assert env["NETWORK_PS_CORE_NUMBER"] == str(min(8, connections, 2))
    assert env["NETWORK_WORKER_CORE_NUMBER"] == str(min(2, 1, 2))


def test_worker_to_ps_ratio_far_from_eight_to_one_is_a_warning(tmp_path):
    text = _small_job(tmp_path, "{replicas: 2, cpu: 2, memory: 1Gi}", "  protocol: star_server\n", api="tf1").read_text()
    warnings = [p for p in problems_of(text, tmp_path) if p.severity == "warning"]
    assert any("8-10 workers per PS" in w.message and "(2.0:1)" in w.message for w in warnings)
    assert not [p for p in problems_of(text, tmp_path) if p.is_error]


def test_tf_config_is_assembled_by_the_kubelet_from_one_copy_of_the_cluster(overlay_objects):
    """Manifests stay O(tasks): the host list is written once per job, not once per pod."""
    objects = overlay_objects["seed-80c"]
    biggest = [o for o in objects if o["metadata"]["name"].startswith("scene1-case4")]
    text = json.dumps(biggest)
    assert text.count("scene1-case4-worker-199.scene1-case4") == 1
    per_pod = max(len(json.dumps(o)) for o in biggest if o["kind"] == "Job")
    assert per_pod < 6000, "a per-task Job stays small however many tasks the job has"
    assert math.isclose(len(biggest), 20 + 200 + 3)


def test_hadoop_environment_is_set_and_yields_to_the_users_own(tmp_path):
    text = _small_job(tmp_path, "{replicas: 2, cpu: 2, memory: 1Gi}",
                      "  hadoop: {home: /opt/hadoop, javaHome: /usr/lib/jvm/java-17, user: ml}\n"
                      "  env: [{name: JAVA_HOME, value: /opt/jdk}]\n").read_text()
    path = tmp_path / "hadoop.yaml"
    path.write_text(text)
    env = _pods_of(path)[0].env
    assert env["HADOOP_HDFS_HOME"] == env["HADOOP_HOME"] == "/opt/hadoop" and env["HADOOP_USER_NAME"] == "ml"
    assert env["LD_LIBRARY_PATH"] == "/usr/lib/jvm/java-17/lib/server:/opt/hadoop/lib/native"
    assert env["JAVA_HOME"] == "/opt/jdk", "the job's own JAVA_HOME wins"
    names = [e["name"] for e in backends.pods_of(render(path))[0].container["env"]]
    assert len(names) == len(set(names)), "no variable twice"


def test_storage_the_pods_cannot_reach_is_a_warning(tmp_path):
    hdfs = _small_job(tmp_path, "{replicas: 2, cpu: 2, memory: 1Gi}",
                      "  training: {data: {format: tfrecord, paths: ['hdfs://nn:8020/d/*.tfrecord']}}\n").read_text()
    [warning] = problems_of(hdfs, tmp_path)
    assert warning.field == "spec.training.data.paths[0]" and "set spec.hadoop" in warning.message
    evaluator = _small_job(tmp_path, "{replicas: 2, cpu: 2, memory: 1Gi}\n    evaluator: {cpu: 1, memory: 1Gi}").read_text()
    [warning] = problems_of(evaluator, tmp_path)
    assert warning.field == "spec.training.modelDir" and "cannot read checkpoints" in warning.message
    shared = evaluator + "  training: {modelDir: 'gs://bucket/x'}\n"
    assert problems_of(shared, tmp_path) == []
    claim = evaluator + ("  volumes: [{name: runs, persistentVolumeClaim: {claimName: ctr-runs}}]\n"
                         "  volumeMounts: [{name: runs, mountPath: /runs}]\n  training: {modelDir: /runs/model}\n")
    assert problems_of(claim, tmp_path) == [], "the chief and the evaluator both mount the claim"
    chief_only = claim.replace("  volumeMounts: [{name: runs, mountPath: /runs}]\n", "").replace(
        "    chief: {", "    chief: {volumeMounts: [{name: runs, mountPath: /runs}], ")
    assert chief_only != claim and [w.field for w in problems_of(chief_only, tmp_path)] == ["spec.training.modelDir"]
    # No chief: worker 0 writes the checkpoints (hypothesis found the rule asking for a chief that was not there)
    chiefless = claim.replace("    chief: {cpu: 1, memory: 1Gi}\n", "").replace("api: tf2", "api: tf1")
    assert chiefless != claim and problems_of(chiefless, tmp_path) == []


@pytest.mark.parametrize("polling", ["psPolling", "workerPolling"])
def test_polling_network_threads_by_default_leave_a_core_to_the_task(polling, tmp_path):
    """8-CPU PS (and 2-CPU workers) that poll, no network cores written: tfjobgen's own defaults must be valid,
    and leave TensorFlow's pools a core the polling threads do not spin on."""
    path = tmp_path / "star.yaml"
    path.write_text(f"""apiVersion: tfjobgen.dev/v1alpha1
kind: TrainingJob
metadata: {{name: t, namespace: t}}
spec:
  image: x/y:1
  protocol: star_server
  starServer: {{{polling}: true}}
  roles:
    ps: {{replicas: 2, cpu: 8, memory: 8Gi}}
    worker: {{replicas: 16, cpu: 2, memory: 4Gi}}
""")
    assert [p.format() for p in problems_of(path.read_text(), tmp_path) if p.is_error] == []
    role = "ps" if polling == "psPolling" else "worker"
    pod = next(p for p in _pods_of(path) if p.role == role)
    network = int(pod.env["NETWORK_PS_CORE_NUMBER" if role == "ps" else "NETWORK_WORKER_CORE_NUMBER"])
    cpus = 8 if role == "ps" else 2
    assert 1 <= network < cpus and pod.env["TF_NUM_INTRAOP_THREADS"] == str(cpus - network)


def test_worker_network_threads_that_poll_every_core_are_refused(tmp_path):
    text = _small_job(tmp_path, "{replicas: 3, cpu: 2, memory: 1Gi}",
                      "  protocol: star_server\n  starServer: {workerPolling: true, workerNetworkCores: 2}\n",
                      api="tf1").read_text().replace("qos: shared", "qos: cpuset")
    [error] = [p for p in problems_of(text, tmp_path) if p.is_error]
    assert error.field == "spec.starServer.workerNetworkCores" and "all 2 worker CPUs" in error.message
