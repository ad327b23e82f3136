"""What a task is told by its environment: who it is, the cluster, thread pools, the training.

The generator writes these variables into every pod (generator/tfjobgen/concerns/environment.py):
TF_CONFIG, TF_NUM_INTRAOP_THREADS, TF_NUM_INTEROP_THREADS, TFJOBGEN_JOB,
TFJOBGEN_API, TFJOBGEN_PROTOCOL, TFJOBGEN_CONTROL_ADDRESS, TFJOBGEN_TRAINING,
TFJOBGEN_EVALUATOR, TFJOBGEN_TASK_RETRIES, TFJOBGEN_TASK_FAILURES and TFJOBGEN_METRICS_PORT.
`from_env` turns them into one frozen `Task`, or raises SetupError with one
line that names the variable at fault. Pure: no TensorFlow, no I/O.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..shared import contract
from ..shared.contract import ROLES
from .errors import SetupError

APIS = ("tf2", "tf1")
PROTOCOLS = ("grpc", "star_server", "star_server_lite")


@dataclass(frozen=True)
class Training:
    """spec.training of the intent, with every default filled in (see the schema for meanings)."""

    steps: int
    batch_size: int
    learning_rate: float
    optimizer: str
    partitioner: str
    min_shard_bytes: int
    vocabulary_size: int
    embedding_dim: int
    hidden_units: tuple[int, ...]
    data_format: str
    data_paths: tuple[str, ...]
    model_dir: str
    checkpoint_every: int
    log_every: int
    startup_timeout: int


@dataclass(frozen=True)
class Task:
    job: str
    api: str  # tf2 | tf1
    protocol: str
    role: str
    index: int
    cluster: dict[str, tuple[str, ...]]  # every training task's host:port, as TF_CONFIG lists them
    control_address: str  # host:port of the chief's control server
    intra_op: int
    inter_op: int
    training: Training
    notes: tuple[str, ...] = field(default=())  # adjustments a person should know about
    has_evaluator: bool = False  # the job has an evaluator (outside the cluster): the chief admits it
    retries: int | None = None  # failures this task may have before it fails for good (None: unknown)
    failures: int | None = None  # how often it failed before (None: its controller does not say)
    metrics_port: int | None = None  # where it serves Prometheus metrics (None: it serves none)

    @property
    def name(self) -> str:
        return f"{self.role}:{self.index}"

    @property
    def address(self) -> str:
        """Its TF server's address ("" for the evaluator, which serves nothing)."""
        hosts = self.cluster.get(self.role, ())
        return hosts[self.index] if self.index < len(hosts) else ""

    @property
    def last_attempt(self) -> bool:
        """True when one more failure is for good: the Job controller replaces it no more."""
        return self.failures is not None and self.retries is not None and self.failures >= self.retries

    @property
    def num_ps(self) -> int:
        return len(self.cluster["ps"])

    @property
    def is_chief(self) -> bool:
        """The task that coordinates (tf2), or checkpoints and runs the control server (tf1)."""
        if self.role == "chief":
            return True
        return self.role == "worker" and self.index == 0 and "chief" not in self.cluster

    @property
    def training_cluster(self) -> dict[str, list[str]]:
        """The cluster TF servers form: the evaluator reads checkpoints and takes no part
        (a TF_CONFIG of an older tfjobgen may still list it)."""
        return {role: list(hosts) for role, hosts in self.cluster.items() if role in contract.TRAINING_ROLES}

    def describe(self, names: list[str]) -> str:
        """'ps:1 (host:port), worker:0 (host:port)' for error messages."""
        return ", ".join(f"{name} ({self.cluster[name.split(':')[0]][int(name.split(':')[1])]})" for name in names)

    @property
    def control_clients(self) -> list[str]:
        """Every task that talks to the chief's control server: all but the chief itself."""
        names = [f"{role}:{i}" for role in contract.TRAINING_ROLES for i in range(len(self.cluster.get(role, ())))]
        if self.has_evaluator:
            names.append("evaluator:0")
        return sorted((n for n in names if n != self.name), key=lambda n: (ROLES.index(n.split(":")[0]), n))

    @property
    def peers(self) -> list[str]:
        """Tasks the chief waits for before training: every PS and worker but itself."""
        return [f"{role}:{i}" for role in contract.REQUIRED_ROLES for i in range(len(self.cluster.get(role, ())))
                if f"{role}:{i}" != self.name]


def split_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise SetupError(f"'{address}' is not a host:port address")
    return host.strip("[]"), int(port)


def _require(env: dict[str, str], name: str, why: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise SetupError(f"{name} is not set: {why}")
    return value


def cluster_and_task(tf_config: str) -> tuple[dict[str, tuple[str, ...]], str, int]:
    """The cluster spec, and this task's role and index, from TF_CONFIG."""
    try:
        config = json.loads(tf_config)
    except ValueError as err:
        raise SetupError(f"TF_CONFIG is not valid JSON ({err})") from None
    cluster, task = config.get("cluster"), config.get("task")
    if not isinstance(cluster, dict) or not isinstance(task, dict):
        raise SetupError("TF_CONFIG needs a 'cluster' mapping and a 'task' mapping")
    unknown = sorted(set(cluster) - set(ROLES))
    if unknown:
        raise SetupError(f"TF_CONFIG lists role(s) {', '.join(unknown)}; the runtime knows {', '.join(ROLES)}")
    hosts = {}
    for role, addresses in cluster.items():
        if not isinstance(addresses, list) or not all(isinstance(a, str) for a in addresses):
            raise SetupError(f"TF_CONFIG cluster.{role} must be a list of host:port strings")
        for address in addresses:
            split_address(address)
        hosts[role] = tuple(addresses)
    role, index = task.get("type"), task.get("index")
    if role == "evaluator" and "evaluator" not in hosts:  # TensorFlow's rule: it is not in the cluster
        if index != 0:
            raise SetupError(f"TF_CONFIG task.index {index!r} of the evaluator must be 0: a job has one")
    elif role not in hosts:
        raise SetupError(f"TF_CONFIG task.type {role!r} is not a role of the cluster ({', '.join(hosts)})")
    elif not isinstance(index, int) or not 0 <= index < len(hosts[role]):
        raise SetupError(f"TF_CONFIG task.index {index!r} is out of range: the cluster has "
                         f"{len(hosts[role])} {role} task(s)")
    for role_needed in contract.REQUIRED_ROLES:
        if not hosts.get(role_needed):
            raise SetupError(f"TF_CONFIG has no {role_needed} task; a parameter-server job needs at least one")
    return hosts, role, index


def thread_pools(env: dict[str, str], role: str, api: str, cpus: int) -> tuple[int, int, tuple[str, ...]]:
    """(intra-op, inter-op, notes): the generated counts, else this process's CPUs.

    A tf2 worker never gets one inter-op thread: ParameterServerStrategy then
    deadlocks silently (measured on TF 2.21), so 1 is raised to 2.
    """
    counts = []
    for name in (contract.INTRA_OP_ENV, contract.INTER_OP_ENV):
        text = env.get(name, "").strip()
        if not text:
            counts.append(max(1, cpus))
        elif text.isdigit() and int(text) > 0:
            counts.append(int(text))
        else:
            raise SetupError(f"{name}={text!r} is not a positive whole number")
    intra, inter = counts
    raised = contract.inter_op_threads(api, role, inter)
    if raised == inter:
        return intra, inter, ()
    return intra, raised, (f"inter-op threads raised from {inter} to {raised}: one inter-op thread deadlocks "
                           "a tf2 worker",)


def training_from_json(text: str) -> Training:
    """spec.training from TFJOBGEN_TRAINING, checked against the schema, defaults filled in."""
    from ..inputs import schema  # the schema is the single source of the fields and their defaults

    try:
        data = json.loads(text)
    except ValueError as err:
        raise SetupError(f"{contract.TRAINING_ENV} is not valid JSON ({err})") from None
    training_schema = schema.load(schema.TRAINING_JOB)["properties"]["spec"]["properties"]["training"]
    import jsonschema

    errors = sorted(jsonschema.Draft202012Validator(training_schema).iter_errors(data), key=str)
    if errors:
        where = ".".join(str(p) for p in errors[0].absolute_path)
        raise SetupError(f"{contract.TRAINING_ENV} {where or 'value'}: {errors[0].message}")
    full = schema.with_defaults({"spec": {"training": data}}, schema.TRAINING_JOB)["spec"]["training"]
    model, data_spec = full["model"], full["data"]
    return Training(
        steps=full["steps"],
        batch_size=full["batchSize"],
        learning_rate=float(full["learningRate"]),
        optimizer=full["optimizer"],
        partitioner=full["partitioner"],
        min_shard_bytes=full["minShardBytes"],
        vocabulary_size=model["vocabularySize"],
        embedding_dim=model["embeddingDim"],
        hidden_units=tuple(model["hiddenUnits"]),
        data_format=data_spec["format"],
        data_paths=tuple(data_spec["paths"]),
        model_dir=full["modelDir"],
        checkpoint_every=full["checkpointEverySteps"],
        log_every=full["logEverySteps"],
        startup_timeout=full["startupTimeoutSeconds"],
    )


def from_env(env: dict[str, str], cpus: int) -> Task:
    """The task described by `env`; `cpus` is how many CPUs this process may run on."""
    cluster, role, index = cluster_and_task(_require(
        env, contract.TF_CONFIG, "tfjobgen's runtime runs in pods that tfjobgen generated"))
    api = env.get(contract.API_ENV, "tf2").strip() or "tf2"
    if api not in APIS:
        raise SetupError(f"{contract.API_ENV}={api!r} is not one of {', '.join(APIS)}")
    protocol = env.get(contract.PROTOCOL_ENV, "grpc").strip() or "grpc"
    if protocol not in PROTOCOLS:
        raise SetupError(f"{contract.PROTOCOL_ENV}={protocol!r} is not one of {', '.join(PROTOCOLS)}")
    if api == "tf2" and "chief" not in cluster:
        raise SetupError("api tf2 needs a chief task in TF_CONFIG to coordinate the training")
    control = _require(env, contract.CONTROL_ADDRESS_ENV, "the chief's control server host:port is generated "
                       "for jobs without spec.command")
    split_address(control)
    training = training_from_json(_require(
        env, contract.TRAINING_ENV, "spec.training is passed to pods of jobs without spec.command"))
    intra, inter, notes = thread_pools(env, role, api, cpus)
    return Task(job=env.get(contract.JOB_ENV, "").strip() or "job", api=api, protocol=protocol, role=role,
                index=index, cluster=cluster, control_address=control, intra_op=intra, inter_op=inter,
                training=training, notes=notes,
                has_evaluator=env.get(contract.EVALUATOR_ENV, "").strip() == "1" or "evaluator" in cluster,
                retries=_count(env, contract.RETRIES_ENV), failures=_count(env, contract.FAILURES_ENV),
                metrics_port=_count(env, contract.METRICS_PORT_ENV))


def _count(env: dict[str, str], name: str) -> int | None:
    """A whole number from the environment; None when it is unset or empty (nobody counted)."""
    text = env.get(name, "").strip()
    if not text:
        return None
    if not text.isdigit():
        raise SetupError(f"{name}={text!r} is not a whole number")
    return int(text)
