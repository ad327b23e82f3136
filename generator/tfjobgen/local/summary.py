"""The end of a local run: what each task did, how training went, how evenly the PS were loaded, pass/fail."""

from __future__ import annotations

import os

from ..kit import table
from ..kit.ps_load import ps_balance
from .supervisor import RunResult


def balance(result: RunResult) -> tuple[list[int], float] | None:
    """Bytes per PS and max/mean, from the chief's placement event."""
    text = result.placement.get("bytes_per_ps", "")
    if not text:
        return None
    per_ps = [int(b) for b in str(text).split(",")]
    mean = sum(per_ps) / len(per_ps)
    return per_ps, (max(per_ps) / mean if mean else 1.0)


def verdict(result: RunResult) -> tuple[bool, str]:
    if result.leftovers:
        return False, (f"{len(result.leftovers)} process(es) of this run outlived the teardown and were killed: "
                       f"{', '.join(map(str, result.leftovers))}")
    if not result.ok:
        return False, result.message
    return True, result.message


def render(result: RunResult, batch_size: int | None, partitioner: str | None) -> str:
    blocks = [_tasks(result)]
    if result.steps or result.final:
        blocks.append(_training(result, batch_size))
    if balance(result):
        blocks.append(_placement(result, partitioner))
    if result.faults:
        blocks.append(_faults(result))
    if result.evaluations:
        last = result.evaluations[-1]
        blocks.append(f"evaluator: {len(result.evaluations)} checkpoint(s) scored, last at step {last.get('step')}: "
                      f"loss {last.get('loss')}")
    passed, why = verdict(result)
    blocks.append(("PASS: " if passed else "FAIL: ") + why)
    return "\n\n".join(blocks)


def _tasks(result: RunResult) -> str:
    rows = []
    for name, info in result.tasks.items():
        code = info["exit_code"]
        rows.append([name, info["state"], info["restarts"], "-" if code is None else code, info["address"],
                     display_path(info["log"]) if info["log"] else "-"])
    return table.render(["TASK", "STATE", "RESTARTS", "EXIT", "ADDRESS", "LOG"], rows)


def _training(result: RunResult, batch_size: int | None) -> str:
    final = result.final
    steps = int(final["step"]) if final else (result.steps[-1].step if result.steps else 0)
    rate = float(final.get("steps_per_sec", 0)) if final else (result.steps[-1].steps_per_sec if result.steps else 0)
    first = result.first_loss if result.first_loss is not None else (result.steps[0].loss if result.steps else None)
    last = float(final["loss"]) if final else (result.steps[-1].loss if result.steps else None)
    examples = f"{rate * batch_size:,.0f}" if batch_size else "-"
    resumed = ", ".join(str(r.get("step")) for r in result.resumes) or "-"
    return table.render(
        ["STEPS", "TARGET", "STEPS/S", "EXAMPLES/S", "FIRST LOSS", "FINAL LOSS", "RESUMED AT", "TRAINING S"],
        [[steps, result.target_steps, f"{rate:.1f}", examples, _loss(first), _loss(last), resumed,
          final.get("seconds", "-") if final else "-"]])


def _placement(result: RunResult, partitioner: str | None) -> str:
    return ps_balance(balance(result)[0], partitioner)


def _faults(result: RunResult) -> str:
    rows = []
    for fault in result.faults:
        resumed = fault.get("resumed_from")
        rows.append([fault["task"], fault.get("kind", "killed"), fault["at_step"], _seconds(fault.get("back_after")),
                     _seconds(fault.get("next_step_after")), "-" if resumed is None else resumed])
    return table.render(["TASK", "FAULT", "AT STEP", "TASK BACK AFTER", "NEXT STEP AFTER", "RESUMED FROM"], rows)


def display_path(path: str) -> str:
    """Relative to the current directory when below it, else absolute."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def _loss(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _seconds(value) -> str:
    return "-" if value is None else f"{value:.1f}s"


def as_dict(result: RunResult, job: str, counts: dict[str, int]) -> dict:
    """The run as JSON (--report): for scripts, tests and benchmarks."""
    passed, why = verdict(result)
    placement = balance(result)
    return {
        "job": job, "passed": passed, "message": why, "tasks_run": counts, "seconds": round(result.seconds, 2),
        "target_steps": result.target_steps, "first_loss": result.first_loss, "final": result.final, "resumes": result.resumes,
        "steps": [vars(s) for s in result.steps], "faults": result.faults, "evaluations": result.evaluations,
        "bytes_per_ps": placement[0] if placement else None,
        "max_over_mean": round(placement[1], 4) if placement else None,
        "tasks": result.tasks, "leftovers": result.leftovers, "interrupted": result.interrupted,
        "failed_for_good": result.failed_for_good, "ended_after": result.ended_after,
        "ended_after_by_task": result.ended_after_by_task,
    }
