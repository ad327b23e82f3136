"""How much does tfjobgen add to `kustomize build`? A benchmark, not a test.

    .venv/bin/python benchmarks/build_time.py [--jobs 100] [--runs 7]

1. Writes a synthetic repository to a temporary folder: N TrainingJobs (a fixed,
   seeded mix of topologies, QoS classes and protocols, up to 200 workers / 20 PS),
   a base and one overlay with a ClusterProfile, like this repository's.
2. Builds the overlay with `kubectl kustomize --enable-alpha-plugins` (tfjobgen runs
   as the plugin), then commits that output as plain YAML, one file per job, and
   builds that too: the same objects, no function.
3. Times both builds, and a third one whose plugin only prints the finished output
   (no tfjobgen): what kustomize itself spends on any transformer plugin. The three run
   in interleaved rounds (median of --runs), since this VM drifts over minutes. Counts how many times the plugin process started per build, and measures
   the function's cold start (`python -X importtime` and wall time of `tfjobgen krm`
   on one small job).

Prints Markdown tables; docs/benchmarks.md records a run.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PYTHON = Path(sys.executable)
TFJOBGEN = PYTHON.parent / "tfjobgen"


TOPOLOGIES = ["colocated", "isolated", "spread", "spread", "none"]


def synthetic_job(i: int, rng: random.Random, topologies: list[str] = TOPOLOGIES) -> str:
    """One intent; the mix covers every topology, both QoS classes and StarServer."""
    topology = rng.choice(topologies)
    ps = rng.choice([1, 2, 4, 5, 10, 20])
    workers = min(200, ps * 10) if topology == "colocated" else rng.choice([4, 10, 32, 50, 100, 200])
    star = topology != "colocated" and rng.random() < 0.2
    if star:
        workers = ps * 8  # StarServer's advised 8 workers per PS
    api = "tf1" if star or rng.random() < 0.3 else "tf2"
    qos = "cpuset" if rng.random() < 0.7 else "shared"
    worker_cpu = rng.choice([2, 4, 6]) if qos == "cpuset" else rng.choice(["500m", "1500m", "3"])
    chief = "    chief: {cpu: 2, memory: 4Gi}\n" if api == "tf2" else ""
    evaluator = "    evaluator: {cpu: 2, memory: 4Gi}\n" if rng.random() < 0.3 else ""
    model_dir = f"  training: {{modelDir: 'gs://checkpoints/job-{i:03d}'}}\n" if evaluator else ""
    command = "" if rng.random() < 0.5 else "  command: [python, /app/train.py]\n"
    return (
        f"apiVersion: tfjobgen.dev/v1alpha1\nkind: TrainingJob\nmetadata:\n  name: job-{i:03d}\n"
        f"  namespace: team-{i % 7}\nspec:\n  image: registry.example.com/ml/model-{i % 13}:1.{i % 5}\n{command}"
        f"  api: {api}\n  qos: {qos}\n" + ("  protocol: star_server\n" if star else "")
        + f"  roles:\n    ps: {{replicas: {ps}, cpu: 4, memory: 16Gi}}\n"
        f"    worker: {{replicas: {workers}, cpu: {worker_cpu}, memory: 8Gi}}\n{chief}{evaluator}"
        f"  topology: {{mode: {topology}}}\n{model_dir}"
    )


def write_repo(root: Path, jobs: int, topologies: list[str] = TOPOLOGIES) -> None:
    rng = random.Random(20261122)
    (root / "jobs").mkdir(parents=True)
    names = []
    for i in range(jobs):
        name = f"job-{i:03d}.yaml"
        (root / "jobs" / name).write_text(synthetic_job(i, rng, topologies))
        names.append(name)
    (root / "jobs" / "kustomization.yaml").write_text("resources:\n" + "".join(f"- {n}\n" for n in names))
    (root / "overlays" / "bench").mkdir(parents=True)
    shutil.copy(REPO / "overlays" / "seed-80c" / "cluster-profile.yaml", root / "overlays" / "bench")
    (root / "overlays" / "bench" / "kustomization.yaml").write_text(
        "resources:\n- ../../jobs\ntransformers:\n- cluster-profile.yaml\n")
    # A plugin home whose plugin counts its own starts, then runs the real one.
    plugin = root / "plugins" / "tfjobgen.dev" / "v1alpha1" / "clusterprofile" / "ClusterProfile"
    plugin.parent.mkdir(parents=True)
    plugin.write_text(f"#!/bin/sh\necho start >> {root / 'starts.log'}\nexec {TFJOBGEN} krm \"$@\"\n")
    plugin.chmod(0o755)


def write_canned_plugin(root: Path, built: str) -> Path:
    """A plugin home whose ClusterProfile plugin prints the finished output without running tfjobgen."""
    (root / "canned.yaml").write_text(built)
    plugin = root / "canned" / "tfjobgen.dev" / "v1alpha1" / "clusterprofile" / "ClusterProfile"
    plugin.parent.mkdir(parents=True)
    plugin.write_text(f"#!/bin/sh\ncat > /dev/null\nexec cat {root / 'canned.yaml'}\n")
    plugin.chmod(0o755)
    return root / "canned"


def kustomize(folder: Path, env: dict) -> str:
    proc = subprocess.run(["kubectl", "kustomize", "--enable-alpha-plugins", str(folder)],
                          capture_output=True, text=True, env=env)
    if proc.returncode:
        sys.exit(f"build of {folder} failed:\n{proc.stderr}")
    return proc.stdout


def write_plain(root: Path, built: str) -> None:
    """The same objects committed as plain YAML, one file per job, with a kustomization listing them."""
    plain = root / "plain"
    plain.mkdir()
    by_job: dict[str, list[str]] = {}
    for document in built.split("\n---\n"):
        job = re.search(r"tfjobgen.dev/job: (\S+)", document).group(1)
        by_job.setdefault(job, []).append(document.strip("-\n") + "\n")
    for job, documents in sorted(by_job.items()):
        (plain / f"{job}.yaml").write_text("---\n".join(documents))
    (plain / "kustomization.yaml").write_text("resources:\n" + "".join(f"- {j}.yaml\n" for j in sorted(by_job)))


def timed_in_rounds(runs: int, actions: dict[str, object]) -> dict[str, list[float]]:
    """Time several builds in interleaved rounds (A B C, B C A, ...), so that the VM's drift
    over minutes falls on each of them alike instead of on whichever ran last."""
    times: dict[str, list[float]] = {label: [] for label in actions}
    labels = list(actions)
    for run in range(runs):
        order = labels[run % len(labels):] + labels[:run % len(labels)]
        for label in order:
            start = time.perf_counter()
            actions[label]()
            times[label].append(time.perf_counter() - start)
            print(f"  round {run + 1}/{runs}: {label} {times[label][-1]:.2f} s", file=sys.stderr, flush=True)
    return times


def timed(label: str, runs: int, action) -> list[float]:
    return timed_in_rounds(runs, {label: action})[label]


def import_time_ms() -> float:
    """Total self+cumulative import time of the modules `tfjobgen krm` loads, from -X importtime."""
    job = (REPO / "jobs" / "wide-deep.yaml").read_text()
    proc = subprocess.run([str(PYTHON), "-X", "importtime", "-m", "tfjobgen", "krm",
                           str(REPO / "overlays" / "seed-80c" / "cluster-profile.yaml")],
                          input=job, capture_output=True, text=True)
    top = [int(line.split("|")[1]) for line in proc.stderr.splitlines()
           if line.startswith("import time:") and line.split("|")[2].strip() and not
           line.split("|")[2].startswith("  ") and line.split("|")[1].strip().isdigit()]
    return sum(top) / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--without-colocated", action="store_true",
                        help="a mix of O(1)-object jobs only (colocated jobs have one Job per task)")
    args = parser.parse_args()
    topologies = [t for t in TOPOLOGIES if t != "colocated"] if args.without_colocated else TOPOLOGIES
    root = Path(tempfile.mkdtemp(prefix="tfjobgen-bench-"))
    try:
        env = {**os.environ, "KUSTOMIZE_PLUGIN_HOME": str(root / "plugins")}
        print(f"writing a synthetic repository of {args.jobs} jobs to {root}", file=sys.stderr)
        write_repo(root, args.jobs, topologies)
        built = kustomize(root / "overlays" / "bench", env)
        write_plain(root, built)
        assert kustomize(root / "plain", env) == built, "plain YAML must build to the same bytes"
        objects = built.count("\n---\n") + 1
        (root / "starts.log").unlink()
        canned_env = {**env, "KUSTOMIZE_PLUGIN_HOME": str(write_canned_plugin(root, built))}
        builds = timed_in_rounds(args.runs, {
            "with tfjobgen": lambda: kustomize(root / "overlays" / "bench", env),
            "plain YAML": lambda: kustomize(root / "plain", env),
            "a printing plugin": lambda: kustomize(root / "overlays" / "bench", canned_env),
        })
        with_function, plain, canned = builds["with tfjobgen"], builds["plain YAML"], builds["a printing plugin"]
        starts = len((root / "starts.log").read_text().splitlines())
        job = (REPO / "jobs" / "wide-deep.yaml").read_text()
        profile = str(REPO / "overlays" / "seed-80c" / "cluster-profile.yaml")
        cold = timed("cold start (tfjobgen krm, 1 job)", args.runs, lambda: subprocess.run(
            [str(TFJOBGEN), "krm", profile], input=job, capture_output=True, text=True, check=True))
        stream = (root / "jobs").glob("job-*.yaml")
        all_jobs = "---\n".join(p.read_text() for p in sorted(stream))
        function = timed(f"function alone ({args.jobs} jobs)", args.runs, lambda: subprocess.run(
            [str(TFJOBGEN), "krm", profile], input=all_jobs, capture_output=True, text=True, check=True))
        median = statistics.median
        print(f"\n{args.jobs} jobs ({', '.join(sorted(set(topologies)))}), {objects} objects, "
              f"{len(built) / 1e6:.1f} MB of YAML; "
              f"median of {args.runs} runs; {os.cpu_count()} CPUs\n")
        print("| build | median | min | max |\n| --- | --- | --- | --- |")
        for label, times in (("kubectl kustomize, overlay with tfjobgen", with_function),
                             ("kubectl kustomize, the same objects as plain YAML", plain),
                             ("kubectl kustomize, overlay whose plugin only prints that output", canned),
                             (f"tfjobgen krm alone on the {args.jobs} intents", function),
                             ("tfjobgen krm on one job (cold start)", cold)):
            print(f"| {label} | {median(times):.3f} s | {min(times):.3f} s | {max(times):.3f} s |")
        print(f"\n| figure | measured | goal |\n| --- | --- | --- |")
        print(f"| build time ratio (with tfjobgen / plain) | {median(with_function) / median(plain):.2f} | <= 1.3 |")
        print(f"| of which kustomize's own cost of a transformer plugin (printing plugin / plain) | "
              f"{median(canned) / median(plain):.2f} | |")
        print(f"| cold start, wall time of one `tfjobgen krm` | {median(cold) * 1000:.0f} ms | <= 250 ms |")
        print(f"| cold start, import time (-X importtime) | {import_time_ms():.0f} ms | |")
        print(f"| function processes per build | {starts / args.runs:g} | 1 |")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
