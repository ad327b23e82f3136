"""What real nodes cost: `cluster up` with real nodes, a job from apply to its first step and to the end,
a node's memory, and training speed on real nodes against run-local's emulation.

    .venv/bin/python benchmarks/real_nodes_time.py [--runs 3]

- up: wall seconds of `tfjobgen cluster up --nodes 3 --real-nodes 3` as a user runs it (its own
  process, from start to return: every node Ready, kube-router on each), then `down`.
- apply -> first step / every Job Complete: tests/nodes/jobs/tiny.yaml (native backend, the node
  tier's profile) applied on a 2-real-node cluster whose nodes already hold the image; seconds from
  `kubectl apply` until the chief logs its first step, and until every Job is Complete.
- memory: resident memory of one idle real node's processes (kubelet, containerd, kube-router),
  summed from /proc over the processes of its cgroup.
- steps/s: the chief's `steps_per_sec` when it finished, on real nodes and in `tfjobgen run-local`
  (the same job and the same machine), side by side.

Needs root, `make cluster-tools` and `make images`. Prints Markdown tables (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import commands  # noqa: E402 - benchmarks/commands.py, beside this script
REPO = Path(__file__).resolve().parents[1]

from tfjobgen.cluster import home  # noqa: E402
from tfjobgen.cluster.nodes import node as real_node  # noqa: E402
from tfjobgen.cluster.nodes import teardown
from tfjobgen.harness import conformance  # noqa: E402
from tfjobgen.kit import owned  # noqa: E402
from tfjobgen.kube import api

PROFILE = REPO / "tests" / "nodes" / "profiles" / "real-nodes.yaml"
JOB = REPO / "tests" / "nodes" / "jobs" / "tiny.yaml"
FINISHED = re.compile(r"event=finished .*steps_per_sec=([0-9.]+)")



def tfjobgen(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return commands.tfjobgen(*args, check=check)


def time_up(runs: int) -> list[float]:
    times = []
    for run in range(runs):
        name = f"bench-up-{run}"
        started = time.monotonic()
        tfjobgen("cluster", "up", "--name", name, "--profile", str(PROFILE), "--nodes", "3", "--real-nodes", "3")
        times.append(time.monotonic() - started)
        tfjobgen("cluster", "down", "--name", name)
        print(f"up {run + 1}/{runs}: {times[-1]:.1f} s", file=sys.stderr)
    return times


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    return subprocess.run(["kubectl", f"--kubeconfig={kubeconfig}", *args], input=stdin, capture_output=True,
                          text=True, check=True).stdout


def run_job(kubeconfig: Path, objects: api.Objects, namespace: str) -> tuple[float, float, float]:
    """(seconds to the first step, seconds to every Job Complete, the chief's steps/s)."""
    objects.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    rendered = [o for o in conformance.render(JOB, PROFILE, "native", namespace)
                if not o["apiVersion"].startswith("monitoring.coreos.com")]
    started = time.monotonic()
    kubectl(kubeconfig, "apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": rendered}))
    first_step = done = 0.0
    while not done:
        chief = [p for p in objects.list("v1", "Pod", namespace, label_selector="tfjobgen.dev/role=chief")
                 if (p.get("status") or {}).get("phase") in ("Running", "Succeeded")]
        if chief and not first_step:
            log = subprocess.run(["kubectl", f"--kubeconfig={kubeconfig}", "logs", "-n", namespace,
                                  chief[0]["metadata"]["name"]], capture_output=True, text=True).stdout
            if "event=step" in log:
                first_step = time.monotonic() - started
        jobs = objects.list("batch/v1", "Job", namespace)
        if jobs and all(any(c["type"] == "Complete" and c["status"] == "True"
                            for c in (j.get("status") or {}).get("conditions") or []) for j in jobs):
            done = time.monotonic() - started
        time.sleep(0.2)
    log = kubectl(kubeconfig, "logs", "-n", namespace, chief[0]["metadata"]["name"])
    return first_step, done, float(FINISHED.search(log).group(1))


def node_memory(folder: Path) -> dict[str, float]:
    """MiB of resident memory per real node, over the processes of its cgroup (pods included: none run)."""
    found = {}
    for node in teardown.recorded_nodes(folder):
        kib = 0
        for pid in real_node.cgroup_pids(node):
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            match = re.search(r"VmRSS:\s+(\d+) kB", status)
            kib += int(match.group(1)) if match else 0
        found[node.name] = kib / 1024
    return found


def run_local_speed() -> float:
    """STEPS/S of run-local's summary table (the chief's finished line, as on real nodes)."""
    done = tfjobgen("run-local", str(JOB), check=False)
    lines = (done.stdout + done.stderr).splitlines()
    for index, line in enumerate(lines[:-2]):
        if line.split()[:3] == ["STEPS", "TARGET", "STEPS/S"]:
            return float(lines[index + 2].split()[2].replace(",", ""))
    raise SystemExit(f"run-local printed no summary:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")


def main() -> int:
    owned.unwind_on_sigterm()  # killed, it still stops the clusters it started
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault(home.HOME_ENV, tempfile.mkdtemp(prefix="tfjobgen-bench-"))
    ups = time_up(args.runs)

    name = "bench-job"
    kubeconfig = Path(tfjobgen("cluster", "up", "--name", name, "--profile", str(PROFILE), "--nodes", "2",
                               "--real-nodes", "2").stdout.strip().splitlines()[-1])
    try:
        objects = api.Objects(api.connect(str(kubeconfig)))
        time.sleep(5)
        memory = node_memory(home.folder(name))
        run_job(kubeconfig, objects, "warm-up")  # the nodes pull the image once
        jobs = [run_job(kubeconfig, objects, f"run-{run}") for run in range(args.runs)]
        print(f"jobs (first step s, complete s, steps/s): {jobs}; memory MiB: {memory}", file=sys.stderr)
    finally:
        tfjobgen("cluster", "down", "--name", name, check=False)
    local = [run_local_speed() for _ in range(args.runs)]

    def row(what: str, values: list[float], unit: str, goal: str = "-") -> str:
        return (f"| {what} | {statistics.median(values):.1f} {unit} | {min(values):.1f} {unit} | "
                f"{max(values):.1f} {unit} | {goal} |")

    print("| what | median | min | max | goal |\n| --- | ---: | ---: | ---: | ---: |")
    print(row("`cluster up --nodes 3 --real-nodes 3`, until it returns", ups, "s", "30 s"))
    print(row("apply -> the chief's first step (image cached on the nodes)", [j[0] for j in jobs], "s", "20 s"))
    print(row("apply -> every Job Complete (1,500 steps)", [j[1] for j in jobs], "s"))
    print(row("memory of one idle real node (kubelet, containerd, kube-router)", list(memory.values()), "MiB"))
    print(row("steps/s on 2 real nodes", [j[2] for j in jobs], "steps/s"))
    print(row("steps/s in `tfjobgen run-local`", local, "steps/s"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
