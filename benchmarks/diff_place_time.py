"""What `tfjobgen diff` costs a pull request that changes one job, with the placement preview. A benchmark.

    .venv/bin/python benchmarks/diff_place_time.py [--jobs 1000] [--runs 3]

It writes the synthetic repository of benchmarks/build_time.py (tfjobgen/harness/synthetic.py: this
repository's two overlays and 1,000 jobs in twenty teams), commits it, changes scene2-case1's worker count (a
job both clusters run, and neither overlay patches), then times, in interleaved rounds:

- `tfjobgen diff main`: both clusters built, and the changed job placed on a local cluster of each
  overlay's profile by the real kube-scheduler, two creation orders each (needs `make cluster-tools`);
- `tfjobgen diff main --no-place`: the same report without the placement.

Prints a Markdown table; docs/benchmarks.md records a run.
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

from tfjobgen.harness import synthetic

TFJOBGEN = Path(sys.executable).parent / "tfjobgen"


def git(root: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "-C", str(root), *args], check=True, env=env, capture_output=True)


def diff(root: Path, *flags: str) -> float:
    begun = time.monotonic()
    proc = subprocess.run([str(TFJOBGEN), "diff", "main", *flags], cwd=root, capture_output=True, text=True)
    seconds = time.monotonic() - begun
    if proc.returncode != 0:
        sys.exit(f"tfjobgen diff {' '.join(flags)} failed:\n{proc.stderr[-3000:]}")
    placed = proc.stdout.count("| placement-experiments/scene2-case1 |")
    if not flags and placed != 4:  # two creation orders on each of the two clusters
        sys.exit(f"the job was placed {placed} times, not 4 (is `make cluster-tools` built?):\n{proc.stdout[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tfjobgen-bench-diff-") as scratch:
        root = synthetic.write_repo(Path(scratch) / "repo", jobs=args.jobs)
        git(root, "init", "-q", "-b", "main")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "base")
        job = root / "jobs" / "scene2-case1.yaml"
        job.write_text(job.read_text().replace("worker: {replicas: 10,", "worker: {replicas: 9,"))
        times: dict[str, list[float]] = {"with placement": [], "--no-place": []}
        for round_ in range(args.runs):
            for label in (list(times) if round_ % 2 == 0 else list(reversed(times))):
                print(f"round {round_ + 1}/{args.runs}: diff {label} ...", file=sys.stderr, flush=True)
                times[label].append(diff(root, *([] if label == "with placement" else ["--no-place"])))
    print(f"Measured {time.strftime('%Y-%m-%d')} on {os.cpu_count()} CPUs, {args.jobs} jobs, load average "
          f"{os.getloadavg()[0]:.1f} at the end.\n")
    print("| `tfjobgen diff main`, one job (on both clusters) changed | median | min | max |")
    print("| --- | --- | --- | --- |")
    for label, values in times.items():
        print(f"| {label} | {statistics.median(values):.1f} s | {min(values):.1f} s | {max(values):.1f} s |")


if __name__ == "__main__":
    main()
