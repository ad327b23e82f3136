"""Live progress: one status line that redraws in a terminal, plain lines elsewhere (CI, tests, pipes).

    step 150/200  86.2 steps/s  loss 0.4512  ps 2/2 up  workers 2/2 up  chief training  12s
"""

from __future__ import annotations

import sys
import time
from typing import IO

from .supervisor import Supervisor

_STATE_WORDS = {"starting": "starting", "up": "up", "training": "training", "finishing": "finishing",
                "done": "done", "waiting": "waiting for its new pod", "failed": "failed", "stopping": "stopping",
                "stopped": "stopped"}


def status_text(supervisor: Supervisor) -> str:
    result = supervisor.result
    parts = []
    if result.steps:
        last = result.steps[-1]
        parts += [f"step {last.step}/{result.target_steps}", f"{last.steps_per_sec:.1f} steps/s", f"loss {last.loss:.4f}"]
    else:
        parts.append("starting")
    by_role: dict[str, list[str]] = {}
    for state in supervisor.states.values():
        by_role.setdefault(state.task.role, []).append(state.state)
    for role in ("ps", "worker", "evaluator", "chief"):
        states = by_role.get(role)
        if not states:
            continue
        label = {"ps": "ps", "worker": "workers", "evaluator": "evaluator", "chief": "chief"}[role]
        if len(states) == 1:
            parts.append(f"{label} {_STATE_WORDS.get(states[0], states[0])}")
        else:
            ready = sum(s in ("up", "training", "done") for s in states)
            others = sorted({s for s in states if s not in ("up", "training", "done", "starting")})
            parts.append(f"{label} {ready}/{len(states)} up" + (f" ({', '.join(others)})" if others else ""))
    parts.append(f"{time.monotonic() - supervisor.started:.0f}s")
    return "  ".join(parts)


class Progress:
    """Receives the supervisor's updates; prints notices as lines and keeps the status line current."""

    def __init__(self, stream: IO[str] | None = None, interactive: bool | None = None, quiet: bool = False):
        self.stream = stream or sys.stdout
        self.interactive = self.stream.isatty() if interactive is None else interactive
        self.quiet = quiet
        self.shown_notices = 0
        self.last_drawn = 0.0
        self.line_open = False

    def line(self, text: str) -> None:
        """A line of its own (above the status line in a terminal)."""
        self._clear()
        self.stream.write(text + "\n")
        self.stream.flush()

    def __call__(self, supervisor: Supervisor, kind: str) -> None:
        for message in supervisor.notices[self.shown_notices:]:
            self.line(f"run-local: {message}")
        self.shown_notices = len(supervisor.notices)
        if self.quiet:
            return
        now = time.monotonic()
        if self.interactive:
            if kind != "tick" or now - self.last_drawn >= 0.5:
                self._clear()
                self.stream.write(status_text(supervisor)[:_width()])
                self.stream.flush()
                self.line_open, self.last_drawn = True, now
        elif kind in ("step", "resume"):
            self.line(status_text(supervisor))

    def close(self) -> None:
        self._clear()

    def _clear(self) -> None:
        if self.line_open:
            self.stream.write("\r\x1b[K")
            self.line_open = False


def _width() -> int:
    import shutil

    return max(40, shutil.get_terminal_size((120, 20)).columns - 1)
