"""`tfjobgen status NAME --watch`: the status redrawn in place until the job ends, or Ctrl-C.

rich's Live redraws the frame where it stands (the cluster extra brings rich); lines longer than the
terminal end in an ellipsis instead of wrapping, so a redraw never leaves half a line behind. Piped
into a file, each new frame is printed once, after the one before.
"""

from __future__ import annotations

import datetime
import sys
import time
from typing import Callable

from . import derive, render
from .read import StatusError


def frame(status: derive.JobStatus, interval: float, now: datetime.datetime, trouble: str = "",
          height: int | None = None) -> str:
    """One screen: what is watched and when, then the status (within `height` lines when given)."""
    top = f"tfjobgen status {status.key}   every {interval:g} s   {now:%H:%M:%S} UTC   Ctrl-C to stop"
    if status.ended:
        top = f"tfjobgen status {status.key}   {now:%H:%M:%S} UTC   the job has {status.state}: watching no more"
    lines = [top] + ([f"last read failed, retrying: {trouble}"] if trouble else []) + [""]
    return "\n".join(lines + [render.text(status, None if height is None else height - len(lines))])


def watch(read: Callable[[], derive.JobStatus], interval: float) -> int:
    """Redraw until the job ends (0) or Ctrl-C (0: the job was read; stopping is what was asked)."""
    try:
        status = read()  # the first read's errors are the command's: no such job, not allowed
        if not sys.stdout.isatty():
            return _plain(read, status, interval)
        from rich.console import Console
        from rich.live import Live
        from rich.text import Text

        console = Console()
        with Live(console=console, auto_refresh=False, vertical_overflow="crop") as live:
            trouble = ""
            while True:
                shown = frame(status, interval, _now(), trouble, console.size.height - 1)
                live.update(Text(shown, no_wrap=True, overflow="ellipsis"), refresh=True)
                if status.ended:
                    return 0
                time.sleep(interval)
                try:
                    status, trouble = read(), ""
                except StatusError as err:  # a cluster that blinks: say so and keep the last frame
                    trouble = str(err)
    except KeyboardInterrupt:
        return 0


def _plain(read: Callable[[], derive.JobStatus], status: derive.JobStatus, interval: float) -> int:
    last = ""
    while True:
        shown = render.text(status)
        if shown != last:
            print(("\n" if last else "") + frame(status, interval, _now()), flush=True)
            last = shown
        if status.ended:
            return 0
        time.sleep(interval)
        status = read()


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)
