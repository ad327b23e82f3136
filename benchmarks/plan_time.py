"""How long `tfjobgen plan` takes: the whole command, and the planning alone per job.

    .venv/bin/python benchmarks/plan_time.py [--rounds 5]

Plans every job in jobs/ against overlays/seed-80c, and a large job made here
(500 PS, 5000 workers, 200 declared variables) to see how it grows. Prints the
median of the rounds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

from tfjobgen.concerns import workload
from tfjobgen.expand import pipeline
from tfjobgen.planner import report

PROFILE = REPO / "overlays" / "seed-80c" / "cluster-profile.yaml"
LARGE = """\
apiVersion: tfjobgen.dev/v1alpha1
kind: TrainingJob
metadata: {name: large, namespace: ml-training}
spec:
  image: registry.example.com/ml/own:1.0
  command: [python, train.py]
  api: tf1
  roles:
    ps: {replicas: 500, cpu: 8, memory: 64Gi}
    worker: {replicas: 5000, cpu: 4, memory: 8Gi}
  topology: {mode: isolated}
  model:
    partitioner: fixed
    variables:
""" + "".join(f"    - {{name: table_{i}, shape: [{1000000 + i}, 32], lookupsPerStep: 4096}}\n" for i in range(100)) \
    + "".join(f"    - {{name: dense_{i}, shape: [512, 256]}}\n" for i in range(100))


def median_seconds(action, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def plan_seconds(path: Path, profile, rounds: int) -> float:
    intents, _ = pipeline.load_intents([str(path)])
    job, problems = pipeline.validate(intents[0], profile)
    assert job is not None, [p.format() for p in problems]
    return median_seconds(lambda: report.text(report.make(job, profile, workload.of_job(job))), rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    profile = pipeline.load_profile(str(PROFILE))
    large = Path(os.environ.get("TMPDIR", "/tmp")) / "tfjobgen-plan-large.yaml"
    large.write_text(LARGE)
    print("| job | tasks | planning alone (median) |\n|---|---:|---:|")
    for path in sorted((REPO / "jobs").glob("*.yaml")) + [large]:
        if path.name == "kustomization.yaml":
            continue
        intents, _ = pipeline.load_intents([str(path)])
        tasks = sum(r.get("replicas", 1) for r in intents[0].data["spec"]["roles"].values())
        print(f"| {path.name} | {tasks:,} | {1000 * plan_seconds(path, profile, args.rounds):.1f} ms |", flush=True)
    command = [str(REPO / ".venv/bin/tfjobgen"), "plan", "--profile", str(PROFILE)]
    for label, paths in (("jobs/ (10 jobs)", [str(REPO / "jobs")]), ("the large job", [str(large)])):
        seconds = median_seconds(lambda: subprocess.run(command + paths, check=True, capture_output=True), args.rounds)
        print(f"\n`tfjobgen plan` on {label}: {seconds:.2f} s (median of {args.rounds})")


if __name__ == "__main__":
    main()
