"""What each gang scheduler can do: one row per value of the profile's spec.gang.scheduler.

This table is the one place that knows the gang schedulers by name. The rest of the package reads a row's
capabilities (`of(profile)`), never its name: gang.py writes the objects a row asks for, topology.py
leaves a colocated job's groups to the schedulers that keep them, tfjob.py refuses a row that does not
name its backend, and a local cluster turns on a row's feature gates and starts its controllers.
tests/test_layers.py holds that: outside this module, no module compares a string with a gang
scheduler's name. docs/design.md ("Adding a gang scheduler") says what a new row takes.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..inputs.profile import WORKLOAD_API_SINCE, ClusterProfile

# The PodGroups gang.py writes, one kind per API (each scheduler reads one of them).
VOLCANO_API = "scheduling.volcano.sh/v1beta1"
COSCHEDULING_API = "scheduling.x-k8s.io/v1alpha1"
KUBERNETES_API = "scheduling.k8s.io/v1beta1"

PROFILE_SCHEDULER_NAME = ""  # a row's scheduler_name: the pods go to the scheduler the profile names (spec.gang.schedulerName)


@dataclass(frozen=True)
class Release:
    """The Kubernetes release a gang scheduler needs, and what an older one lacks (said in the refusal)."""

    since: str  # the oldest minor release that has it ("1.37"); a profile whose spec.kubernetesVersion is older is refused
    lacking: str  # what a release before `since` lacks, completing "Kubernetes 1.34 <lacking> from 1.37 on."


@dataclass(frozen=True)
class GangScheduler:
    """One gang scheduler: what tfjobgen writes for it, what it can and cannot do, and what a local cluster
    runs for it. A field's default is what a scheduler that does not say has (nothing to write, no gates)."""

    name: str  # its spec.gang.scheduler value (schemas/clusterprofile.schema.json's enum lists every row's)
    admits_through: str = ""  # what it admits a job through, as messages name it ("Volcano's PodGroups")

    # -- the objects it needs, written by gang.py (on native and jobset; tfjob: the operator's, below) --
    pod_group: str = ""  # apiVersion of the PodGroup a job's pods are admitted through, one per job ("": none)
    scheduler_name: str | None = None  # the pods' schedulerName: this name; PROFILE_SCHEDULER_NAME: the profile's
    #                                    spec.gang.schedulerName; None: left unset (kube-scheduler schedules them)
    group_annotation: str = ""  # the pod annotation naming the pod's PodGroup ("": none)
    group_label: str = ""  # the pod label naming the pod's PodGroup ("": none)
    group_in_pod_spec: bool = False  # a pod names its PodGroup in spec.schedulingGroup.podGroupName
    task_annotation: str = ""  # the pod annotation naming a colocated pod's group as the scheduler's task, and
    #                            the PodGroup's annotations saying the tasks attract and repel (gang.task_topology)
    pod_group_queue: bool = False  # spec.gang.queue goes in the PodGroup's spec.queue (and the TFJob's schedulingPolicy)
    pod_group_timeout: bool = False  # the PodGroup holds spec.gang.scheduleTimeoutSeconds
    queue_label: str = ""  # the label, on the object that carries the job, whose value is spec.gang.queue ("": none)

    # -- the profile's spec.gang as it reads it --
    queue: str = ""  # what spec.gang.queue names, for messages ("a LocalQueue"); "": it reads no queue
    queue_required: bool = False  # it admits nothing without a queue: an empty spec.gang.queue is refused

    # -- what it can do --
    admits_objects: bool = False  # it admits each object (a JobSet, a TFJob, each batch/v1 Job) whole as one
    #                               Workload, not a PodGroup spanning Jobs: a job carried by several objects is
    #                               admitted in parts (gang.check warns), its Workload's PodSets are one per role
    keeps_groups: bool = False  # it places a colocated group on one server itself (spec.gang.colocatedGroups: scheduler)
    no_groups_because: str = ""  # why it does not (for the refusal of colocatedGroups: scheduler)
    keeps_groups_apart: bool = False  # the groups it keeps also stay off each other's servers; where not, each
    #                                   colocated PS keeps required anti-affinity to the job's other groups
    one_priority: bool = False  # every pod of one PodGroup must have the same priority (each pod gets the PS's class)
    topology_aware: bool = False  # it can place pods on servers itself when the profile says so (spec.gang.topologyAware)
    preempts: bool = True  # a pod waiting for room may evict pods of lower priority (spec.priorityClasses take
    #                        effect), as tfjobgen's local clusters run the scheduler
    release: Release | None = None  # the Kubernetes release it needs (None: every release tfjobgen supports)
    backends: tuple[str, ...] = ("native", "jobset", "tfjob")  # the backends whose jobs it gangs; a backend's check
    #                                                            refuses the others (tfjob: the operator makes no PodGroup of it)
    operator_makes_pod_group: bool = False  # the TFJob operator, started with --gang-scheduler-name set to the pods'
    #                                         schedulerName, makes a TFJob's PodGroup itself (gang.scheduling_policy)

    # -- what a local cluster runs for it (tfjobgen cluster up) --
    controllers: tuple[str, ...] = ()  # modules of cluster/controllers/ a cluster of such a profile starts
    feature_gates: tuple[str, ...] = ()  # feature gates of every control-plane program (cluster/plane/release.py)
    apis: tuple[str, ...] = ()  # API versions the API server must serve (its --runtime-config)
    groups_feature_gates: tuple[str, ...] = ()  # more gates when it keeps colocated groups (colocatedGroups: scheduler)


# In the order spec.gang.scheduler's enum lists them.
SCHEDULERS = {row.name: row for row in (
    GangScheduler(
        "none",  # every pod scheduled on its own by kube-scheduler
        no_groups_because="no gang scheduler runs"),
    GangScheduler(
        "volcano",  # Volcano's scheduler: PodGroups, and task-topology for colocated groups
        admits_through="Volcano's PodGroups",
        pod_group=VOLCANO_API, scheduler_name="volcano", group_annotation="scheduling.k8s.io/group-name",
        task_annotation="volcano.sh/task-spec", pod_group_queue=True,
        queue="a Volcano Queue",
        keeps_groups=True, keeps_groups_apart=True,
        preempts=False,  # the local scheduler runs no preempt action (controllers/volcano.py)
        operator_makes_pod_group=True,
        controllers=("volcano",)),
    GangScheduler(
        "scheduler-plugins",  # a second scheduler running the coscheduling plugin
        admits_through="the coscheduling plugin's PodGroups",
        pod_group=COSCHEDULING_API, scheduler_name=PROFILE_SCHEDULER_NAME,
        group_label="scheduling.x-k8s.io/pod-group", pod_group_timeout=True,
        no_groups_because="the coscheduling plugin admits a group but places its pods one by one, as kube-scheduler does",
        operator_makes_pod_group=True,
        controllers=("scheduler_plugins",)),
    GangScheduler(
        "kueue",  # Kueue: admits a whole Workload against a ClusterQueue's quota
        admits_through="Kueue's Workloads",
        queue_label="kueue.x-k8s.io/queue-name",
        queue="a LocalQueue", queue_required=True,
        admits_objects=True,
        no_groups_because="Kueue 0.19's topology-aware scheduling puts a whole PodSet, or a pair of PodSets, in one "
                          "domain, not each PS with its workers",
        topology_aware=True,
        controllers=("kueue",)),
    GangScheduler(
        "kubernetes",  # kube-scheduler's own GangScheduling plugin
        admits_through="Kubernetes' own PodGroups",
        pod_group=KUBERNETES_API, group_in_pod_spec=True,
        keeps_groups=True, one_priority=True,
        release=Release(WORKLOAD_API_SINCE, "has no gang scheduling of its own: kube-scheduler admits a "
                                            f"{KUBERNETES_API} PodGroup whole"),
        backends=("native", "jobset"),  # the TFJob operator neither makes nor names such a PodGroup
        feature_gates=("GenericWorkload=true",), apis=(f"{KUBERNETES_API}=true",),
        groups_feature_gates=("TopologyAwareWorkloadScheduling=true",)),
)}


def of(profile: ClusterProfile) -> GangScheduler:
    """The profile's gang scheduler (its spec.gang.scheduler, which the schema holds to SCHEDULERS' names)."""
    return SCHEDULERS[profile.gang.scheduler]


def runs(profile: ClusterProfile, controller: str) -> bool:
    """Whether a local cluster of `profile` starts `controller` (a cluster/controllers module, by its __name__)
    for the profile's gang scheduler."""
    return controller.rpartition(".")[2] in of(profile).controllers


def named(rows, conjunction: str = "and") -> str:
    """The rows' names for a message: "volcano and kubernetes"."""
    names = [row.name for row in rows]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {conjunction} {names[-1]}"
