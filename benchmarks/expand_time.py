"""How long the function itself takes on the synthetic jobs of build_time.py, against another checkout.

    .venv/bin/python benchmarks/expand_time.py [--jobs 100] [--runs 9] [--against /work/main] [--without-colocated]
                                               [--overlay seed-80c]

Runs `tfjobgen krm <profile>` (the plugin convention kustomize uses) on the same seeded
jobs build_time.py writes (harness/synthetic.py), in interleaved rounds: this checkout's generator, then the
other checkout's (run with this Python, its own `generator/` first on PYTHONPATH), so
that drift of the machine falls on both alike. No kustomize: only the function's own
time, which every build of every cluster pays. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml

from tfjobgen.harness import synthetic

REPO = Path(__file__).resolve().parents[1]


def run_function(checkout: Path, stream: str, overlay: str = "seed-80c") -> float:
    """Seconds of one `tfjobgen krm` of `checkout`, with its own profile of `overlay`."""
    env = {**os.environ, "PYTHONPATH": str(checkout / "generator")}
    profile = checkout / "overlays" / overlay / "cluster-profile.yaml"
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "tfjobgen", "krm", str(profile)], input=stream, capture_output=True,
                          text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"{checkout}: tfjobgen krm failed:\n{proc.stderr}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--against", type=Path, default=None, help="another checkout to compare with")
    parser.add_argument("--without-colocated", action="store_true",
                        help="a mix of O(1)-object jobs only (colocated jobs have one Job per task)")
    parser.add_argument("--overlay", default="seed-80c",
                        help="whose cluster profile each checkout uses (prod-96c turns monitoring on)")
    args = parser.parse_args()
    texts = list(synthetic.job_texts(args.jobs).values())
    if args.without_colocated:  # fewer than --jobs: the colocated ones are left out, not replaced
        texts = [t for t in texts if (yaml.safe_load(t)["spec"].get("topology") or {}).get("mode") != "colocated"]
    topologies = {(yaml.safe_load(t)["spec"].get("topology") or {}).get("mode", "spread") for t in texts}
    stream = "---\n".join(texts)
    checkouts = {"this checkout": REPO}
    if args.against:
        checkouts[f"{args.against}"] = args.against
    times: dict[str, list[float]] = {name: [] for name in checkouts}
    names = list(checkouts)
    for round_ in range(args.runs):
        for name in names[round_ % len(names):] + names[:round_ % len(names)]:
            times[name].append(run_function(checkouts[name], stream, args.overlay))
        print(f"round {round_ + 1}/{args.runs}", file=sys.stderr)
    print(f"\n`tfjobgen krm` ({args.overlay}'s profile) on {len(texts)} synthetic jobs ({', '.join(sorted(set(topologies)))}), median of {args.runs} "
          f"interleaved runs; {os.cpu_count()} CPUs\n")
    print("| generator | median | min | max |\n| --- | --- | --- | --- |")
    for name, values in times.items():
        print(f"| {name} | {statistics.median(values):.3f} s | {min(values):.3f} s | {max(values):.3f} s |")


if __name__ == "__main__":
    main()
