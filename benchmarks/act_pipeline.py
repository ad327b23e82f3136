"""The jobs pipeline (.github/workflows/gitops.yml) under nektos/act, wall time per run and per step.

    .venv/bin/python benchmarks/act_pipeline.py                 # this repository, placement preview included
    .venv/bin/python benchmarks/act_pipeline.py --jobs 1000     # the 1,000-job synthetic repository
    .venv/bin/python benchmarks/act_pipeline.py --no-place      # as a pull request on a cache miss runs it

Each run is tests/act's: a copy of the repository (with --jobs N, its jobs/ replaced by harness/synthetic.py's
N jobs, hydrated, as the base branch), a pull request that changes one job (wide-deep's workers, hydrated),
act on the host (`-P ubuntu-24.04=-self-hosted`), the remote actions' stand-ins, the comment posted to the
loopback GitHub stand-in; the cluster programs' cache entry seeded from this machine's built programs
(`make cluster-tools`) unless --no-place. Needs act (`make cluster-tools`). Everything goes to one temporary
folder, removed at the end.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "generator"))

from tfjobgen.harness import synthetic  # noqa: E402
from tfjobgen.harness.act import ActRepo, run_pr  # noqa: E402

STEP = re.compile(r"(?:Success|Failure) - Main (.+?) \[([\dhms.µ]+)\]")  # Go's durations: 1m2.5s, 250ms, 930µs
_PART = re.compile(r"([\d.]+)(h|ms|µs|m|s)")
_UNIT = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "µs": 1e-6}


def _seconds(duration: str) -> float:
    return sum(float(value) * _UNIT[unit] for value, unit in _PART.findall(duration))


def one_run(work: Path, jobs: int, place: bool) -> tuple[float, list[tuple[str, float]], int, str]:
    repo = ActRepo.create(work)
    try:
        if jobs:
            synthetic.write_repo(work / "synthetic", jobs)
            shutil.rmtree(repo.path / "jobs")
            shutil.copytree(work / "synthetic" / "jobs", repo.path / "jobs")
            synthetic.run_every_namespace(repo.path)
            synthetic.admit_every_team(repo.path)
            repo.hydrate()
            repo.commit(f"{jobs} synthetic jobs")
        if place:
            repo.seed_programs_cache()
        repo.branch("change-one-job")
        job = repo.path / "jobs" / "wide-deep.yaml"
        job.write_text(re.sub(r"worker: \{replicas: \d+,", "worker: {replicas: 16,", job.read_text(), count=1))
        repo.hydrate()
        repo.commit("wide-deep: 16 workers")
        run = run_pr(repo, "main", "change-one-job", timeout=1800)
        steps = [(name[:70], _seconds(duration)) for name, duration in STEP.findall(run.log)]
        if run.exit != 0 or not run.comments:
            print(run.log[-4000:], file=sys.stderr)
        body = run.comments[0]["body"] if run.comments else ""
        placed = body.count("on the real kube-scheduler")  # one per overlay whose changed jobs were placed
        return run.seconds, steps, run.exit, f"placement previewed in {placed} overlay(s)"
    finally:
        repo.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=0, help="synthetic jobs instead of this repository's (0)")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--no-place", dest="place", action="store_false", help="no programs in the cache")
    args = parser.parse_args()
    walls = []
    with tempfile.TemporaryDirectory(prefix="act-pipeline-") as scratch:
        for number in range(args.runs):
            wall, steps, code, placed = one_run(Path(scratch) / f"run{number}", args.jobs, args.place)
            walls.append(wall)
            print(f"run {number + 1}: {wall:.1f} s wall, exit {code}, {placed}")
            for name, seconds in steps:
                if seconds >= 0.5:
                    print(f"  {seconds:7.1f} s  {name}")
            if code != 0:
                return 1
    what = f"{args.jobs} synthetic jobs" if args.jobs else "this repository"
    print(f"gitops.yml under act, {what}, placement {'included' if args.place else 'off'}: "
          f"median {statistics.median(walls):.1f} s over {len(walls)} run(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
