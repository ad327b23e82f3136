"""What the simulated scheduler sees: nodes, pods and their compiled selectors and terms.

Pods come from `tfjobgen.backends.pods_of(objects)` (any backend's decode), so
the simulation never reads batch/v1 Jobs or any other workload kind itself.
Everything here is parsed once per pod: label selectors, inter-pod affinity
terms (with the namespaces they apply to), topology spread constraints, node
selection, tolerations, requests and priority.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Callable

from tfjobgen import quantity
from tfjobgen.labels import JOB as JOB_LABEL
from tfjobgen.pods import Pod

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
NAMESPACE_NAME = "kubernetes.io/metadata.name"  # every namespace carries its own name as a label
# NodeResourcesFit scores a container without requests as if it asked for this much.
DEFAULT_CPU_MILLI, DEFAULT_MEMORY = 100, 200 * 1024 * 1024
MAX_PODS = 110  # the kubelet's default pod limit per node

_uids = itertools.count(1)


# ---- label selectors -----------------------------------------------------------------------

@dataclass(frozen=True)
class Selector:
    """A compiled metav1.LabelSelector: requirements that must all hold. `nothing` matches no pod."""

    requirements: tuple[tuple[str, str, frozenset], ...] = ()
    nothing: bool = False

    def __post_init__(self):
        object.__setattr__(self, "_hash", hash((self.requirements, self.nothing)))

    def __hash__(self) -> int:  # selectors key the counts: hash once
        return self._hash

    def matches(self, labels: dict[str, str]) -> bool:
        if self.nothing:
            return False
        for key, operator, values in self.requirements:
            if operator == "In":
                if key not in labels or labels[key] not in values:
                    return False
            elif operator == "NotIn":
                if key in labels and labels[key] in values:
                    return False
            elif operator == "Exists":
                if key not in labels:
                    return False
            elif key in labels:  # DoesNotExist
                return False
        return True


NOTHING = Selector(nothing=True)
EVERYTHING = Selector()


def selector(spec: dict | None) -> Selector:
    """LabelSelectorAsSelector: a nil selector matches nothing, an empty one everything."""
    if spec is None:
        return NOTHING
    requirements = [(k, "In", frozenset([v])) for k, v in sorted(spec.get("matchLabels", {}).items())]
    for expression in spec.get("matchExpressions", []):
        requirements.append((expression["key"], expression["operator"], frozenset(expression.get("values", ()))))
    return Selector(tuple(sorted(requirements, key=lambda r: (r[0], r[1], sorted(r[2])))))


# ---- inter-pod affinity terms --------------------------------------------------------------

@dataclass(frozen=True)
class Term:
    """A PodAffinityTerm, resolved against the pod that carries it.

    Namespaces: the term's list, plus every namespace its namespaceSelector selects;
    with neither, the carrying pod's own namespace (the API's documented default).
    """

    namespaces: frozenset[str]
    namespace_selector: Selector  # NOTHING when the term has none
    selector: Selector
    topology_key: str

    def __post_init__(self):
        key = (self.namespaces, self.namespace_selector, self.selector)
        object.__setattr__(self, "key", key)  # what the term matches, without where: counts are kept per key
        object.__setattr__(self, "_hash", hash((key, self.topology_key)))

    def __hash__(self) -> int:
        return self._hash

    def matches(self, pod: "SimPod", namespace_labels: Callable[[str], dict]) -> bool:
        """Term.Matches: the pod is in one of the term's namespaces and its labels match the selector."""
        if pod.namespace not in self.namespaces:
            ns_selector = self.namespace_selector
            if ns_selector.nothing or (ns_selector.requirements and
                                       not ns_selector.matches(namespace_labels(pod.namespace))):
                return False
        return self.selector.matches(pod.labels)


def term(spec: dict, owner_namespace: str) -> Term:
    namespaces = frozenset(spec.get("namespaces") or ())
    ns_selector = spec.get("namespaceSelector")
    if not namespaces and ns_selector is None:
        namespaces = frozenset([owner_namespace])
    return Term(namespaces, selector(ns_selector) if ns_selector is not None else NOTHING,
                selector(spec.get("labelSelector")), spec["topologyKey"])


@dataclass(frozen=True)
class SpreadConstraint:
    max_skew: int
    topology_key: str
    hard: bool  # DoNotSchedule (a filter) or ScheduleAnyway (a score)
    selector: Selector
    min_domains: int = 1
    honor_node_affinity: bool = True  # nodeAffinityPolicy, Honor by default
    honor_taints: bool = False  # nodeTaintsPolicy, Ignore by default


def spread_constraint(spec: dict, pod_labels: dict) -> SpreadConstraint:
    compiled = selector(spec.get("labelSelector"))
    keys = [k for k in spec.get("matchLabelKeys", ()) if k in pod_labels]
    if keys:
        compiled = Selector(compiled.requirements + tuple((k, "In", frozenset([pod_labels[k]])) for k in keys))
    return SpreadConstraint(spec["maxSkew"], spec["topologyKey"], spec["whenUnsatisfiable"] == "DoNotSchedule",
                            compiled, spec.get("minDomains", 1), spec.get("nodeAffinityPolicy", "Honor") == "Honor",
                            spec.get("nodeTaintsPolicy", "Ignore") == "Honor")


# ---- nodes -------------------------------------------------------------------------------------

@dataclass
class SimNode:
    name: str
    cpu: int  # allocatable millicores
    memory: int  # allocatable bytes
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[dict, ...] = ()
    max_pods: int = MAX_PODS

    def __post_init__(self):
        self.labels = {HOSTNAME: self.name, **self.labels}


def nodes(count: int, cpu: Any = 80, memory: Any = "256Gi", prefix: str = "node", labels: dict | None = None,
          taints: list | None = None) -> list[SimNode]:
    """`count` identical nodes named <prefix>-00, <prefix>-01, ... (cpu and memory as Kubernetes quantities)."""
    return [SimNode(f"{prefix}-{i:02d}", millicores(cpu), rounded_up(memory), dict(labels or {}), tuple(taints or ()))
            for i in range(count)]


def millicores(value: Any) -> int:
    """A CPU quantity as the scheduler counts it (Quantity.MilliValue, rounded up)."""
    return math.ceil(quantity.parse(value) * 1000)


def rounded_up(value: Any) -> int:
    """A quantity as a whole number (Quantity.Value, rounded up): memory in bytes."""
    return math.ceil(quantity.parse(value))


# ---- node selection and taints --------------------------------------------------------------

def node_term_matches(spec: dict, labels: dict) -> bool:
    """One NodeSelectorTerm: all its matchExpressions hold (matchFields: metadata.name only)."""
    for expression in spec.get("matchExpressions", []):
        key, operator, values = expression["key"], expression["operator"], expression.get("values", [])
        value = labels.get(key)
        ok = {"In": key in labels and value in values, "NotIn": value not in values,
              "Exists": key in labels, "DoesNotExist": key not in labels,
              "Gt": key in labels and value.isdigit() and int(value) > int(values[0]),
              "Lt": key in labels and value.isdigit() and int(value) < int(values[0])}[operator]
        if not ok:
            return False
    for expression in spec.get("matchFields", []):
        if expression["key"] == "metadata.name":
            name = labels.get(HOSTNAME)
            if (expression["operator"] == "In") != (name in expression.get("values", [])):
                return False
    return bool(spec.get("matchExpressions") or spec.get("matchFields"))


def tolerates(tolerations: tuple[dict, ...], taint: dict) -> bool:
    """v1.Toleration.ToleratesTaint: effect, key and value (Exists ignores the value)."""
    for toleration in tolerations:
        if toleration.get("effect") and toleration["effect"] != taint["effect"]:
            continue
        if toleration.get("key") and toleration["key"] != taint["key"]:
            continue
        if toleration.get("operator", "Equal") == "Exists" or toleration.get("value", "") == taint.get("value", ""):
            return True
    return False


# ---- pods -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PriorityClass:
    name: str
    value: int
    preempts: bool = True  # preemptionPolicy PreemptLowerPriority (the default) or Never
    global_default: bool = False  # the class of pods that name none


class AdmissionError(Exception):
    """The API server would refuse to create the pod (say, its PriorityClass does not exist)."""


class PodSpec:
    """What the scheduler reads from a pod, parsed once per pod (its replacements share it)."""

    def __init__(self, pod: Pod):
        spec = pod.spec
        self.name, self.namespace, self.labels = pod.hostname, pod.namespace, pod.labels
        self.role, self.index = pod.role, pod.index
        self.job = pod.labels.get(JOB_LABEL, "")  # "" for pods tfjobgen did not make
        self.cpu, self.memory, self.nonzero_cpu, self.nonzero_memory = _requests(spec)
        self.node_selector = dict(spec.get("nodeSelector", {}))
        affinity = spec.get("affinity", {})
        node_affinity = affinity.get("nodeAffinity", {})
        required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        self.node_terms = tuple(required["nodeSelectorTerms"]) if required else None
        self.preferred_node_terms = tuple(
            (p["weight"], p["preference"]) for p in node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution", []))
        self.tolerations = tuple(spec.get("tolerations", ()))
        pod_affinity, anti_affinity = affinity.get("podAffinity", {}), affinity.get("podAntiAffinity", {})
        required_key, preferred_key = ("requiredDuringSchedulingIgnoredDuringExecution",
                                       "preferredDuringSchedulingIgnoredDuringExecution")
        self.affinity = tuple(term(t, self.namespace) for t in pod_affinity.get(required_key, []))
        self.anti_affinity = tuple(term(t, self.namespace) for t in anti_affinity.get(required_key, []))
        self.preferred_affinity = tuple((p["weight"], term(p["podAffinityTerm"], self.namespace))
                                        for p in pod_affinity.get(preferred_key, []))
        self.preferred_anti_affinity = tuple((p["weight"], term(p["podAffinityTerm"], self.namespace))
                                             for p in anti_affinity.get(preferred_key, []))
        self.spread = tuple(spread_constraint(c, self.labels) for c in spec.get("topologySpreadConstraints", []))
        self.hard_spread_count = sum(c.hard for c in self.spread)
        # A label pair each of the pods its required affinity waits for must carry (a cheap first test).
        self.affinity_anchors = frozenset((k, v) for t in self.affinity for k, op, vs in t.selector.requirements
                                          if op == "In" and len(vs) == 1 for v in vs)
        self.has_own_spread = bool(spec.get("topologySpreadConstraints"))
        self.static_key = (tuple(sorted(self.node_selector.items())), repr(self.node_terms),
                           repr(self.tolerations))
        self.task = f"{self.namespace}/{self.job}/{self.role}:{self.index}"


_parsed: dict[int, tuple[Pod, PodSpec]] = {}


def parsed(pod: Pod) -> PodSpec:
    """The pod's PodSpec, parsed on first use (pods from pods_of are read-only)."""
    found = _parsed.get(id(pod))
    if found is None or found[0] is not pod:
        found = _parsed[id(pod)] = (pod, PodSpec(pod))
    return found[1]


class SimPod:
    """One pod as the scheduler sees it: its parsed spec (labels, requests, terms...), priority, binding.

    `source` is the template its controller recreates it from after a deletion.
    """

    def __init__(self, source: Pod, priority: int, preempts: bool):
        self.__dict__.update(parsed(source).__dict__)
        self.source, self.priority, self.preempts = source, priority, preempts
        self.uid = next(_uids)
        self.node: str | None = None  # where it is bound
        self.started = 0  # when it was bound (a counter): preemption spares older pods of equal priority

    def __repr__(self) -> str:
        return f"<{self.task} on {self.node}>"


def _requests(spec: dict) -> tuple[int, int, int, int]:
    """The pod's requests (containers summed, init containers' maximum) and the same with scoring's defaults."""
    def of(container: dict, default: bool) -> tuple[int, int]:
        requests = container.get("resources", {}).get("requests", {})
        cpu = millicores(requests["cpu"]) if "cpu" in requests else (DEFAULT_CPU_MILLI if default else 0)
        memory = rounded_up(requests["memory"]) if "memory" in requests else (DEFAULT_MEMORY if default else 0)
        return cpu, memory

    result = []
    for default in (False, True):
        cpu = sum(of(c, default)[0] for c in spec.get("containers", []))
        memory = sum(of(c, default)[1] for c in spec.get("containers", []))
        for init in spec.get("initContainers", []):
            cpu, memory = max(cpu, of(init, default)[0]), max(memory, of(init, default)[1])
        result += [cpu, memory]
    return tuple(result)


def admit(pod: Pod, classes: dict[str, PriorityClass]) -> SimPod:
    """The pod as the API server stores it: its priority resolved from its PriorityClass."""
    name = pod.spec.get("priorityClassName")
    if name is None:
        default = next((c for c in classes.values() if c.global_default), None)
        return SimPod(pod, default.value if default else 0, default.preempts if default else True)
    if name not in classes:
        raise AdmissionError(f"pod {pod.namespace}/{pod.hostname}: no PriorityClass with name {name} was found")
    return SimPod(pod, classes[name].value, classes[name].preempts)


def priority_classes(objects: list[dict]) -> dict[str, PriorityClass]:
    """PriorityClass objects (scheduling.k8s.io/v1) by name."""
    return {o["metadata"]["name"]: PriorityClass(o["metadata"]["name"], o["value"],
                                                 o.get("preemptionPolicy", "PreemptLowerPriority") != "Never",
                                                 bool(o.get("globalDefault")))
            for o in objects if o.get("kind") == "PriorityClass"}


@dataclass(frozen=True)
class Service:
    namespace: str
    selector: dict[str, str]


def services(objects: list[dict]) -> list[Service]:
    """Services with a selector: the system default spreading applies to the pods they select."""
    return [Service(o["metadata"].get("namespace", ""), dict(o["spec"]["selector"]))
            for o in objects if o.get("kind") == "Service" and o.get("spec", {}).get("selector")]
