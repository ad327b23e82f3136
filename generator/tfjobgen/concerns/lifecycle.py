"""How a job's tasks end: each task's failure budget, the exits that end the job, the deadline.

One meaning for every backend (batch/v1 Jobs here; JobSet's child Jobs carry the same fields;
the TFJob operator has no such fields and comes as close as it can, see backends/tfjob.py):

- a failed task gets a new pod, and only once its old pod is gone: TensorFlow refuses a
  second server of the same task ("Duplicate task registration"), which is the case
  Kubernetes gives for podReplacementPolicy: Failed;
- each task may fail `retries_per_task` times; its next failure is for good. The budget
  is per task, so one crash-looping worker cannot use up everyone's;
- a task that exits with one of `permanent_exit_codes` fails the job at once: a new pod
  cannot do better (tfjobgen's runtime: 2 configuration, 3 chief unreachable, 4 stopped
  because another task failed for good; a program of your own: the codes you list);
- a pod the cluster takes away (preemption, eviction, a drained node: the pod gets the
  DisruptionTarget condition) is replaced without counting: it was not the task's fault;
- one task failing for good fails the job. The chief then tells every other task to stop
  (runtime/control.py; a program of your own runs under the entrypoint, cluster-tools/entry,
  which speaks the same channel), so none keeps its cores;
- `deadline_seconds`: every task still running after it fails.

`batch_job_spec` writes the rules as batch/v1 Job fields and `from_batch_job_spec` reads
them back; `after_failure` is the Job controller's documented decision for one failed pod
under exactly those fields: run-local plays it, the tests check it on documented cases.

Kubernetes 1.30, the oldest version supported, has every field on by default: podFailurePolicy
(beta since 1.26, GA 1.31), backoffLimitPerIndex with maxFailedIndexes and the pods'
batch.kubernetes.io/job-index-failure-count annotation (beta since 1.29, GA 1.33),
podReplacementPolicy (beta since 1.29, GA 1.34). The first two require restartPolicy Never:
a failed container is never restarted in place, its task gets a new pod.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..inputs.problems import WARNING, Problem
from ..inputs.profile import ClusterProfile
from ..inputs.trainingjob import TrainingJob
from ..shared import contract

RESTART_POLICY = "Never"
DISRUPTION_CONDITION = "DisruptionTarget"  # set by the cluster on pods it evicts or preempts
# The condition's reasons (k8s.io/api core/v1), in words: what took the pod away.
DISRUPTIONS = {
    "EvictionByEvictionAPI": "evicted (the Eviction API: a drain, or an administrator)",
    "PreemptionByScheduler": "preempted by the scheduler for a pod of higher priority",
    "DeletionByTaintManager": "its node was lost (a NoExecute taint)",
    "DeletionByPodGC": "its node is gone (the pod garbage collector)",
    "TerminationByKubelet": "ended by its kubelet (node pressure or a node shutdown)",
}
# The Job controller waits before it creates a failed task's next pod: 10 s, doubling per failure
# of that index (counted or not), at most 10 minutes (pkg/controller/job: DefaultJobPodFailureBackOff,
# MaxJobPodFailureBackOff, getRemainingTimePerIndex).
FIRST_DELAY_SECONDS = 10.0
MAX_DELAY_SECONDS = 600.0


@dataclass(frozen=True)
class Lifecycle:
    retries_per_task: int  # new pods a task may get after failures before it fails for good
    permanent_exit_codes: tuple[int, ...]  # sorted: exits that fail the job at once
    deadline_seconds: int | None  # every task still running after this fails; None: no deadline
    # True when a pod taken away by the cluster (evicted, preempted, drained) fails the job instead of
    # being replaced: the TFJob operator counts a deleted pod still Running as failed before it
    # reads any exit code (seen on v1.9.4; kubeflow/trainer#999). The Job controller ignores them.
    disruptions_fail: bool = False


def of(job: TrainingJob, profile: ClusterProfile) -> Lifecycle:
    if job.uses_runtime:
        return Lifecycle(job.backoff_limit_per_task, contract.PERMANENT_EXIT_CODES, job.active_deadline_seconds)
    # A program of your own runs under the entrypoint, whose own exits (2 refused, 3 chief gone, 4 stopped)
    # are the runtime's: permanent as well as the codes the intent lists.
    codes = tuple(sorted(set(contract.PERMANENT_EXIT_CODES) | set(job.permanent_exit_codes)))
    return Lifecycle(job.backoff_limit_per_task, codes, job.active_deadline_seconds or profile.own_program_deadline)


# ---- batch/v1 -------------------------------------------------------------------------

def pod_failure_policy(lifecycle: Lifecycle) -> dict:
    """The rules in the order the Job controller tries them: a disruption is never the task's fault,
    even when the container's exit code happens to be a permanent one."""
    rules = [{"action": "Ignore", "onPodConditions": [{"status": "True", "type": DISRUPTION_CONDITION}]}]
    if lifecycle.permanent_exit_codes:
        rules.append({"action": "FailJob", "onExitCodes": {
            "containerName": contract.CONTAINER_NAME, "operator": "In",
            "values": list(lifecycle.permanent_exit_codes)}})  # the API wants them ordered and unique
    return {"rules": rules}


def batch_job_spec(lifecycle: Lifecycle, indexed: bool) -> dict:
    """The failure fields of a batch/v1 JobSpec. An Indexed Job counts per index and fails at the
    first index that fails for good (maxFailedIndexes 0); a Job of one task counts that task."""
    spec: dict = {"backoffLimitPerIndex": lifecycle.retries_per_task, "maxFailedIndexes": 0} if indexed \
        else {"backoffLimit": lifecycle.retries_per_task}
    spec["podFailurePolicy"] = pod_failure_policy(lifecycle)
    spec["podReplacementPolicy"] = "Failed"
    if lifecycle.deadline_seconds:
        spec["activeDeadlineSeconds"] = lifecycle.deadline_seconds
    return spec


def from_batch_job_spec(spec: dict) -> Lifecycle:
    """The rules a batch/v1 JobSpec carries (Kubernetes' defaults where a field is absent)."""
    retries = spec.get("backoffLimitPerIndex", spec.get("backoffLimit", 6))
    codes = sorted({code for rule in (spec.get("podFailurePolicy") or {}).get("rules", [])
                    if rule.get("action") == "FailJob" and (rule.get("onExitCodes") or {}).get("operator") == "In"
                    for code in rule["onExitCodes"].get("values", [])})
    return Lifecycle(retries, tuple(codes), spec.get("activeDeadlineSeconds"))


# ---- the Job controller's decision ------------------------------------------------------

@dataclass(frozen=True)
class Decision:
    fails_job: bool  # the task failed for good: its Job fails and its other pods are stopped
    counted: bool  # the failure counts against the task's budget
    delay: float  # seconds before the task's next pod is created (when the job goes on)
    reason: str


def replacement_delay(failures: int) -> float:
    """Seconds before the next pod of a task that has failed `failures` times (counted or not)."""
    return min(FIRST_DELAY_SECONDS * 2 ** max(failures - 1, 0), MAX_DELAY_SECONDS)


def after_failure(lifecycle: Lifecycle, exit_code: int, disrupted: bool, counted: int, ignored: int) -> Decision:
    """What the Job controller does when a task's pod fails, given its earlier counted and ignored failures.

    `exit_code` is the container's (128 + n when signal n killed it); `disrupted`: the pod
    has the DisruptionTarget condition.
    """
    if disrupted and lifecycle.disruptions_fail:
        return Decision(True, True, 0.0, "taken away by the cluster, which fails the job on this controller")
    if disrupted:
        return Decision(False, False, replacement_delay(counted + ignored + 1), "taken away by the cluster (not counted)")
    if exit_code in lifecycle.permanent_exit_codes:
        return Decision(True, True, 0.0, f"exit code {exit_code} is permanent")
    if counted >= lifecycle.retries_per_task:
        return Decision(True, True, 0.0, f"no retry left of {lifecycle.retries_per_task}")
    return Decision(False, True, replacement_delay(counted + ignored + 1),
                    f"retry {counted + 1} of {lifecycle.retries_per_task}")


# ---- checks ---------------------------------------------------------------------------

def check(job: TrainingJob, profile: ClusterProfile) -> list[Problem]:
    problems = []
    if job.uses_runtime and job.permanent_exit_codes:
        problems.append(Problem(
            "permanentExitCodes apply to a program of your own (spec.command); tfjobgen's runtime uses "
            f"{', '.join(map(str, contract.PERMANENT_EXIT_CODES))}: they are ignored",
            "spec.failurePolicy.permanentExitCodes", severity=WARNING))
    # No advice on what ends a program of your own's PS: the entrypoint it runs under does, on every backend
    # (its chief's DONE once the chief's program exits 0; docs/runtime.md), as the runtime's chief does.
    return problems
