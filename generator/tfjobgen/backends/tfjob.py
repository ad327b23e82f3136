"""The TFJob backend: one Kubeflow TFJob (kubeflow.org/v1) per job, run by the training operator.

What the operator does with it (kubeflow/trainer, branch release-1.9, the last with TFJob;
the CRD in shared/crds is what the tests validate against):

- a pod per task named `<tfjob>-<type>-<i>` (type lower-cased: ps, worker, chief,
  evaluator), labelled training.kubeflow.org/{job-name, replica-type, replica-index,
  operator-name} (and job-role: master on the chief, or on worker 0 when there is none),
  and one headless Service per pod of the same name, selecting by those labels and carrying
  every named port of the `tensorflow` container;
- TF_CONFIG, appended to the container named `tensorflow`: Go's json.Marshal of
  {cluster, task{type, index}, environment "cloud"}: compact, cluster keys sorted, each
  host `<tfjob>-<type>-<i>.<namespace>.svc:<port>` where port is the container port
  named `tfjob-port`; every replica type is in `cluster`, the evaluator too (genClusterSpec
  walks every replica spec: seen on v1.9.4; TensorFlow accepts an evaluator in or out of
  `cluster`, and tfjobgen's runtime forms its servers of the training roles only). (An operator started with
  CUSTOM_CLUSTER_DOMAIN appends that domain; we assume it is not set.) So this backend's
  Naming writes no TF_CONFIG and names every task as the operator does: StarServer's
  endpoint map, keyed by TF_CONFIG's addresses, still matches byte for byte.

How tasks end (lifecycle.py's meaning, as far as the operator can carry it):

- restartPolicy ExitCode on every replica: the operator's rule is that exit codes 1-127
  are permanent (the job fails at once) and 128-255 retryable (a new pod). The runtime's
  permanent codes 2, 3, 4 fail the job as on native; a container killed by a signal while
  its pod stays (out of memory: 137) gets a new pod. Unlike native, exit 1 is permanent too.
  But a pod taken away by the cluster (eviction, preemption, a drained node) fails the
  whole TFJob: the operator counts a deleted pod that is still Running as failed, before
  its container has any exit code (seen on v1.9.4 on a local cluster: "has failed because
  1 Worker replica(s) failed" within a second of the eviction; kubeflow/trainer#999), so
  `decode`'s lifecycle says disruptions_fail. The operator sets the pods' restartPolicy
  Never for ExitCode, as our templates already have;
- runPolicy.backoffLimit: the per-task budget, job-wide here. The operator counts it from
  container restarts of running pods, which ExitCode's fresh pods do not accrue, so on a
  cluster only activeDeadlineSeconds truly bounds signal-killed retries; `decode` reports
  the budget as written and run-local plays it per task (the stricter reading);
- cleanPodPolicy Running: when the job ends the operator deletes pods still running, the PS
  (TFJob's default, None, leaves them serving: kubeflow/trainer#774);
- successPolicy left at the default: the job succeeds when the chief does (worker 0 when
  there is none), which is what tfjobgen's runtime means by training done.

colocated and `taskObjects: per-task` need a template per task; a replica spec has one
per role: `check` refuses them.
"""

from __future__ import annotations

import json

from ..concerns import gang, gang_schedulers, lifecycle, names, pods
from ..concerns.jobplan import JobPlan, RolePlan
from ..concerns.lifecycle import Lifecycle
from ..concerns.names import Naming
from ..inputs.problems import WARNING, Problem
from ..inputs.profile import ClusterProfile
from ..inputs.trainingjob import TrainingJob
from ..shared import contract
from . import common
from .base import Backend, DecodedJob, Reporting

NAME = "tfjob"
API_VERSION = "kubeflow.org/v1"
KIND = "TFJob"
PORT_NAME = "tfjob-port"  # the container port the operator reads TF_CONFIG's port from
DEFAULT_PORT = 2222  # the operator's, when no port has that name
# Our roles as the operator's replica types (tfReplicaSpecs keys).
REPLICA_TYPES = {"chief": "Chief", "evaluator": "Evaluator", "ps": "PS", "worker": "Worker"}
RESTART_POLICY = "ExitCode"
RETRYABLE_FROM = 128  # ExitCode: 1-127 fail the job, 128-255 give the task a new pod
CLEAN_POD_POLICY = "Running"

# The operator's pod labels (pkg/apis/kubeflow.org/v1 common_types.go).
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
OPERATOR_LABEL = "training.kubeflow.org/operator-name"
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
JOB_ROLE_LABEL = "training.kubeflow.org/job-role"
OPERATOR_NAME = "tfjob-controller"


def address(job: TrainingJob, profile: ClusterProfile, role: str, index: int) -> str:
    """A task's host:port exactly as the operator writes it into TF_CONFIG."""
    return f"{names.task(job, role, index)}.{job.namespace}.svc:{profile.grpc_port}"


NAMING = Naming(
    hostname=names.task,  # the pod's name, `<tfjob>-<type>-<i>`
    address=address,
    index_source=lambda role: {},  # never asked for: writes_tf_config, so no env reads the index
    writes_tf_config=True,
    evaluator_in_cluster=True,
    grpc_port_name=PORT_NAME,
)


def check(job: TrainingJob, profile: ClusterProfile) -> list[Problem]:
    problems = common.one_template_per_role(job, profile, "a TFJob (a replica spec per role)")
    chosen = gang_schedulers.of(profile)
    if NAME not in chosen.backends:
        problems.append(Problem(
            f"the cluster profile '{profile.name}' gangs jobs with {chosen.admits_through}, which the TFJob operator "
            "(v1.9, maintenance only) neither makes nor names: use backend jobset (one field; docs/design.md) or native",
            "spec.backend"))
    if chosen.admits_objects:  # Kueue; measured on 0.19.2 without it: the TFJob ran unsuspended, no Workload
        problems.append(Problem(
            f"the cluster profile '{profile.name}' queues jobs with Kueue, whose shipped configuration turns its TFJob "
            "integration off from 0.19 on (kubeflow.org/tfjob commented out of integrations.frameworks): such a Kueue "
            "neither queues nor admits a TFJob, whose pods then start one by one with no gang. The cluster's Kueue must "
            "list kubeflow.org/tfjob in integrations.frameworks, or use backend jobset (one field)",
            "spec.backend", severity=WARNING))
    retried = [code for code in job.permanent_exit_codes if code >= RETRYABLE_FROM]
    if not job.uses_runtime and retried:
        problems.append(Problem(
            f"the TFJob operator (restartPolicy ExitCode) gives a task a new pod on exit codes {RETRYABLE_FROM}-255, "
            f"so {', '.join(map(str, retried))} cannot fail the job at once; every code from 1 to {RETRYABLE_FROM - 1} "
            "does", "spec.failurePolicy.permanentExitCodes", severity=WARNING))
    if profile.priority_classes.get("ps"):
        problems.append(Problem(
            f"the cluster profile '{profile.name}' lets parameter servers preempt workers (spec.priorityClasses), and "
            "the TFJob operator fails a whole TFJob when one of its pods is preempted or evicted (it counts the "
            "deleted pod as failed; seen on v1.9.4): backend jobset or native gives that task a new pod instead",
            "spec.backend", severity=WARNING))
    return problems


def run_policy(plan: JobPlan) -> dict:
    ending = lifecycle.of(plan.job, plan.profile)
    policy: dict = {"backoffLimit": ending.retries_per_task, "cleanPodPolicy": CLEAN_POD_POLICY}
    if ending.deadline_seconds:
        policy["activeDeadlineSeconds"] = ending.deadline_seconds
    scheduling = gang.scheduling_policy(plan)
    if scheduling:
        policy["schedulingPolicy"] = scheduling
    return policy


def _replica_spec(plan: JobPlan, role: RolePlan) -> dict:
    return {"replicas": role.replicas, "restartPolicy": RESTART_POLICY,
            "template": gang.pod_set_template(plan, role.template)}


def encode(plan: JobPlan) -> list[dict]:
    tfjob = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": common.whole_job_metadata(plan),
        "spec": {
            "runPolicy": run_policy(plan),
            "tfReplicaSpecs": {REPLICA_TYPES[role.role]: _replica_spec(plan, role) for role in plan.roles},
        },
    }
    return [common.config_map(plan), common.network_policy(plan), tfjob]


# ---- reading back: the operator ---------------------------------------------------------

def _port(template: dict) -> int:
    for container in template["spec"].get("containers", []):
        if container.get("name") == contract.CONTAINER_NAME:
            for port in container.get("ports", []):
                if port.get("name") == PORT_NAME:
                    return int(port["containerPort"])
    return DEFAULT_PORT


def tf_config(name: str, namespace: str, replica_specs: dict, role: str, index: int) -> str:
    """TF_CONFIG as the operator writes it: Go's json.Marshal of the operator's TFConfig struct."""
    cluster = {}
    for replica_type, spec in replica_specs.items():
        kind = replica_type.lower()
        port = _port(spec["template"])
        cluster[kind] = [f"{name}-{kind}-{i}.{namespace}.svc:{port}" for i in range(spec.get("replicas", 1))]
    config = {"cluster": dict(sorted(cluster.items())), "task": {"type": role, "index": index},
              "environment": "cloud"}
    return json.dumps(config, separators=(",", ":"))


def from_run_policy(replica_specs: dict, policy: dict) -> Lifecycle:
    """The rules a TFJob carries, in lifecycle.py's terms: ExitCode makes every code below 128 permanent,
    and the operator fails the job when a pod is taken away (see lifecycle.Lifecycle.disruptions_fail)."""
    exit_code = all(spec.get("restartPolicy") == RESTART_POLICY for spec in replica_specs.values())
    permanent = tuple(range(1, RETRYABLE_FROM)) if exit_code else ()
    return Lifecycle(policy.get("backoffLimit", 0), permanent, policy.get("activeDeadlineSeconds"),
                     disruptions_fail=True)


def _pods(tfjob: dict, config_maps: dict) -> list[pods.Pod]:
    meta, spec = tfjob["metadata"], tfjob["spec"]
    name, namespace = meta["name"], meta.get("namespace", "")
    replica_specs = spec.get("tfReplicaSpecs", {})
    has_chief = any(t.lower() in ("chief", "master") for t in replica_specs)
    found = []
    for replica_type, replica in replica_specs.items():
        kind = replica_type.lower()
        for i in range(replica.get("replicas", 1)):
            marks = {JOB_NAME_LABEL: name, OPERATOR_LABEL: OPERATOR_NAME, REPLICA_TYPE_LABEL: kind,
                     REPLICA_INDEX_LABEL: str(i)}
            if kind in ("chief", "master") or (not has_chief and kind == "worker" and i == 0):
                marks[JOB_ROLE_LABEL] = "master"
            env = [{"name": contract.TF_CONFIG, "value": tf_config(name, namespace, replica_specs, kind, i)}]
            found.append(pods.make_pod(name, namespace, replica["template"], config_maps, index=i,
                                       hostname=f"{name}-{kind}-{i}", extra_labels=marks, extra_env=env))
    return found


def decode(objects: list[dict]) -> list[DecodedJob]:
    """Every job run by a TFJob among `objects`, each task as the operator creates its pod."""
    return common.decode_each(objects, API_VERSION, KIND, NAME, _decode_one)


def _decode_one(namespace: str, name: str, members: list[dict], tfjobs: list[dict], config_maps: dict) -> DecodedJob:
    spec = tfjobs[0]["spec"]
    task_pods = sorted(_pods(tfjobs[0], config_maps), key=common.task_order)
    return DecodedJob(namespace, name, NAME, members, task_pods,
                      from_run_policy(spec.get("tfReplicaSpecs", {}), spec.get("runPolicy", {})),
                      common.cluster_config(members), [_service(pod) for pod in task_pods], fails_as_one=True,
                      completed_by=_completed_by(spec, task_pods))


def _completed_by(spec: dict, task_pods: list[pods.Pod]) -> tuple[str, ...]:
    """The operator's success rule (tfjob_controller.go): the chief (or master) succeeding; without
    one, worker 0, or every worker under successPolicy AllWorkers. cleanPodPolicy Running then
    deletes the pods still running."""
    master = [p.task for p in task_pods if p.labels.get(JOB_ROLE_LABEL) == "master"]
    if spec.get("successPolicy") == "AllWorkers" and not any(p.role == "chief" for p in task_pods):
        return tuple(p.task for p in task_pods if p.role == "worker")
    return tuple(master)


def _service(pod: pods.Pod) -> dict:
    """The headless Service the operator creates for each pod, named like it (common/service.go): it
    selects by the operator's labels, operator-name included, and carries every named port of the
    `tensorflow` container (in Go's map order on a cluster; here by name). It does not publish
    not-ready addresses, so a name resolves once its pod is Ready."""
    selector = {k: pod.labels[k] for k in (JOB_NAME_LABEL, OPERATOR_LABEL, REPLICA_TYPE_LABEL, REPLICA_INDEX_LABEL)}
    ports = sorted((p for p in pod.container.get("ports", []) if p.get("name")), key=lambda p: p["name"])
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": pod.hostname, "namespace": pod.namespace, "labels": dict(selector)},
            "spec": {"clusterIP": "None", "selector": selector,
                     "ports": [{"name": p["name"], "port": p["containerPort"], "targetPort": p["containerPort"]}
                               for p in ports]}}


BACKEND = Backend(NAME, NAMING, check, encode, decode, one_object=True,
                  reporting=Reporting(KIND, suspend=("runPolicy", "suspend"), exits_in_events=True))
