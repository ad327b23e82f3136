"""Deadlines TensorFlow does not have.

A chief whose PS or worker never answers waits forever inside TensorFlow's C++
code (there is no connect timeout; measured on TF 2.21). Python cannot
interrupt that call, so a watchdog thread ends the process instead, after
printing which phase overran and which tasks the control channel misses.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Callable


class Watchdog:
    def __init__(self, on_expire: Callable[[str], None]):
        """`on_expire(message)` reports; the watchdog then ends the process with exit code 1."""
        self.on_expire = on_expire
        self.lock = threading.Lock()
        self.what = ""
        self.deadline = 0.0
        self.seconds = 0.0
        self.explain: Callable[[], str] = lambda: ""
        threading.Thread(target=self._watch, name="watchdog", daemon=True).start()

    def arm(self, what: str, seconds: float, explain: Callable[[], str] = lambda: "") -> None:
        """From now on, `what` must be over (or re-armed) within `seconds`."""
        with self.lock:
            self.what, self.seconds, self.explain = what, seconds, explain
            self.deadline = time.monotonic() + seconds

    def disarm(self) -> None:
        with self.lock:
            self.what = ""

    def _watch(self) -> None:
        while True:
            time.sleep(0.5)
            with self.lock:
                expired = bool(self.what) and time.monotonic() > self.deadline
                what, seconds, explain = self.what, self.seconds, self.explain
            if expired:
                detail = explain()
                self.on_expire(f"{what} took longer than {seconds:.0f} s" + (f": {detail}" if detail else ""))
                os._exit(1)
