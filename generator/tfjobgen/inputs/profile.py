"""The cluster profile: the KRM function's config, one per overlay.

Its fields and defaults are in schemas/clusterprofile.schema.json; an empty
spec is the embedded default (the seed's 80-core / 256 GiB nodes, no pools).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from fractions import Fraction
from functools import cached_property

from . import image_reference, kubernetes_syntax, quantity, schema, source
from .problems import Problem
from .trainingjob import API_VERSION, MIN_TASK_MEMORY

KIND = "ClusterProfile"
OLDEST_KUBERNETES = "1.30"  # the oldest minor release tfjobgen supports, measured (docs/releases.md)
WORKLOAD_API_SINCE = "1.37"  # kube-scheduler's own gang scheduling (the gang table's kubernetes row needs it)


def release(text: str) -> tuple[int, int]:
    """A minor release as numbers, so that "1.9" < "1.30": "1.37" -> (1, 37); "v1.30.14" -> (1, 30)."""
    major, minor = text.lstrip("v").split(".")[:2]
    return int(major), int(minor)


@dataclass(frozen=True)
class NodeShape:
    cpu: Fraction  # cores pods can use per node: the written cpu minus reservedCpus
    memory: Fraction  # allocatable bytes per node
    reserved_cpus: int | None = None  # as written; None: the profile does not say
    memory_text: str = field(default="", compare=False)  # memory as written, for messages
    numa_nodes: int = 1
    reserved_cpus_per_numa_node: tuple[int, ...] | None = None  # as written; None: the kubelet's own choice
    topology_manager_policy: str = "none"  # the kubelet's: none | best-effort | restricted | single-numa-node
    topology_manager_scope: str = "container"  # container | pod

    @property
    def written_cpu(self) -> Fraction:
        """The node's CPUs as written (what the kubelet counts), reserved ones included."""
        return self.cpu + (self.reserved_cpus or 0)

    @cached_property  # the packing asks for it per task and node
    def numa_cpus(self) -> int:
        """CPUs of one NUMA node, reserved ones included (profile.check refuses a split that is not even)."""
        return int(self.written_cpu) // self.numa_nodes

    @cached_property
    def reserved_by_numa_node(self) -> tuple[int, ...]:
        """Reserved CPUs on each NUMA node: as written, else where the static CPU manager takes a reservation
        given as a count, from the lowest-numbered CPUs (NUMA node 0 first, then 1, ...)."""
        if self.reserved_cpus_per_numa_node is not None:
            return self.reserved_cpus_per_numa_node
        left, found = self.reserved_cpus or 0, []
        for _ in range(self.numa_nodes):
            found.append(min(left, self.numa_cpus))
            left -= found[-1]
        return tuple(found)

    @cached_property
    def numa_free(self) -> tuple[int, ...]:
        """CPUs pods can get on each NUMA node: its CPUs minus the reserved ones there."""
        return tuple(max(0, self.numa_cpus - reserved) for reserved in self.reserved_by_numa_node)


@dataclass(frozen=True)
class ProfileSource:
    """Where a profile was read from, to place its problems at a file and line."""

    file: str = ""
    document: source.Document | None = None

    def line_of(self, field: str) -> int:
        return self.document.line_of(field) if self.document else 0


@dataclass(frozen=True)
class NodePool:
    node_selector: dict[str, str]
    tolerations: tuple[dict, ...]
    node: NodeShape
    node_count: int | None  # nodes in the pool, when the profile says


@dataclass(frozen=True)
class Gpu:
    resource: str  # the device plugin's extended resource, e.g. nvidia.com/gpu
    node_pool: str | None  # the pool of GPU nodes (spec.nodePools); None: the resource alone places pods
    per_node: int


@dataclass(frozen=True)
class Alerts:
    stalled_minutes: int
    pending_minutes: int
    hot_ps_ratio: float
    restarts: int


@dataclass(frozen=True)
class Monitoring:
    enabled: bool
    namespace: str  # where Prometheus runs
    pod_monitor_labels: dict[str, str]
    rule_labels: dict[str, str]
    interval: str
    dashboards: bool
    dashboard_namespace: str | None  # None: the job's own
    dashboard_label: str
    alerts: Alerts


@dataclass(frozen=True)
class Gang:
    """spec.gang (its schema holds each field's meaning and default; gang.py applies it and checks it)."""

    scheduler: str  # a name of concerns/gang_schedulers.py's SCHEDULERS, which says what it can do
    queue: str  # Volcano queue or Kueue LocalQueue ("": none)
    scheduler_name: str  # scheduler-plugins: the scheduler running the coscheduling plugin
    schedule_timeout_seconds: int
    colocated_groups: str  # affinity | scheduler: who keeps a colocated group on one server
    topology_aware: bool = False  # kueue: its flavor is topology-aware, so it places pods on servers (gang.py)


@dataclass(frozen=True)
class ClusterProfile:
    name: str
    node: NodeShape
    node_count: int | None  # nodes roles without a pool can use, when the profile says
    node_pools: dict[str, NodePool]
    isolated_pools: dict[str, str]  # role -> pool, for isolated jobs that name none
    priority_classes: dict[str, str]  # "ps" | "worker" -> PriorityClass name
    cpu_manager_selector: dict[str, str]
    cpu_manager_tolerations: tuple[dict, ...]
    cluster_domain: str
    grpc_port: int
    seastar_port: int
    control_port: int
    metrics_port: int
    image_registry: str
    task_objects: str  # indexed | per-task
    run_as_user: int
    run_as_group: int
    fs_group: int
    allow_no_jobs: bool
    namespaces: tuple[str, ...] | None  # the teams this cluster runs (None: every namespace); inputs/routing.py
    own_program_deadline: int | None  # activeDeadlineSeconds for jobs with spec.command that set none
    gpu: Gpu | None
    monitoring: Monitoring
    gang: Gang  # gang admission (gang.py)
    kubernetes_version: str = OLDEST_KUBERNETES  # the oldest minor release its clusters run ("1.30")
    embedded: bool = False  # the built-in default, which describes no real cluster
    origin: ProfileSource = field(default=ProfileSource(), compare=False, repr=False)

    @property
    def node_shapes(self) -> dict[str, NodeShape]:
        """Every node shape the profile defines, by the field that defines it."""
        shapes = {"spec.node": self.node}
        shapes.update({f"spec.nodePools.{name}.node": pool.node for name, pool in self.node_pools.items()})
        return shapes

    @property
    def own_node_shapes(self) -> list[tuple[str, NodeShape]]:
        """(field, shape) of spec.node and of every pool with a shape of its own (the others share spec.node's):
        what a rule about node shapes checks, each shape once."""
        return [(at, shape) for at, shape in self.node_shapes.items() if at == "spec.node" or shape is not self.node]

    def node_for(self, pool: str | None) -> NodeShape:
        """Shape of the nodes a role runs on."""
        return self.node_pools[pool].node if pool else self.node

    def node_count_for(self, pool: str | None) -> int | None:
        """How many nodes a role can use (None: the profile does not say)."""
        return self.node_pools[pool].node_count if pool else self.node_count


def _shape(spec: dict, fallback: NodeShape | None = None) -> NodeShape:
    if fallback is not None and not spec:
        return fallback
    reserved = spec.get("reservedCpus")
    per_numa = spec.get("reservedCpusPerNumaNode")
    return NodeShape(cpu=quantity.parse(spec["cpu"]) - (reserved or 0), memory=quantity.parse(spec["memory"]),
                     reserved_cpus=reserved, memory_text=str(spec["memory"]), numa_nodes=spec["numaNodes"],
                     reserved_cpus_per_numa_node=tuple(per_numa) if per_numa is not None else None,
                     topology_manager_policy=spec["topologyManagerPolicy"],
                     topology_manager_scope=spec["topologyManagerScope"])


def cluster_profile(document: dict, origin: ProfileSource = ProfileSource()) -> ClusterProfile:
    """Typed view of a schema-valid ClusterProfile document."""
    spec = schema.with_defaults(document, schema.CLUSTER_PROFILE)["spec"]
    node = _shape(spec["node"])
    return ClusterProfile(
        name=document["metadata"]["name"],
        node=node,
        node_count=spec.get("nodeCount"),
        node_pools={
            name: NodePool(
                node_selector=dict(pool["nodeSelector"]),
                tolerations=tuple(pool["tolerations"]),
                node=_shape(pool.get("node", {}), node),
                node_count=pool.get("nodeCount"),
            )
            for name, pool in sorted(spec["nodePools"].items())
        },
        isolated_pools=dict(spec["isolatedPools"]),
        priority_classes=dict(spec["priorityClasses"]),
        cpu_manager_selector=dict(spec["cpuManager"]["nodeSelector"]),
        cpu_manager_tolerations=tuple(spec["cpuManager"]["tolerations"]),
        cluster_domain=spec["clusterDomain"],
        grpc_port=spec["ports"]["grpc"],
        seastar_port=spec["ports"]["seastar"],
        control_port=spec["ports"]["control"],
        metrics_port=spec["ports"]["metrics"],
        image_registry=spec["imageRegistry"],
        task_objects=spec["taskObjects"],
        run_as_user=spec["podSecurity"]["runAsUser"],
        run_as_group=spec["podSecurity"]["runAsGroup"],
        fs_group=spec["podSecurity"]["fsGroup"],
        allow_no_jobs=spec["allowNoJobs"],
        namespaces=tuple(spec["namespaces"]) if "namespaces" in spec else None,
        own_program_deadline=spec.get("ownProgramDeadlineSeconds"),
        gpu=Gpu(spec["gpu"]["resource"], spec["gpu"]["nodePool"], spec["gpu"]["perNode"]) if "gpu" in spec else None,
        monitoring=_monitoring(spec["monitoring"]),
        gang=Gang(spec["gang"]["scheduler"], spec["gang"]["queue"], spec["gang"]["schedulerName"],
                  spec["gang"]["scheduleTimeoutSeconds"], spec["gang"]["colocatedGroups"],
                  spec["gang"]["topologyAware"]),
        kubernetes_version=spec["kubernetesVersion"],
        origin=origin,
    )


def _monitoring(spec: dict) -> Monitoring:
    dashboards, alerts = spec["dashboards"], spec["alerts"]
    return Monitoring(
        enabled=spec["enabled"],
        namespace=spec["namespace"],
        pod_monitor_labels=dict(spec["podMonitorLabels"]),
        rule_labels=dict(spec["ruleLabels"]),
        interval=spec["interval"],
        dashboards=dashboards["enabled"],
        dashboard_namespace=dashboards.get("namespace"),
        dashboard_label=dashboards["label"],
        alerts=Alerts(alerts["stalledMinutes"], alerts["pendingMinutes"], float(alerts["hotPsRatio"]),
                      alerts["restarts"]),
    )


def check(profile: ClusterProfile) -> list[Problem]:
    """What the schema cannot say: how the profile's own fields fit together."""
    problems = []
    for role, pool in sorted(profile.isolated_pools.items()):
        if pool not in profile.node_pools:
            known = ", ".join(profile.node_pools) or "none"
            problems.append(Problem(f"no node pool '{pool}' in spec.nodePools (pools: {known})",
                                    f"spec.isolatedPools.{role}"))
    gpu_pool = profile.gpu.node_pool if profile.gpu is not None else None  # None: no pool (the embedded default)
    if gpu_pool is not None and gpu_pool not in profile.node_pools:
        known = ", ".join(profile.node_pools) or "none"
        problems.append(Problem(f"no node pool '{profile.gpu.node_pool}' in spec.nodePools (pools: {known}): "
                                "name the pool of GPU nodes", "spec.gpu.nodePool"))
    classes = profile.priority_classes
    if "worker" in classes and "ps" not in classes:
        problems.append(Problem(
            "set ps as well: without it PS and chiefs get the cluster's default priority, which may be below "
            "their own workers'", "spec.priorityClasses"))
    elif classes.get("ps") is not None and classes.get("ps") == classes.get("worker"):
        problems.append(Problem(
            f"ps and worker both name '{classes['ps']}': a PS can only preempt pods of lower priority, so name "
            "a class of lower value for workers, or leave worker unset", "spec.priorityClasses.worker"))
    return problems + _room(profile) + _numa(profile) + _strings(profile)


def _room(profile: ClusterProfile) -> list[Problem]:
    """Node shapes that leave pods nothing: said once, here, rather than as every role not fitting."""
    problems = []
    for at, shape in profile.own_node_shapes:
        if shape.cpu <= 0:
            written = shape.cpu + (shape.reserved_cpus or 0)
            problems.append(Problem(
                f"the kubelet keeps all {quantity.describe_cpu(written)} CPUs of a node for the system, so pods get "
                "none: reservedCpus must be less than cpu" if shape.reserved_cpus else
                "a node with no CPU runs no task: write the nodes' CPUs",
                f"{at}.reservedCpus" if shape.reserved_cpus else f"{at}.cpu"))
        if shape.memory <= 0:
            problems.append(Problem("a node with no memory for pods runs no task: write the nodes' allocatable memory",
                                    f"{at}.memory"))
        elif shape.memory < MIN_TASK_MEMORY:  # a unit left off (256 for 256Gi): said here, not as no role fitting
            written = shape.memory_text
            hint = f": did you mean {written}Gi?" if written.isdigit() else ""
            amount = quantity.describe_bytes(shape.memory) if shape.memory >= 1024 else \
                f"{math.ceil(shape.memory)} byte(s)"
            problems.append(Problem(
                f"{written} is {amount}; a node runs no TensorFlow task with less than "
                f"{quantity.describe_bytes(Fraction(MIN_TASK_MEMORY))} for pods{hint}", f"{at}.memory"))
    return problems


def _numa(profile: ClusterProfile) -> list[Problem]:
    """NUMA nodes that do not fit the node's CPUs, or a reservation that does not fit the NUMA nodes."""
    problems = []
    for at, shape in profile.own_node_shapes:
        written, count = shape.written_cpu, shape.numa_nodes
        if count > 1 and (written.denominator != 1 or written % count):
            whole = math.floor(written)
            divisors = [n for n in range(1, min(whole, 8) + 1) if whole % n == 0] if whole == written else []
            options = f" ({whole} divides among {', '.join(map(str, divisors))})" if divisors else ""
            problems.append(Problem(
                f"{quantity.describe_cpu(written)} CPUs do not divide among {count} NUMA nodes: a server's NUMA nodes "
                f"hold the same number of CPUs; write cpu and numaNodes as lscpu counts them{options}",
                f"{at}.numaNodes"))
            continue
        per_numa = shape.reserved_cpus_per_numa_node
        if per_numa is None:
            continue
        if len(per_numa) != count:
            problems.append(Problem(
                f"{len(per_numa)} entries for {count} NUMA node(s): write one entry per NUMA node, NUMA node 0 first",
                f"{at}.reservedCpusPerNumaNode"))
        elif sum(per_numa) != (shape.reserved_cpus or 0):
            problems.append(Problem(
                f"the entries add up to {sum(per_numa)} but reservedCpus is {shape.reserved_cpus or 0}: they say where "
                "the reserved CPUs sit, so they add up to reservedCpus", f"{at}.reservedCpusPerNumaNode"))
        elif any(reserved > shape.numa_cpus for reserved in per_numa):
            problems.append(Problem(
                f"a NUMA node holds {shape.numa_cpus} CPUs, fewer than the {max(per_numa)} reserved on it",
                f"{at}.reservedCpusPerNumaNode"))
    return problems


def _strings(profile: ClusterProfile) -> list[Problem]:
    """The profile's strings that every job's objects carry, as the API server would judge them there:
    one bad selector or label would make every job of the cluster fail at sync."""
    problems = []
    for name, pool in profile.node_pools.items():
        problems += kubernetes_syntax.check_map(pool.node_selector, "spec", "nodePools", name, "nodeSelector")
        problems += kubernetes_syntax.check_tolerations(pool.tolerations, "spec", "nodePools", name, "tolerations")
    problems += kubernetes_syntax.check_map(profile.cpu_manager_selector, "spec", "cpuManager", "nodeSelector")
    problems += kubernetes_syntax.check_tolerations(profile.cpu_manager_tolerations, "spec", "cpuManager", "tolerations")
    monitoring = profile.monitoring
    problems += kubernetes_syntax.check_map(monitoring.pod_monitor_labels, "spec", "monitoring", "podMonitorLabels")
    problems += kubernetes_syntax.check_map(monitoring.rule_labels, "spec", "monitoring", "ruleLabels")
    dashboard_label = kubernetes_syntax.key_problem(monitoring.dashboard_label, "spec.monitoring.dashboards.label")
    if monitoring.enabled and monitoring.namespace in (profile.namespaces or ()):
        problems.append(Problem(f"'{monitoring.namespace}' is also a team's namespace of spec.namespaces: Prometheus "
                                "runs there and every job's NetworkPolicy admits its pods to the metrics port; give "
                                "monitoring a namespace of its own", "spec.monitoring.namespace"))
    problems += [dashboard_label] if dashboard_label else []
    gang = profile.gang
    wrong = kubernetes_syntax.dns_subdomain_problem(gang.scheduler_name)
    if wrong:  # pods' spec.schedulerName (ValidatePodSpec: a DNS-1123 subdomain)
        problems.append(Problem(f"'{gang.scheduler_name}' is not valid: a pod's schedulerName is a DNS subdomain "
                                f"({wrong})", "spec.gang.schedulerName"))
    wrong = image_reference.registry_problem(profile.image_registry) if profile.image_registry else ""
    if wrong:
        problems.append(Problem(f"'{profile.image_registry}' is not a registry every image can be pulled from: "
                                f"{wrong}", "spec.imageRegistry"))
    wrong = kubernetes_syntax.extended_resource_problem(profile.gpu.resource) if profile.gpu is not None else ""
    if wrong:  # every GPU container's requests and limits
        problems.append(Problem(f"'{profile.gpu.resource}' is not an extended resource name a container may "
                                f"request: {wrong}", "spec.gpu.resource"))
    wrong = kubernetes_syntax.dns_subdomain_problem(profile.cluster_domain)
    if wrong:  # the hosts of StarServer's endpoint map: <pod>.<service>.<namespace>.svc.<clusterDomain>
        problems.append(Problem(f"'{profile.cluster_domain}' is not a DNS subdomain ({wrong}): every task's fully "
                                "qualified name ends with it, such as cluster.local", "spec.clusterDomain"))
    for role, name in sorted(profile.priority_classes.items()):
        wrong = kubernetes_syntax.priority_class_problem(name)
        if wrong:
            problems.append(Problem(f"'{name}' {wrong}", f"spec.priorityClasses.{role}"))
    interval = profile.monitoring.interval
    wrong = kubernetes_syntax.duration_problem(interval)
    if not wrong and kubernetes_syntax.duration_ns(interval) == 0:
        wrong = "an interval of 0 makes Prometheus scrape at its global default, not at an interval of its own"
    if wrong:  # the PodMonitor's interval (monitoring.coreos.com/v1 Duration)
        problems.append(Problem(f"'{interval}' is not a scrape interval: {wrong}", "spec.monitoring.interval"))
    return problems


DEFAULT_DOCUMENT = {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": "default"}, "spec": {}}


def default_profile() -> ClusterProfile:
    """The embedded default: 80-core / 256 GiB nodes, no pools, cluster.local, port 2222.

    It knows no cluster, so it refuses nothing a cluster would place: a GPU task asks for the
    schema's default device (nvidia.com/gpu) with no node pool, and the scheduler sends it to a
    node whose device plugin advertises one, as it does any pod requesting an extended resource.
    """
    gpu = schema.load(schema.CLUSTER_PROFILE)["properties"]["spec"]["properties"]["gpu"]["properties"]
    return replace(cluster_profile(DEFAULT_DOCUMENT), embedded=True,
                   gpu=Gpu(gpu["resource"]["default"], None, gpu["perNode"]["default"]))
