"""A model of the default kube-scheduler (v1.30-v1.33 behaviour), one pod at a time.

Scheduling cycle, as in pkg/scheduler/schedule_one.go:

  queue (PrioritySort: higher priority first, then earlier arrival)
    -> Filter every node, in this plugin order; the first failure is the node's status:
         TaintToleration   NoSchedule / NoExecute taints must be tolerated      (unresolvable)
         NodeAffinity      nodeSelector and required node affinity              (unresolvable)
         NodeResourcesFit  requests fit allocatable minus bound pods; pod limit (resolvable)
         PodTopologySpread DoNotSchedule constraints: skew after placing <= maxSkew
         InterPodAffinity  the pod's required affinity (first-pod exception)    (unresolvable)
                           the pod's required anti-affinity                     (resolvable)
                           bound pods' required anti-affinity against the pod   (resolvable)
    -> Score the feasible nodes; each plugin normalises to 0..100, times its default weight:
         TaintToleration x3, NodeAffinity x2, NodeResourcesFit (LeastAllocated) x1,
         PodTopologySpread x2 (system defaults when the pod sets no constraints),
         InterPodAffinity x2 (hardPodAffinityWeight 1), NodeResourcesBalancedAllocation x1
         (ImageLocality and the volume plugins score every node alike here and are left out)
    -> the highest total wins; ties are broken at random (seeded)
    -> no feasible node: DefaultPreemption, then the pod waits until a cluster event may help it.

Clusters of 100 nodes or more are searched the way the scheduler does it: from a
rotating start index, stopping after numFeasibleNodesToFind feasible nodes.
Where this model differs from the real scheduler is listed in docs/design.md
("The scheduler simulation").
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
from dataclasses import dataclass, field

from tfjobgen.pods import Pod

from .objects import HOSTNAME, ZONE, PriorityClass, SimNode, SimPod, SpreadConstraint, admit, node_term_matches, tolerates
from .state import AFFINITY_PREFERRED, AFFINITY_REQUIRED, ANTI_PREFERRED, ANTI_REQUIRED, ClusterState

MAX_NODE_SCORE = 100
WEIGHTS = {"TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1, "PodTopologySpread": 2,
           "InterPodAffinity": 2, "NodeResourcesBalancedAllocation": 1}
HARD_POD_AFFINITY_WEIGHT = 1  # InterPodAffinityArgs default
MIN_FEASIBLE_NODES_TO_FIND, MIN_FEASIBLE_NODES_PERCENTAGE = 100, 5
MIN_CANDIDATE_NODES_PERCENTAGE, MIN_CANDIDATE_NODES_ABSOLUTE = 10, 100  # DefaultPreemptionArgs defaults
SYSTEM_DEFAULT_SPREAD = ((HOSTNAME, 3), (ZONE, 5))  # (topologyKey, maxSkew), ScheduleAnyway

UNSCHEDULABLE, UNRESOLVABLE = "Unschedulable", "UnschedulableAndUnresolvable"


@dataclass(frozen=True)
class Status:
    code: str
    plugin: str
    reason: str


_INSUFFICIENT = Status(UNSCHEDULABLE, "NodeResourcesFit", "Insufficient resources")
_AFFINITY = Status(UNRESOLVABLE, "InterPodAffinity", "node(s) didn't match pod affinity rules")
_ANTI_AFFINITY = Status(UNSCHEDULABLE, "InterPodAffinity", "node(s) didn't match pod anti-affinity rules")
_EXISTING_ANTI_AFFINITY = Status(UNSCHEDULABLE, "InterPodAffinity",
                                 "node(s) didn't satisfy existing pods anti-affinity rules")


class SimulationError(Exception):
    """The simulation itself went wrong (a loop that does not settle): a bug to fix, not a result."""


# ---- one scheduling attempt -------------------------------------------------------------------

class Cycle:
    """PreFilter state for one pod against the cluster as it is now: Filter and Score read it."""

    def __init__(self, state: ClusterState, pod: SimPod, static_cache: dict):
        self.state, self.pod = state, pod
        self.static = static_cache
        # InterPodAffinity: pods matching all the pod's required affinity terms, per node.
        self.affinity_counts = state.all_terms_count(pod.affinity) if pod.affinity else None
        self.first_of_group = False
        if pod.affinity and not any(self.affinity_counts.values()):
            self.first_of_group = all(t.matches(pod, state.namespace_labels) for t in pod.affinity)
        self.anti_counts = [(t.topology_key, state.term_count(t)) for t in pod.anti_affinity]
        # Bound pods' required anti-affinity that matches this pod: the domains it forbids, and per node
        # how many (pod, term) pairs forbid it (preemption asks what removing pods would lift).
        self.forbidden: set[tuple[str, str]] = set()
        self.repelled_by_existing: dict[str, int] = {}
        for _, term, counts in state.carried_matching(pod, ANTI_REQUIRED):
            for node, count in counts.items():
                if term.topology_key in state.nodes[node].labels:
                    self.forbidden.add((term.topology_key, state.nodes[node].labels[term.topology_key]))
                    self.repelled_by_existing[node] = self.repelled_by_existing.get(node, 0) + count
        # The common case, every term on kubernetes.io/hostname, as node sets: a lookup per node.
        self.by_host = all(t.topology_key == HOSTNAME for t in pod.affinity + pod.anti_affinity) and \
            all(key == HOSTNAME for key, _ in self.forbidden)
        if self.by_host:
            self.attracted = None if not pod.affinity or self.first_of_group else \
                {n for n, c in self.affinity_counts.items() if c > 0}  # None: any node
            self.repelled = {n for _, counts in self.anti_counts for n, c in counts.items() if c > 0}
            self.forbidden_hosts = {value for _, value in self.forbidden}
        self.hard_spread = [c for c in pod.spread if c.hard]
        self.spread_filter = self._spread_prefilter() if self.hard_spread else None

    # -- Filter --

    def filter_static(self, name: str) -> Status | None:
        """TaintToleration and NodeAffinity, cached: they depend on the pod's spec and the node only."""
        static = self.static.get(name)
        if static is None:
            static = self.static[name] = _static_filter(self.pod, self.state.nodes[name]) or False
        return static or None

    def feasible(self, names: list[str], wanted: int) -> tuple[list[str], dict[str, Status]]:
        """Filter `names` in order until `wanted` nodes pass: (feasible nodes, status of each failed node).

        The same checks as `filter`, with the hostname-only case inlined: this is the hot loop.
        """
        if not self.by_host or self.spread_filter is not None:
            feasible, statuses = [], {}
            for name in names:
                status = self.filter(name)
                if status is None:
                    feasible.append(name)
                    if len(feasible) >= wanted:
                        break
                else:
                    statuses[name] = status
            return feasible, statuses
        state, pod, static = self.state, self.pod, self.static
        nodes, cpu, memory, pods_on = state.nodes, state.cpu, state.memory, state.pods_on
        attracted, repelled, forbidden = self.attracted, self.repelled, self.forbidden_hosts
        feasible, statuses = [], {}
        for name in names:
            status = static.get(name)
            if status is None:
                status = static[name] = _static_filter(pod, nodes[name]) or False
            if not status:
                node = nodes[name]
                if cpu[name] + pod.cpu > node.cpu or memory[name] + pod.memory > node.memory or \
                        len(pods_on[name]) + 1 > node.max_pods:
                    status = _INSUFFICIENT
                elif attracted is not None and name not in attracted:
                    status = _AFFINITY
                elif name in repelled:
                    status = _ANTI_AFFINITY
                elif name in forbidden:
                    status = _EXISTING_ANTI_AFFINITY
                else:
                    feasible.append(name)
                    if len(feasible) >= wanted:
                        break
                    continue
            statuses[name] = status
        return feasible, statuses

    def filter(self, name: str) -> Status | None:
        """Every filter plugin on one node, in the scheduler's order: the first failure, or None."""
        state, pod, node = self.state, self.pod, self.state.nodes[name]
        static = self.filter_static(name)
        if static:
            return static
        if (state.cpu[name] + pod.cpu > node.cpu or state.memory[name] + pod.memory > node.memory
                or len(state.pods_on[name]) + 1 > node.max_pods):
            return _INSUFFICIENT
        if self.spread_filter is not None:
            failed = self._spread_filter(node)
            if failed:
                return failed
        return self._affinity_filter(node)

    def _affinity_filter(self, node: SimNode) -> Status | None:
        if self.by_host:
            if self.attracted is not None and node.name not in self.attracted:
                return _AFFINITY
            if node.name in self.repelled:
                return _ANTI_AFFINITY
            return _EXISTING_ANTI_AFFINITY if node.name in self.forbidden_hosts else None
        pod = self.pod
        if pod.affinity:
            exist = True
            for term in pod.affinity:
                if term.topology_key not in node.labels:
                    return _AFFINITY  # every topology key must be on the node
                if self._domain_count(self.affinity_counts, term.topology_key, node) <= 0:
                    exist = False
            if not exist and not self.first_of_group:
                return _AFFINITY
        for key, counts in self.anti_counts:
            if key in node.labels and self._domain_count(counts, key, node) > 0:
                return _ANTI_AFFINITY
        if self.forbidden and any(pair in self.forbidden for pair in node.labels.items()):
            return _EXISTING_ANTI_AFFINITY
        return None

    def fits_without(self, name: str, removed: list[SimPod]) -> bool | None:
        """Would the pod pass every filter on `name` once `removed` (pods bound there) are gone?

        What DefaultPreemption asks of each candidate node, answered the way the
        scheduler does it (RemovePod updates the PreFilter counts), without touching
        the cluster. None when the pod's rules need more than hostname counts.
        """
        if not self.by_host or self.hard_spread:
            return None
        state, pod, node = self.state, self.pod, self.state.nodes[name]
        if self.filter_static(name):
            return False
        if (state.cpu[name] - sum(p.cpu for p in removed) + pod.cpu > node.cpu or
                state.memory[name] - sum(p.memory for p in removed) + pod.memory > node.memory or
                len(state.pods_on[name]) - len(removed) + 1 > node.max_pods):
            return False
        ns = state.namespace_labels
        if pod.affinity:
            gone = sum(1 for p in removed if all(t.matches(p, ns) for t in pod.affinity))
            if self.affinity_counts.get(name, 0) - gone <= 0:
                alone = sum(self.affinity_counts.values()) - gone == 0
                if not (alone and all(t.matches(pod, ns) for t in pod.affinity)):
                    return False
        for term, (_, counts) in zip(pod.anti_affinity, self.anti_counts):
            if counts.get(name, 0) - sum(1 for p in removed if term.matches(p, ns)) > 0:
                return False
        if name in self.repelled_by_existing:
            remaining = self.repelled_by_existing[name] - sum(
                1 for p in removed for t in p.anti_affinity if t.matches(pod, ns))
            if remaining > 0:
                return False
        return True

    def _domain_count(self, counts: dict[str, int], key: str, node: SimNode) -> int:
        if key == HOSTNAME:
            return counts.get(node.name, 0)
        value = node.labels[key]
        return sum(c for n, c in counts.items() if self.state.nodes[n].labels.get(key) == value)

    def _eligible_for_spread(self, c: SpreadConstraint, node: SimNode) -> bool:
        """The node inclusion policies: nodeAffinityPolicy (Honor) and nodeTaintsPolicy (Ignore) by default."""
        if c.honor_node_affinity and _node_selection(self.pod, node):
            return False
        if c.honor_taints and any(t["effect"] in ("NoSchedule", "NoExecute") and not tolerates(self.pod.tolerations, t)
                                  for t in node.taints):
            return False
        return True

    def _spread_prefilter(self) -> list:
        state, pod, result = self.state, self.pod, []
        keys = [c.topology_key for c in self.hard_spread]
        for c in self.hard_spread:
            counts = state.selector_count(pod.namespace, c.selector)
            domains: dict[str, int] = {}
            for node in state.nodes.values():
                if not all(k in node.labels for k in keys) or not self._eligible_for_spread(c, node):
                    continue
                value = node.labels[c.topology_key]
                domains[value] = domains.get(value, 0) + counts.get(node.name, 0)
            minimum = min(domains.values()) if domains else 0
            if len(domains) < c.min_domains:
                minimum = 0
            result.append((c, domains, minimum))
        return result

    def _spread_filter(self, node: SimNode) -> Status | None:
        if not all(c.topology_key in node.labels for c in self.hard_spread):
            return Status(UNRESOLVABLE, "PodTopologySpread", "node(s) didn't match pod topology spread constraints "
                                                             "(missing required label)")
        for c, domains, minimum in self.spread_filter:
            self_match = 1 if c.selector.matches(self.pod.labels) else 0
            skew = domains.get(node.labels[c.topology_key], 0) + self_match - minimum
            if skew > c.max_skew:
                return Status(UNSCHEDULABLE, "PodTopologySpread", "node(s) didn't match pod topology spread constraints")
        return None

    # -- Score --

    def scores(self, feasible: list[str]) -> dict[str, int]:
        """node -> weighted sum of every score plugin's normalised score."""
        totals = dict.fromkeys(feasible, 0)
        for plugin, scores in (("TaintToleration", self._taint_scores(feasible)),
                               ("NodeAffinity", self._node_affinity_scores(feasible)),
                               ("NodeResourcesFit", self._least_allocated(feasible)),
                               ("PodTopologySpread", self._spread_scores(feasible)),
                               ("InterPodAffinity", self._affinity_scores(feasible)),
                               ("NodeResourcesBalancedAllocation", self._balanced(feasible))):
            weight = WEIGHTS[plugin]
            for name, score in scores.items():
                totals[name] += weight * score
        return totals

    def _taint_scores(self, feasible: list[str]) -> dict[str, int]:
        tolerations = tuple(t for t in self.pod.tolerations if t.get("effect", "PreferNoSchedule") == "PreferNoSchedule")
        raw = {n: sum(1 for t in self.state.nodes[n].taints
                      if t["effect"] == "PreferNoSchedule" and not tolerates(tolerations, t)) for n in feasible}
        return default_normalize(raw, reverse=True)

    def _node_affinity_scores(self, feasible: list[str]) -> dict[str, int]:
        if not self.pod.preferred_node_terms:
            return dict.fromkeys(feasible, 0)
        raw = {n: sum(w for w, term in self.pod.preferred_node_terms
                      if node_term_matches(term, self.state.nodes[n].labels)) for n in feasible}
        return default_normalize(raw, reverse=False)

    def _least_allocated(self, feasible: list[str]) -> dict[str, int]:
        state, pod, result = self.state, self.pod, {}
        for n in feasible:
            node = state.nodes[n]
            cpu = _least_requested(state.nonzero_cpu[n] + pod.nonzero_cpu, node.cpu)
            memory = _least_requested(state.nonzero_memory[n] + pod.nonzero_memory, node.memory)
            result[n] = (cpu + memory) // 2
        return result

    def _balanced(self, feasible: list[str]) -> dict[str, int]:
        state, pod, result = self.state, self.pod, {}
        for n in feasible:
            node = state.nodes[n]
            cpu = min(1.0, (state.cpu[n] + pod.cpu) / node.cpu)
            memory = min(1.0, (state.memory[n] + pod.memory) / node.memory)
            result[n] = int((1 - abs(cpu - memory) / 2) * MAX_NODE_SCORE)
        return result

    def _spread_constraints(self) -> list[SpreadConstraint]:
        if self.pod.has_own_spread:
            return [c for c in self.pod.spread if not c.hard]
        selector = self.state.default_spread_selector(self.pod)
        if selector is None:
            return []
        return [SpreadConstraint(skew, key, False, selector) for key, skew in SYSTEM_DEFAULT_SPREAD]

    def _spread_scores(self, feasible: list[str]) -> dict[str, int]:
        constraints = self._spread_constraints()
        if not constraints:
            return dict.fromkeys(feasible, 0)
        state, pod = self.state, self.pod
        require_all = pod.has_own_spread  # system defaults let nodes without a zone label still spread by host
        if not require_all:  # a default constraint no candidate node has the key of scores nothing anywhere
            constraints = [c for c in constraints if any(c.topology_key in state.nodes[n].labels for n in feasible)]
        ignored = {n for n in feasible if require_all and
                   not all(c.topology_key in state.nodes[n].labels for c in constraints)}
        domain_counts, weights = [], []
        for c in constraints:
            counted = [n for n in feasible if n not in ignored]
            if c.topology_key == HOSTNAME:
                size, per_domain = len(counted), None
            else:
                per_domain = dict.fromkeys({state.nodes[n].labels.get(c.topology_key, "") for n in counted}, 0)
                size = len(per_domain)
                counts = state.selector_count(pod.namespace, c.selector)
                for name, node in state.nodes.items():
                    if require_all and not all(x.topology_key in node.labels for x in constraints):
                        continue
                    if not self._eligible_for_spread(c, node):
                        continue
                    value = node.labels.get(c.topology_key, "")
                    if value in per_domain:
                        per_domain[value] += counts.get(name, 0)
            domain_counts.append(per_domain)
            weights.append(math.log(size + 2))
        per_node = [state.selector_count(pod.namespace, c.selector) if d is None else None
                    for c, d in zip(constraints, domain_counts)]
        raw = {}
        for n in feasible:
            if n in ignored:
                continue
            labels, score = state.nodes[n].labels, 0.0
            for c, per_domain, counts, weight in zip(constraints, domain_counts, per_node, weights):
                if c.topology_key in labels:
                    count = counts.get(n, 0) if per_domain is None else per_domain[labels[c.topology_key]]
                    score += count * weight + (c.max_skew - 1)
            raw[n] = _go_round(score)
        result = dict.fromkeys(feasible, 0)
        if not raw:
            return result
        low, high = min(raw.values()), max(max(raw.values()), 0)
        for n, s in raw.items():
            result[n] = MAX_NODE_SCORE if high == 0 else MAX_NODE_SCORE * (high + low - s) // high
        return result

    def _affinity_scores(self, feasible: list[str]) -> dict[str, int]:
        state, pod = self.state, self.pod
        topology: dict[str, dict[str, int]] = {}

        def add(key: str, counts: dict[str, int], amount: int) -> None:
            for name, count in counts.items():
                value = state.nodes[name].labels.get(key)
                if count and value is not None:
                    domain = topology.setdefault(key, {})
                    domain[value] = domain.get(value, 0) + amount * count

        for weight, term in pod.preferred_affinity:
            add(term.topology_key, state.term_count(term), weight)
        for weight, term in pod.preferred_anti_affinity:
            add(term.topology_key, state.term_count(term), -weight)
        for _, term, counts in state.carried_matching(pod, AFFINITY_REQUIRED):
            add(term.topology_key, counts, HARD_POD_AFFINITY_WEIGHT)
        for weight, term, counts in state.carried_matching(pod, AFFINITY_PREFERRED):
            add(term.topology_key, counts, weight)
        for weight, term, counts in state.carried_matching(pod, ANTI_PREFERRED):
            add(term.topology_key, counts, -weight)
        if not topology:
            return dict.fromkeys(feasible, 0)  # PreScore returns Skip
        raw = {n: sum(values.get(state.nodes[n].labels.get(key), 0) for key, values in topology.items()
                      if key in state.nodes[n].labels) for n in feasible}
        low, high = min(raw.values()), max(raw.values())
        if high == low:
            return dict.fromkeys(feasible, 0)
        return {n: int(MAX_NODE_SCORE * (s - low) / (high - low)) for n, s in raw.items()}


def _static_filter(pod: SimPod, node: SimNode) -> Status | None:
    """TaintToleration, then NodeAffinity: what depends only on the pod's spec and the node."""
    for taint in node.taints:
        if taint["effect"] in ("NoSchedule", "NoExecute") and not tolerates(pod.tolerations, taint):
            return Status(UNRESOLVABLE, "TaintToleration", f"node(s) had untolerated taint {{{taint['key']}}}")
    return _node_selection(pod, node)


def _node_selection(pod: SimPod, node: SimNode) -> Status | None:
    if any(node.labels.get(k) != v for k, v in pod.node_selector.items()):
        return Status(UNRESOLVABLE, "NodeAffinity", "node(s) didn't match Pod's node affinity/selector")
    if pod.node_terms is not None and not any(node_term_matches(t, node.labels) for t in pod.node_terms):
        return Status(UNRESOLVABLE, "NodeAffinity", "node(s) didn't match Pod's node affinity/selector")
    return None


def _least_requested(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def _go_round(x: float) -> int:
    """Go's math.Round: half away from zero."""
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


def default_normalize(raw: dict[str, int], reverse: bool) -> dict[str, int]:
    """helper.DefaultNormalizeScore: scale to 0..100 by the maximum; reverse subtracts from 100."""
    top = max(raw.values(), default=0)
    if top == 0:
        return {n: (MAX_NODE_SCORE if reverse else 0) for n in raw}
    return {n: (MAX_NODE_SCORE - MAX_NODE_SCORE * s // top) if reverse else MAX_NODE_SCORE * s // top
            for n, s in raw.items()}


def num_feasible_nodes_to_find(nodes: int) -> int:
    if nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return nodes
    percentage = max(50 - nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE)
    return max(nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


# ---- the scheduler ----------------------------------------------------------------------------

@dataclass
class Scheduler:
    state: ClusterState
    priority_classes: dict[str, PriorityClass] = field(default_factory=dict)
    seed: int = 0

    def __post_init__(self):
        self.rng = random.Random(self.seed)
        self._queue: list[tuple[int, int, int]] = []
        self._queued: dict[int, SimPod] = {}
        self.pending: dict[int, SimPod] = {}  # tried, fit nowhere, waiting for a cluster event
        self._pending_by_anchors: dict[frozenset | None, set[int]] = {}
        self._arrival = itertools.count()
        self._next_start = 0
        self._static: dict[tuple, dict] = {}
        self._why: dict[int, dict[str, Status]] = {}  # waiting pod -> each node's status at its last try
        self.attempts = 0
        self.preemptions: dict[str, int] = {}  # preemptor's job -> how often one of its pods preempted

    # -- what controllers and the API server do --

    def create(self, source: Pod) -> SimPod:
        """A controller creates a pod (admission resolves its priority); it joins the scheduling queue."""
        pod = admit(source, self.priority_classes)
        self._enqueue(pod)
        return pod

    def delete(self, pod: SimPod, recreate: bool = True) -> SimPod | None:
        """Delete a bound or waiting pod; its controller creates a replacement from the same template."""
        if pod.node is not None:
            self.state.unbind(pod)
        self._unpark(pod.uid)
        self._queued.pop(pod.uid, None)
        self._wake_all()  # freed resources, released anti-affinity
        return self.create(pod.source) if recreate else None

    def lose_node(self, name: str) -> list[SimPod]:
        """The node is gone: its pods are deleted and their controllers recreate them."""
        lost = self.state.remove_node(name)
        self._wake_all()
        return [self.create(pod.source) for pod in lost]

    def add_node(self, node: SimNode) -> None:
        self.state.add_node(node)
        self._wake_all()

    # -- the scheduling loop --

    def run(self, limit: int = 1_000_000) -> None:
        """Schedule until the queue is empty (pods that fit nowhere wait in `pending`)."""
        while self._queue:
            _, _, uid = heapq.heappop(self._queue)
            pod = self._queued.pop(uid, None)
            if pod is None:
                continue  # deleted while queued
            self.attempts += 1
            if self.attempts > limit:
                raise SimulationError(f"no steady state after {limit} scheduling attempts (seed {self.seed})")
            self.schedule_one(pod)

    def schedule_one(self, pod: SimPod) -> str | None:
        cycle = Cycle(self.state, pod, self._static_cache(pod))
        feasible, statuses = self._find_feasible(cycle)
        if feasible:
            node = self._select_host(cycle, feasible)
            self._bind(pod, node)
            return node
        if pod.preempts:
            chosen = self._preempt(pod, statuses)
            if chosen is not None:
                return chosen
        self._park(pod, statuses)
        return None

    def why(self, pod: SimPod) -> str:
        """Why a waiting pod fits nowhere: how many nodes failed for each reason at its last try."""
        reasons: dict[str, int] = {}
        for status in self._why.get(pod.uid, {}).values():
            reasons[status.reason] = reasons.get(status.reason, 0) + 1
        return ", ".join(f"{count} {reason}" for reason, count in sorted(reasons.items())) or "no nodes"

    def _find_feasible(self, cycle: Cycle) -> tuple[list[str], dict[str, Status]]:
        names = list(self.state.nodes)
        wanted = num_feasible_nodes_to_find(len(names))
        start = self._next_start % len(names) if names else 0
        feasible, statuses = cycle.feasible(names[start:] + names[:start], wanted)
        if names:
            self._next_start = (start + len(feasible) + len(statuses)) % len(names)
        return feasible, statuses

    def _select_host(self, cycle: Cycle, feasible: list[str]) -> str:
        if len(feasible) == 1:
            return feasible[0]
        scores = cycle.scores(feasible)
        best = max(scores.values())
        tied = [n for n in feasible if scores[n] == best]
        return tied[0] if len(tied) == 1 else self.rng.choice(tied)

    def _bind(self, pod: SimPod, node: str) -> None:
        self.state.bind(pod, node)
        # Like the QueueingHints on by default since v1.32: a new pod can only help the waiting pods whose
        # required affinity it satisfies, and pods with hard spread constraints.
        for uid in self._waiting_for(pod):
            self._enqueue(self._unpark(uid))

    def _waiting_for(self, pod: SimPod) -> list[int]:
        """Waiting pods whose required affinity `pod` satisfies, or that spread with hard constraints."""
        found, labels = [], pod.labels
        for anchors, uids in self._pending_by_anchors.items():
            if anchors is None or all(labels.get(k) == v for k, v in anchors):
                for uid in uids:
                    waiting = self.pending[uid]
                    if waiting.hard_spread_count or (
                            waiting.affinity and all(t.matches(pod, self.state.namespace_labels)
                                                     for t in waiting.affinity)):
                        found.append(uid)
        return found

    # -- preemption (DefaultPreemption PostFilter) --

    def _preempt(self, pod: SimPod, statuses: dict[str, Status]) -> str | None:
        candidates = [n for n, s in statuses.items() if s.code == UNSCHEDULABLE]
        if not candidates:
            return None
        offset = self.rng.randrange(len(candidates))
        candidates = candidates[offset:] + candidates[:offset]
        wanted = min(len(self.state.nodes),
                     max(len(self.state.nodes) * MIN_CANDIDATE_NODES_PERCENTAGE // 100, MIN_CANDIDATE_NODES_ABSOLUTE))
        found: list[tuple[str, list[SimPod]]] = []
        cycle = Cycle(self.state, pod, self._static_cache(pod))
        for name in candidates:
            victims = self._select_victims(cycle, name)
            if victims is not None:
                found.append((name, victims))
                if len(found) >= wanted:
                    break
        if not found:
            return None
        name, victims = _pick_node_for_preemption(found)
        self.preemptions[pod.job] = self.preemptions.get(pod.job, 0) + 1
        for victim in victims:
            self.delete(victim)
        # The preemptor is nominated to the node and tries it first on its next attempt.
        cycle = Cycle(self.state, pod, self._static_cache(pod))
        assert cycle.filter(name) is None, f"{pod} does not fit {name} after preemption"
        self._bind(pod, name)
        return name

    def _select_victims(self, cycle: Cycle, name: str) -> list[SimPod] | None:
        """SelectVictimsOnNode: remove every lower-priority pod, then reprieve as many as still let the pod fit.

        Pods are reprieved most important first (higher priority, then longer running).
        """
        pod = cycle.pod
        lower = [p for p in self.state.pods_on[name].values() if p.priority < pod.priority]
        if not lower:
            return None
        if cycle.fits_without(name, lower) is None:
            return self._select_victims_by_trial(pod, name, lower)
        if not cycle.fits_without(name, lower):
            return None
        victims = sorted(lower, key=lambda p: (-p.priority, p.started))
        for p in list(victims):
            trial = [v for v in victims if v is not p]
            if cycle.fits_without(name, trial):
                victims = trial
        return victims

    def _select_victims_by_trial(self, pod: SimPod, name: str, lower: list[SimPod]) -> list[SimPod] | None:
        """The same, by unbinding and rebinding pods for real (rules on other topology keys than hostname)."""
        def fits() -> bool:
            return Cycle(self.state, pod, self._static_cache(pod)).filter(name) is None
        for p in lower:
            self.state.unbind(p)
        victims: list[SimPod] | None = None
        try:
            if fits():
                victims = []
                for p in sorted(lower, key=lambda p: (-p.priority, p.started)):  # most important first
                    self._rebind(p, name)
                    if not fits():
                        self.state.unbind(p)
                        victims.append(p)
        finally:
            for p in lower:
                if p.node is None:
                    self._rebind(p, name)
        return victims

    def _rebind(self, pod: SimPod, name: str) -> None:
        """Put a pod back where it was, keeping its start time (a dry run changed nothing)."""
        started = pod.started
        self.state.bind(pod, name)
        pod.started = started

    # -- queue --

    def _enqueue(self, pod: SimPod) -> None:
        self._queued[pod.uid] = pod
        heapq.heappush(self._queue, (-pod.priority, next(self._arrival), pod.uid))

    def _park(self, pod: SimPod, statuses: dict[str, Status]) -> None:
        """The pod fits nowhere: it waits, filed by what a new pod must carry to help it."""
        self.pending[pod.uid] = pod
        self._why[pod.uid] = statuses
        if pod.affinity or pod.hard_spread_count:
            anchors = pod.affinity_anchors if pod.affinity and not pod.hard_spread_count else None
            self._pending_by_anchors.setdefault(anchors or None, set()).add(pod.uid)

    def _unpark(self, uid: int) -> SimPod | None:
        pod = self.pending.pop(uid, None)
        self._why.pop(uid, None)
        if pod is not None and (pod.affinity or pod.hard_spread_count):
            anchors = pod.affinity_anchors if pod.affinity and not pod.hard_spread_count else None
            waiting = self._pending_by_anchors[anchors or None]
            waiting.discard(uid)
            if not waiting:
                del self._pending_by_anchors[anchors or None]
        return pod

    def _wake_all(self) -> None:
        for uid in list(self.pending):
            self._enqueue(self._unpark(uid))

    def _static_cache(self, pod: SimPod) -> dict:
        key = (self.state.version, pod.static_key)
        if key not in self._static:
            self._static[key] = {}
        return self._static[key]


def _pick_node_for_preemption(found: list[tuple[str, list[SimPod]]]) -> tuple[str, list[SimPod]]:
    """pickOneNodeForPreemption without PDBs: lowest highest-victim priority, lowest priority sum,
    fewest victims, latest start of the highest-priority victims, then the first."""
    for name, victims in found:
        if not victims:
            return name, victims
    def ordered(victims):
        return sorted(victims, key=lambda p: (-p.priority, p.started))
    def rank(item):
        victims = ordered(item[1])
        top = victims[0].priority
        earliest_top = min(p.started for p in victims if p.priority == top)
        return (top, sum(p.priority + 2**31 for p in victims), len(victims), -earliest_top)
    best = min(rank(item) for item in found)
    name, victims = next(item for item in found if rank(item) == best)
    return name, ordered(victims)
