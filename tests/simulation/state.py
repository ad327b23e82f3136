"""The cluster as the scheduler's cache holds it: nodes, bound pods, and counts kept up to date.

Every question the plugins ask ("how many pods matching this selector run on
each node", "which bound pods carry a term that matches the incoming pod") is
answered from counts updated on each bind and unbind, so a scheduling attempt
costs O(nodes + terms), not O(pods). A count is registered the first time it is
asked for (filled from the bound pods once) and kept current afterwards.

To keep updates cheap, each count and each carried term is filed under an
"anchor": one label pair every matching pod must carry (the job label, in
practice). A bound pod only updates the counts anchored at one of its own
labels, plus the few without an anchor.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable, Iterable

from .objects import NAMESPACE_NAME, Selector, Service, SimNode, SimPod, Term

# What bound pods may carry, as the plugins read it.
ANTI_REQUIRED, AFFINITY_REQUIRED, AFFINITY_PREFERRED, ANTI_PREFERRED = "anti", "affinity", "preferred", "anti-preferred"


def _anchors(selectors: Iterable[Selector]) -> list[tuple[str, str]] | None:
    """Label pairs one of which every pod matched by all `selectors` carries (None: no such pairs known)."""
    for sel in selectors:
        for key, operator, values in sel.requirements:
            if operator == "In":
                return [(key, value) for value in sorted(values)]
    return None


def _add(counts: dict[str, int], node: str, amount: int) -> None:
    """Change a node's count, dropping it at zero (a count only ever names nodes that exist)."""
    total = counts.get(node, 0) + amount
    if total:
        counts[node] = total
    else:
        del counts[node]


class ClusterState:
    def __init__(self, nodes: list[SimNode], services: list[Service] = (),
                 namespace_labels: dict[str, dict] | None = None):
        self.nodes: dict[str, SimNode] = {}
        self.pods_on: dict[str, dict[int, SimPod]] = {}
        self.cpu, self.memory, self.nonzero_cpu, self.nonzero_memory = {}, {}, {}, {}
        self.services = list(services)
        self._namespace_labels = dict(namespace_labels or {})
        self._counts: dict[object, tuple[Callable[[SimPod], bool], dict[str, int]]] = {}
        self._count_anchor: dict[tuple[str, str], list] = defaultdict(list)
        self._count_unanchored: list = []
        self._carried: dict[tuple, tuple[Term, dict[str, int]]] = {}
        kinds = (ANTI_REQUIRED, AFFINITY_REQUIRED, AFFINITY_PREFERRED, ANTI_PREFERRED)
        self._carried_anchor: dict[str, dict[tuple[str, str], list]] = {k: defaultdict(list) for k in kinds}
        self._carried_unanchored: dict[str, list] = {k: [] for k in kinds}
        self.clock = 0
        self.version = 0  # bumped when nodes change (static per-node results are cached per version)
        for node in nodes:
            self.add_node(node)

    # ---- nodes ------------------------------------------------------------------------------

    def add_node(self, node: SimNode) -> None:
        assert node.name not in self.nodes, f"node {node.name} exists"
        self.nodes[node.name] = node
        self.pods_on[node.name] = {}
        for table in (self.cpu, self.memory, self.nonzero_cpu, self.nonzero_memory):
            table[node.name] = 0
        self.version += 1

    def remove_node(self, name: str) -> list[SimPod]:
        """Delete a node; returns the pods that were bound to it (unbound now)."""
        lost = list(self.pods_on[name].values())
        for pod in lost:
            self.unbind(pod)
        del self.nodes[name], self.pods_on[name]
        for table in (self.cpu, self.memory, self.nonzero_cpu, self.nonzero_memory):
            del table[name]
        self.version += 1
        return lost

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        """A namespace's labels: its own name (as Kubernetes sets it) and any the cluster was given."""
        return {NAMESPACE_NAME: namespace, **self._namespace_labels.get(namespace, {})}

    # ---- pods -------------------------------------------------------------------------------

    def bind(self, pod: SimPod, node: str) -> None:
        assert pod.node is None, f"{pod} is already bound"
        self.clock += 1
        pod.node, pod.started = node, self.clock
        self.pods_on[node][pod.uid] = pod
        self._account(pod, node, +1)

    def unbind(self, pod: SimPod) -> None:
        node = pod.node
        del self.pods_on[node][pod.uid]
        self._account(pod, node, -1)
        pod.node = None

    def bound(self) -> list[SimPod]:
        return [p for pods in self.pods_on.values() for p in pods.values()]

    def _account(self, pod: SimPod, node: str, sign: int) -> None:
        self.cpu[node] += sign * pod.cpu
        self.memory[node] += sign * pod.memory
        self.nonzero_cpu[node] += sign * pod.nonzero_cpu
        self.nonzero_memory[node] += sign * pod.nonzero_memory
        for key in self._candidate_counts(pod):
            matches, counts = self._counts[key]
            if matches(pod):
                _add(counts, node, sign)
        for kind, terms in ((ANTI_REQUIRED, ((0, t) for t in pod.anti_affinity)),
                            (AFFINITY_REQUIRED, ((0, t) for t in pod.affinity)),
                            (AFFINITY_PREFERRED, pod.preferred_affinity),
                            (ANTI_PREFERRED, pod.preferred_anti_affinity)):
            for weight, term in terms:
                entry = (kind, weight, term)
                if entry not in self._carried:
                    self._carried[entry] = (term, {})
                    anchors = _anchors([term.selector])
                    for anchor in anchors or ():
                        self._carried_anchor[kind][anchor].append(entry)
                    if anchors is None:
                        self._carried_unanchored[kind].append(entry)
                _add(self._carried[entry][1], node, sign)

    def _candidate_counts(self, pod: SimPod) -> list:
        found = list(self._count_unanchored)
        for pair in pod.labels.items():
            found += self._count_anchor.get(pair, ())
        return found

    # ---- counts -------------------------------------------------------------------------------

    def count(self, key: object, matches: Callable[[SimPod], bool], selectors: Iterable[Selector]) -> dict[str, int]:
        """node -> number of bound pods for which `matches` holds; `selectors` must all hold for a match.

        Treat the result as read-only: it is the live count.
        """
        if key not in self._counts:
            counts: dict[str, int] = {}
            for node, pods in self.pods_on.items():
                found = sum(1 for p in pods.values() if matches(p))
                if found:
                    counts[node] = found
            self._counts[key] = (matches, counts)
            anchors = _anchors(selectors)
            for anchor in anchors or ():
                self._count_anchor[anchor].append(key)
            if anchors is None:
                self._count_unanchored.append(key)
        return self._counts[key][1]

    def term_count(self, term: Term) -> dict[str, int]:
        """node -> bound pods that `term` matches (its namespaces and selector)."""
        key = ("term", term.key)
        if key in self._counts:
            return self._counts[key][1]
        labels = self.namespace_labels
        return self.count(key, lambda p, t=term: t.matches(p, labels), [term.selector])

    def all_terms_count(self, terms: tuple[Term, ...]) -> dict[str, int]:
        """node -> bound pods that match every one of `terms` (what required pod affinity counts)."""
        key = ("all", tuple(t.key for t in terms))
        if key in self._counts:
            return self._counts[key][1]
        labels = self.namespace_labels
        return self.count(key, lambda p, ts=terms: all(t.matches(p, labels) for t in ts), [t.selector for t in terms])

    def selector_count(self, namespace: str, selector: Selector) -> dict[str, int]:
        """node -> bound pods of `namespace` that `selector` matches (what topology spread counts)."""
        key = ("spread", namespace, selector)
        if key in self._counts:
            return self._counts[key][1]
        return self.count(key, lambda p, ns=namespace, s=selector: p.namespace == ns and s.matches(p.labels),
                          [selector])

    def carried_matching(self, pod: SimPod, kind: str) -> list[tuple[int, Term, dict[str, int]]]:
        """(weight, term, node -> pods carrying it) for bound pods' terms of `kind` that match `pod`."""
        entries = list(self._carried_unanchored[kind])
        anchored = self._carried_anchor[kind]
        for pair in pod.labels.items():
            if pair in anchored:
                entries += anchored[pair]
        found = []
        labels = self.namespace_labels
        for entry in entries:
            term, counts = self._carried[entry]
            if counts and term.matches(pod, labels):
                found.append((entry[1], term, counts))
        return found

    def default_spread_selector(self, pod: SimPod) -> Selector | None:
        """DefaultSelector: the pod's Services' selectors together (None when no Service selects it)."""
        requirements = set()
        for service in self.services:
            if service.namespace == pod.namespace and all(pod.labels.get(k) == v for k, v in service.selector.items()):
                requirements |= {(k, "In", frozenset([v])) for k, v in service.selector.items()}
        return Selector(tuple(sorted(requirements, key=lambda r: (r[0], sorted(r[2]))))) if requirements else None
