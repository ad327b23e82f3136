"""A small model of the kube-scheduler, to check what placement rules *do*.

It honours what tfjobgen emits: resource requests, nodeSelector, NoSchedule
taints and tolerations, required pod affinity and anti-affinity (including the
symmetric rule: an existing pod's required anti-affinity also repels newcomers),
and preferred anti-affinity as a score. Among feasible nodes it prefers the
least allocated one, like the default scheduler's spreading score, so that
without affinity rules pods scatter instead of landing together by luck.
Pods that fit nowhere stay pending and are retried after others are placed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from tfjobgen import quantity
from tfjobgen.pods import Pod

HOSTNAME = "kubernetes.io/hostname"


@dataclass
class Node:
    name: str
    cpu: Fraction
    memory: Fraction
    labels: dict = field(default_factory=dict)
    taints: list = field(default_factory=list)
    pods: list = field(default_factory=list)

    def __post_init__(self):
        self.labels = {HOSTNAME: self.name, **self.labels}

    def used(self) -> tuple[Fraction, Fraction]:
        return (sum((_requests(p)[0] for p in self.pods), Fraction(0)),
                sum((_requests(p)[1] for p in self.pods), Fraction(0)))


def nodes(count: int, cpu="80", memory="256Gi", prefix="node", labels=None, taints=None) -> list[Node]:
    return [Node(f"{prefix}-{i:02d}", quantity.parse(cpu), quantity.parse(memory), dict(labels or {}),
                 list(taints or [])) for i in range(count)]


def _requests(pod: Pod) -> tuple[Fraction, Fraction]:
    requests = pod.spec["containers"][0].get("resources", {}).get("requests", {})
    return quantity.parse(requests.get("cpu", 0)), quantity.parse(requests.get("memory", 0))


def _matches(selector: dict, labels: dict) -> bool:
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for expr in selector.get("matchExpressions", []):
        key, op, values = expr["key"], expr["operator"], expr.get("values", [])
        ok = {"In": key in labels and labels[key] in values, "NotIn": labels.get(key) not in values,
              "Exists": key in labels, "DoesNotExist": key not in labels}[op]
        if not ok:
            return False
    return True


def _pods_in_domain(cluster: list[Node], node: Node, key: str) -> list[Pod]:
    value = node.labels.get(key)
    return [p for n in cluster if n.labels.get(key) == value for p in n.pods]


def _terms(pod: Pod, kind: str, strength: str) -> list:
    return pod.spec.get("affinity", {}).get(kind, {}).get(f"{strength}DuringSchedulingIgnoredDuringExecution", [])


def _feasible(pod: Pod, node: Node, cluster: list[Node]) -> bool:
    cpu, memory = _requests(pod)
    used_cpu, used_memory = node.used()
    if used_cpu + cpu > node.cpu or used_memory + memory > node.memory:
        return False
    if any(node.labels.get(k) != v for k, v in pod.spec.get("nodeSelector", {}).items()):
        return False
    tolerations = pod.spec.get("tolerations", [])
    for taint in node.taints:
        if not any(t.get("key") == taint["key"] and (t.get("operator") == "Exists" or t.get("value") == taint["value"])
                   for t in tolerations):
            return False
    everyone = [p for n in cluster for p in n.pods]
    for term in _terms(pod, "podAffinity", "required"):
        here = _pods_in_domain(cluster, node, term["topologyKey"])
        if not any(_matches(term["labelSelector"], p.labels) for p in here):
            # Kubernetes lets the first pod of a self-matching group through.
            if any(_matches(term["labelSelector"], p.labels) for p in everyone) or \
                    not _matches(term["labelSelector"], pod.labels):
                return False
    for term in _terms(pod, "podAntiAffinity", "required"):
        if any(_matches(term["labelSelector"], p.labels) for p in _pods_in_domain(cluster, node, term["topologyKey"])):
            return False
    for other_node in cluster:  # symmetry: existing pods' required anti-affinity
        for other in other_node.pods:
            for term in _terms(other, "podAntiAffinity", "required"):
                same_domain = other_node.labels.get(term["topologyKey"]) == node.labels.get(term["topologyKey"])
                if same_domain and _matches(term["labelSelector"], pod.labels):
                    return False
    return True


def _score(pod: Pod, node: Node, cluster: list[Node]) -> float:
    score = 0.0
    for preferred in _terms(pod, "podAntiAffinity", "preferred"):
        term = preferred["podAffinityTerm"]
        clashes = sum(_matches(term["labelSelector"], p.labels)
                      for p in _pods_in_domain(cluster, node, term["topologyKey"]))
        score -= preferred["weight"] * clashes
    used_cpu, used_memory = node.used()
    free = (1 - used_cpu / node.cpu + 1 - used_memory / node.memory) / 2
    return score + float(free)  # least allocated wins ties between rules


def schedule(pods: list[Pod], cluster: list[Node]) -> list[Pod]:
    """Place pods onto `cluster` (mutating node.pods); returns the pods left pending."""
    pending = list(pods)
    progress = True
    while pending and progress:
        progress = False
        for pod in list(pending):
            candidates = [n for n in cluster if _feasible(pod, n, cluster)]
            if candidates:
                best = max(candidates, key=lambda n: (_score(pod, n, cluster), [-ord(c) for c in n.name]))
                best.pods.append(pod)
                pending.remove(pod)
                progress = True
    return pending


def layout(cluster: list[Node]) -> dict[str, list[tuple[str, int]]]:
    """node name -> sorted (role, index) of the pods it runs."""
    return {n.name: sorted((p.role, p.index) for p in n.pods) for n in cluster if n.pods}
