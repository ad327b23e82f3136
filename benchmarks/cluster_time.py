"""What the local cluster costs: `cluster up`, the memory of a 100-node cluster, placing a 500-pod job.

    .venv/bin/python benchmarks/cluster_time.py [--runs 5] [--nodes 100] [--tasks 500]

- `cluster up`: wall seconds of `tfjobgen cluster up --nodes 4` as a user runs it (its own
  process, from start to return: every node Ready, every controller serving), then `down`;
  median, min and max over --runs.
- memory: the resident memory of every process of one idle cluster of --nodes nodes (the sum of
  their RSS, from /proc), per component.
- placing: a job of --tasks tasks (10% PS, spread, on the seed's 80-core nodes) rendered and
  created on that cluster; seconds from the first object created until every pod is bound
  (`tfjobgen place`'s settling, less its 2 s of quiet), median over --runs.

Prints Markdown tables (docs/benchmarks.md, "The local cluster").
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import commands  # noqa: E402 - benchmarks/commands.py, beside this script
REPO = Path(__file__).resolve().parents[1]

from tfjobgen import backends
from tfjobgen.cluster import home, processes
from tfjobgen.expand import pipeline
from tfjobgen.kit import owned
from tfjobgen.kube import api
from tfjobgen.place import place

SEED = REPO / "overlays" / "seed-80c" / "cluster-profile.yaml"



def tfjobgen(*args: str) -> subprocess.CompletedProcess:
    return commands.tfjobgen(*args, timeout=300)


def up_seconds(runs: int) -> list[float]:
    seconds = []
    for run in range(runs):
        name = f"bench-up-{os.getpid()}-{run}"
        started = time.monotonic()
        proc = tfjobgen("cluster", "up", "--name", name, "--nodes", "4", "--profile", str(SEED), "--quiet")
        seconds.append(time.monotonic() - started)
        tfjobgen("cluster", "down", "--name", name)
        if proc.returncode:
            sys.exit(f"cluster up failed: {proc.stderr}")
    return seconds


def resident_memory(cluster_home: Path) -> dict[str, int]:
    """RSS bytes per component name (the process's comm), summed."""
    found: dict[str, int] = {}
    for pid in processes.running(cluster_home):
        try:
            name = Path(f"/proc/{pid}/comm").read_text().strip()
            rss = next(int(line.split()[1]) * 1024 for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                       if line.startswith("VmRSS:"))
        except (OSError, StopIteration):
            continue
        found[name] = found.get(name, 0) + rss
    return found


def big_job(tasks: int, folder: Path) -> list[dict]:
    ps = max(1, tasks // 10)
    path = folder / "big.yaml"
    path.write_text(f"""apiVersion: tfjobgen.dev/v1alpha1
kind: TrainingJob
metadata: {{name: big, namespace: bench}}
spec:
  image: registry.example.com/ml/tfjobgen-runtime:0.1.0
  roles:
    ps: {{replicas: {ps}, cpu: 4, memory: 16Gi}}
    worker: {{replicas: {tasks - ps - 1}, cpu: 2, memory: 4Gi}}
    chief: {{cpu: 2, memory: 4Gi}}
  topology: {{mode: spread}}
""")
    intents, _ = pipeline.load_intents([str(path)])
    expansion = pipeline.expand(intents, pipeline.load_profile(str(SEED)))
    assert expansion.ok, [p.format() for p in expansion.problems]
    return expansion.in_order()


def place_seconds(kubeconfig: Path, objects: list[dict], runs: int) -> list[float]:
    client = api.Objects(api.connect(str(kubeconfig)))
    expected = {job.key: len(job.pods) for job in backends.decode(objects)}
    seconds = []
    for _ in range(runs):
        client.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}})
        started = time.monotonic()
        for obj in objects:
            client.create(obj)
        place.settle(client, ["bench"], expected, {})
        seconds.append(time.monotonic() - started - place.QUIET_SECONDS)
        for obj in objects:
            client.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], "bench",
                          propagation_policy="Background")
        api.wait_until(lambda: not client.list("v1", "Pod", "bench"), 300, "the job's pods gone")
    return seconds


def row(label: str, values: list[float]) -> str:
    return f"| {label} | {statistics.median(values):.1f} | {min(values):.1f} | {max(values):.1f} |"


def main() -> int:
    owned.unwind_on_sigterm()  # killed, it still stops the clusters it started
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--tasks", type=int, default=500)
    args = parser.parse_args()
    lines = ["| what | median s | min s | max s |", "| --- | ---: | ---: | ---: |",
             row("`tfjobgen cluster up --nodes 4` (seed-80c profile)", up_seconds(args.runs))]
    name = f"bench-{os.getpid()}"
    proc = tfjobgen("cluster", "up", "--name", name, "--nodes", str(args.nodes), "--profile", str(SEED), "--quiet")
    if proc.returncode:
        sys.exit(f"cluster up failed: {proc.stderr}")
    try:
        kubeconfig = Path(proc.stdout.strip().splitlines()[-1])
        time.sleep(10)  # idle: leases renewed, informers synced
        memory = resident_memory(home.folder(name))
        with tempfile.TemporaryDirectory() as folder:
            objects = big_job(args.tasks, Path(folder))
        lines.append(row(f"{args.tasks} pods created and bound on {args.nodes} nodes", place_seconds(kubeconfig, objects,
                                                                                                       args.runs)))
    finally:
        tfjobgen("cluster", "down", "--name", name)
    print("\n".join(lines))
    print(f"\nresident memory of an idle cluster of {args.nodes} nodes:\n")
    print("| component | MiB |\n| --- | ---: |")
    for component, rss in sorted(memory.items(), key=lambda item: -item[1]):
        print(f"| {component} | {rss / 2**20:.0f} |")
    print(f"| all | {sum(memory.values()) / 2**20:.0f} |")
    assert not owned.marked(processes.MARKER, str(home.folder(name))), "a process of the benchmark's cluster outlived it"
    return 0


if __name__ == "__main__":
    sys.exit(main())
