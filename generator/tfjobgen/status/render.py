"""A JobStatus for people (a header and a table of tasks) and for programs (JSON). Pure functions.

    JOB        ml-training/wide-deep (native, spread): 4 PS, 32 workers, chief, evaluator
    STATE      starting: 1 of 37 training tasks not running: ps:3 Pending: 0/20 nodes are available: ...
    PLACEMENT  spread holds: 36 of 37 tasks placed
    METRICS    step 1,200 at 12.5 steps/s, loss 0.5707 (chief:0)
    TASKS      36 Running, 1 Pending

    TASK      PHASE    POD  NODE  RESTARTS  EXIT  WHY

The same facts in both: the JSON is {"job": {...}, "tasks": [{role, index, phase, node, restarts,
exitCode, reason, ...}]}, keys sorted, nothing that depends on when it was read.
"""

from __future__ import annotations

import datetime
from collections import Counter

from ..kit import table
from ..kit.ps_load import ps_balance
from ..shared import contract
from . import derive

_LABEL_WIDTH = 11
TASK_HEADERS = ["TASK", "PHASE", "POD", "NODE", "RESTARTS", "EXIT", "WHY"]
LIST_HEADERS = ["NAME", "BACKEND", "STATE", "TASKS", "AGE"]


def _line(label: str, text: str) -> str:
    return f"{label:<{_LABEL_WIDTH}}{text}"


def _roles(status: derive.JobStatus) -> str:
    parts = []
    for role in contract.TABLE_ROLES:
        count = status.roles.get(role, 0)
        if count:
            name = {"ps": "PS", "worker": "worker"}.get(role, role)
            parts.append(name if role in contract.SINGLE_ROLES and count == 1
                         else f"{count} {name}" + ("s" if count > 1 and role == "worker" else ""))
    return ", ".join(parts)


def placement_line(status: derive.JobStatus) -> str:
    verdict = status.placement
    if verdict is None:
        return status.placement_note or "-"
    placed = f"{verdict.placed} of {verdict.tasks} tasks placed"
    if verdict.topology == "none":
        return f"topology none promises nothing; {placed}"
    if verdict.holds:
        return f"{verdict.topology} holds: {placed}"
    return f"{verdict.topology} BROKEN: {'; '.join(verdict.broken)} ({placed})"


def metrics_lines(status: derive.JobStatus) -> list[str]:
    training = status.training
    if training is None:
        return ["-"]
    lines = []
    if training.step is not None:
        pace = f" at {training.steps_per_second:.1f} steps/s" if training.steps_per_second else ""
        loss = f", loss {training.loss:.4f}" if training.loss is not None else ""
        lines.append(f"step {training.step:,}{pace}{loss} ({training.chief})")
    if training.ps_bytes:
        lines.append(f"PS bytes max/mean {training.max_over_mean:.2f} over {len(training.ps_bytes)} PS (below)")
    by_error: dict[str, list[str]] = {}
    for task, error in training.unreachable.items():
        by_error.setdefault(error, []).append(task)
    for error, tasks in by_error.items():
        lines.append(f"metrics unreachable ({', '.join(tasks)}): {error}")
    return lines or ["-"]


def header(status: derive.JobStatus) -> list[str]:
    lines = [_line("JOB", f"{status.key} ({status.backend}, {status.topology or '?'}): {_roles(status)}"),
             _line("STATE", f"{status.state}: {status.reason}")]
    lines += [_line("", condition.describe()) for condition in status.conditions]
    lines.append(_line("PLACEMENT", placement_line(status)))
    found = metrics_lines(status)
    lines += [_line("METRICS" if i == 0 else "", text) for i, text in enumerate(found)]
    phases = Counter(t.phase for t in status.tasks)
    lines.append(_line("TASKS", ", ".join(f"{n} {phase}" for phase, n in sorted(phases.items(),
                                                                                key=lambda item: (-item[1], item[0])))
                       or "none"))
    lines += [_line("NOTE", note) for note in status.notes]
    return lines


def task_rows(status: derive.JobStatus) -> list[list[object]]:
    return [[t.task, t.phase, t.pod or "-", t.node or "-", t.restarts, "-" if t.exit_code is None else t.exit_code,
             t.why or "-"] for t in status.tasks]


def ps_block(status: derive.JobStatus) -> str:
    training = status.training
    if training is None or not training.ps_bytes:
        return ""
    per_ps = list(training.ps_bytes.values())  # ps:0, ps:1, ... (read.metrics orders them)
    return ps_balance(per_ps, training.partitioner)


def text(status: derive.JobStatus, max_lines: int | None = None) -> str:
    """The header, the task table and the PS's bytes; within `max_lines` (a terminal's height), the tasks
    with nothing to say (Running, never restarted) give way to one line counting them."""
    top, ps = "\n".join(header(status)), ps_block(status)
    rows, hidden = task_rows(status), set()
    if max_lines is not None:
        fixed = top.count("\n") + 1 + 1 + 2 + (ps.count("\n") + 2 if ps else 0)  # blank lines, the table's head
        quiet = [i for i, t in enumerate(status.tasks) if t.phase == "Running" and not t.restarts and not t.why]
        room = max_lines - fixed - 1  # and the line that counts what is not shown
        if len(rows) > room and quiet:
            hidden = set(quiet[max(room - (len(rows) - len(quiet)), 0):])
            rows = [row for i, row in enumerate(rows) if i not in hidden]
    tasks = table.render(TASK_HEADERS, rows)
    if hidden:
        tasks += f"\n... and {len(hidden)} more tasks Running, never restarted (a taller terminal shows them)"
    return "\n\n".join([top, tasks] + ([ps] if ps else []))


def as_json(status: derive.JobStatus) -> dict:
    verdict = status.placement
    training = status.training
    job = {
        "namespace": status.namespace, "name": status.name, "backend": status.backend, "topology": status.topology,
        "state": status.state, "reason": status.reason, "cause": status.cause or None, "created": status.created,
        "roles": status.roles,
        "conditions": [{"object": c.object, "type": c.type, "reason": c.reason, "message": c.message}
                       for c in status.conditions],
        "phases": dict(sorted(Counter(t.phase for t in status.tasks).items())),
        "placement": None if verdict is None else {"topology": verdict.topology, "holds": verdict.holds,
                                                   "placed": verdict.placed, "tasks": verdict.tasks,
                                                   "broken": verdict.broken},
        "metrics": None if training is None else {
            "chief": training.chief, "step": training.step, "stepsPerSecond": training.steps_per_second,
            "loss": training.loss, "psBytes": training.ps_bytes,
            "psMaxOverMean": None if training.max_over_mean is None else round(training.max_over_mean, 4),
            "partitioner": training.partitioner, "unreachable": training.unreachable},
        "notes": status.notes,
    }
    tasks = [{"role": t.role, "index": t.index, "phase": t.phase, "pod": t.pod or None, "node": t.node or None,
              "restarts": t.restarts, "failures": {"counted": t.counted, "notCounted": t.not_counted},
              "exitCode": t.exit_code, "reason": t.why, "meaning": t.ended.meaning if t.ended else None,
              "lastFailure": t.last_failure.as_json() if t.last_failure else None} for t in status.tasks]
    return {"job": job, "tasks": tasks}


def listing(statuses: list[derive.JobStatus], now: datetime.datetime, all_namespaces: bool) -> str:
    headers = (["NAMESPACE"] if all_namespaces else []) + LIST_HEADERS
    rows = [([s.namespace] if all_namespaces else []) + [s.name, s.backend, s.state, f"{s.running}/{len(s.tasks)}",
                                                          derive.age(s.created, now)] for s in statuses]
    return table.render(headers, rows)


def listing_json(statuses: list[derive.JobStatus]) -> dict:
    return {"jobs": [{"namespace": s.namespace, "name": s.name, "backend": s.backend, "state": s.state,
                      "reason": s.reason, "running": s.running, "tasks": len(s.tasks), "created": s.created}
                     for s in statuses]}
