"""Read rendered objects back into what each job is: roles, sizes, topology, QoS, protocol.

It works from the Kubernetes objects alone (the output of `kustomize build`),
never from the intent, so a summary or a diff shows what the cluster will get.
The objects are read through the backends' `decode`: a job looks the same here
whichever backend carries it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .. import backends
from ..concerns import labels
from ..inputs.problems import Problem
from ..kit import table
from ..shared import contract


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
    backend: str = ""
    objects: Counter = field(default_factory=Counter)
    unreadable: str = ""  # why its tasks are not described ("": they are)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def _is_guaranteed_whole_cpu(container: dict) -> bool:
    resources = container.get("resources", {})
    requests, limits = resources.get("requests", {}), resources.get("limits", {})
    return bool(requests) and requests == limits and str(requests.get("cpu", "")).isdigit()


def summarize(job: backends.DecodedJob) -> JobSummary:
    """What one decoded job is: per role its tasks and sizes, its topology, QoS and protocol."""
    summary = JobSummary(job.namespace, job.name, backend=job.backend,
                         objects=Counter(o.get("kind", "?") for o in job.objects), unreadable=job.unreadable)
    if job.unreadable:
        summary.topology = summary.qos = summary.protocol = summary.api = "?"
    for pod in job.pods:
        role = summary.roles.setdefault(pod.role, RoleSummary())
        role.replicas += 1
        requests = pod.container.get("resources", {}).get("requests", {})
        role.cpu, role.memory = str(requests.get("cpu", "")), str(requests.get("memory", ""))
        role.threads = f"{pod.env.get(contract.INTRA_OP_ENV, '?')}/{pod.env.get(contract.INTER_OP_ENV, '?')}"
    if job.pods:
        first = job.pods[0]
        summary.protocol, summary.api = first.env.get(contract.PROTOCOL_ENV, "?"), first.env.get(contract.API_ENV, "?")
        summary.topology = first.annotations.get(labels.TOPOLOGY, "?")
        guaranteed = all(_is_guaranteed_whole_cpu(c) for p in job.pods for c in p.spec.get("containers", []))
        summary.qos = "cpuset" if guaranteed else "shared"
    summary.roles = {r: summary.roles[r] for r in contract.ROLES if r in summary.roles}
    return summary


def intents_given(text: str, name: str) -> list[Problem]:
    """A problem per TrainingJob intent (or profile) in `text`: what one writes, which summary cannot describe
    (it reads what a job renders to) and would have passed over, printing an empty table."""
    from ..inputs import intents, source

    found = []
    for document in source.parse_documents(text, name):
        kind = intents.kind_of(document.data)
        if kind == "other":
            continue
        ref = intents.ref_of(document.data)
        what = " ".join(part for part in (ref.kind, ref.name) if part)
        shown = "-" if name == "<stdin>" else name
        found.append(Problem(
            f"{what} is {'an intent' if kind == 'intent' else 'a cluster profile'}, not rendered objects: summary "
            f"describes what a job renders to; render it first: tfjobgen render {shown} | tfjobgen summary (or "
            "kustomize build overlays/<cluster> | tfjobgen summary)", file=name, line=document.start_line))
    return found


def jobs(objects: list[dict]) -> list[JobSummary]:
    """One summary per job found among `objects` (whatever its backend), sorted by namespace/name."""
    return [summarize(job) for job in backends.decode(objects)]


def role_text(role: RoleSummary | None) -> str:
    if role is None:
        return "-"
    return f"{role.replicas} x {role.cpu} CPU/{role.memory}"


def table_of(summaries: list[JobSummary]) -> str:
    headers = ["JOB", "BACKEND", "TOPOLOGY", "QOS", "PROTOCOL", "PS", "WORKERS", "CHIEF", "EVALUATOR", "OBJECTS"]
    rows = [[s.key, s.backend, s.topology, s.qos, f"{s.protocol} ({s.api})",
             *(role_text(s.roles.get(role)) for role in contract.TABLE_ROLES), sum(s.objects.values())]
            for s in summaries]
    return table.render(headers, rows)

