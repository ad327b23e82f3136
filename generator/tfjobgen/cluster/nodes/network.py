"""The real nodes' network: one namespace per node on a bridge of the cluster's own.

    host namespace: bridge tfjg0 172.31.0.1/24 (CoreDNS, the relays to the API server and the registry)
      routes 10.245.I.0/24 via 172.31.0.(10+I)        the host reaches pods (DNS answers, the API server)
    node I's namespace: eth0 172.31.0.(10+I)/24 (a veth whose other end is on tfjg0)
      cni0 10.245.I.1/24, the node's pods (the CNI bridge plugin makes it)
      routes to the other nodes' pod subnets via their eth0 addresses; no default route

Pods talk to pods of other nodes through the bridge, and routing happens only inside the node
namespaces: the host forwards nothing, masquerades nothing and has no firewall rule. No address leads
off the machine. The pod subnets sit in the address plan's REAL_POD_RANGE (plane/addresses.py), outside
KWOK's 10.244.0.0/16, so a real pod and a KWOK pod never share an address. One cluster with real nodes
runs on a machine at a time: the bridge is its claim.

Each function runs `ip` (iproute2) with an argument list; every device, route and namespace made
here is removed by `remove_node` and `remove_host`.
"""

from __future__ import annotations

import ipaddress
import subprocess
from dataclasses import dataclass
from pathlib import Path

BRIDGE = "tfjg0"
BRIDGE_ADDRESS = "172.31.0.1"
BRIDGE_PREFIX = 24
API_RELAY_PORT = 6443  # the API server, relayed from 127.0.0.1 to the bridge for the kubelets
REGISTRY_RELAY_PORT = 5000  # the image registry, relayed the same way for containerd
DNS_PORT = 53
MAX_REAL_NODES = 200  # node addresses 172.31.0.11 ... on one /24


class NetworkError(Exception):
    """A command of iproute2 failed; the message names it and says what it answered."""


@dataclass(frozen=True)
class NodeAddresses:
    """Where node number `index` (1, 2, ...) sits on the cluster's network."""

    index: int

    @property
    def namespace(self) -> str:
        return f"tfjg-n{self.index}"

    @property
    def host_veth(self) -> str:
        return f"tfjgv{self.index}"

    @property
    def address(self) -> str:
        return str(ipaddress.ip_network(f"{BRIDGE_ADDRESS}/{BRIDGE_PREFIX}", strict=False)[10 + self.index])

    @property
    def pod_subnet(self) -> str:
        return f"10.245.{self.index}.0/24"

    @property
    def netns_path(self) -> Path:
        return Path("/run/netns") / self.namespace


def _ip(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["ip", *argv], capture_output=True, text=True)
    if check and done.returncode:
        raise NetworkError(f"`ip {' '.join(argv)}` failed: {done.stderr.strip() or f'exit {done.returncode}'}")
    return done


def bridge_exists() -> bool:
    return _ip("link", "show", BRIDGE, check=False).returncode == 0


def make_host() -> None:
    """The bridge and its address. NetworkError when it exists: another cluster's real nodes use it."""
    _ip("link", "add", BRIDGE, "type", "bridge")
    _ip("addr", "add", f"{BRIDGE_ADDRESS}/{BRIDGE_PREFIX}", "dev", BRIDGE)
    _ip("link", "set", BRIDGE, "up")


def make_node(node: NodeAddresses, others: list[NodeAddresses]) -> None:
    """The node's namespace, its veth on the bridge, and the routes between pod subnets."""
    _ip("netns", "add", node.namespace)
    _ip("link", "add", node.host_veth, "type", "veth", "peer", "name", "eth0", "netns", node.namespace)
    _ip("link", "set", node.host_veth, "master", BRIDGE, "up")
    inside = ("-n", node.namespace)
    _ip(*inside, "addr", "add", f"{node.address}/{BRIDGE_PREFIX}", "dev", "eth0")
    _ip(*inside, "link", "set", "lo", "up")
    _ip(*inside, "link", "set", "eth0", "up")
    for other in others:
        if other.index != node.index:
            _ip(*inside, "route", "add", other.pod_subnet, "via", other.address, "dev", "eth0")
    _ip("route", "add", node.pod_subnet, "via", node.address, "dev", BRIDGE)
    # Routing between the node's pods and the bridge, and bridged pod traffic seen by iptables (the
    # NetworkPolicy rules): both set in the node's namespace only, never the host's.
    done = subprocess.run(["nsenter", f"--net={node.netns_path}", "sysctl", "-q", "-w", "net.ipv4.ip_forward=1",
                           "net.bridge.bridge-nf-call-iptables=1"], capture_output=True, text=True)
    if done.returncode:
        raise NetworkError(f"sysctl in {node.namespace} failed: {done.stderr.strip()} (is br_netfilter loaded?)")


def pod_namespaces(node: NodeAddresses) -> list[str]:
    """The network namespaces containerd made for the node's pods (/run/netns/cni-*): those routed
    into the node's pod subnet."""
    listed = _ip("netns", "list", check=False).stdout.split("\n")
    names = [line.split()[0] for line in listed if line.startswith("cni-")]
    subnet = ipaddress.ip_network(node.pod_subnet)
    mine = []
    for name in names:
        addresses = _ip("-n", name, "-o", "-4", "addr", "show", check=False).stdout.split()
        if any(_in(word, subnet) for word in addresses):
            mine.append(name)
    return mine


def _in(word: str, subnet) -> bool:
    try:
        return ipaddress.ip_interface(word).ip in subnet
    except ValueError:
        return False


def remove_node(node: NodeAddresses) -> None:
    """The node's pods' namespaces, its own namespace (its veth pair, cni0, iptables rules and ipsets go
    with it) and the host's route to its pods. Whatever is already gone is skipped."""
    for name in pod_namespaces(node):
        _ip("netns", "delete", name, check=False)
    _ip("route", "del", node.pod_subnet, check=False)
    if node.netns_path.exists():
        _ip("netns", "delete", node.namespace, check=False)
    _ip("link", "del", node.host_veth, check=False)  # gone with the namespace, unless that was never made


def remove_host() -> None:
    _ip("link", "del", BRIDGE, check=False)
