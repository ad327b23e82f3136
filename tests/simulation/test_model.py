"""The scheduler model against documented kube-scheduler behaviour.

Each case is an example from the Kubernetes documentation (inter-pod affinity,
topology spread constraints, pod priority and preemption) or a score worked out
by hand from the plugin's formula in kube-scheduler's source, so the placement
tests rest on a model that behaves like the real scheduler where it matters.
"""

from __future__ import annotations

import pytest

from simulation.objects import AdmissionError, PriorityClass, Service, SimNode, nodes
from simulation.scheduler import Cycle, Scheduler, num_feasible_nodes_to_find
from simulation.state import ClusterState
from tfjobgen.pods import Pod

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def pod(name: str, labels: dict | None = None, cpu: str = "1", memory: str = "1Gi", namespace: str = "default",
        **spec) -> Pod:
    container = {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
    return Pod(name, namespace, name, "", dict(labels or {}), {}, {"containers": [container], **spec})


def scheduler(cluster: list[SimNode], services: list[Service] = (), classes: dict | None = None,
              seed: int = 0) -> Scheduler:
    return Scheduler(ClusterState(cluster, services), classes or {}, seed)


def place(s: Scheduler, *pods: Pod) -> list[str | None]:
    """Create the pods one at a time; where each went (None: pending)."""
    placed = []
    for p in pods:
        sim = s.create(p)
        s.run()
        placed.append(sim.node)
    return placed


def where(s: Scheduler) -> dict[str, str]:
    return {p.name: p.node for p in s.state.bound()}


def term(labels: dict, key: str = HOST, **scope) -> dict:
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": key, **scope}


# ---- filters ---------------------------------------------------------------------------------

def test_resources_and_the_pod_limit_filter_nodes():
    s = scheduler(nodes(1, cpu=4, memory="8Gi"))
    assert place(s, pod("a", cpu="3"), pod("b", cpu="2")) == ["node-00", None]
    assert "Insufficient" in _why(s, pod("c", cpu="2"))


def test_node_selector_and_taints_filter_nodes():
    tainted = SimNode("gpu", 8000, 2**34, {"pool": "gpu"}, ({"key": "gpu", "value": "yes", "effect": "NoSchedule"},))
    plain = SimNode("plain", 8000, 2**34)
    s = scheduler([tainted, plain])
    toleration = [{"key": "gpu", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}]
    assert place(s, pod("selects-gpu", nodeSelector={"pool": "gpu"})) == [None], "untolerated NoSchedule taint"
    assert place(s, pod("tolerates", nodeSelector={"pool": "gpu"}, tolerations=toleration)) == ["gpu"]
    assert place(s, pod("anywhere")) == ["plain"]


def test_required_anti_affinity_is_symmetric():
    """An existing pod's required anti-affinity also keeps matching newcomers off its node (docs: inter-pod affinity)."""
    s = scheduler(nodes(2))
    guard = pod("guard", {"app": "guard"}, affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [term({"app": "web"})]}})
    [first] = place(s, guard)
    placed = place(s, *(pod(f"web-{i}", {"app": "web"}) for i in range(3)))
    assert first not in placed, "web pods carry no rule of their own, yet avoid the guard's node"


def test_required_affinity_first_pod_of_a_self_matching_group_may_go_anywhere():
    """The documented exception: with no pod matching yet, a pod whose own labels match its affinity term schedules."""
    s = scheduler(nodes(3))
    together = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term({"app": "cache"})]}}
    placed = place(s, *(pod(f"cache-{i}", {"app": "cache"}, affinity=together) for i in range(3)))
    assert None not in placed and len(set(placed)) == 1, "the first lands anywhere, the rest follow it"
    follower = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term({"app": "db"})]}}
    assert place(s, pod("wants-db", {"app": "web"}, affinity=follower)) == [None], \
        "a pod that does not match its own term waits for a matching pod"
    assert place(s, pod("db", {"app": "db"})) != [None]
    assert s.state.bound()[-1].name == "wants-db", "the waiting pod is retried once a matching pod is placed"
    assert where(s)["wants-db"] == where(s)["db"]


def test_a_term_applies_to_its_own_namespace_unless_it_selects_namespaces():
    s = scheduler(nodes(2))
    other = pod("other-team", {"app": "x"}, namespace="other")
    [taken] = place(s, other)
    same_ns_only = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term({"app": "x"})]}}
    all_ns = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        term({"app": "x"}, namespaceSelector={})]}}
    repelled = place(s, *(pod(f"all-{i}", {"app": "y"}, affinity=all_ns) for i in range(3)))
    assert taken not in repelled, "namespaceSelector {} selects every namespace"
    s2 = scheduler(nodes(1))
    place(s2, pod("other-team", {"app": "x"}, namespace="other"))
    assert place(s2, pod("mine", {"app": "y"}, affinity=same_ns_only)) == ["node-00"], \
        "without namespaces or namespaceSelector a term only sees the pod's own namespace"


# ---- topology spread (the documented examples of "Pod Topology Spread Constraints") -------------

def _zones() -> list[SimNode]:
    """Four nodes in two zones: zoneA = node1, node2; zoneB = node3, node4."""
    return [SimNode(f"node{i}", 16000, 2**36, {ZONE: "zoneA" if i <= 2 else "zoneB"}) for i in range(1, 5)]


def _spread(key: str, skew: int = 1) -> dict:
    return {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"foo": "bar"}}}


def test_spread_one_constraint_sends_the_pod_to_the_zone_with_fewer_matches():
    """Three foo=bar pods, two in zoneA: with maxSkew 1 per zone the fourth must go to zoneB."""
    for seed in range(10):
        s = scheduler(_zones(), seed=seed)
        for name, node in (("p1", "node1"), ("p2", "node2"), ("p3", "node3")):
            _bind(s, pod(name, {"foo": "bar"}), node)
        [node] = place(s, pod("new", {"foo": "bar"}, topologySpreadConstraints=[_spread(ZONE)]))
        assert node in ("node3", "node4")


def test_spread_two_constraints_leave_one_node():
    """The same pods with a second constraint per node (maxSkew 1): only node4 satisfies both."""
    s = scheduler(_zones())
    for name, node in (("p1", "node1"), ("p2", "node2"), ("p3", "node3")):
        _bind(s, pod(name, {"foo": "bar"}), node)
    assert place(s, pod("new", {"foo": "bar"}, topologySpreadConstraints=[_spread(ZONE), _spread(HOST)])) == ["node4"]


def test_spread_skew_is_measured_against_the_least_loaded_domain():
    s = scheduler(_zones())
    for i, node in enumerate(["node1", "node1", "node2"]):
        _bind(s, pod(f"p{i}", {"foo": "bar"}), node)
    # zoneA 3, zoneB 0: a zoneA placement would make the skew 4 > 3
    assert place(s, pod("new", {"foo": "bar"}, topologySpreadConstraints=[_spread(ZONE, skew=3)]))[0] in \
        ("node3", "node4")


def test_system_default_spreading_applies_only_to_pods_without_constraints_of_their_own():
    """Pods a Service selects spread by host (maxSkew 3, ScheduleAnyway) unless they set constraints."""
    service = [Service("default", {"app": "web"})]
    # node-00 already runs 3 web pods; a fresh web pod goes elsewhere though node-00 is emptier in CPU terms.
    big = nodes(2, cpu=64, memory="256Gi")
    s = scheduler(big, service)
    for i in range(3):
        _bind(s, pod(f"web-{i}", {"app": "web"}, cpu="1"), "node-00")
    _bind(s, pod("filler", {"app": "other"}, cpu="8", memory="32Gi"), "node-01")
    assert place(s, pod("web-new", {"app": "web"})) == ["node-01"]
    s = scheduler(nodes(2, cpu=64, memory="256Gi"), service)
    for i in range(3):
        _bind(s, pod(f"web-{i}", {"app": "web"}, cpu="1"), "node-00")
    _bind(s, pod("filler", {"app": "other"}, cpu="8", memory="32Gi"), "node-01")
    own = [{"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app": "nothing-matches"}}}]
    assert place(s, pod("web-own", {"app": "web"}, topologySpreadConstraints=own)) == ["node-00"], \
        "with a constraint of its own the pod gets no defaults: least-allocated picks the emptier node"


# ---- scores ------------------------------------------------------------------------------------

def test_least_allocated_and_balanced_allocation_scores():
    """NodeResourcesFit (LeastAllocated) and BalancedAllocation, worked out from their formulas."""
    a, b = SimNode("a", 4000, 10000), SimNode("b", 6000, 10000)
    state = ClusterState([a, b])
    cycle = Cycle(state, Scheduler(state).create(pod("p", cpu="3", memory="5000")), {})
    # LeastAllocated: mean over cpu and memory of (allocatable - requested) * 100 / allocatable, integers.
    assert cycle._least_allocated(["a", "b"]) == {"a": (25 + 50) // 2, "b": (50 + 50) // 2}
    # BalancedAllocation: (1 - |cpu fraction - memory fraction| / 2) * 100.
    assert cycle._balanced(["a", "b"]) == {"a": int((1 - abs(0.75 - 0.5) / 2) * 100), "b": 100}


def test_required_affinity_of_existing_pods_attracts_by_score():
    """hardPodAffinityWeight: an existing pod whose required affinity matches the newcomer scores its node up."""
    s = scheduler(nodes(3, cpu=64, memory="256Gi"))
    wants_server = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term({"app": "server"})]}}
    _bind(s, pod("server-0", {"app": "server"}), "node-01")
    for i in range(4):
        _bind(s, pod(f"client-{i}", {"app": "client"}, affinity=wants_server), "node-01")
    s.delete(next(p for p in s.state.bound() if p.name == "server-0"), recreate=False)
    assert place(s, pod("server-new", {"app": "server"})) == ["node-01"], "back beside the pods that need it"


def test_preferred_anti_affinity_spreads_until_it_cannot():
    s = scheduler(nodes(2, cpu=64, memory="256Gi"))
    apart = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": term({"app": "ps"})}]}}
    placed = place(s, *(pod(f"ps-{i}", {"app": "ps"}, affinity=apart) for i in range(3)))
    assert len(set(placed[:2])) == 2 and None not in placed


def test_prefer_no_schedule_taints_only_lower_the_score():
    soft = SimNode("soft", 8000, 2**34, {}, ({"key": "spot", "value": "", "effect": "PreferNoSchedule"},))
    s = scheduler([soft, SimNode("plain", 8000, 2**34)])
    assert place(s, pod("a")) == ["plain"]
    assert place(s, pod("b", cpu="7500m")) == ["soft"], "still feasible when nothing else fits"


# ---- preemption (the documented "Pod Priority and Preemption" behaviour) --------------------------

CLASSES = {"high": PriorityClass("high", 1000), "mid": PriorityClass("mid", 500), "low": PriorityClass("low", 100),
           "never": PriorityClass("never", 1000, preempts=False)}


def test_preemption_evicts_lower_priority_pods_and_their_controller_recreates_them():
    s = scheduler(nodes(1, cpu=4), classes=CLASSES)
    place(s, pod("low-0", cpu="2", priorityClassName="low"), pod("low-1", cpu="2", priorityClassName="low"))
    assert place(s, pod("high", cpu="2", priorityClassName="high")) == ["node-00"]
    assert sum(s.preemptions.values()) == 1
    running = sorted(p.name for p in s.state.bound())
    assert running == ["high", "low-0"], "only as many victims as needed; the longer-running pod is spared"
    assert [p.name for p in s.pending.values()] == ["low-1"], "the victim is recreated and waits"


def test_preemption_picks_the_node_whose_victims_have_the_lowest_priority():
    s = scheduler(nodes(2, cpu=4), classes=CLASSES)
    _bind(s, pod("mid", cpu="4", priorityClassName="mid"), "node-00")
    _bind(s, pod("low", cpu="4", priorityClassName="low"), "node-01")
    assert place(s, pod("high", cpu="2", priorityClassName="high")) == ["node-01"]


def test_preemption_picks_the_node_with_fewer_victims_at_equal_priority():
    s = scheduler(nodes(2, cpu=4), classes=CLASSES)
    _bind(s, pod("a-0", cpu="2", priorityClassName="low"), "node-00")
    _bind(s, pod("a-1", cpu="2", priorityClassName="low"), "node-00")
    _bind(s, pod("b-0", cpu="4", priorityClassName="low"), "node-01")
    # node-00 needs both its pods gone (2 victims, priority sum 200), node-01 one (sum 100)
    assert place(s, pod("high", cpu="4", priorityClassName="high")) == ["node-01"]


def test_no_preemption_for_equal_priority_or_policy_never_or_unresolvable_rules():
    s = scheduler(nodes(1, cpu=4), classes=CLASSES)
    place(s, pod("high-0", cpu="4", priorityClassName="high"))
    assert place(s, pod("high-1", cpu="4", priorityClassName="high")) == [None], "equal priority is never a victim"
    s = scheduler(nodes(1, cpu=4), classes=CLASSES)
    place(s, pod("low", cpu="4", priorityClassName="low"))
    assert place(s, pod("never", cpu="4", priorityClassName="never")) == [None], "preemptionPolicy: Never"
    s = scheduler(nodes(1, cpu=4), classes=CLASSES)
    place(s, pod("low", cpu="1", priorityClassName="low"))
    assert place(s, pod("high", cpu="1", priorityClassName="high", nodeSelector={"pool": "x"})) == [None], \
        "a node the pod's nodeSelector rules out is not a candidate"
    assert not s.preemptions


def test_preemption_can_lift_anti_affinity():
    s = scheduler(nodes(1, cpu=8), classes=CLASSES)
    place(s, pod("worker", {"role": "worker"}, cpu="1", priorityClassName="low"))
    alone = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term({"role": "worker"})]}}
    assert place(s, pod("ps", {"role": "ps"}, cpu="1", priorityClassName="high", affinity=alone)) == ["node-00"]
    assert [p.name for p in s.pending.values()] == ["worker"], "the PS's own rule keeps the recreated worker off"


def test_a_pod_naming_a_missing_priority_class_is_refused():
    with pytest.raises(AdmissionError, match="no PriorityClass with name gone"):
        scheduler(nodes(1)).create(pod("p", priorityClassName="gone"))


# ---- the scheduling loop -----------------------------------------------------------------------

def test_queue_takes_higher_priority_first():
    s = scheduler(nodes(1, cpu=2), classes=CLASSES)
    for p in (pod("low", cpu="2", priorityClassName="low"), pod("high", cpu="2", priorityClassName="never")):
        s.create(p)
    s.run()
    assert where(s) == {"high": "node-00"}


def test_a_lost_nodes_pods_are_recreated_and_rescheduled():
    s = scheduler(nodes(2))
    _bind(s, pod("a"), "node-00")
    _bind(s, pod("b"), "node-01")
    s.lose_node("node-00")
    s.run()
    assert where(s) == {"a": "node-01", "b": "node-01"}


def test_large_clusters_are_searched_only_until_enough_feasible_nodes_are_found():
    """numFeasibleNodesToFind: all nodes below 100; else 50% minus 1% per 125 nodes, at least 100 nodes."""
    assert [num_feasible_nodes_to_find(n) for n in (10, 99, 100, 130, 1000, 5000)] == [10, 99, 100, 100, 420, 500]


# ---- helpers -----------------------------------------------------------------------------------

def _bind(s: Scheduler, p: Pod, node: str) -> None:
    """Put a pod on a node directly, as if it had been scheduled there earlier."""
    s.state.bind(s.create(p), node)
    s._queued.clear()
    s._queue.clear()


def _why(s: Scheduler, p: Pod) -> str:
    sim = s.create(p)
    s._queued.pop(sim.uid)
    cycle = Cycle(s.state, sim, {})
    return "; ".join(status.reason for status in map(cycle.filter, s.state.nodes) if status)
