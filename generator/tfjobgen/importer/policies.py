"""restartPolicy and the job's own policies (runPolicy, Volcano's), and the fields whose tfjobgen default would
change what the source did. Pure: Builder in, Builder filled."""

from __future__ import annotations

from ..inputs import quantity
from .builder import Builder
from .containers import REPLICA_FIELDS
from .report import CARRIED, DECIDE, DROPPED
from .sources import Refusal, Replica, Source, main_container


def _restart_policy(source: Source, replica: Replica) -> tuple[str, str]:
    """A replica's restart policy and where it was written. The TFJob operator (v1alpha2 on) sets each pod's
    restartPolicy from the replica's, Never when it has none; v1alpha1 and Volcano read the pod's own."""
    if source.replica_container == "spec.tfReplicaSpecs":
        return str(replica.data.get("restartPolicy", "Never")), (
            f"{replica.path}.restartPolicy" if "restartPolicy" in replica.data else "")
    if "restartPolicy" in replica.pod:
        return str(replica.pod["restartPolicy"]), f"{replica.pod_path}.restartPolicy"
    return "", ""


def failure_policy(b: Builder, source: Source) -> None:
    policies = {role: _restart_policy(source, r) for role, r in source.replicas.items()}
    chosen, where = policies["worker"]
    backoff = source.policies.get("backoffLimit") or source.policies.get("maxRetry")
    target = "spec.failurePolicy.backoffLimitPerTask"
    for role, replica in source.replicas.items():
        policy, at = policies[role]
        if at and policy != chosen:
            b.row(at, DECIDE, "spec.failurePolicy", f"restartPolicy {policy} differs from the worker's {chosen or '(none)'}: "
                                                    "a TrainingJob has one failure policy; the worker's was taken")
        elif at:
            b.row(at, CARRIED, "spec.failurePolicy", _POLICY_WHY.get(policy, "not a restartPolicy the operator knows"))
        if "restartPolicy" in replica.pod and at != f"{replica.pod_path}.restartPolicy":
            b.row(f"{replica.pod_path}.restartPolicy", DROPPED, "",
                  f"the operator ignores it: it sets the pod's from the replica's restartPolicy ({policy})")
    if chosen == "Never" and source.replica_container == "spec.tfReplicaSpecs":
        b.put(target, 0, where or "spec.tfReplicaSpecs", "restartPolicy Never" + ("" if where else " (the operator's default)")
              + ": the operator made no new pod for a failed task")
        if backoff:
            b.row(backoff[0], DROPPED, target, "restartPolicy Never retries nothing")
        return
    if backoff:
        value = backoff[1]
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value:
            b.carry(backoff[0], target, min(value, 100),
                    "counted per task, where the source counted retries across the job" +
                    ("; at most 100" if value > 100 else ""),
                    f"from {backoff[0].split('.')[-1]} {value}, now per task")
        else:
            b.row(backoff[0], DECIDE, target, f"{value!r} is not a count of retries")
    if chosen == "ExitCode":
        b.row(where, DECIDE, "spec.failurePolicy.permanentExitCodes",
              "ExitCode failed the job at once on exit codes 1-127; permanentExitCodes lists at most 100 codes: "
              "name the ones your program uses for a failure a new pod cannot mend")


_POLICY_WHY = {
    "Never": "a failed task fails the job: backoffLimitPerTask 0",
    "OnFailure": "a failed task is retried: tfjobgen gives it a new pod, up to backoffLimitPerTask",
    "Always": "a failed task is retried: tfjobgen gives it a new pod, up to backoffLimitPerTask; a task that "
              "succeeded stays done",
    "ExitCode": "retried on exit codes 128-255, up to backoffLimitPerTask",
}


def job_policies(b: Builder, source: Source) -> None:
    for name, (where, value) in source.policies.items():
        if name in ("backoffLimit", "maxRetry"):
            continue  # _failure_policy
        if name == "activeDeadlineSeconds":
            if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
                b.carry(where, "spec.failurePolicy.activeDeadlineSeconds", value)
            else:
                b.row(where, DECIDE, "spec.failurePolicy.activeDeadlineSeconds", f"{value!r} is not a number of seconds")
        elif name == "schedulingPolicy" and isinstance(value, dict) and value:
            for key in value:
                b.row(f"{where}.{key}", DECIDE, "ClusterProfile spec.gang",
                      f"{key}: gang admission (minAvailable, queue, priority) is the cluster profile's spec.gang, "
                      "the same for every job of the cluster")
        else:
            outcome, target, why = _JOB_POLICIES.get(name, (DECIDE, "", "no TrainingJob field holds it"))
            b.row(where, outcome, target, why)
    spec = source.data.get("spec") or {}
    run_policy = spec.get("runPolicy") if isinstance(spec.get("runPolicy"), dict) else None
    if run_policy is not None and not run_policy:
        b.row("spec.runPolicy", DROPPED, "", "empty")
    if "successPolicy" in spec:
        value = spec["successPolicy"]
        if value in ("", None, "Default"):
            b.row("spec.successPolicy", CARRIED, "", "the default: the job succeeds when its chief (or worker 0) does, "
                                                     "as a TrainingJob does")
        else:
            b.row("spec.successPolicy", DECIDE, "", f"{value}: a TrainingJob succeeds when its chief (or worker 0) "
                                                    "does, and has no field for another rule")
    listed = {where for where, _ in source.policies.values()}
    for key in sorted(set(spec) - {"tfReplicaSpecs", "replicaSpecs", "tasks", "runPolicy", "successPolicy"}):
        if f"spec.{key}" not in listed:
            b.row(f"spec.{key}", *_JOB_POLICIES.get(key, (DECIDE, "", "no TrainingJob field holds it")))
    if run_policy:
        for key in sorted(set(run_policy) - {w.split(".")[-1] for w in listed if w.startswith("spec.runPolicy.")}):
            b.row(f"spec.runPolicy.{key}", DECIDE, "", "no TrainingJob field holds it")


_JOB_POLICIES = {
    "cleanPodPolicy": (DROPPED, "", "a TrainingJob's tasks end with the job: the chief (tfjobgen's runtime) or "
                                    "spec.failurePolicy.activeDeadlineSeconds ends running PS and workers, and the "
                                    "Jobs keep their finished pods for their logs"),
    "ttlSecondsAfterFinished": (DROPPED, "", "Argo CD owns the objects' lifetime: a finished job is removed by "
                                             "deleting its file (a TTL would have self-heal recreate it)"),
    "suspend": (DROPPED, "", "admission is Kueue's or the profile's gang (spec.gang)"),
    "managedBy": (DROPPED, "", "tfjobgen's objects are managed by their own controllers"),
    "enableDynamicWorker": (DROPPED, "", "a TrainingJob's workers are fixed in number"),
    "minAvailable": (DECIDE, "ClusterProfile spec.gang", "gang admission is the cluster profile's spec.gang"),
    "queue": (DECIDE, "ClusterProfile spec.gang", "the queue is the cluster profile's (spec.gang)"),
    "schedulerName": (DECIDE, "ClusterProfile spec.gang", "the scheduler is the cluster profile's (spec.gang)"),
    "priorityClassName": (DECIDE, "ClusterProfile spec.priorityClasses", "PriorityClasses are the profile's"),
    "policies": REPLICA_FIELDS["policies"],
    "plugins": (DROPPED, "", "svc, env, ssh: tfjobgen makes the headless Service and TF_CONFIG itself; the "
                             "tensorflow plugin's task names were read for the roles"),
    "volumes": (DECIDE, "spec.volumes (missing)", "a TrainingJob has no volumes yet"),
    "schedulingPolicy": (DROPPED, "", "empty"),
}


def write_choices(b: Builder, source: Source) -> None:
    """The fields whose tfjobgen default would change what the source did: written out, each with why."""
    guaranteed = all(_whole_guaranteed(r) for r in source.replicas.values())
    b.put("spec.qos", "shared", note="shared: CPU requests as the source had them" +
          ("; its pods were Guaranteed with whole CPUs, so cpuset (exclusive cores on the profile's CPU-manager "
           "nodes) would fit them" if guaranteed else "; cpuset (the default) needs whole CPUs and "
           "Guaranteed pods"))
    b.put("spec.topology.mode", "none", note="none: the scheduler places the pods, as for the source; spread "
                                             "(the default) also keeps PS apart")
    b.put("spec.readOnlyRootFilesystem", False, note="false: the source's containers could write anywhere; true "
                                                     "(the default) leaves only /tmp writable")
    b.put("spec.backend", "native", note="native: plain Jobs, no operator; tfjob keeps a Kubeflow TFJob")


def _whole_guaranteed(replica: Replica) -> bool:
    found = main_container(replica)
    if isinstance(found, Refusal):
        return False
    resources = found[1].get("resources") or {}
    requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
    cpu = quantity.parse(limits.get("cpu", "")) if "cpu" in limits else None
    return (cpu is not None and cpu.denominator == 1 and cpu > 0 and "memory" in limits and
            all(quantity.parse(requests.get(k, limits[k])) == quantity.parse(limits[k]) for k in ("cpu", "memory")))
