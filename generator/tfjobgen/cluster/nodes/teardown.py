"""Removing what real nodes made, from the records bring_up.py writes before making anything.

Killing the processes is not enough: containers keep running in the node's cgroups, and the kubelet's
root, each container's root file system and each pod's shared memory stay mounted; network namespaces,
routes, the bridge and cgroups stay too. This removes them, in an order that works from any state a
`cluster up` can stop in (finished, failed, interrupted), and is safe to run twice.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from . import network, node as node_files
from .node import RealNode

KILL_TIMEOUT = 10.0


def remove(home: Path) -> None:
    """Every real node of the cluster whose folder is `home`, then what they shared on the host."""
    folder = home / "nodes"
    if not folder.is_dir():
        return
    nodes = recorded_nodes(home)
    for real in nodes:
        _kill_cgroup(real)
    _unmount_under(folder)
    for real in nodes:
        _forget_cni_results(real)
        network.remove_node(real.addresses)
        node_files.remove_cgroups(real)
    record = folder / "host.json"
    if record.is_file():
        made = json.loads(record.read_text()).get("made_paths", [])
        network.remove_host()
        _remove_shared(made)
        record.unlink()


def recorded_nodes(home: Path) -> list[RealNode]:
    """The real nodes bring_up.py recorded in the cluster's folder (their name, place and folder: what finding
    and removing their processes, network and cgroups needs)."""
    nodes = []
    for path in sorted((home / "nodes").glob("*/node.json")):
        recorded = json.loads(path.read_text())
        nodes.append(RealNode(name=recorded["name"], addresses=network.NodeAddresses(int(recorded["index"])),
                              folder=path.parent, cluster_domain="", static_cpu_manager=False, registry_hosts=()))
    return nodes


def _kill_cgroup(real: RealNode) -> None:
    """SIGKILL every process in the node's cgroups (containers, pause, shims, daemons) until none is left."""
    deadline = time.monotonic() + KILL_TIMEOUT
    while (pids := node_files.cgroup_pids(real)) and time.monotonic() < deadline:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)


def _unmount_under(folder: Path) -> None:
    """Every mount below the nodes' folder (the kubelet's root, pod volumes, container roots, shared memory),
    deepest first; lazily, so one still busy does not stop the others."""
    prefix = str(folder.resolve()) + "/"
    with open("/proc/self/mounts") as mounts:
        points = [_unescape(line.split()[1]) for line in mounts]
    for point in sorted({p for p in points if p.startswith(prefix)}, key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True)


def _unescape(field: str) -> str:
    """/proc/self/mounts writes space, tab, newline and backslash as octal escapes."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def _forget_cni_results(real: RealNode) -> None:
    """libcni's cache (/var/lib/cni/results/<network>-<container>-<interface>) of the node's sandboxes."""
    tasks = real.folder / "containerd" / "state" / "io.containerd.runtime.v2.task" / "k8s.io"
    results = Path("/var/lib/cni/results")
    if not tasks.is_dir() or not results.is_dir():
        return
    for container in os.listdir(tasks):
        for entry in results.glob(f"*-{container}-*"):
            entry.unlink(missing_ok=True)


def _remove_shared(made: list[str]) -> None:
    for path in made:
        if path == "/run/netns":
            if os.path.isdir(path) and not os.listdir(path):
                subprocess.run(["umount", path], capture_output=True)  # `ip netns add` bind-mounts it on itself
                os.rmdir(path)
            continue
        shutil.rmtree(path, ignore_errors=True)

