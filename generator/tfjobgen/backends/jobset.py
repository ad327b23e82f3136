"""The JobSet backend: one jobset.x-k8s.io/v1alpha2 JobSet per job, a replicatedJob per role.

What JobSet's controller does with it (kubernetes-sigs/jobset, API v1alpha2; the
CRD in shared/crds is what the tests validate against):

- each replicatedJob of `replicas: 1` becomes one child batch/v1 Job named
  `<jobset>-<replicatedJob>-0`; ours are Indexed with completions = parallelism =
  the role's tasks, so the Job controller names the pods' hosts `<jobset>-<role>-0-<i>`;
- `network.enableDNSHostnames` puts every pod in the subdomain `network.subdomain`
  and JobSet creates the headless Service of that name itself (selector: its
  jobset-name label; `publishNotReadyAddresses` as set here). We do not emit ours:
  two Services of one name cannot exist, and JobSet's serves the same names;
- JobSet adds its labels and annotations (jobset-name, replicatedjob-name,
  replicatedjob-replicas, job-index, job-global-index, job-key, restart-attempt, and
  since v0.9 global-replicas, group-name, group-replicas, job-group-index, jobset-uid)
  to the child Jobs and their pods; `decode` adds them the same way, all but the uid,
  which only the cluster knows (held to JobSet v0.10.1 on a local cluster).

The child Jobs carry the lifecycle's batch/v1 fields unchanged (per-task budget,
podFailurePolicy, podReplacementPolicy), so a task fails, retries and fails for good
exactly as on the native backend. What JobSet adds:

- `failurePolicy`: a child Job that failed ends the JobSet (action FailJobSet, never a
  restart of the whole set: the per-task budget has been spent already), and JobSet then
  deletes the other child Jobs, so no PS keeps its cores. The first rule names the
  permanent exit codes (reason PodFailurePolicy), the second everything else.
- `successPolicy`: the JobSet completes when the chief's child Job completes (worker's,
  when the job has no chief: tf1 between-graph, worker 0 is chief). successPolicy counts
  whole child Jobs, so without a chief the JobSet waits for *every* worker to finish,
  not just worker 0: a between-graph job whose other workers never end would keep it
  running (tfjobgen's runtime ends them; a program of your own must, or set a deadline).
  Once complete, JobSet deletes the child Jobs still running: the PS.
- no `dependsOn`: TensorFlow workers wait for their PS themselves, and holding the
  workers' Job back until the PS are Ready would hide half the job from a gang scheduler.

Topologies: spread, isolated and none live in the pod templates and work as on native.
colocated needs a pod template per task (each worker selects its own PS by index),
which one Indexed child Job per role cannot hold: `check` refuses it, and a profile's
`taskObjects: per-task` likewise.
"""

from __future__ import annotations

from ..concerns import gang, labels, lifecycle, names, pods
from ..concerns.jobplan import JobPlan, RolePlan
from ..concerns.names import Naming
from ..inputs.problems import Problem
from ..inputs.profile import ClusterProfile
from ..inputs.trainingjob import TrainingJob
from . import common
from .base import Backend, DecodedJob, Reporting

NAME = "jobset"
API_VERSION = "jobset.x-k8s.io/v1alpha2"
KIND = "JobSet"

# JobSet's labels (also set as annotations) on child Jobs and pods (api/jobset/v1alpha2/jobset_types.go).
JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_NAME = "jobset.sigs.k8s.io/replicatedjob-name"
REPLICATED_JOB_REPLICAS = "jobset.sigs.k8s.io/replicatedjob-replicas"
JOB_INDEX = "jobset.sigs.k8s.io/job-index"
JOB_GLOBAL_INDEX = "jobset.sigs.k8s.io/job-global-index"
JOB_KEY = "jobset.sigs.k8s.io/job-key"  # a SHA-1 of "<namespace>/<child Job>", 40 hex digits
RESTART_ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"
# Since v0.9: replicatedJobs may be grouped (replicatedJobs[].groupName, "default" when unset).
GLOBAL_REPLICAS = "jobset.sigs.k8s.io/global-replicas"  # child Jobs of the whole JobSet
GROUP_NAME = "jobset.sigs.k8s.io/group-name"
GROUP_REPLICAS = "jobset.sigs.k8s.io/group-replicas"  # child Jobs of the group
JOB_GROUP_INDEX = "jobset.sigs.k8s.io/job-group-index"  # the child Job's index within its group
DEFAULT_GROUP = "default"
# Since v0.12 its pod webhook labels every pod with its priority (the PriorityClass's value), for exclusive placement.
PRIORITY = "jobset.sigs.k8s.io/priority"
# batch/v1's reason on a Job failed by a podFailurePolicy FailJob rule: a permanent exit code.
POD_FAILURE_POLICY_REASON = "PodFailurePolicy"



def child_job(job: TrainingJob, role: str) -> str:
    """The one child Job of a role's replicatedJob (job index 0)."""
    return f"{names.role_workload(job, role)}-0"


def hostname(job: TrainingJob, role: str, index: int) -> str:
    return f"{child_job(job, role)}-{index}"


NAMING = Naming(
    hostname=hostname,
    address=lambda job, profile, role, index: f"{hostname(job, role, index)}.{names.service(job)}:{profile.grpc_port}",
    index_source=lambda role: common.COMPLETION_INDEX_SOURCE,  # child Jobs are Indexed, as native's
    failures_source=common.FAILURE_COUNT_SOURCE,
)


def leader(job: TrainingJob) -> str:
    """The role whose completion completes the job: the chief, else the workers (worker 0 is chief)."""
    return job.coordinator


def check(job: TrainingJob, profile: ClusterProfile) -> list[Problem]:
    problems = common.one_template_per_role(job, profile, "a JobSet (a replicatedJob of one Indexed Job per role)")
    return problems  # the length of its pods' hosts: names.check


def _replicated_job(plan: JobPlan, role: RolePlan) -> dict:
    job = plan.job
    template = gang.pod_set_template(plan, gang.pod_template(plan, role.template))
    spec = {"completionMode": "Indexed", "completions": role.replicas, "parallelism": role.replicas,
            **lifecycle.batch_job_spec(lifecycle.of(job, plan.profile), indexed=True), "template": template}
    return {"name": role.role, "replicas": 1,
            "template": {"metadata": {"labels": labels.for_role(job, role.role)}, "spec": spec}}


def failure_policy(plan: JobPlan) -> dict:
    rules = []
    if lifecycle.of(plan.job, plan.profile).permanent_exit_codes:
        rules.append({"action": "FailJobSet", "name": "PermanentExitCode",
                      "onJobFailureReasons": [POD_FAILURE_POLICY_REASON]})
    # Rule names: JobSet's webhook takes letters, digits and "_,:" only (no "-"; found on the real controller).
    rules.append({"action": "FailJobSet", "name": "TaskFailedForGood"})  # no reasons: matches any
    return {"maxRestarts": 0, "rules": rules}


def encode(plan: JobPlan) -> list[dict]:
    job = plan.job
    jobset = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": common.whole_job_metadata(plan),
        "spec": {
            "failurePolicy": failure_policy(plan),
            "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True,
                        "subdomain": names.service(job)},
            "replicatedJobs": [_replicated_job(plan, role) for role in plan.roles],
            "successPolicy": {"operator": "All", "targetReplicatedJobs": [leader(job)]},
        },
    }
    return [common.config_map(plan), common.network_policy(plan), jobset] + gang.objects(plan)


# ---- reading back: JobSet's controller, then the Job controller --------------------------

def _child_jobs(jobset: dict) -> list[tuple[dict, dict]]:
    """(child Job, JobSet's labels on it and its pods) for every child Job JobSet creates."""
    import hashlib  # here, not at the top: decoding is never on the KRM function's path

    meta, spec = jobset["metadata"], jobset["spec"]
    name, namespace = meta["name"], meta.get("namespace", "")
    network = spec.get("network") or {}
    subdomain = network.get("subdomain") or name
    replicated_jobs = spec.get("replicatedJobs", [])
    group_of = {rj["name"]: rj.get("groupName") or DEFAULT_GROUP for rj in replicated_jobs}
    group_sizes: dict[str, int] = {}
    for rj in replicated_jobs:
        group_sizes[group_of[rj["name"]]] = group_sizes.get(group_of[rj["name"]], 0) + rj.get("replicas", 1)
    found, global_index, group_index = [], 0, dict.fromkeys(group_sizes, 0)
    for replicated in replicated_jobs:
        group = group_of[replicated["name"]]
        for index in range(replicated.get("replicas", 1)):
            job_name = f"{name}-{replicated['name']}-{index}"
            marks = {JOBSET_NAME: name, REPLICATED_JOB_NAME: replicated["name"],
                     REPLICATED_JOB_REPLICAS: str(replicated.get("replicas", 1)), JOB_INDEX: str(index),
                     JOB_GLOBAL_INDEX: str(global_index), RESTART_ATTEMPT: "0",
                     GLOBAL_REPLICAS: str(sum(group_sizes.values())), GROUP_NAME: group,
                     GROUP_REPLICAS: str(group_sizes[group]), JOB_GROUP_INDEX: str(group_index[group]),
                     JOB_KEY: hashlib.sha1(f"{namespace}/{job_name}".encode()).hexdigest()}  # noqa: S324 - a name
            group_index[group] += 1
            template = replicated["template"]
            pod_template = template["spec"]["template"]
            if network.get("enableDNSHostnames"):
                pod_template = common.with_subdomain(pod_template, subdomain)
            child = {"apiVersion": "batch/v1", "kind": "Job",
                     "metadata": {"labels": {**template.get("metadata", {}).get("labels", {}), **marks},
                                  "name": job_name, "namespace": namespace},
                     "spec": {**template["spec"], "template": pod_template}}
            found.append((child, marks))
            global_index += 1
    return found


def decode(objects: list[dict]) -> list[DecodedJob]:
    """Every job run by a JobSet among `objects`, each task as JobSet's child Job creates its pod."""
    return common.decode_each(objects, API_VERSION, KIND, NAME, _decode_one)


def _decode_one(namespace: str, name: str, members: list[dict], jobsets: list[dict], config_maps: dict) -> DecodedJob:
    children = _child_jobs(jobsets[0])
    task_pods = sorted((p for child, marks in children for p in pods.job_pods(child, config_maps, marks, marks)),
                       key=common.task_order)
    return DecodedJob(namespace, name, NAME, members, task_pods, lifecycle.from_batch_job_spec(children[0][0]["spec"]),
                      common.cluster_config(members), [_service(jobsets[0])], fails_as_one=True,
                      completed_by=_completed_by(jobsets[0], task_pods))


def _completed_by(jobset: dict, task_pods: list[pods.Pod]) -> tuple[str, ...]:
    """successPolicy All: every task of the target replicatedJobs (all of them when none is named)
    must succeed; then JobSet completes and deletes the child Jobs still running. (Any, which no
    tfjobgen JobSet uses, would complete on the first target Job: not a set of tasks.)"""
    policy = jobset["spec"].get("successPolicy") or {}
    if policy.get("operator", "All") != "All":
        return ()
    targets = set(policy.get("targetReplicatedJobs") or [rj["name"] for rj in jobset["spec"]["replicatedJobs"]])
    return tuple(p.task for p in task_pods if p.labels.get(REPLICATED_JOB_NAME) in targets)


def _service(jobset: dict) -> dict:
    """The headless Service JobSet's controller creates for the subdomain (createHeadlessSvcIfNotExist)."""
    meta, network = jobset["metadata"], jobset["spec"].get("network") or {}
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": network.get("subdomain") or meta["name"], "namespace": meta.get("namespace", "")},
            "spec": {"clusterIP": "None", "publishNotReadyAddresses": network.get("publishNotReadyAddresses", True),
                     "selector": {JOBSET_NAME: meta["name"]}}}


BACKEND = Backend(NAME, NAMING, check, encode, decode, one_object=True,
                  reporting=Reporting(KIND, child_jobs_name_failure=True), cluster_valued_pod_labels=(PRIORITY,))

