"""A task's environment: TF_CONFIG, thread pools, StarServer settings, runtime settings.

TF_CONFIG is assembled by the kubelet, not written out per pod: the cluster
spec lives once in the job's ConfigMap (`cluster.json`) and every pod's env says

    TFJOBGEN_CLUSTER     <- ConfigMap key cluster.json
    TFJOBGEN_TASK_INDEX  <- the task's index (a literal, or the Indexed Job's annotation)
    TF_CONFIG            = {"cluster":$(TFJOBGEN_CLUSTER),...,"task":{"index":$(TFJOBGEN_TASK_INDEX),...}}

Kubernetes expands `$(VAR)` from earlier entries, so each pod still sees a
complete TF_CONFIG while a 200-worker job's manifests stay O(tasks), not
O(tasks^2): the seed's Jinja output repeated the whole host list in every task.

TF_CONFIG follows TensorFlow's rules (TFConfigClusterResolver): `cluster` lists the
training tasks only; the evaluator reads checkpoints, is not part of it, and finds
itself as task `evaluator:0`. (Kubeflow's TFJob operator writes TF_CONFIG itself and
lists the evaluator in `cluster` too; TensorFlow accepts that as well.)
"""

from __future__ import annotations

import json

from ..inputs import kubernetes_syntax
from ..inputs.problems import WARNING, Problem, field_path
from ..inputs.profile import ClusterProfile
from ..inputs.trainingjob import TrainingJob
from ..shared import contract
from ..shared.contract import CLUSTER_ENV, TASK_INDEX_ENV
from . import lifecycle, names, qos, volumes
from .names import Naming

# Generated variables, and the spec field to set instead of writing them in spec.env.
_RESERVED = {
    contract.TF_CONFIG: "spec.roles (TF_CONFIG is generated)",
    contract.INTRA_OP_ENV: "spec.roles.<role>.threads.intraOp",
    contract.INTER_OP_ENV: "spec.roles.<role>.threads.interOp",
    contract.OMP_ENV: "spec.roles.<role>.threads.intraOp",
    contract.ENDPOINT_MAP_PATH_ENV: "spec.protocol (the map is generated)",
    "WORKER_ENABLE_POLLING": "spec.starServer.workerPolling",
    "PS_ENABLE_POLLING": "spec.starServer.psPolling",
    "NETWORK_PS_CORE_NUMBER": "spec.starServer.psNetworkCores",
    "NETWORK_WORKER_CORE_NUMBER": "spec.starServer.workerNetworkCores",
    "WORKER_DISABLE_PIN_CORES": "spec.starServer.pinWorkerCores",
    "PS_DISABLE_PIN_CORES": "spec.starServer.pinPsCores",
}
# StarServer's recommended workers per PS is 8-10; outside this band we warn.
_STAR_RATIO_BAND = (5, 15)


def cluster_spec(job: TrainingJob, profile: ClusterProfile, naming: Naming) -> dict[str, tuple[str, ...]]:
    """TF's cluster spec as the pods' TF_CONFIG lists it: every training role present, each task's
    host:port as the backend names it; the evaluator only where the backend's controller lists it
    (the TFJob operator), so that the ConfigMap, the size limits and StarServer's endpoint map hold
    every address TF_CONFIG has."""
    listed = contract.TRAINING_ROLES + (("evaluator",) if naming.evaluator_in_cluster else ())
    return {
        role: tuple(naming.address(job, profile, role, i) for i in range(spec.replicas))
        for role, spec in job.roles.items() if role in listed
    }


def endpoint_map(job: TrainingJob, profile: ClusterProfile, cluster: dict[str, tuple[str, ...]]) -> str:
    """StarServer's `.endpoint_map`: one `grpc host:port=seastar host:port` line per training task.

    The left side must equal the TF_CONFIG entry byte for byte (DeepRec looks it up verbatim).
    The right side is fully qualified: seastar resolves it itself, and we do not rely on
    it applying the pod's DNS search path as gRPC's resolvers do.
    """
    lines = []
    for role in contract.ROLES:
        for address in cluster.get(role, ()):
            host = address.rsplit(":", 1)[0]
            lines.append(f"{address}={names.fully_qualified(job, profile, host)}:{profile.seastar_port}")
    return "\n".join(lines) + "\n"


def control_address(job: TrainingJob, profile: ClusterProfile, naming: Naming) -> str:
    """Where the runtime's chief tells the other tasks that training is over or stopped (tf1 without
    chief: worker 0)."""
    host = naming.address(job, profile, job.coordinator, 0).rsplit(":", 1)[0]
    return f"{host}:{profile.control_port}"


GPU_INTRA_OP = 2  # a GPU task's default intra-op pool (see threads)


def threads(job: TrainingJob, role: str) -> tuple[int, int]:
    """(intra-op, inter-op) pool sizes: the role's CPUs unless overridden.

    StarServer network threads that poll each occupy a whole core, so the pools get
    what the polling threads leave. A tf2 worker never gets an inter-op pool of 1:
    with one inter-op thread ParameterServerStrategy deadlocks silently (measured, TF 2.21).
    """
    spec = job.roles[role]
    budget = max(1, qos.cpu_budget(job, role) - polling_cores(job, role))
    intra = spec.intra_op or budget
    if spec.gpu and spec.intra_op is None:
        # On a GPU task the device runs the heavy kernels; CPU intra-op threads only split the small
        # host-side ops (input parsing, embedding lookups), and a pool as wide as the CPUs just spins.
        intra = min(GPU_INTRA_OP, budget)
    inter = spec.inter_op or contract.inter_op_threads(job.api, role, budget)
    return intra, inter


def polling_cores(job: TrainingJob, role: str) -> int:
    """Cores a role's StarServer network threads take for good: all of them when they poll."""
    if not job.uses_star_server or role not in ("ps", "worker"):
        return 0
    ps_cores, worker_cores = star_server_cores(job)
    if role == "ps":
        return ps_cores if job.star_server.ps_polling else 0
    return worker_cores if job.star_server.worker_polling else 0


def star_server_cores(job: TrainingJob) -> tuple[int, int]:
    """(PS, worker) network threads: the intent's, else min(8, connections) / min(2, PS), within CPUs; threads
    that poll spin on their cores, so by default they leave the task one core for TensorFlow's own work."""
    star = job.star_server

    def room(role: str, polling: bool) -> int:
        budget = qos.cpu_budget(job, role)
        return budget - 1 if polling and budget > 1 else budget

    connections_per_ps = sum(job.roles[r].replicas for r in contract.TRAINER_ROLES if r in job.roles)
    ps_cores = star.ps_network_cores or min(8, connections_per_ps, room("ps", star.ps_polling))
    worker_cores = star.worker_network_cores or min(2, job.roles["ps"].replicas, room("worker", star.worker_polling))
    return ps_cores, worker_cores


def _var(name: str, value: str) -> dict:
    return {"name": name, "value": value}


def tf_config_template(role: str, cluster: str = f"$({CLUSTER_ENV})", index: str = f"$({TASK_INDEX_ENV})") -> str:
    """TF_CONFIG of a task of `role`; the defaults leave the kubelet to fill in cluster and index."""
    return f'{{"cluster":{cluster},"environment":"cloud","task":{{"index":{index},"type":"{role}"}}}}'


def tf_config_env(job: TrainingJob, naming: Naming, role: str, index: int | None) -> list[dict]:
    """The entries that assemble TF_CONFIG (none when the backend's controller writes it).

    `index` None: a template shared by the role's tasks reads it where the backend says.
    """
    if naming.writes_tf_config:
        return []
    index_var = {"name": TASK_INDEX_ENV, "valueFrom": naming.index_source(role)} if index is None \
        else _var(TASK_INDEX_ENV, str(index))
    tf_config = tf_config_template(role)
    return [
        {"name": CLUSTER_ENV, "valueFrom": {"configMapKeyRef": {
            "name": names.cluster_config(job), "key": contract.CLUSTER_KEY}}},
        index_var,
        _var(contract.TF_CONFIG, tf_config),
    ]


def env(job: TrainingJob, profile: ClusterProfile, naming: Naming, role: str, index: int | None) -> list[dict]:
    """The training container's env. `index` None: the template all of the role's tasks share."""
    intra, inter = threads(job, role)
    result = tf_config_env(job, naming, role, index) + [
        _var(contract.INTRA_OP_ENV, str(intra)),
        _var(contract.INTER_OP_ENV, str(inter)),
        _var(contract.OMP_ENV, str(intra)),
        _var(contract.JOB_ENV, job.name),
        _var(contract.METRICS_PORT_ENV, str(profile.metrics_port)),  # for the runtime, or your own program
        _var(contract.API_ENV, job.api),
        _var(contract.PROTOCOL_ENV, job.protocol),
    ]
    # The control channel's: the runtime's, or the entrypoint's that a program of your own runs under.
    ending = lifecycle.of(job, profile)
    result.append(_var(contract.CONTROL_ADDRESS_ENV, control_address(job, profile, naming)))
    if job.uses_runtime:
        result.append(_var(contract.TRAINING_ENV, json.dumps(job.training, sort_keys=True, separators=(",", ":"))))
    else:
        result += [
            _var(contract.CHIEF_ABSENCE_ENV, str(2 * job.training["startupTimeoutSeconds"])),
            _var(contract.PERMANENT_CODES_ENV, ",".join(map(str, ending.permanent_exit_codes))),
        ]
    result += [
        _var(contract.EVALUATOR_ENV, "1" if "evaluator" in job.roles else "0"),
        _var(contract.RETRIES_ENV, str(ending.retries_per_task)),
    ]
    if index is None and naming.failures_source is not None:
        result.append({"name": contract.FAILURES_ENV, "valueFrom": naming.failures_source})
    if job.uses_star_server:
        star = job.star_server
        ps_cores, worker_cores = star_server_cores(job)
        result += [
            _var(contract.ENDPOINT_MAP_PATH_ENV, contract.ENDPOINT_MAP_DIR),
            _var("WORKER_ENABLE_POLLING", str(star.worker_polling)),
            _var("PS_ENABLE_POLLING", str(star.ps_polling)),
            _var("NETWORK_PS_CORE_NUMBER", str(ps_cores)),
            _var("NETWORK_WORKER_CORE_NUMBER", str(worker_cores)),
            _var("WORKER_DISABLE_PIN_CORES", str(not star.pin_worker_cores)),
            _var("PS_DISABLE_PIN_CORES", str(not star.pin_ps_cores)),
        ]
    user = {entry["name"]: entry for entry in job.env}
    user.update({entry["name"]: entry for entry in job.roles[role].env})  # the role's own entries win
    defaults = [_var("HOME", contract.SCRATCH_DIR)]  # the writable emptyDir; the image may not know our UID
    if job.hadoop:
        defaults += hadoop_env(job.hadoop)
    return result + [d for d in defaults if d["name"] not in user] + list(user.values())


def hadoop_env(hadoop) -> list[dict]:
    """What a JVM-backed HDFS client needs; CLASSPATH comes from `hadoop classpath --glob` in the runtime."""
    env = [
        _var("HADOOP_HDFS_HOME", hadoop.home),
        _var("HADOOP_HOME", hadoop.home),
        _var("JAVA_HOME", hadoop.java_home),
        _var("LD_LIBRARY_PATH", f"{hadoop.java_home}/lib/server:{hadoop.home}/lib/native"),
    ]
    if hadoop.user:
        env.append(_var("HADOOP_USER_NAME", hadoop.user))
    return env


def check(job: TrainingJob, profile: ClusterProfile) -> list[Problem]:
    problems = _check_env(job) + _check_threads(job)
    if job.uses_star_server:
        problems += _check_star_server(job)
    elif job.star_server.customized:
        problems.append(Problem("starServer settings only apply with protocol star_server or "
                                "star_server_lite; they are ignored", "spec.starServer", severity=WARNING))
    if job.api == "tf2" and "chief" not in job.roles:
        problems.append(Problem(
            "api tf2 (ParameterServerStrategy) needs a chief to coordinate: add spec.roles.chief "
            "with cpu and memory, or use api: tf1 (worker 0 is then the chief)", "spec.roles.chief"))
    if job.uses_runtime:
        problems += _check_training_storage(job)
    return problems


def check_profile(profile: ClusterProfile) -> list[Problem]:
    """The profile's ports: every task listens on all of them (metrics too: the runtime serves it, and a
    program of your own is told to)."""
    ports = {"grpc": profile.grpc_port, "seastar": profile.seastar_port, "control": profile.control_port,
             "metrics": profile.metrics_port}
    seen: dict[int, str] = {}
    problems = []
    for name, port in ports.items():
        if port in seen:
            problems.append(Problem(f"port {port} is also the {seen[port]} port: every task listens on both, "
                                    "so each needs its own", f"spec.ports.{name}"))
        seen.setdefault(port, name)
    return problems


def _check_training_storage(job: TrainingJob) -> list[Problem]:
    """Where the runtime reads data and writes checkpoints, against what the pods can reach."""
    training, problems = job.training, []
    paths = [("spec.training.modelDir", training["modelDir"])] + [
        (f"spec.training.data.paths[{i}]", p) for i, p in enumerate(training["data"]["paths"])]
    hdfs = [(where, path) for where, path in paths if path.startswith("hdfs://")]
    if hdfs and job.hadoop is None:
        problems.append(Problem(
            f"{hdfs[0][1]} needs a Hadoop client in the pods: set spec.hadoop (home, javaHome) so tfjobgen "
            "sets the Hadoop environment, and install tensorflow-io in the image", hdfs[0][0], severity=WARNING))
    if "evaluator" in job.roles and not contract.is_shared_storage(training["modelDir"]) \
            and not volumes.same_claim(job, training["modelDir"], [job.coordinator, "evaluator"]):
        problems.append(Problem(
            f"the evaluator runs in its own pod and cannot read checkpoints in the chief's {training['modelDir']}: "
            "use a modelDir every pod can reach (hdfs://, gs://, s3://), or a path on a persistentVolumeClaim the "
            "chief and the evaluator both mount", "spec.training.modelDir", severity=WARNING))
    return problems


def _check_env(job: TrainingJob) -> list[Problem]:
    problems = []
    lists = [(("spec", "env"), job.env)] + [
        (("spec", "roles", role.name, "env"), role.env) for role in job.roles.values()]
    for where, entries in lists:
        seen: set[str] = set()
        for i, entry in enumerate(entries):
            name = entry["name"]
            at = field_path(*where, i, "name")
            if name in seen:
                problems.append(Problem(f"{name} is set twice in this list", at))
            seen.add(name)
            if name in _RESERVED or name.startswith(contract.GENERATED_PREFIX):
                instead = _RESERVED.get(name, "the spec (TFJOBGEN_* variables are generated)")
                problems.append(Problem(f"{name} is generated by tfjobgen; set {instead} instead", at))
            if name == "GRPC_FAIL_FAST" and entry.get("value", "").lower() == "false":
                problems.append(Problem("GRPC_FAIL_FAST=false makes the TF2 coordinator hang after a worker "
                                        "dies; leave it unset", at, severity=WARNING))
            if "valueFrom" in entry:  # what the API server would refuse in every pod, and the sync with it
                problems += kubernetes_syntax.check_value_from(entry["valueFrom"], *where, i, "valueFrom")
    return problems


def _check_threads(job: TrainingJob) -> list[Problem]:
    problems = []
    for role in job.roles.values():
        where = f"spec.roles.{role.name}.threads"
        inter = role.inter_op
        if inter is not None and contract.inter_op_threads(job.api, role.name, inter) != inter:
            problems.append(Problem(
                "a tf2 worker with one inter-op thread deadlocks ParameterServerStrategy: use at least "
                f"{contract.TF2_WORKER_MIN_INTER_OP}", f"{where}.interOp"))
        budget = qos.cpu_budget(job, role.name)
        for key, value in (("intraOp", role.intra_op), ("interOp", role.inter_op)):
            if value is not None and value > 4 * budget:
                problems.append(Problem(
                    f"{value} threads on {budget} CPUs oversubscribes the task (the seed saw context switches "
                    f"fall 40% when pools matched the CPU limit)", f"{where}.{key}", severity=WARNING))
    return problems


def _check_star_server(job: TrainingJob) -> list[Problem]:
    star, problems = job.star_server, []
    if job.api != "tf1":
        problems.append(Problem(
            f"protocol {job.protocol} needs api tf1: ParameterServerStrategy ignores the protocol", "spec.api"))
    ps_cpus, worker_cpus = qos.cpu_budget(job, "ps"), qos.cpu_budget(job, "worker")
    ps_cores, worker_cores = star_server_cores(job)
    if ps_cores > ps_cpus:
        problems.append(Problem(f"{ps_cores} network threads exceed the PS's {ps_cpus} CPUs",
                                "spec.starServer.psNetworkCores"))
    if worker_cores > worker_cpus:
        problems.append(Problem(f"{worker_cores} network threads exceed the worker's {worker_cpus} CPUs",
                                "spec.starServer.workerNetworkCores"))
    for flag, field, role in ((star.ps_polling, "psPolling", "PS"), (star.worker_polling, "workerPolling", "worker")):
        if flag and job.qos != "cpuset":
            problems.append(Problem(
                f"polling makes each {role} network thread occupy a whole core, which needs dedicated cores: "
                "set spec.qos: cpuset or turn polling off", f"spec.starServer.{field}"))
    if star.ps_polling and ps_cores >= ps_cpus:
        problems.append(Problem(
            f"{ps_cores} polling network threads would take all {ps_cpus} PS CPUs: lower psNetworkCores "
            "or give the PS more CPUs", "spec.starServer.psNetworkCores"))
    if star.worker_polling and worker_cores >= worker_cpus:
        problems.append(Problem(
            f"{worker_cores} polling network threads would take all {worker_cpus} worker CPUs, leaving none to "
            "compute: lower workerNetworkCores or give the workers more CPUs", "spec.starServer.workerNetworkCores"))
    for flag, field in ((star.pin_ps_cores, "pinPsCores"), (star.pin_worker_cores, "pinWorkerCores")):
        if flag and job.qos != "cpuset":
            problems.append(Problem("pinning network threads needs exclusive cores: set spec.qos: cpuset",
                                    f"spec.starServer.{field}"))
        elif flag:
            problems.append(Problem(
                "DeepRec picks the cores it pins by number, not from the pod's cpuset: check they match",
                f"spec.starServer.{field}", severity=WARNING))
    ratio = job.roles["worker"].replicas / job.roles["ps"].replicas
    low, high = _STAR_RATIO_BAND
    if not low <= ratio <= high:
        problems.append(Problem(
            f"StarServer works best with about 8-10 workers per PS; this job has {job.roles['worker'].replicas} "
            f"workers on {job.roles['ps'].replicas} PS ({ratio:.1f}:1)", "spec.roles", severity=WARNING))
    return problems
