"""What a cluster profile's cluster is made of: its nodes and its PriorityClasses. Pure functions.

Nodes come in groups: the nodes roles without a pool use (spec.node, spec.nodeCount) and one
group per node pool. Each node carries what the profile says jobs select or tolerate:
- the CPU manager's label (spec.cpuManager.nodeSelector) on every node: a local cluster has no
  kubelet, so every node stands for one running the static policy;
- its pool's labels, and a taint for each toleration the pool asks jobs to carry, so that only
  jobs with the toleration land there;
- allocatable CPU and memory as the profile counts them (cpu minus reservedCpus), and the GPU
  pool's extended resource (spec.gpu).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..inputs.problems import InvalidInput, Problem
from ..inputs.profile import ClusterProfile, NodeShape

FAKE_NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")  # the nodes KWOK keeps Ready
GROUP_LABEL = "tfjobgen.dev/node-group"  # which group of the profile a node stands for
DEFAULT_GROUP = "node"
PODS_PER_NODE = 110  # the kubelet's default --max-pods
MAX_NODES = 5000


@dataclass(frozen=True)
class NodeGroup:
    name: str  # "node", or the pool's name; nodes are <name>-000, <name>-001, ...
    count: int
    shape: NodeShape
    labels: dict[str, str]
    taints: tuple[dict, ...]
    extended: dict[str, int]  # extended resources per node, such as nvidia.com/gpu: 8


def node_groups(profile: ClusterProfile, nodes: int | None = None) -> list[NodeGroup]:
    """The profile's node groups; `nodes` counts every group whose size the profile does not give."""
    common = dict(profile.cpu_manager_selector)
    common_taints = _taints_tolerated_by(profile.cpu_manager_tolerations)
    groups = [NodeGroup(DEFAULT_GROUP, _count(profile, "spec.nodeCount", profile.node_count, nodes), profile.node,
                        common, common_taints, {})]
    for name, pool in profile.node_pools.items():
        extended = {}
        if profile.gpu is not None and profile.gpu.node_pool == name:
            extended[profile.gpu.resource] = profile.gpu.per_node
        groups.append(NodeGroup(name, _count(profile, f"spec.nodePools.{name}.nodeCount", pool.node_count, nodes),
                                pool.node, {**common, **pool.node_selector},
                                common_taints + _taints_tolerated_by(pool.tolerations), extended))
    total = sum(g.count for g in groups)
    if total > MAX_NODES:
        uncounted = [g.name for g in groups if nodes is not None and (g.name == DEFAULT_GROUP or
                                                                      profile.node_pools[g.name].node_count is None)]
        if uncounted and nodes * len(uncounted) > total - MAX_NODES:  # --nodes made it too many: say so
            pools = [g for g in uncounted if g != DEFAULT_GROUP]
            groups_named = " and ".join(filter(None, (
                "the main group" if DEFAULT_GROUP in uncounted else "",
                f"pool{'s' if len(pools) > 1 else ''} {', '.join(pools)}" if pools else "")))
            raise TooManyNodes(f"--nodes {nodes} gives {groups_named} {nodes} nodes each, {total} in all; a local "
                               f"cluster holds at most {MAX_NODES}")
        raise _invalid(profile, "spec.nodeCount", f"{total} nodes in all; a local cluster holds at most {MAX_NODES}")
    return groups


class TooManyNodes(ValueError):
    """--nodes, applied to every group the profile does not count, makes more nodes than a local cluster holds."""


def _count(profile: ClusterProfile, field: str, counted: int | None, nodes: int | None) -> int:
    """--nodes sizes the main group, and every pool whose size the profile does not give."""
    main = field == "spec.nodeCount"
    if nodes is not None and (main or counted is None):
        return nodes
    if counted is None:
        group = "the cluster" if main else f"pool '{field.split('.')[2]}'"
        raise _invalid(profile, field.rsplit(".", 1)[0] if not main else "spec",
                       f"the profile does not say how many nodes {group} has: set nodeCount there, or pass --nodes N")
    return counted


def _invalid(profile: ClusterProfile, field: str, message: str) -> InvalidInput:
    origin = profile.origin
    return InvalidInput([Problem(message, field, file=origin.file or f"profile '{profile.name}'",
                                 line=origin.line_of(field))])


def _taints_tolerated_by(tolerations) -> tuple[dict, ...]:
    """One taint per toleration that names a key: what the nodes have that the toleration is for."""
    taints = []
    for toleration in tolerations:
        if not toleration.get("key"):
            continue  # tolerates every taint: says nothing about the node
        taint = {"key": toleration["key"], "effect": toleration.get("effect") or "NoSchedule"}
        if toleration.get("operator", "Equal") == "Equal" and toleration.get("value"):
            taint["value"] = toleration["value"]
        taints.append(taint)
    return tuple(taints)


def node_objects(groups: list[NodeGroup]) -> list[dict]:
    """Node objects for KWOK to keep Ready, in group order."""
    nodes = []
    for group in groups:
        for index in range(group.count):
            name = f"{group.name}-{index:03d}"
            allocatable = {"cpu": _cpu(group.shape.cpu), "memory": str(int(group.shape.memory)),
                           "pods": str(PODS_PER_NODE), **{k: str(v) for k, v in group.extended.items()}}
            capacity = dict(allocatable, cpu=_cpu(group.shape.cpu + (group.shape.reserved_cpus or 0)))
            nodes.append({
                "apiVersion": "v1", "kind": "Node",
                "metadata": {
                    "name": name,
                    "annotations": {FAKE_NODE_ANNOTATION[0]: FAKE_NODE_ANNOTATION[1]},
                    "labels": {**group.labels, GROUP_LABEL: group.name, "kubernetes.io/hostname": name,
                               "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "type": "kwok"},
                },
                "spec": {"taints": [dict(t) for t in group.taints]} if group.taints else {},
                "status": {"allocatable": allocatable, "capacity": capacity},
            })
    return nodes


def _cpu(cores) -> str:
    return str(int(cores)) if cores == int(cores) else f"{int(cores * 1000)}m"


def priority_classes(profile: ClusterProfile, defined: list[dict]) -> list[dict]:
    """The PriorityClasses the profile names: as `defined` (docs/priority-classes.yaml) when it
    defines them, else with the same meaning (ps preempts at 2000, workers wait at 1000)."""
    by_name = {d["metadata"]["name"]: d for d in defined if d.get("kind") == "PriorityClass"}
    classes = []
    for role, name in sorted(profile.priority_classes.items()):
        if name in by_name:
            classes.append(by_name[name])
            continue
        preempts = role == "ps"
        classes.append({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                        "value": 2000 if preempts else 1000, "globalDefault": False,
                        "preemptionPolicy": "PreemptLowerPriority" if preempts else "Never",
                        "description": f"tfjobgen {role} pods (made by tfjobgen cluster up for profile "
                                       f"'{profile.name}')"})
    return classes
