"""What each backend costs the function: the same synthetic jobs expanded as native, jobset and tfjob.

    .venv/bin/python benchmarks/backend_time.py [--jobs 100] [--runs 9]

harness/synthetic.py's seeded variants of jobs/ without colocated ones (jobset and tfjob refuse that
topology), each with spec.backend set, expanded in-process (validate, plan, encode) and written as YAML,
in interleaved rounds so that drift of the machine falls on every backend alike. Also the
output's objects and bytes. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

import yaml

from tfjobgen.expand import emit, pipeline
from tfjobgen.harness import synthetic
from tfjobgen.inputs import source
from tfjobgen.inputs.intents import Intent

REPO = Path(__file__).resolve().parents[1]
BACKENDS = ("native", "jobset", "tfjob")


def intents(count: int, backend: str) -> list[Intent]:
    rng = random.Random(20261122)
    templates = [yaml.safe_load(p.read_text()) for p in sorted((REPO / "jobs").glob("*.yaml"))
                 if p.name != "kustomization.yaml"]
    templates = [t for t in templates if t["spec"].get("topology", {}).get("mode") != "colocated"]
    found = []
    for i in range(count):
        job = synthetic.variant(rng.choice(templates), i, rng)
        job["spec"]["backend"] = backend
        text = yaml.safe_dump(job, sort_keys=False)
        document = source.parse_documents(text, f"job-{i:03d}.yaml")[0]
        found.append(Intent(document.data, f"job-{i:03d}.yaml", document))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    profile = pipeline.load_profile(str(REPO / "overlays" / "seed-80c" / "cluster-profile.yaml"))
    times: dict[str, list[float]] = {b: [] for b in BACKENDS}
    sizes: dict[str, tuple[int, int]] = {}
    for run in range(args.runs):
        for backend in BACKENDS:
            jobs = intents(args.jobs, backend)
            started = time.perf_counter()
            expansion = pipeline.expand(jobs, profile)
            text = emit.to_yaml(expansion.in_order())
            times[backend].append(time.perf_counter() - started)
            assert expansion.ok, [p.format() for p in expansion.problems if p.is_error][:3]
            sizes[backend] = (sum(len(g) for g in expansion.objects), len(text.encode()))
        print(f"run {run + 1}/{args.runs}", file=sys.stderr)
    print(f"| backend ({args.jobs} jobs) | median | min | max | objects | output bytes |")
    print("| --- | --- | --- | --- | --- | --- |")
    for backend in BACKENDS:
        t = times[backend]
        print(f"| {backend} | {statistics.median(t):.2f} s | {min(t):.2f} s | {max(t):.2f} s | "
              f"{sizes[backend][0]:,} | {sizes[backend][1]:,} |")


if __name__ == "__main__":
    main()
