"""Gang admission: a job's pods are admitted all together or not at all (the profile's spec.gang).

Without a gang a busy cluster admits part of a job: some PS and workers Running and
holding their exclusive cores, the rest Pending, and TensorFlow waiting for tasks that
never come. Two such jobs can each hold half the room the other needs and wait for each
other for good (kubeflow/training-operator #165, #948). Each scheduler says "all or
nothing" its own way:

- volcano: pods get `schedulerName: volcano` and the annotation scheduling.k8s.io/group-name
  naming a scheduling.volcano.sh/v1beta1 PodGroup with minMember = every task and
  minResources = their requests; Volcano binds none of them until all fit. One PodGroup
  may span several Jobs, so native and jobset get the same one.
- scheduler-plugins: the coscheduling plugin's scheduling.x-k8s.io/v1alpha1 PodGroup
  (minMember, minResources, scheduleTimeoutSeconds) and the pod label
  scheduling.x-k8s.io/pod-group; pods go to the second scheduler the profile names.
- colocated groups (spec.gang.colocatedGroups: scheduler, volcano only): every pod of group g
  carries the annotation volcano.sh/task-spec: group-g, and the PodGroup tells Volcano's
  task-topology plugin that each group's tasks attract each other and repel the other groups'
  (topology.py leaves the pods without affinity rules); the plugin then scores a server up for a
  group's pods where the group's other pods are, and down where another group's are.
- kubernetes (1.37 and newer): kube-scheduler's own GangScheduling plugin. A standalone
  scheduling.k8s.io/v1beta1 PodGroup per job, gang policy minCount = every task, and each pod's
  spec.schedulingGroup.podGroupName naming it: one gang across the job's Jobs (or its JobSet's), on
  the default scheduler. The Job controller's own Workloads (WorkloadWithJob, alpha) would make a
  gang per Job, that is per role; it leaves alone a Job whose pods already name a group.
  A colocated job whose groups the scheduler keeps (colocatedGroups: scheduler) gets a PodGroup
  per group instead, `<job>-group-<g>`, each a gang of its PS and workers with the topology
  constraint kubernetes.io/hostname (TopologyAwareWorkloadScheduling, alpha): the group is placed
  whole on one server, and a replaced pod goes back to its group's server. The job's other tasks
  (chief, evaluator) are a gang of their own, `<job>`. Each group is admitted on its own: the job
  as a whole is not all or nothing (that would be a CompositePodGroup, alpha in 1.37 too).
- kueue: the label kueue.x-k8s.io/queue-name on the workload object. Kueue turns a JobSet
  (one PodSet per replicatedJob) or a TFJob (one per replica type) into one Workload and
  admits it whole. A batch/v1 Job is a Workload of its own, so on native Kueue admits the
  PS Job and the worker Job separately: no gang, and `check` warns. A Workload holds at
  most 18 PodSets (the CRD's maxItems); our jobs have at most 4 roles. Which of these a
  job is, its backend says (Backend.one_object): nothing here branches on a backend's name.
  Kueue admits by quota, which a job can fit while its pods fit no servers (then half of it
  is bound and holds them). With spec.gang.topologyAware its topology-aware scheduling
  (TAS) admits a job only once it has found a server for every pod: each PodSet's pod
  template carries podset-unconstrained-topology (`pod_set_template`). TAS then pins each
  pod to its server and ignores pod affinity, so `check` refuses the topologies whose
  rules are required, and warns where spread's preference would not be kept.
- tfjob: the TFJob operator creates the PodGroup itself from runPolicy.schedulingPolicy
  when it runs with --gang-scheduler-name (volcano, or a scheduler-plugins scheduler);
  tfjob.py writes that policy instead of our own PodGroup.

Pure functions of the plan; the backends call them, and the pipeline calls `check`.
"""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

from ..inputs import kubernetes_syntax, quantity
from ..inputs.problems import WARNING, Problem
from ..inputs.profile import ClusterProfile, release
from ..inputs.trainingjob import TrainingJob
from . import gang_schedulers, labels, metadata, topology
from .gang_schedulers import KUBERNETES_API, SCHEDULERS, GangScheduler

# What each scheduler writes is read from its row (gang_schedulers.py): nothing here branches on a name.
VOLCANO_GROUP_ANNOTATION = SCHEDULERS["volcano"].group_annotation
COSCHEDULING_LABEL = SCHEDULERS["scheduler-plugins"].group_label
VOLCANO_TASK_ANNOTATION = SCHEDULERS["volcano"].task_annotation
VOLCANO_AFFINITY_ANNOTATION = "volcano.sh/task-topology-affinity"
VOLCANO_ANTI_AFFINITY_ANNOTATION = "volcano.sh/task-topology-anti-affinity"
KUEUE_QUEUE_LABEL = SCHEDULERS["kueue"].queue_label
KUEUE_MAX_POD_SETS = 18  # Workload.spec.podSets maxItems (kueue.x-k8s.io CRD)
KUEUE_JOB_POD_SET = "main"  # the one PodSet of the Workload Kueue makes of a batch/v1 Job
# A PodSet with no topology constraint: Kueue's TAS assigns each pod a server, and admits once all have one.
KUEUE_UNCONSTRAINED_TOPOLOGY = "kueue.x-k8s.io/podset-unconstrained-topology"


def pod_group_scheduler(plan) -> GangScheduler | None:
    """The plan's gang scheduler when it admits the job through a PodGroup of ours, else None."""
    chosen = gang_schedulers.of(plan.profile)
    return chosen if chosen.pod_group else None


def check_profile(profile: ClusterProfile) -> list[Problem]:
    """What the profile's spec.gang asks of its gang scheduler that the scheduler cannot do or read."""
    gang, chosen = profile.gang, gang_schedulers.of(profile)
    problems = []
    if gang.colocated_groups == "scheduler" and not chosen.keeps_groups:
        keeping = gang_schedulers.named(row for row in SCHEDULERS.values() if row.keeps_groups)
        problems.append(Problem(f"only {keeping} place a colocated group on one server ({chosen.no_groups_because}): "
                                "use affinity",
                                "spec.gang.colocatedGroups"))
    needed = chosen.release
    if needed and release(profile.kubernetes_version) < release(needed.since):
        problems.append(Problem(
            f"Kubernetes {profile.kubernetes_version} {needed.lacking} from {needed.since} on. Set spec.kubernetesVersion to "
            f"{needed.since} if every cluster of the profile runs it, or pick another spec.gang.scheduler",
            "spec.gang.scheduler"))
    if gang.topology_aware and not chosen.topology_aware:
        aware = gang_schedulers.named((row for row in SCHEDULERS.values() if row.topology_aware), "or")
        problems.append(Problem(f"topology-aware scheduling is Kueue's, and this profile's gang scheduler is "
                                f"{gang.scheduler}: set spec.gang.scheduler to {aware}, or leave topologyAware out",
                                "spec.gang.topologyAware"))
    classes = profile.priority_classes
    if chosen.one_priority and classes.get("ps") and classes.get("worker"):  # topology.priority_class
        problems.append(Problem(
            f"under spec.gang.scheduler {chosen.name} every pod of a job runs at the PS's class, {classes['ps']} "
            "(the scheduler refuses a group whose pods' priorities differ), so this class is not used: a job's "
            "workers preempt as its PS do. Remove worker, or pick a gang scheduler that keeps both classes",
            "spec.priorityClasses.worker", severity=WARNING))
    if chosen.queue_required and not gang.queue:
        problems.append(Problem(f"{chosen.name} admits a job only through {chosen.queue}: name it in spec.gang.queue",
                                "spec.gang.queue"))
    if chosen.queue and gang.queue:
        # A label's value (Kueue's queue-name, naming a LocalQueue), or an object's name (a Volcano Queue).
        as_label = kubernetes_syntax.value_problem(gang.queue, "spec.gang.queue") if chosen.queue_label else None
        wrong = kubernetes_syntax.dns_subdomain_problem(gang.queue)
        if as_label:
            problems.append(as_label)
        elif wrong:
            problems.append(Problem(f"'{gang.queue}' is not valid: {chosen.queue} is named by a DNS subdomain ({wrong})",
                                    "spec.gang.queue"))
    return problems


def pod_sets(job: TrainingJob, one_object: bool) -> int:
    """How many PodSets the Workload Kueue admits the job's pods through holds: one per role when one object
    carries the whole job (Backend.one_object), else a batch/v1 Job's one."""
    return len(job.roles) if one_object else 1


def pod_set(role: str, one_object: bool) -> str:
    """The PodSet a role's pods are admitted in: the role's own when one object carries the whole job (a
    JobSet's replicatedJob, a TFJob's replica type, both named as the role), else a batch/v1 Job's `main`."""
    return role if one_object else KUEUE_JOB_POD_SET


def check(job: TrainingJob, profile: ClusterProfile, one_object: bool) -> list[Problem]:
    """What the profile's gang scheduler cannot do with the job as its backend carries it (Backend.one_object)."""
    gang = profile.gang
    if not gang_schedulers.of(profile).admits_objects:
        return []
    problems = []
    if not one_object:
        problems.append(Problem(
            f"the cluster profile '{profile.name}' queues jobs with Kueue, which admits each batch/v1 Job on its own: "
            "this job's PS and workers may be admitted apart and wait for each other holding their cores; "
            "backend jobset (or tfjob) is admitted as one Workload", "spec.backend", severity=WARNING))
    elif pod_sets(job, one_object) > KUEUE_MAX_POD_SETS:
        problems.append(Problem(f"Kueue's Workload holds at most {KUEUE_MAX_POD_SETS} PodSets; this job needs "
                                f"{pod_sets(job, one_object)}", "spec.roles"))
    if gang.topology_aware:  # native too: every flavor having a Topology, Kueue places every Workload so
        problems += _pinned_by_kueue(job, profile)
    return problems


def _pinned_by_kueue(job: TrainingJob, profile: ClusterProfile) -> list[Problem]:
    """Kueue's TAS picks each pod's server by free room alone, packing a PodSet onto the fullest servers that
    hold it, and pins the pod there (nodeSelector kubernetes.io/hostname); pod (anti-)affinity is left to
    kube-scheduler, after. Measured on Kueue 0.19.2 (tests/cluster/test_gang.py): a required rule leaves pods
    Pending on an admitted job, whose other pods hold their servers; a preferred one is not kept."""
    mode, several_ps = job.topology.mode, job.roles["ps"].replicas > 1
    how = (f"the cluster profile '{profile.name}' has Kueue place pods itself (spec.gang.topologyAware): it picks "
           "each pod's server by free room alone, ignoring pod affinity, and pins the pod there")
    broken = {"isolated": "packs PS together or beside workers, where isolated lets only one of them start",
              "colocated": "sends workers to servers without their group's PS, where colocated lets none start",
              "spread": "packs the job's PS onto one server, where spread: required lets only one start"}
    if mode in ("isolated", "colocated") or (mode == "spread" and job.topology.spread == "required" and several_ps):
        return [Problem(f"{how}; it {broken[mode]}, and the others wait Pending on an admitted job holding their "
                        "servers: use topology spread (preferred) or none, or a profile without topologyAware",
                        "spec.topology.mode")]
    if mode == "spread" and several_ps:
        return [Problem(f"{how}; it packs the job's PS onto the fewest servers that hold them, so they may share one "
                        "(spread's preferred anti-affinity is not kept; topology none asks for no more than that)",
                        "spec.topology.mode", severity=WARNING)]
    return []


def group_name(job: TrainingJob) -> str:
    return job.name


def pod_template(plan, template: dict) -> dict:
    """A copy of `template` with what the gang scheduler needs on every pod (itself when none)."""
    chosen = pod_group_scheduler(plan)
    if chosen is None:
        return template
    group = template.get("metadata", {}).get("labels", {}).get(labels.GROUP)
    by_scheduler = group is not None and topology.groups_by_scheduler(plan.job, plan.profile)
    if chosen.group_in_pod_spec:  # the default scheduler: only the group's name, in the pod's spec
        name = _group_pod_group(plan.job, group) if by_scheduler else group_name(plan.job)
        return {**template, "spec": {**template["spec"], "schedulingGroup": {"podGroupName": name}}}
    meta = dict(template.get("metadata", {}))
    if chosen.group_annotation:
        meta["annotations"] = {**meta.get("annotations", {}), chosen.group_annotation: group_name(plan.job)}
    if chosen.task_annotation and by_scheduler:
        meta["annotations"] = {**meta.get("annotations", {}), chosen.task_annotation: _task_name(group)}
    if chosen.group_label:
        meta["labels"] = {**meta.get("labels", {}), chosen.group_label: group_name(plan.job)}
    spec = dict(template["spec"])
    if chosen.scheduler_name is not None:
        spec["schedulerName"] = chosen.scheduler_name or plan.profile.gang.scheduler_name
    return {**template, "metadata": meta, "spec": spec}


def topology_aware(profile: ClusterProfile) -> bool:
    """Whether the profile's gang scheduler places pods on servers itself (spec.gang.topologyAware: Kueue's)."""
    return gang_schedulers.of(profile).topology_aware and profile.gang.topology_aware


def pod_set_template(plan, template: dict) -> dict:
    """A copy of `template` as the pod template of one PodSet of the Workload Kueue makes of a job carried by one
    object (Backend.one_object: a JobSet's replicatedJob, a TFJob's replica type): under topology-aware
    scheduling, the annotation that has Kueue find each pod a server, with no domain constraint, before it
    admits the job (itself otherwise)."""
    if not topology_aware(plan.profile):
        return template
    meta = dict(template.get("metadata", {}))
    meta["annotations"] = {**meta.get("annotations", {}), KUEUE_UNCONSTRAINED_TOPOLOGY: "true"}
    return {**template, "metadata": meta}


def workload_labels(plan) -> dict[str, str]:
    """Labels for the object Kueue turns into a Workload (the JobSet, the TFJob, a native Job)."""
    label = gang_schedulers.of(plan.profile).queue_label
    return {label: plan.profile.gang.queue} if label else {}


def min_resources(plan) -> dict[str, str]:
    """The requests of every task together: what must be free before any pod is bound."""
    cpu, memory = Fraction(0), Fraction(0)
    for task in plan.tasks:
        for container in task.template["spec"]["containers"]:
            requests = (container.get("resources") or {}).get("requests") or {}
            cpu += quantity.parse(requests.get("cpu", 0)) or 0
            memory += quantity.parse(requests.get("memory", 0)) or 0
    result = {}
    if cpu:
        result["cpu"] = quantity.cpu_text(cpu)
    if memory:
        text = quantity.describe_bytes(memory)  # "22Gi" when exact, else the bytes
        result["memory"] = text if quantity.parse(text) == memory else str(math.ceil(memory))
    return result


def scheduling_policy(plan) -> dict | None:
    """A TFJob's runPolicy.schedulingPolicy: what the operator makes its PodGroup from (None: no gang)."""
    chosen = pod_group_scheduler(plan)
    if chosen is None or not chosen.operator_makes_pod_group:
        return None
    policy: dict = {"minAvailable": len(plan.tasks), "scheduleTimeoutSeconds": plan.profile.gang.schedule_timeout_seconds}
    resources = min_resources(plan)
    if resources:
        policy["minResources"] = resources
    if chosen.pod_group_queue and plan.profile.gang.queue:
        policy["queue"] = plan.profile.gang.queue
    return policy


def objects(plan) -> list[dict]:
    """The PodGroup of a job on native or jobset (none for kueue or no gang)."""
    chosen, job = pod_group_scheduler(plan), plan.job
    if chosen is None:
        return []
    meta = metadata.of(job, group_name(job), labels.recommended(job, "cluster"))
    if chosen.pod_group == KUBERNETES_API:  # kube-scheduler reads no resources: it binds none until minCount pods fit
        return _kubernetes_pod_groups(plan, meta)
    spec: dict = {"minMember": len(plan.tasks)}
    resources = min_resources(plan)
    if resources:
        spec["minResources"] = resources
    if chosen.pod_group_queue and plan.profile.gang.queue:
        spec["queue"] = plan.profile.gang.queue
    if chosen.task_annotation and topology.groups_by_scheduler(job, plan.profile):
        meta["annotations"] = {**meta.get("annotations", {}), **task_topology(job)}
    if chosen.pod_group_timeout:
        spec["scheduleTimeoutSeconds"] = plan.profile.gang.schedule_timeout_seconds
    return [{"apiVersion": chosen.pod_group, "kind": "PodGroup", "metadata": meta, "spec": spec}]


def _group_pod_group(job: TrainingJob, group) -> str:
    return f"{group_name(job)}-group-{group}"


def _kubernetes_pod_groups(plan, meta: dict) -> list[dict]:
    """One gang of every task; or, for groups the scheduler keeps, a gang per group held to one server
    and a gang of the tasks outside the groups (none when there are none)."""
    priority = topology.priority_class(plan.profile, "ps")  # every pod's (topology.priority_class)

    def pod_group(name: str, count: int, constraints: dict | None = None) -> dict:
        spec: dict = {"schedulingPolicy": {"gang": {"minCount": count}}}
        if constraints:
            spec["schedulingConstraints"] = constraints
        if priority:
            spec["priorityClassName"] = priority
        return {"apiVersion": KUBERNETES_API, "kind": "PodGroup", "metadata": {**meta, "name": name}, "spec": spec}

    if not topology.groups_by_scheduler(plan.job, plan.profile):
        return [pod_group(group_name(plan.job), len(plan.tasks))]
    grouped = Counter(task.template.get("metadata", {}).get("labels", {}).get(labels.GROUP) for task in plan.tasks)
    outside = grouped.pop(None, 0)
    one_server = {"topology": [{"key": topology.HOSTNAME}]}
    found = [pod_group(_group_pod_group(plan.job, g), count, one_server)
             for g, count in sorted(grouped.items(), key=lambda item: int(item[0]))]
    return found + ([pod_group(group_name(plan.job), outside)] if outside else [])


def _task_name(group) -> str:
    return f"group-{group}"


def task_topology(job: TrainingJob) -> dict[str, str]:
    """The PodGroup annotations of Volcano's task-topology plugin for a colocated job: each group's
    tasks attract each other (one name alone: self-affinity), and all groups repel each other."""
    groups = [_task_name(g) for g in range(job.roles["ps"].replicas)]
    annotations = {VOLCANO_AFFINITY_ANNOTATION: ";".join(groups)}
    if len(groups) > 1:  # one name alone would be self-anti-affinity: a group's pods on separate servers
        annotations[VOLCANO_ANTI_AFFINITY_ANNOTATION] = ",".join(groups)
    return annotations
