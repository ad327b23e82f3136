"""Traffic: the bytes each task sends and receives per step in run-local, against `tfjobgen plan`'s prediction.

    .venv/bin/python benchmarks/runtime/traffic.py [--steps 50,150] [--only NAME] [--workers 1] [--before DIR]
                                                   [--optimizers adagrad,sgd,...] [--results traffic]

Each case is an example job as written (model, batch, optimizer, partitioner, api), with its
PS count, one worker (--workers), its chief if it has one and no evaluator, and checkpoints
only at the end. It runs twice with `tfjobgen run-local --steps N`, while local/wire.py reads
the kernel's byte counters of every TCP connection between two tasks' TF ports. Per step is
(bytes after N2 steps - bytes after N1 steps) / (N2 - N1): what a run does once (connecting,
registering the step function, creating the variables, the final checkpoint) cancels, and is
reported apart. The prediction is `tfjobgen plan --format json` of the same job file
(traffic.per_worker_step_pull_bytes / _push_bytes: PS to worker, worker to PS). --before DIR
also plans each job with the tfjobgen in DIR (a generator/ folder of another commit:
git archive COMMIT generator schemas | tar -x -C /tmp/before) and shows its error.
--optimizers runs every case once per optimizer named (each moves other slots); the case
`small`, the tests' job at the schema's default model size (seconds a run), runs only when named.

Per PS, "measured" is the bytes between it and the training tasks (the workers; under tf1 the
chief too, which trains), both ways, per step: what the plan predicts. The chief's own traffic
(tf2 schedules every step from it) is measured and shown, never predicted. The tasks' "PS
BYTES" in run-local's summary are variables held, not traffic.

Writes benchmarks/runtime/results/traffic.json (--results); prints Markdown tables (docs/plan.md records a run).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml
from common import REPO, machine, markdown, run_local, save, stop_on_sigterm

# name: (job file, what the case changes in its spec.training)
CASES = {
    "wide-deep": ("jobs/wide-deep.yaml", {}),
    "small": ("tests/runtime/jobs/tf2-small.yaml", {}),  # the schema's default model: seconds a run
    "wide-deep-none": ("jobs/wide-deep.yaml", {"partitioner": "none"}),
    "scene1-case2": ("jobs/scene1-case2.yaml", {}),
    # As written its 20M-row embedding is 2.56 GB: the chief's checkpoint to a plain modelDir pulls
    # it whole, over gRPC's 2 GB limit for one tensor, so run-local cannot run it. 5M rows, as wide-deep.
    "scene1-case2-unpartitioned": ("docs/plan-examples/scene1-case2-unpartitioned.yaml",
                                   {"model": {"vocabularySize": 5000000, "embeddingDim": 32,
                                              "hiddenUnits": [256, 128]}}),
}
GOAL = 0.10  # the plan's per-PS traffic within 10% of the measurement


def variant(name: str, source: Path, changes: dict, workers: int, last_step: int, folder: Path) -> Path:
    """The job as written, with the case's changes, `workers` workers, no evaluator, and no
    checkpoint before the end."""
    document = copy.deepcopy(yaml.safe_load(source.read_text()))
    spec = document["spec"]
    document["metadata"]["name"] = name
    spec["roles"]["worker"]["replicas"] = workers
    spec["roles"].pop("evaluator", None)
    training = spec.setdefault("training", {})
    training.update(changes, checkpointEverySteps=last_step + 1000)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def plan(job: Path, generator: Path = REPO / "generator") -> dict:
    # `python -m` looks in the working directory first: run there, so that this package answers.
    proc = subprocess.run([sys.executable, "-m", "tfjobgen", "plan", str(job), "--format", "json"], cwd=generator,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(generator)})
    if proc.returncode != 0:
        raise SystemExit(f"tfjobgen plan {job} failed:\n{proc.stderr}")
    return json.loads(proc.stdout)


def measure(job: Path, steps: tuple[int, int], num_ps: int, workers: int) -> dict:
    """Bytes per step and bytes once, per (from task, to task), from two runs of different lengths."""
    runs = []
    for count in steps:
        run = run_local(job, "--steps", str(count), "--scale-ps", str(num_ps), "--scale-workers", str(workers),
                        count_bytes=True, deadline=900)
        if run.get("returncode") != 0 or run["survivors"]:
            raise SystemExit(f"{job.name} ({count} steps) failed:\n{run['output']}")
        runs.append((int(run["final"]["step"]), run["wire"], run["wall_seconds"]))
    (first, early, _), (last, late, _) = runs
    pairs = sorted(set(early) | set(late))
    per_step = {pair: (late.get(pair, 0) - early.get(pair, 0)) / (last - first) for pair in pairs}
    once = {pair: early.get(pair, 0) - first * per_step[pair] for pair in pairs}
    return {"steps_run": [first, last], "per_step": per_step, "once": once,
            "wall_seconds": [seconds for *_, seconds in runs]}


def compare(name: str, job: Path, changes: dict, measured: dict, planned: dict, before: dict | None) -> dict:
    """Per PS and per task: measured against predicted bytes per step."""
    per_step, api = measured["per_step"], planned["api"]
    tasks = sorted({task for pair in per_step for task in pair})
    trainers = [t for t in tasks if t.startswith("worker:") or (api == "tf1" and t.startswith("chief:"))]
    traffic = planned["traffic"]
    pull, push = traffic["per_worker_step_pull_bytes"], traffic["per_worker_step_push_bytes"]
    per_ps = []
    for index, (predicted_out, predicted_in) in enumerate(zip(pull, push)):
        ps = f"ps:{index}"
        out = sum(per_step.get((ps, t), 0.0) for t in trainers)
        into = sum(per_step.get((t, ps), 0.0) for t in trainers)
        per_ps.append({"ps": ps, "measured": round(out + into), "predicted": predicted_out + predicted_in,
                       "error": round((predicted_out + predicted_in) / (out + into) - 1, 4) if out + into else None,
                       "measured_out": round(out), "measured_in": round(into),
                       "predicted_out": predicted_out, "predicted_in": predicted_in})
        if before:
            earlier = before["traffic"]["per_worker_step_bytes"][index]
            per_ps[-1].update(predicted_before=earlier, error_before=round(earlier / (out + into) - 1, 4))
    per_task = {}
    for task in tasks:
        sent = sum(b for (a, _), b in per_step.items() if a == task)
        received = sum(b for (_, z), b in per_step.items() if z == task)
        row = {"sent": round(sent), "received": round(received)}
        if task.startswith("ps:"):
            index = int(task.split(":")[1])
            row.update(predicted_sent=pull[index], predicted_received=push[index])
        elif task in trainers and len(trainers) == 1:  # one trainer does every step: all of it is its own
            row.update(predicted_sent=sum(push), predicted_received=sum(pull))
        per_task[task] = row
    return {"case": name, "job": str(job), "changes": changes, "api": api, "partitioner": planned["partitioner"],
            "ps": len(pull), "trainers": trainers, "steps_run": measured["steps_run"],
            "wall_seconds": measured["wall_seconds"], "per_ps": per_ps, "per_task": per_task,
            "flows_per_step": {f"{a}>{b}": round(v) for (a, b), v in sorted(per_step.items())},
            "flows_once": {f"{a}>{b}": round(v) for (a, b), v in sorted(measured["once"].items())}}


def _kb(value) -> str:
    return "-" if value is None else f"{value / 1000:,.1f}"


def print_case(result: dict) -> None:
    print(f"\n{result['case']} ({result['api']}, partitioner {result['partitioner']}, {result['ps']} PS, "
          f"trainers {', '.join(result['trainers'])}; steps {result['steps_run'][0]} -> {result['steps_run'][1]})\n")
    before = "predicted_before" in result["per_ps"][0]
    rows = [[p["ps"], _kb(p["measured"]), _kb(p["predicted"]), f"{100 * p['error']:+.1f}%",
             f"{_kb(p['measured_out'])} / {_kb(p['predicted_out'])}",
             f"{_kb(p['measured_in'])} / {_kb(p['predicted_in'])}"]
            + ([f"{_kb(p['predicted_before'])} ({100 * p['error_before']:+.1f}%)"] if before else [])
            for p in result["per_ps"]]
    print(markdown(["PS", "measured kB/step", "predicted kB/step", "error", "to trainers: measured / predicted",
                    "from trainers: measured / predicted"] + (["--before: predicted (error)"] if before else []), rows))
    print()
    rows = [[task, _kb(t["sent"]), _kb(t.get("predicted_sent")), _kb(t["received"]), _kb(t.get("predicted_received"))]
            for task, t in result["per_task"].items()]
    print(markdown(["task", "sent kB/step", "predicted", "received kB/step", "predicted"], rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", default="50,150", help="the two run lengths, N1,N2 (default 50,150)")
    parser.add_argument("--only", action="append", choices=sorted(CASES), help="run only this case (repeatable)")
    parser.add_argument("--workers", type=int, default=1, help="workers per run (default 1)")
    parser.add_argument("--before", type=Path, metavar="DIR", help="also plan with the tfjobgen package in DIR")
    parser.add_argument("--optimizers", help="run each case with each of these optimizers (comma-separated)")
    parser.add_argument("--results", default="traffic", help="results/NAME.json (default traffic)")
    args = parser.parse_args()
    steps = tuple(int(s) for s in args.steps.split(","))
    if len(steps) != 2 or not 0 < steps[0] < steps[1]:
        raise SystemExit("--steps takes two increasing run lengths, e.g. 50,150")
    results = []
    stop_on_sigterm()
    with tempfile.TemporaryDirectory(prefix="tfjobgen-bench-traffic-") as folder:
        names = args.only or [n for n in CASES if n != "small"]
        optimizers = args.optimizers.split(",") if args.optimizers else [None]
        for name, optimizer in ((n, o) for n in names for o in optimizers):
            path, changes = CASES[name]
            if optimizer:
                name, changes = f"{name}-{optimizer.replace('_', '-')}", {**changes, "optimizer": optimizer}
            source = yaml.safe_load((REPO / path).read_text())
            num_ps = source["spec"]["roles"]["ps"]["replicas"]
            job = variant(name, REPO / path, changes, args.workers, steps[1], Path(folder))
            planned, before = plan(job), plan(job, args.before.resolve()) if args.before else None
            result = compare(name, Path(path), changes, measure(job, steps, num_ps, args.workers), planned, before)
            results.append(result)
            print_case(result)
    worst = max(abs(p["error"]) for r in results for p in r["per_ps"] if p["error"] is not None)
    print(f"\n{machine()}; worst per-PS error {100 * worst:.1f}% (goal {100 * GOAL:.0f}%)")
    save(args.results, {"machine": machine(), "command": "benchmarks/runtime/traffic.py " + " ".join(sys.argv[1:]),
                     "steps": list(steps), "workers": args.workers, "cases": results})


if __name__ == "__main__":
    main()
