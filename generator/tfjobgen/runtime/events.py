"""The runtime's log lines: one event per line, readable by people and by `run-local`.

Every line the runtime itself prints looks like

    tfjobgen: event=step task=chief:0 step=200 steps=1000 loss=0.4127 steps_per_sec=85.1

`key=value` pairs (logfmt), values quoted when they contain spaces or quotes.
TensorFlow's own log lines never start with `tfjobgen: `, so `parse` can pick
the runtime's events out of a task's whole log. This module imports nothing
heavy: `run-local` uses it in the parent process.
"""

from __future__ import annotations

import json
import re
import sys
import time
from typing import IO, Callable

PREFIX = "tfjobgen: "
_BARE = re.compile(r"^[-+./:@,\w]+$")
_PAIR = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S*)')

# Events and what their fields mean (docs/runtime.md lists them for users).
UP = "up"  # the task is ready for its role: a server serves, a chief or tf1 worker has its session
PLACEMENT = "placement"  # bytes of variables per PS: bytes_per_ps=<n,n,...> max_over_mean=<x>
RESUME = "resume"  # the chief restored a checkpoint: step=<n> path=<checkpoint>
STEP = "step"  # progress: step, steps, loss, steps_per_sec, examples_per_sec
CHECKPOINT = "checkpoint"  # a checkpoint was written: step, path
EVAL = "eval"  # the evaluator scored a checkpoint: step, loss
FINISHED = "finished"  # training reached its steps: step, loss, seconds
EXIT = "exit"  # the task is about to exit: code, reason
NOTICE = "notice"  # something a person should know: message
ERROR = "error"  # why the task fails: message


def format_value(value: object) -> str:
    if isinstance(value, float):
        text = f"{value:.6g}"
    elif isinstance(value, (list, tuple)):
        text = ",".join(format_value(v) for v in value)
    else:
        text = str(value)
    return text if _BARE.match(text) else json.dumps(text)


def line(event: str, **fields: object) -> str:
    """One event as a log line (without the newline)."""
    pairs = [f"event={event}"] + [f"{key}={format_value(value)}" for key, value in fields.items()
                                  if value is not None]
    return PREFIX + " ".join(pairs)


class Reporter:
    """Prints one task's events to stdout, flushed at once so `kubectl logs` and run-local see them."""

    def __init__(self, task: str, stream: IO[str] | None = None):
        self.task = task
        self.stream = stream
        # Each sees every event too: the task's metrics (metrics.py), the chief's summaries (summaries.py).
        self.listeners: list[Callable[[str, dict], None]] = []

    def __call__(self, event: str, **fields: object) -> None:
        stream = self.stream or sys.stdout
        stream.write(line(event, task=self.task, time=f"{time.time():.3f}", **fields) + "\n")
        stream.flush()
        for listener in self.listeners:
            listener(event, fields)


def parse(text: str) -> tuple[str, dict[str, str]] | None:
    """(event, fields) of a runtime line; None for any other line."""
    if not text.startswith(PREFIX):
        return None
    fields = {}
    for key, value in _PAIR.findall(text[len(PREFIX):]):
        fields[key] = json.loads(value) if value.startswith('"') else value
    event = fields.pop("event", None)
    return (event, fields) if event else None
