"""What a cluster with real nodes could leave on this machine, read the same way before and after.

Each category is a sorted list of lines: network devices, network namespaces, mounts, iptables
and ip6tables rules, ipsets, routes, the cgroup tree, and the shared paths containerd, the CNI
plugins and the kubelet use whatever they are told. Things other sessions on the machine make
while a test runs (the tool runner's own cgroups) are left out by name.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tfjobgen.cluster.nodes import bring_up

CGROUPS = Path("/sys/fs/cgroup")
OTHERS = ("process_api",)  # cgroups this machine's tool runner makes for every command


def _lines(argv: list[str]) -> list[str]:
    done = subprocess.run(argv, capture_output=True, text=True)
    return sorted(line for line in done.stdout.splitlines() if line.strip() and not line.startswith("#"))


def _cgroups() -> list[str]:
    found = []
    for hierarchy in sorted(CGROUPS.iterdir()) if CGROUPS.is_dir() else ():
        for path in hierarchy.rglob("*"):
            if path.is_dir() and not any(other in path.parts for other in OTHERS) and len(path.parts) <= 8:
                found.append(str(path))
    return sorted(found)


def _mounts() -> list[str]:
    with open("/proc/self/mounts") as mounts:
        return sorted(f"{fields[0]} {fields[1]} {fields[2]}" for fields in (line.split() for line in mounts)
                      if not any(other in fields[1] for other in OTHERS))


def snapshot() -> dict[str, list[str]]:
    return {
        "links": [line.split(":")[1].strip().split("@")[0] for line in _lines(["ip", "-o", "link"])],
        "network namespaces": _lines(["ip", "netns", "list"]),
        "mounts": _mounts(),
        "iptables": _lines(["iptables-save"]),
        "ip6tables": _lines(["ip6tables-save"]),
        "ipsets": _lines(["ipset", "list", "-name"]),
        "routes": _lines(["ip", "route"]),
        "cgroups": _cgroups(),
        "shared paths": [p for p in bring_up.SHARED_PATHS if os.path.lexists(p)],
    }


def differences(before: dict[str, list[str]], after: dict[str, list[str]]) -> list[str]:
    """One line per thing made or removed, by category ('' when the machine is as it was)."""
    lines = []
    for category in before:
        made = sorted(set(after[category]) - set(before[category]))
        removed = sorted(set(before[category]) - set(after[category]))
        lines += [f"{category}: left behind {item}" for item in made]
        lines += [f"{category}: removed {item}" for item in removed]
    return lines
