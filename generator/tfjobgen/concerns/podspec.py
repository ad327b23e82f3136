"""What an intent writes into its training pods beside tfjobgen's own: pull secrets, the pods' own labels and
annotations (spec.podMetadata), and a nodeSelector and tolerations merged with the profile's placement.

Who wins where both speak:

    labels, annotations   tfjobgen's and the controllers' keys are refused (RESERVED); a podMetadata label
                          wins over the same key of metadata.labels, on the pods only
    nodeSelector          the profile's (node pool, CPU-manager nodes, GPU pool); the same key with another
                          value is refused, since the pod would need both and could run nowhere
    tolerations           both: the job's are added after the profile's (a toleration only admits)
"""

from __future__ import annotations

from ..inputs.kubernetes_syntax import ANNOTATIONS_MAX, KEY_RULE, check_map, check_tolerations, key_name_problem
from ..inputs.problems import Problem, field_path
from ..inputs.profile import ClusterProfile
from ..inputs.trainingjob import TrainingJob
from . import qos, topology

# Pod label and annotation keys that tfjobgen, the pods' controllers (Job, JobSet, the training operator) and
# the gang schedulers set and read back: selectors, placement rules, gang admission and `status` rely on them.
RESERVED_PREFIXES = ("tfjobgen.dev/", "batch.kubernetes.io/", "jobset.sigs.k8s.io/", "training.kubeflow.org/",
                     "kueue.x-k8s.io/", "scheduling.x-k8s.io/", "scheduling.k8s.io/", "volcano.sh/")
RESERVED_KEYS = ("app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/component",
                 "app.kubernetes.io/managed-by", "job-name", "controller-uid")
HOSTNAME = "kubernetes.io/hostname"
SERVER_TOPOLOGIES = ("colocated", "isolated", "spread")  # the ones that place PS on servers of their own
# Taints the node lifecycle controller sets on a lost node: a pod tolerating them with NoExecute forever
# stays bound to the dead node, and its task is never replaced.
LOST_NODE_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")


def pull_secrets(job: TrainingJob) -> list[dict]:
    """spec.imagePullSecrets as a pod spec holds them."""
    return [{"name": name} for name in job.image_pull_secrets]


def labels(job: TrainingJob) -> dict[str, str]:
    return dict(job.pod_labels)


def annotations(job: TrainingJob) -> dict[str, str]:
    return dict(job.pod_annotations)


def node_selector(job: TrainingJob, profile_selector: dict[str, str]) -> dict[str, str]:
    """The profile's selector for a pod, with the job's keys added (check refuses a key both set differently)."""
    return {**job.node_selector, **profile_selector}


def tolerations(job: TrainingJob) -> tuple[dict, ...]:
    return job.tolerations


def reserved(key: str) -> bool:
    lowered = key.lower()  # the API server compares annotation prefixes lower-cased
    return lowered.startswith(RESERVED_PREFIXES) or key in RESERVED_KEYS


def check(job: TrainingJob, profile: ClusterProfile) -> list[Problem]:
    return _check_metadata(job) + _check_node_selector(job, profile) + _check_tolerations(job)


def _check_metadata(job: TrainingJob) -> list[Problem]:
    problems = check_map(job.pod_labels, "spec", "podMetadata", "labels")
    for key in job.pod_annotations:
        wrong = key_name_problem(key, lower_prefix=True)
        if wrong:
            problems.append(Problem(f"annotation key '{key}' is not valid: {wrong} ({KEY_RULE})",
                                    field_path("spec", "podMetadata", "annotations", key)))
    for kind, found in (("labels", job.pod_labels), ("annotations", job.pod_annotations)):
        for key in found:
            if reserved(key):
                problems.append(Problem(
                    f"tfjobgen or the pods' controller sets '{key}' on the pods itself, and its selectors, placement, "
                    "gang admission or status read it back: choose a key of your own (example.com/...)",
                    field_path("spec", "podMetadata", kind, key)))
    size = sum(len(k.encode()) + len(v.encode()) for k, v in job.pod_annotations.items())
    if size > ANNOTATIONS_MAX:
        problems.append(Problem(f"the pod annotations are {size:,} bytes; Kubernetes allows {ANNOTATIONS_MAX:,} per "
                                "object, keys and values together", "spec.podMetadata.annotations"))
    return problems


def _check_node_selector(job: TrainingJob, profile: ClusterProfile) -> list[Problem]:
    problems = check_map(job.node_selector, "spec", "nodeSelector")
    if HOSTNAME in job.node_selector and job.topology.mode in SERVER_TOPOLOGIES:
        problems.append(Problem(
            f"{HOSTNAME} puts every pod on one node, which breaks topology {job.topology.mode} (PS on servers of "
            "their own): use a node label that many nodes share, or topology none",
            field_path("spec", "nodeSelector", HOSTNAME)))
    if not job.node_selector or any(pool not in profile.node_pools for pool in job.topology.node_pools.values()):
        return problems  # nothing to merge, or a pool the profile lacks (topology.check says so)
    cpu_nodes, _ = qos.node_selection(job, profile)
    for role in job.roles:
        theirs = {**topology.placement(job, profile, role, 0).node_selector, **cpu_nodes}
        for key, value in job.node_selector.items():
            if key in theirs and theirs[key] != value:
                problems.append(Problem(
                    f"the cluster profile '{profile.name}' sends {role} pods to nodes with {key}={theirs[key]} (its "
                    f"node pools or CPU-manager nodes), and a pod needing {key}={value} as well could run nowhere: "
                    "the profile's placement wins; remove the key, or pick another node pool "
                    "(spec.topology.nodePools)", field_path("spec", "nodeSelector", key)))
                break
    return problems


def _check_tolerations(job: TrainingJob) -> list[Problem]:
    problems = check_tolerations(job.tolerations, "spec", "tolerations")
    for i, toleration in enumerate(job.tolerations):
        key, effect = toleration.get("key", ""), toleration.get("effect", "")
        if not key and toleration.get("operator") == "Exists":
            problems.append(Problem(
                "tolerates every taint, node.kubernetes.io/unreachable and not-ready (NoExecute) among them: a task "
                "on a lost node would never be evicted and replaced; name the taint to tolerate",
                field_path("spec", "tolerations", i)))
        elif key in LOST_NODE_TAINTS and effect in ("", "NoExecute") and "tolerationSeconds" not in toleration:
            problems.append(Problem(
                f"tolerating {key} (NoExecute) for ever keeps a task bound to a lost node, never replaced: set "
                "tolerationSeconds (how long to wait for the node), or remove the toleration",
                field_path("spec", "tolerations", i)))
    return problems
