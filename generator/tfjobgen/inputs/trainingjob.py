"""The TrainingJob intent as typed values.

Built only from a document that passed the schema and got its defaults, so
nothing here re-checks types or supplies defaults: the meaning of each field
and its default live in schemas/trainingjob.schema.json.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ..shared.contract import ROLES
from . import quantity

API_VERSION = "tfjobgen.dev/v1alpha1"
KIND = "TrainingJob"
# A TensorFlow task below this cannot even import TensorFlow (about 600 MB resident, measured on 2.21): the
# floor of a role's memory (concerns/qos.py) and of a node's (profile.py).
MIN_TASK_MEMORY = 256 << 20
STAR_SERVER_PROTOCOLS = ("star_server", "star_server_lite")


@dataclass(frozen=True)
class Role:
    name: str  # ps | worker | chief | evaluator
    replicas: int
    cpu: Fraction  # cores requested
    cpu_limit: Fraction | None  # qos shared only; None means no limit
    memory: Fraction  # bytes
    memory_text: str  # as written, e.g. "4Gi"
    gpu: int  # whole GPUs per task (0: none)
    intra_op: int | None  # explicit thread-pool sizes, None = derive from CPUs
    inter_op: int | None
    env: tuple[dict, ...]
    volume_mounts: tuple[dict, ...] = ()  # this role's own, besides the job's
    image: str | None = None  # this role's own, instead of the job's (None: the job's)
    command: tuple[str, ...] | None = None
    args: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Topology:
    mode: str  # colocated | isolated | spread | none
    workers_per_server: int
    spread: str  # preferred | required
    spread_weight: int
    node_pools: dict[str, str]  # role -> profile pool name


@dataclass(frozen=True)
class StarServer:
    worker_polling: bool
    ps_polling: bool
    ps_network_cores: int | None  # None = derive
    worker_network_cores: int | None
    pin_ps_cores: bool
    pin_worker_cores: bool

    @property
    def customized(self) -> bool:
        """True when any setting differs from the schema's defaults."""
        return self != StarServer(False, False, None, None, False, False)


@dataclass(frozen=True)
class Hadoop:
    home: str  # HADOOP_HDFS_HOME in the image
    java_home: str
    user: str | None


@dataclass(frozen=True)
class DeclaredVariable:
    name: str
    shape: tuple[int, ...]
    dtype: str
    trainable: bool
    lookups_per_step: int | None  # None: read whole every step


@dataclass(frozen=True)
class DeclaredModel:
    """spec.model: what a program of your own creates on the PS (for `tfjobgen plan`)."""

    optimizer: str
    partitioner: str
    min_shard_bytes: int
    variables: tuple[DeclaredVariable, ...]


@dataclass(frozen=True)
class TrainingJob:
    name: str
    namespace: str
    labels: dict[str, str]
    annotations: dict[str, str]
    image: str
    command: tuple[str, ...] | None  # None = tfjobgen's runtime
    args: tuple[str, ...]
    env: tuple[dict, ...]
    api: str  # tf2 | tf1
    protocol: str
    backend: str
    qos: str  # cpuset | shared
    roles: dict[str, Role]  # present roles only, in contract.ROLES order
    topology: Topology
    star_server: StarServer
    backoff_limit_per_task: int
    permanent_exit_codes: tuple[int, ...]  # spec.command only: exits that fail the job at once
    active_deadline_seconds: int | None
    service_account: str | None
    read_only_root_filesystem: bool
    hadoop: Hadoop | None
    training: dict[str, Any]
    model: DeclaredModel | None = None
    tensorboard: bool = False  # spec.tensorboard.enabled
    tensorboard_log_dir: str | None = None  # spec.tensorboard.logDir (None: the runtime's modelDir)
    written: frozenset[str] = frozenset()  # the spec fields the intent wrote itself (before the schema's defaults)
    image_pull_secrets: tuple[str, ...] = ()  # Secret names
    pod_labels: dict[str, str] = field(default_factory=dict)  # spec.podMetadata: the training pods' only
    pod_annotations: dict[str, str] = field(default_factory=dict)
    node_selector: dict[str, str] = field(default_factory=dict)  # added to the profile's
    tolerations: tuple[dict, ...] = ()  # added to the profile's
    volumes: tuple[dict, ...] = ()  # spec.volumes, as written
    volume_mounts: tuple[dict, ...] = ()  # every role's mounts (Role.volume_mounts: a role's own)

    @property
    def uses_star_server(self) -> bool:
        return self.protocol in STAR_SERVER_PROTOCOLS

    @property
    def gpu_roles(self) -> tuple[str, ...]:
        """Roles whose tasks ask for GPUs."""
        return tuple(name for name, role in self.roles.items() if role.gpu)

    @property
    def uses_runtime(self) -> bool:
        """True when pods run tfjobgen's own training runtime."""
        return self.command is None

    @property
    def coordinator(self) -> str:
        """The role whose task 0 coordinates (and completes the job): the chief, or worker 0 in a job without."""
        return "chief" if "chief" in self.roles else "worker"


def _role(name: str, spec: dict) -> Role:
    threads = spec.get("threads", {})
    cpu_limit = spec.get("cpuLimit")
    return Role(
        name=name,
        replicas=spec["replicas"],
        cpu=quantity.parse(spec["cpu"]),
        cpu_limit=quantity.parse(cpu_limit) if cpu_limit is not None else None,
        memory=quantity.parse(spec["memory"]),
        memory_text=quantity.memory_text(spec["memory"]),
        gpu=spec["gpu"],
        intra_op=threads.get("intraOp"),
        inter_op=threads.get("interOp"),
        env=tuple(spec.get("env", ())),
        volume_mounts=tuple(spec.get("volumeMounts", ())),
        image=spec.get("image"),
        command=tuple(spec["command"]) if "command" in spec else None,
        args=tuple(spec["args"]) if "args" in spec else None,
    )


def _declared_model(spec: dict) -> DeclaredModel:
    return DeclaredModel(
        optimizer=spec["optimizer"],
        partitioner=spec["partitioner"],
        min_shard_bytes=spec["minShardBytes"],
        variables=tuple(DeclaredVariable(v["name"], tuple(v["shape"]), v["dtype"], v["trainable"],
                                         v.get("lookupsPerStep")) for v in spec["variables"]),
    )

def default_api(protocol: str, has_chief: bool) -> str:
    """tf2 needs a chief to coordinate and ignores StarServer; everything else is tf1 between-graph,
    where worker 0 is the chief when there is none (the seed's own shape)."""
    return "tf2" if has_chief and protocol not in STAR_SERVER_PROTOCOLS else "tf1"


def training_job(document: dict, written: frozenset[str] = frozenset()) -> TrainingJob:
    """Typed view of a schema-valid TrainingJob with defaults filled in; `written`: the spec fields the intent
    wrote, for rules about a field given where it does nothing."""
    meta, spec = document["metadata"], document["spec"]
    topology, star = spec["topology"], spec["starServer"]
    protocol = spec["protocol"]
    return TrainingJob(
        name=meta["name"],
        namespace=meta["namespace"],
        labels=dict(meta.get("labels", {})),
        annotations=dict(meta.get("annotations", {})),
        image=spec["image"],
        command=tuple(spec["command"]) if "command" in spec else None,
        args=tuple(spec["args"]),
        env=tuple(spec["env"]),
        api=spec.get("api") or default_api(protocol, "chief" in spec["roles"]),
        protocol=protocol,
        backend=spec["backend"],
        qos=spec["qos"],
        roles={name: _role(name, spec["roles"][name]) for name in ROLES if name in spec["roles"]},
        topology=Topology(
            mode=topology["mode"],
            workers_per_server=topology["workersPerServer"],
            spread=topology["spread"],
            spread_weight=topology["spreadWeight"],
            node_pools=dict(topology["nodePools"]),
        ),
        star_server=StarServer(
            worker_polling=star["workerPolling"],
            ps_polling=star["psPolling"],
            ps_network_cores=star.get("psNetworkCores"),
            worker_network_cores=star.get("workerNetworkCores"),
            pin_ps_cores=star["pinPsCores"],
            pin_worker_cores=star["pinWorkerCores"],
        ),
        backoff_limit_per_task=spec["failurePolicy"]["backoffLimitPerTask"],
        permanent_exit_codes=tuple(sorted(spec["failurePolicy"]["permanentExitCodes"])),
        active_deadline_seconds=spec["failurePolicy"].get("activeDeadlineSeconds"),
        service_account=spec.get("serviceAccountName"),
        read_only_root_filesystem=spec["readOnlyRootFilesystem"],
        hadoop=Hadoop(spec["hadoop"]["home"], spec["hadoop"]["javaHome"], spec["hadoop"].get("user"))
        if "hadoop" in spec else None,
        training=spec["training"],
        model=_declared_model(spec["model"]) if "model" in spec else None,
        tensorboard=spec["tensorboard"]["enabled"],
        tensorboard_log_dir=spec["tensorboard"].get("logDir"),
        written=written,
        image_pull_secrets=tuple(spec["imagePullSecrets"]),
        pod_labels=dict(spec["podMetadata"]["labels"]),
        pod_annotations=dict(spec["podMetadata"]["annotations"]),
        node_selector=dict(spec["nodeSelector"]),
        tolerations=tuple(spec["tolerations"]),
        volumes=tuple(spec["volumes"]),
        volume_mounts=tuple(spec["volumeMounts"]),
    )
