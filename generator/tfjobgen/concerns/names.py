"""Every name a job's objects and pods get: the objects' names, each backend's scheme for its pods
(`Naming`), and the one DNS rule they all obey (`check`).

The objects a job becomes are named alike on every backend: the headless Service `<job>` (every
pod's subdomain), the ConfigMap `<job>-cluster`, the NetworkPolicy `<job>`, and the add-ons'.

Its pods are named by their controller, each its own way, and TF_CONFIG lists every task's host:port,
so the plan must know those names before any object exists: an Indexed Job names its pods' hosts
`<job-name>-<index>` (native: task i of role r is `<job>-<r>-<i>`), JobSet's child Jobs
`<jobset>-<rjob>-<j>-<i>` (`<job>-<r>-0-<i>`), Kubeflow's TFJob operator `<tfjob>-<type>-<i>`. Each
backend describes its scheme with one `Naming` (its NAMING); the plan and the concern modules use
nothing else of a backend.

A task's address is relative to the namespace where tfjobgen writes TF_CONFIG,
`<host>.<job>:<port>`: every pod's resolv.conf searches `<namespace>.svc.<clusterDomain>` first
(ndots 5), so the name resolves to exactly that pod, in whatever namespace the job runs, with
whatever cluster domain; and the cluster spec that every pod carries twice in its environment stays
about 40% shorter than with fully qualified names (limits.py). The TFJob operator writes its own,
`<host>.<namespace>.svc:<port>`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..inputs.problems import Problem
from ..inputs.profile import ClusterProfile
from ..inputs.trainingjob import TrainingJob

DNS_LABEL_MAX = 63  # the schema checks the characters; this module checks what names grow into
DNS_NAME_MAX = 253  # a whole DNS name, its labels and dots (RFC 1035's 255 octets on the wire)


@dataclass(frozen=True)
class Naming:
    """What a backend's controller calls each task's pod, and tells it: the part of a backend the plan needs."""

    # The pod's hostname for task `index` of `role`.
    hostname: Callable[[TrainingJob, str, int], str]
    # host:port of the task's TF server, exactly as TF_CONFIG lists it.
    address: Callable[[TrainingJob, ClusterProfile, str, int], str]
    # The env source of the task index in a template that all tasks of a role share
    # (an Indexed Job's completion index, say): the `valueFrom` of an env entry.
    index_source: Callable[[str], dict]
    # The env source, in such a shared template, of how often the task failed before (an
    # Indexed Job's failure-count annotation); None when the controller does not say.
    failures_source: dict | None = None
    # True when the controller writes TF_CONFIG into the pods itself (Kubeflow's TFJob).
    writes_tf_config: bool = False
    # True when that TF_CONFIG's `cluster` lists the evaluator too (the TFJob operator lists every
    # replica type); tfjobgen's own TF_CONFIG lists the training roles only.
    evaluator_in_cluster: bool = False
    # The name of the TF server's container port (the TFJob operator reads `tfjob-port`).
    grpc_port_name: str = "grpc"


def service(job: TrainingJob) -> str:
    """The headless Service, also every pod's subdomain."""
    return job.name


def cluster_config(job: TrainingJob) -> str:
    """ConfigMap with the TF cluster spec (and StarServer's endpoint map)."""
    return f"{job.name}-cluster"


def network_policy(job: TrainingJob) -> str:
    return job.name


def dashboard(job: TrainingJob) -> str:
    """The ConfigMap holding the job's Grafana dashboard (monitoring.py)."""
    return f"{job.name}-dashboard"


def tensorboard(job: TrainingJob) -> str:
    """The job's TensorBoard Deployment, Service and NetworkPolicy (tensorboard.py)."""
    return f"{job.name}-tensorboard"


def pods_pattern(job: TrainingJob, roles: tuple[str, ...] | None = None) -> str:
    """A regular expression for the names of the job's pods as their controllers name them: the Job
    controller's `<job>-<role>-<index>-<random suffix>` (an Indexed Job `<job>-<role>` adds the index,
    a Job per task is already `<job>-<role>-<index>`; JobSet's child Jobs too) and the TFJob operator's
    `<job>-<role>-<index>`, without a suffix. Metrics that know pods only by name select with it.
    `roles`: only those roles' pods (default: every role's)."""
    return f"{job.name}-({'|'.join(roles or job.roles)})-[0-9]+(-.+)?"


def role_workload(job: TrainingJob, role: str) -> str:
    """An Indexed Job running all tasks of a role; Kubernetes names its pods' hosts `<this>-<i>`."""
    return f"{job.name}-{role}"


def task(job: TrainingJob, role: str, index: int) -> str:
    """A task's hostname, and the name of its own Job when it has one."""
    return f"{job.name}-{role}-{index}"


def task_address(job: TrainingJob, role: str, index: int, port: int) -> str:
    """host:port of a task, relative to the job's namespace (resolved through the pod's DNS search path)."""
    return f"{task(job, role, index)}.{service(job)}:{port}"


def fully_qualified(job: TrainingJob, profile: ClusterProfile, host: str) -> str:
    """A host of TF_CONFIG as its fully qualified DNS name: `<pod>.<service>` (relative to the
    namespace) or `<pod>.<namespace>.svc` (as Kubeflow's TFJob operator writes it)."""
    if host.endswith(f".{job.namespace}.svc"):
        return f"{host}.{profile.cluster_domain}"
    return f"{host}.{job.namespace}.svc.{profile.cluster_domain}"


def check(job: TrainingJob, naming: Naming) -> list[Problem]:
    """The longest name the job's backend makes must fit a DNS label (pod hostnames, Service names, label
    values): the one rule for every backend, each naming its pods' hosts its own way (its Naming)."""
    generated = [naming.hostname(job, role.name, role.replicas - 1) for role in job.roles.values()]
    generated += [cluster_config(job)] + ([tensorboard(job)] if job.tensorboard else [])
    longest = max(generated, key=len)
    if len(longest) <= DNS_LABEL_MAX:
        return []
    room = DNS_LABEL_MAX - (len(longest) - len(job.name))
    return [Problem(
        f"'{job.name}' makes the generated name '{longest}' {len(longest)} characters long; "
        f"Kubernetes allows {DNS_LABEL_MAX}: shorten the name to at most {room} characters",
        "metadata.name",
    )]


def check_fully_qualified(job: TrainingJob, profile: ClusterProfile, naming: Naming) -> list[Problem]:
    """Each task's name, resolved through the pod's DNS search path, ends in the namespace and the profile's
    clusterDomain: the longest, `<pod>.<service>.<namespace>.svc.<clusterDomain>`, must fit a DNS name, or
    no lookup of it (TF_CONFIG's, StarServer's endpoint map) succeeds."""
    hosts = [f"{naming.hostname(job, role.name, role.replicas - 1)}.{service(job)}" for role in job.roles.values()]
    longest = max((fully_qualified(job, profile, host) for host in hosts), key=len)
    if len(longest) <= DNS_NAME_MAX:
        return []
    return [Problem(
        f"a task's fully qualified name, '{longest}', would be {len(longest)} characters; DNS allows "
        f"{DNS_NAME_MAX}: shorten metadata.name, metadata.namespace or the profile's clusterDomain "
        f"('{profile.cluster_domain}')", "metadata.name")]
