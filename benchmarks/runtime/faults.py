"""Faults: kill -9 a worker or a PS, evict a worker, fail for good, Ctrl-C; recovery, ending, no orphan.

    .venv/bin/python benchmarks/runtime/faults.py [--repeats 3] [--steps 400]

Runs the README's job at the reference model's default size with `tfjobgen
run-local` (2 PS + 2 workers + chief on this machine), 400 steps, checkpoints
every 100. run-local replaces failed tasks as the Job controller would (a new
pod after 10 s, within the task's budget):

    worker      --kill worker:0@150     the coordinator reruns the lost step on the other worker;
                                        the worker gets a new pod, as its Job would give it
    evicted     --evict worker:0@150    the same, as a disruption: not counted, so it comes
                --restarts 0            back even with no retries left
    ps          --kill ps:1@150         the chief fails (UnavailableError); both get new pods and
                                        the chief resumes from ckpt-100
    ps for good --kill ps:1@150         no retries: the PS fails for good, its Job stops the
                --restarts 0            other PS, the chief fails on its last attempt and tells
                                        every task to stop
    chief for good --without ps:1       the chief's startup deadline (30 s) passes on its last
                --restarts 0            attempt: it names ps:1 and tells every task to stop
    ctrl-c      SIGINT to run-local at step 150: everything stops

For each: whether training completed, when the killed task was back, when the
next step was reported (both from the kill), the step it resumed from, the loss
just before the kill and just after the recovery; for the failures for good,
how long every task took to end after the first failure and how each exited;
and the processes of the run still alive afterwards (found by the
TFJOBGEN_LOCAL_RUN marker; must be none).
"""

from __future__ import annotations

import argparse
import json
import statistics

from common import RESULTS, job_variant, machine, markdown, run_local, save

MODEL = {"vocabularySize": 100000, "embeddingDim": 16, "hiddenUnits": [64, 32]}


def _losses_around(run: dict, kill_time: float) -> tuple[float | None, float | None]:
    before = [s for s in run["steps"] if s["time"] <= kill_time]
    after = [s for s in run["steps"] if s["time"] > kill_time]
    return (before[-1]["loss"] if before else None), (after[0]["loss"] if after else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--only", action="append", default=[], metavar="FAULT",
                        help="run only this scenario (repeatable), e.g. --only 'chief for good'")
    args = parser.parse_args()
    job = job_variant("faults", {"model": MODEL, "checkpointEverySteps": 100})
    rows, ending_rows, raw = [], [], []
    scenarios = (("worker", ["--kill", "worker:0@150"]), ("evicted", ["--evict", "worker:0@150", "--restarts", "0"]),
                 ("ps", ["--kill", "ps:1@150"]), ("ps for good", ["--kill", "ps:1@150", "--restarts", "0"]),
                 ("chief for good", ["--without", "ps:1", "--startup-timeout", "30", "--restarts", "0"]),
                 ("ctrl-c", []))
    for fault, extra in (s for s in scenarios if not args.only or s[0] in args.only):
        runs = []
        for _ in range(args.repeats):
            run = run_local(job, "--steps", str(args.steps), *extra,
                            interrupt_at_step=150 if fault == "ctrl-c" else None)
            entry = {"returncode": run["returncode"], "passed": run.get("passed"), "survivors": run["survivors"],
                     "final_step": int(run["final"]["step"]) if run.get("final") else None,
                     "wall_seconds": run["wall_seconds"], "stop_seconds": run.get("stop_seconds"),
                     "failed_for_good": (run.get("failed_for_good") or {}).get("task"),
                     "ended_after": run.get("ended_after"),
                     "others_ended_after": max((seconds for name, seconds in run.get("ended_after_by_task", {}).items()
                                                if name != (run.get("failed_for_good") or {}).get("task")),
                                               default=None),
                     "exits": {name: task["exit_code"] for name, task in run.get("tasks", {}).items()}}
            if run.get("faults"):
                f = run["faults"][0]
                entry.update(back_after=f.get("back_after"), next_step_after=f.get("next_step_after"),
                             resumed_from=f.get("resumed_from"), at_step=f["at_step"])
                entry["loss_before"], entry["loss_after"] = _losses_around(run, f["time"])
            runs.append(entry)
            print(fault, entry, flush=True)
        raw.append({"fault": fault, "runs": runs})
        if fault.endswith("for good"):
            exits = sorted({", ".join(f"{n} {c}" for n, c in sorted(r["exits"].items())) for r in runs})
            ending_rows.append([fault, ", ".join(sorted({str(r["failed_for_good"]) for r in runs})),
                                f"{statistics.median(r['ended_after'] for r in runs):.1f}s "
                                f"(max {max(r['ended_after'] for r in runs):.1f}s)",
                                f"{statistics.median(r['others_ended_after'] for r in runs):.1f}s", "; ".join(exits),
                                f"{statistics.median(r['wall_seconds'] for r in runs):.1f}s",
                                sum(len(r["survivors"]) for r in runs)])
            continue
        if fault == "ctrl-c":
            rows.append([fault, "stopped (exit 130)" if all(r["returncode"] == 130 for r in runs) else "?", "-", "-",
                         "-", "-", f"{statistics.median(r['stop_seconds'] for r in runs):.1f}s to stop all",
                         sum(len(r["survivors"]) for r in runs)])
            continue
        done = sum(bool(r["passed"]) for r in runs)
        rows.append([fault, f"{done}/{len(runs)} completed",
                     f"{statistics.median(r['back_after'] for r in runs):.1f}s",
                     f"{statistics.median(r['next_step_after'] for r in runs):.1f}s",
                     ", ".join(sorted({"-" if r["resumed_from"] is None else str(r["resumed_from"]) for r in runs})),
                     "; ".join(f"{r['loss_before']:.3f} -> {r['loss_after']:.3f}" for r in runs),
                     f"{statistics.median(r['wall_seconds'] for r in runs):.1f}s",
                     sum(len(r["survivors"]) for r in runs)])
    print(f"\n{machine()}; {args.repeats} runs each, medians\n")
    print(markdown(["fault", "training", "task back after", "next step after", "resumed from",
                    "loss before -> after", "run time", "survivors"], rows))
    print()
    print(markdown(["failure for good", "first to fail", "every task ended after", "the others ended after",
                    "exit codes", "run time", "survivors"], ending_rows))
    if args.only:  # keep the other scenarios' numbers from the last full run
        earlier = json.loads((RESULTS / "faults.json").read_text())["faults"] if (RESULTS / "faults.json").exists() else []
        raw = [entry for entry in earlier if entry["fault"] not in args.only] + raw
    save("faults", {"machine": machine(), "steps": args.steps, "faults": raw})


if __name__ == "__main__":
    main()
