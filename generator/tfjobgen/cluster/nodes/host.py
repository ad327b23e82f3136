"""What the real nodes share on the host: the cluster DNS, the image registry, the relays that bring the
API server and the registry from 127.0.0.1 to the bridge, and the identities and RBAC of each.

CoreDNS serves the cluster domain only (no `forward`: a name outside the cluster gets SERVFAIL, and
nothing leaves the machine). The registry listens on 127.0.0.1; containerd reaches it through a relay
on the bridge, under every registry name the cluster's jobs use (node.registry_hosts).
Every component gets a client certificate of its own and a ClusterRole with only what it reads.
"""

from __future__ import annotations

import json
from pathlib import Path

from ...artifacts import programs
from ..processes import Component
from .network import API_RELAY_PORT, BRIDGE_ADDRESS, DNS_PORT, REGISTRY_RELAY_PORT

DNS_HEALTH_PORT, DNS_READY_PORT = 8080, 8181  # on the bridge address: the cluster's own

NODES_GROUP = "system:nodes"
COREDNS_USER = "tfjobgen:coredns"
KUBE_ROUTER_USER = "tfjobgen:kube-router"


def _read(resources: list[str], group: str = "") -> dict:
    return {"apiGroups": [group], "resources": resources, "verbs": ["get", "list", "watch"]}


def rbac_objects() -> list[dict]:
    """Kubelets act as Kubernetes' own `system:node` role (the API server runs RBAC only, so that role has
    no subject until it is bound); CoreDNS and kube-router only read."""
    roles = {
        COREDNS_USER: [_read(["services", "pods", "namespaces"]), _read(["endpointslices"], "discovery.k8s.io")],
        KUBE_ROUTER_USER: [_read(["pods", "namespaces", "nodes", "services", "endpoints"]),
                           _read(["networkpolicies"], "networking.k8s.io"),
                           _read(["endpointslices"], "discovery.k8s.io")],
    }
    objects = [_binding("tfjobgen:real-nodes", "system:node", "Group", NODES_GROUP)]
    for user, rules in roles.items():
        objects.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                        "metadata": {"name": user}, "rules": rules})
        objects.append(_binding(user, user, "User", user))
    return objects


def _binding(name: str, role: str, kind: str, subject: str) -> dict:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": subject}]}


def kubeconfig_over_bridge(ca: bytes, cert: bytes, key: bytes) -> str:
    """A kubeconfig for a process in a node's namespace: the API server through the relay on the bridge. Its
    certificate names 127.0.0.1 and localhost, so TLS checks the name localhost."""
    import base64

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "cluster",
        "clusters": [{"name": "cluster", "cluster": {"server": f"https://{BRIDGE_ADDRESS}:{API_RELAY_PORT}",
                                                     "tls-server-name": "localhost",
                                                     "certificate-authority-data": b64(ca)}}],
        "users": [{"name": "user", "user": {"client-certificate-data": b64(cert), "client-key-data": b64(key)}}],
        "contexts": [{"name": "cluster", "context": {"cluster": "cluster", "user": "user"}}],
    }, indent=1) + "\n"


def relay(name: str, port: int, target_port: int) -> Component:
    """A TCP relay from the bridge to a server on 127.0.0.1 (socat forks a child per connection)."""
    return Component(name, ["socat", f"TCP-LISTEN:{port},bind={BRIDGE_ADDRESS},reuseaddr,fork",
                            f"TCP:127.0.0.1:{target_port}"])


def api_relay(api_port: int) -> Component:
    return relay("relay-kube-apiserver", API_RELAY_PORT, api_port)


def registry_relay(registry_port: int) -> Component:
    return relay("relay-registry", REGISTRY_RELAY_PORT, registry_port)


def corefile(cluster_domain: str, kubeconfig: Path) -> str:
    return "\n".join([
        f".:{DNS_PORT} {{",
        f"    bind {BRIDGE_ADDRESS}",
        "    errors",
        f"    health {BRIDGE_ADDRESS}:{DNS_HEALTH_PORT}",
        f"    ready {BRIDGE_ADDRESS}:{DNS_READY_PORT}",
        f"    kubernetes {cluster_domain} in-addr.arpa ip6.arpa {{",
        f"        kubeconfig {kubeconfig}",
        "        pods insecure",
        "        fallthrough in-addr.arpa ip6.arpa",
        "        ttl 5",
        "    }",
        "    cache 5",
        "    loop",
        "}",
        "",
    ])


def coredns(config: Path) -> Component:
    return Component("coredns", [str(programs.program("coredns")), "-conf", str(config)])


def dns_ready_url() -> str:
    return f"http://{BRIDGE_ADDRESS}:{DNS_READY_PORT}/ready"


def registry_config(storage: Path, port: int) -> str:
    """distribution's configuration: the filesystem under `storage` (a cache shared by the machine's clusters,
    so an image is pushed once), HTTP on 127.0.0.1 only."""
    return json.dumps({
        "version": "0.1", "log": {"level": "warn", "accesslog": {"disabled": True}},
        "storage": {"filesystem": {"rootdirectory": str(storage)}, "delete": {"enabled": False}},
        "http": {"addr": f"127.0.0.1:{port}"},
    }, indent=1) + "\n"


def registry(config: Path) -> Component:
    return Component("registry", [str(programs.program("registry")), "serve", str(config)],
                     env={"OTEL_TRACES_EXPORTER": "none"})  # distribution 3 exports traces unless told not to
