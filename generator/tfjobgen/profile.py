"""The cluster profile: the KRM function's config, one per overlay.

Its fields and defaults are in schemas/clusterprofile.schema.json; an empty
spec is the embedded default (the seed's 80-core / 256 GiB nodes, no pools).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from . import quantity, schema
from .model import API_VERSION

KIND = "ClusterProfile"


@dataclass(frozen=True)
class NodeShape:
    cpu: Fraction  # allocatable cores per node
    memory: Fraction  # allocatable bytes per node


@dataclass(frozen=True)
class NodePool:
    node_selector: dict[str, str]
    tolerations: tuple[dict, ...]
    node: NodeShape
    node_count: int | None  # nodes in the pool, when the profile says


@dataclass(frozen=True)
class ClusterProfile:
    name: str
    node: NodeShape
    node_count: int | None  # nodes roles without a pool can use, when the profile says
    node_pools: dict[str, NodePool]
    cpu_manager_selector: dict[str, str]
    cpu_manager_tolerations: tuple[dict, ...]
    cluster_domain: str
    grpc_port: int
    seastar_port: int
    control_port: int
    image_registry: str
    task_objects: str  # indexed | per-task
    run_as_user: int
    run_as_group: int
    fs_group: int
    allow_no_jobs: bool

    def node_for(self, pool: str | None) -> NodeShape:
        """Shape of the nodes a role runs on."""
        return self.node_pools[pool].node if pool else self.node

    def node_count_for(self, pool: str | None) -> int | None:
        """How many nodes a role can use (None: the profile does not say)."""
        return self.node_pools[pool].node_count if pool else self.node_count


def _shape(spec: dict, fallback: NodeShape | None = None) -> NodeShape:
    if fallback is not None and not spec:
        return fallback
    return NodeShape(cpu=quantity.parse(spec["cpu"]), memory=quantity.parse(spec["memory"]))


def cluster_profile(document: dict) -> ClusterProfile:
    """Typed view of a schema-valid ClusterProfile document."""
    spec = schema.with_defaults(document, schema.CLUSTER_PROFILE)["spec"]
    node = _shape(spec["node"])
    return ClusterProfile(
        name=document["metadata"]["name"],
        node=node,
        node_count=spec.get("nodeCount"),
        node_pools={
            name: NodePool(
                node_selector=dict(pool["nodeSelector"]),
                tolerations=tuple(pool["tolerations"]),
                node=_shape(pool.get("node", {}), node),
                node_count=pool.get("nodeCount"),
            )
            for name, pool in sorted(spec["nodePools"].items())
        },
        cpu_manager_selector=dict(spec["cpuManager"]["nodeSelector"]),
        cpu_manager_tolerations=tuple(spec["cpuManager"]["tolerations"]),
        cluster_domain=spec["clusterDomain"],
        grpc_port=spec["ports"]["grpc"],
        seastar_port=spec["ports"]["seastar"],
        control_port=spec["ports"]["control"],
        image_registry=spec["imageRegistry"],
        task_objects=spec["taskObjects"],
        run_as_user=spec["podSecurity"]["runAsUser"],
        run_as_group=spec["podSecurity"]["runAsGroup"],
        fs_group=spec["podSecurity"]["fsGroup"],
        allow_no_jobs=spec["allowNoJobs"],
    )


DEFAULT_DOCUMENT = {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": "default"}, "spec": {}}


def default_profile() -> ClusterProfile:
    """The embedded default: 80-core / 256 GiB nodes, no pools, cluster.local, port 2222."""
    return cluster_profile(DEFAULT_DOCUMENT)
