"""What tfjobgen costs a build, at 100 and 1,000 jobs. A benchmark, not a test.

    .venv/bin/python benchmarks/build_time.py [--jobs 100 1000] [--runs 3] [--only cold-start]

For each size it writes a repository to a temporary folder (tfjobgen/harness/synthetic.py: this
repository's overlays and jobs, and variants of the jobs in twenty teams), then measures:

1. one `kubectl kustomize --enable-alpha-plugins` build of overlays/seed-80c three ways, in
   interleaved rounds (this VM drifts over minutes): with the tfjobgen plugin; with a plugin
   that only prints that build's finished output (kustomize's own floor for any transformer
   plugin); and the same objects committed as plain YAML (checked to build to the same bytes);
2. `tfjobgen hydrate` of every overlay from scratch (what CI and rendered mode run), with its
   peak resident memory and how each overlay was built (build.py's modes);
3. `tfjobgen build` of one team's Application (what the Argo CD plugin runs per sync);
4. `tfjobgen diff` of a change to one job, in a git repository of that tree;
5. the KRM function's cold start: `tfjobgen krm` on one job (what kustomize starts per build),
   beside the interpreter's own start, and `python -X importtime`'s total.

Prints Markdown tables; docs/benchmarks.md records a run.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tfjobgen.harness import synthetic

REPO = Path(__file__).resolve().parents[1]
PYTHON = Path(sys.executable)
TFJOBGEN = PYTHON.parent / "tfjobgen"
OVERLAY = "seed-80c"  # expanded untouched: the plugin path kustomize itself runs
TEAM = "team-03"


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run(command: list[str], cwd: Path, env: dict | None = None, stdin: str | None = None) -> str:
    proc = subprocess.run(command, cwd=cwd, env=env, input=stdin, capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"{' '.join(command)} failed in {cwd}:\n{proc.stderr[-3000:]}")
    return proc.stdout


def timed_in_rounds(runs: int, actions: dict[str, object]) -> dict[str, list[float]]:
    """Time several actions in interleaved rounds (A B C, B C A, ...), so that the VM's drift
    over minutes falls on each of them alike instead of on whichever ran last."""
    times: dict[str, list[float]] = {label: [] for label in actions}
    labels = list(actions)
    for round_ in range(runs):
        order = labels[round_ % len(labels):] + labels[:round_ % len(labels)]
        for label in order:
            start = time.perf_counter()
            actions[label]()
            times[label].append(time.perf_counter() - start)
            progress(f"  round {round_ + 1}/{runs}: {label} {times[label][-1]:.2f} s")
    return times


def timed(label: str, runs: int, action) -> list[float]:
    return timed_in_rounds(runs, {label: action})[label]


# ---- the three builds of one overlay ----------------------------------------------------------------

def plugin_home(root: Path, name: str, script: str) -> Path:
    home = root / name
    plugin = home / "tfjobgen.dev" / "v1alpha1" / "clusterprofile" / "ClusterProfile"
    plugin.parent.mkdir(parents=True)
    plugin.write_text(script)
    plugin.chmod(0o755)
    return home


def write_plain(root: Path, built: str) -> Path:
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
    return plain


def kustomize(folder: Path, home: Path) -> str:
    return run(["kubectl", "kustomize", "--enable-alpha-plugins", str(folder)], folder,
               {**os.environ, "KUSTOMIZE_PLUGIN_HOME": str(home)})


def overlay_builds(root: Path, runs: int) -> dict:
    starts = root / "starts.log"
    counting = plugin_home(root, "counting", f"#!/bin/sh\necho start >> {starts}\nexec {TFJOBGEN} krm \"$@\"\n")
    overlay = root / "overlays" / OVERLAY
    progress(f"  one plugin build of overlays/{OVERLAY} to learn its output ...")
    built = kustomize(overlay, counting)
    plain = write_plain(root, built)
    assert kustomize(plain, counting) == built, "plain YAML must build to the same bytes"
    (root / "canned.yaml").write_text(built)
    printing = plugin_home(root, "printing", f"#!/bin/sh\ncat > /dev/null\nexec cat {root / 'canned.yaml'}\n")
    starts.unlink()
    times = timed_in_rounds(runs, {
        "with tfjobgen": lambda: kustomize(overlay, counting),
        "a printing plugin": lambda: kustomize(overlay, printing),
        "plain YAML": lambda: kustomize(plain, counting),
    })
    return {"times": times, "objects": built.count("\n---\n") + 1, "bytes": len(built),
            "starts": len(starts.read_text().splitlines()) / runs}


# ---- hydrate, a team's build, a diff -----------------------------------------------------------------

def hydrate(root: Path) -> tuple[float, float, str]:
    """Seconds and peak resident MiB of a `tfjobgen hydrate` from scratch, and the modes it used."""
    shutil.rmtree(root / "rendered", ignore_errors=True)
    code = ("import resource, sys, time\n"
            "from tfjobgen.cli import main\n"
            "start = time.perf_counter()\n"
            "code = main(['hydrate'])\n"
            "seconds = time.perf_counter() - start\n"
            "print(seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, file=sys.stderr)\n"
            "sys.exit(code)\n")
    proc = subprocess.run([str(PYTHON), "-c", code], cwd=root, capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"hydrate failed:\n{proc.stderr[-3000:]}")
    seconds, rss = map(float, proc.stderr.strip().splitlines()[-1].split())
    modes = run([str(PYTHON), "-c", "from pathlib import Path\nfrom tfjobgen.gitops import build, layout, tree\n"
                 "root = Path.cwd()\n"
                 "for o in tree.overlay_names(root):\n"
                 "    print(o, build.mode_of(layout.read(root, 'overlays/' + o), True))\n"], root)
    return seconds, rss, ", ".join(line.replace(" ", ": ") for line in modes.splitlines())


def git(root: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    run(["git", "-C", str(root), *args], root, env)


def diff_one_job(root: Path, runs: int) -> list[float]:
    """`tfjobgen diff main` after changing one job's worker count (a typical pull request)."""
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    job = root / "jobs" / "wide-deep.yaml"
    job.write_text(job.read_text().replace("worker: {replicas: 32,", "worker: {replicas: 40,"))
    return timed("tfjobgen diff, one job changed", runs,
                 lambda: run([str(TFJOBGEN), "diff", "main"], root))


# ---- cold start -----------------------------------------------------------------------------------------

def cold_start(runs: int) -> dict:
    job = (REPO / "jobs" / "wide-deep.yaml").read_text()
    profile = str(REPO / "overlays" / OVERLAY / "cluster-profile.yaml")
    times = timed_in_rounds(max(runs, 15), {
        "tfjobgen krm, 1 job": lambda: run([str(TFJOBGEN), "krm", profile], REPO, stdin=job),
        "python -c pass": lambda: run([str(PYTHON), "-c", "pass"], REPO),
    })
    proc = subprocess.run([str(PYTHON), "-X", "importtime", "-m", "tfjobgen", "krm", profile], input=job,
                          capture_output=True, text=True)
    top = [int(line.split("|")[1]) for line in proc.stderr.splitlines()
           if line.startswith("import time:") and line.split("|")[1].strip().isdigit()
           and not line.split("|")[2].startswith("  ")]
    heavy = [name for name in ("jsonschema", "argparse", "pathlib") if f"| {name}\n" in proc.stderr + "\n"]
    return {"times": times, "imports_ms": sum(top) / 1000, "heavy": heavy}


# ---- report ---------------------------------------------------------------------------------------------

def row(label: str, values: list[float], unit: str = "s") -> str:
    scale = 1000 if unit == "ms" else 1
    return (f"| {label} | {statistics.median(values) * scale:.2f} {unit} | {min(values) * scale:.2f} {unit} | "
            f"{max(values) * scale:.2f} {unit} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--runs", type=int, default=3, help="rounds of the overlay builds (median reported)")
    parser.add_argument("--only", choices=("cold-start",), help="measure only this")
    parser.add_argument("--skip-whole", action="store_true",
                        help="skip the three whole-overlay kustomize builds (at 1,000 jobs one takes far over ten "
                             "minutes on 2 cores)")
    args = parser.parse_args()
    print(f"Measured {time.strftime('%Y-%m-%d')} on {os.cpu_count()} CPUs; load average "
          f"{os.getloadavg()[0]:.1f} at the start. Medians of {args.runs} runs unless said.\n")
    results = {}
    if args.only != "cold-start":
        for jobs in args.jobs:
            root = Path(tempfile.mkdtemp(prefix=f"tfjobgen-bench-{jobs}-"))
            try:
                progress(f"{jobs} jobs: writing a repository to {root}")
                synthetic.write_repo(root / "repo", jobs)
                progress(f"{jobs} jobs: tfjobgen hydrate")
                seconds, rss, modes = hydrate(root / "repo")
                progress(f"  {seconds:.1f} s, {rss:.0f} MiB")
                progress(f"{jobs} jobs: tfjobgen build of one team's Application (prod-96c)")
                team = timed("tfjobgen build --namespace", args.runs, lambda: run(
                    [str(TFJOBGEN), "build", "overlays/prod-96c", "--namespace", TEAM], root / "repo"))
                builds = {}
                if not args.skip_whole:
                    progress(f"{jobs} jobs: the three builds of overlays/{OVERLAY}")
                    builds = overlay_builds(root / "repo", args.runs)
                progress(f"{jobs} jobs: tfjobgen diff")
                diffs = diff_one_job(root / "repo", args.runs)
                results[jobs] = {"hydrate": seconds, "rss": rss, "modes": modes, "team": team, "diff": diffs,
                                 **builds}
            finally:
                shutil.rmtree(root, ignore_errors=True)
    progress("cold start")
    cold = cold_start(args.runs)

    median = statistics.median
    for jobs, r in results.items():
        whole = "times" in r
        print(f"### {jobs} jobs" + (f": {r['objects']:,} objects in overlays/{OVERLAY} ({r['bytes'] / 1e6:.1f} MB)"
                                    if whole else "") + "\n")
        print("| build | median | min | max |\n| --- | --- | --- | --- |")
        if whole:
            print(row(f"kubectl kustomize overlays/{OVERLAY}, with the tfjobgen plugin", r["times"]["with tfjobgen"]))
            print(row("the same, the plugin only prints that output (kustomize's floor)",
                      r["times"]["a printing plugin"]))
            print(row("the same objects as plain YAML", r["times"]["plain YAML"]))
        print(row(f"tfjobgen build overlays/prod-96c --namespace {TEAM} (one Application)", r["team"]))
        print(row("tfjobgen diff main, one job changed", r["diff"]))
        print(f"| tfjobgen hydrate, every overlay from scratch (one run) | {r['hydrate']:.2f} s | | |\n")
        if whole:
            print(f"plugin build / floor {median(r['times']['with tfjobgen']) / median(r['times']['a printing plugin']):.2f}; "
                  f"floor / plain {median(r['times']['a printing plugin']) / median(r['times']['plain YAML']):.2f}; "
                  f"plugin processes per build: {r['starts']:g}; ", end="")
        print(f"hydrate peak resident memory {r['rss']:.0f} MiB; modes: {r['modes']}\n")
    if len(results) == 2:
        small, large = sorted(results)
        print(f"hydrate, {large} jobs / {small} jobs: {results[large]['hydrate'] / results[small]['hydrate']:.1f}x\n")
    print("### Cold start of the KRM function\n")
    print("| process | median | min | max |\n| --- | --- | --- | --- |")
    print(row("tfjobgen krm on one job (what kustomize starts)", cold["times"]["tfjobgen krm, 1 job"], "ms"))
    print(row("python -c pass (the interpreter alone)", cold["times"]["python -c pass"], "ms"))
    print(f"\nImports (python -X importtime, top level): {cold['imports_ms']:.0f} ms; "
          f"heavy modules loaded: {', '.join(cold['heavy']) or 'none of jsonschema, argparse, pathlib'}")


if __name__ == "__main__":
    main()
