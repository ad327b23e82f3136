"""Time from apply to every pod Running, per backend, on a local cluster of 100 nodes.

    .venv/bin/python benchmarks/start_time.py [--job scene2-case4] [--nodes 100] [--rounds 3]
                                              [--profile seed-80c] [--backends native jobset tfjob]

One cluster shaped as the profile (`tfjobgen cluster up --nodes N`: the real kube-apiserver,
controller manager and scheduler, the JobSet controller and the training-operator, KWOK nodes
whose pods start Running as soon as they are bound). The job is rendered on each backend into
a namespace of its own and applied server-side; the clock runs from the apply's start until the
API server lists every task's pod Running, polled every 0.25 s. Backends take turns, round after
round, and each job's objects are deleted (and its pods gone) before the next. Prints a Markdown
table: median, min and max seconds per backend.

What it measures is the controllers' and the scheduler's work (creating Jobs and pods, binding
them): KWOK starts no container, so image pulls and process start-up are not in it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from real_controllers import REPO, profile_file, tfjobgen

from tfjobgen.harness import conformance
from tfjobgen.kit import owned
from tfjobgen.kube import api
from tfjobgen.place import place

BACKENDS = ("native", "jobset", "tfjob")


def one_start(objects: api.Objects, job: Path, profile: str, backend: str, namespace: str) -> float:
    rendered = conformance.render(job, profile_file(profile), backend, namespace)
    pods = len(conformance.decoded_job(rendered).pods)
    place.job_namespace(objects, namespace)
    started = time.monotonic()
    conformance.apply(objects, rendered)
    conformance.wait_running(objects, namespace, pods, timeout=600)
    seconds = time.monotonic() - started
    conformance.remove(objects, rendered)
    api.wait_until(lambda: not objects.list("v1", "Pod", namespace), 300, f"the pods of {namespace} gone")
    return seconds


def main() -> int:
    owned.unwind_on_sigterm()  # killed, it still stops the clusters it started
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--job", default="scene2-case4", help="a job of jobs/ (default: 20 PS + 200 workers)")
    parser.add_argument("--profile", default="seed-80c", choices=("seed-80c", "prod-96c"))
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=BACKENDS)
    args = parser.parse_args()
    job = REPO / "jobs" / f"{args.job}.yaml"
    name = "start-time"
    up = tfjobgen("cluster", "up", "--name", name, "--profile", str(profile_file(args.profile)), "--nodes",
                  str(args.nodes), "--quiet")
    if up.returncode != 0:
        print(f"start_time: cluster up failed: {up.stderr.strip()}", file=sys.stderr)
        return 1
    times: dict[str, list[float]] = {b: [] for b in args.backends}
    try:
        objects = api.Objects(api.connect(up.stdout.strip().splitlines()[-1]))
        nodes = len(objects.list("v1", "Node"))
        pods = len(conformance.decoded_job(conformance.render(job, profile_file(args.profile), "native", "x")).pods)
        for round_ in range(args.rounds):
            for backend in args.backends:
                times[backend].append(one_start(objects, job, args.profile, backend, f"{backend}-{round_}"))
                print(f"round {round_ + 1}/{args.rounds} {backend}: {times[backend][-1]:.1f} s", file=sys.stderr)
    finally:
        tfjobgen("cluster", "down", "--name", name)
    print(f"| backend ({args.job}: {pods} pods, {nodes} nodes of {args.profile}, {args.rounds} rounds) "
          "| median | min | max |")
    print("| --- | --- | --- | --- |")
    for backend in args.backends:
        row = times[backend]
        print(f"| {backend} | {statistics.median(row):.1f} s | {min(row):.1f} s | {max(row):.1f} s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
