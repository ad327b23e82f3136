"""Read rendered objects back into what each job is: roles, sizes, topology, QoS, protocol.

It works from the Kubernetes objects alone (the output of `kustomize build`),
never from the intent, so a summary or a diff shows what the cluster will get.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from . import labels, table
from .model import ROLE_ORDER


@dataclass
class RoleSummary:
    replicas: int = 0
    cpu: str = ""
    memory: str = ""
    threads: str = ""  # "intra/inter"


@dataclass
class JobSummary:
    namespace: str
    name: str
    roles: dict[str, RoleSummary] = field(default_factory=dict)
    topology: str = "none"
    qos: str = "shared"
    protocol: str = ""
    api: str = ""
    objects: Counter = field(default_factory=Counter)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def _container(job_object: dict) -> dict:
    return job_object["spec"]["template"]["spec"]["containers"][0]


def _env(container: dict) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in container.get("env", [])}


def _topology(pod_specs: dict[str, dict]) -> str:
    ps_affinity = pod_specs.get("ps", {}).get("affinity", {})
    worker_affinity = pod_specs.get("worker", {}).get("affinity", {})
    if worker_affinity.get("podAffinity"):
        return "colocated"
    anti = ps_affinity.get("podAntiAffinity", {})
    required = anti.get("requiredDuringSchedulingIgnoredDuringExecution", [])
    if required and "matchExpressions" in required[0]["labelSelector"]:
        return "isolated"
    if required:
        return "spread (required)"
    if anti.get("preferredDuringSchedulingIgnoredDuringExecution"):
        return "spread"
    return "none"


def _is_guaranteed_whole_cpu(container: dict) -> bool:
    resources = container.get("resources", {})
    requests, limits = resources.get("requests", {}), resources.get("limits", {})
    return bool(requests) and requests == limits and str(requests.get("cpu", "")).isdigit()


def jobs(objects: list[dict]) -> list[JobSummary]:
    """One summary per job found among `objects` (by the tfjobgen.dev/job label), sorted by namespace/name."""
    found: dict[tuple[str, str], JobSummary] = {}
    pod_specs: dict[tuple[str, str], dict[str, dict]] = {}
    guaranteed: dict[tuple[str, str], list[bool]] = {}
    for obj in objects:
        meta = obj.get("metadata", {})
        name = meta.get("labels", {}).get(labels.JOB)
        if not name:
            continue
        key = (meta.get("namespace", ""), name)
        summary = found.setdefault(key, JobSummary(*key))
        summary.objects[obj.get("kind", "?")] += 1
        if obj.get("kind") != "Job":
            continue
        role = meta["labels"].get(labels.ROLE, "?")
        container = _container(obj)
        spec = obj["spec"]
        role_summary = summary.roles.setdefault(role, RoleSummary())
        role_summary.replicas += spec.get("completions", 1)
        requests = container.get("resources", {}).get("requests", {})
        role_summary.cpu, role_summary.memory = str(requests.get("cpu", "")), str(requests.get("memory", ""))
        env = _env(container)
        role_summary.threads = f"{env.get('TF_NUM_INTRAOP_THREADS', '?')}/{env.get('TF_NUM_INTEROP_THREADS', '?')}"
        summary.protocol, summary.api = env.get("TFJOBGEN_PROTOCOL", "?"), env.get("TFJOBGEN_API", "?")
        pod_specs.setdefault(key, {}).setdefault(role, obj["spec"]["template"]["spec"])
        guaranteed.setdefault(key, []).append(_is_guaranteed_whole_cpu(container))
    for key, summary in found.items():
        summary.topology = _topology(pod_specs.get(key, {}))
        summary.qos = "cpuset" if guaranteed.get(key) and all(guaranteed[key]) else "shared"
        summary.roles = {r: summary.roles[r] for r in ROLE_ORDER if r in summary.roles}
    return [found[k] for k in sorted(found)]


def role_text(role: RoleSummary | None) -> str:
    if role is None:
        return "-"
    return f"{role.replicas} x {role.cpu} CPU/{role.memory}"


def table_of(summaries: list[JobSummary]) -> str:
    headers = ["JOB", "TOPOLOGY", "QOS", "PROTOCOL", "PS", "WORKERS", "CHIEF", "EVALUATOR", "OBJECTS"]
    rows = [[s.key, s.topology, s.qos, f"{s.protocol} ({s.api})", role_text(s.roles.get("ps")),
             role_text(s.roles.get("worker")), role_text(s.roles.get("chief")), role_text(s.roles.get("evaluator")),
             sum(s.objects.values())] for s in summaries]
    return table.render(headers, rows)

