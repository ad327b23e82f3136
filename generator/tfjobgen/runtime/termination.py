"""SIGTERM ends the task at once, with 143, as a deleted pod's process should.

In a container the runtime is PID 1, and the kernel drops a signal that PID 1 has no handler for: a
pod deleted (evicted, preempted, its job done) then waited out its whole grace period and was killed
with SIGKILL (137), measured on a real node. A Python handler would not do either: Python runs
handlers in the main thread between bytecodes, and a TensorFlow server blocks the main thread inside
C++. So the signal is blocked before any thread starts, and one thread of its own waits for it.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Callable

from ..shared import contract

EXIT_TERMINATED = contract.SIGNAL_EXIT_BASE + signal.SIGTERM  # 143, as a shell and the kubelet report it


def exit_on_sigterm(say: Callable[[int], None]) -> None:
    """From now on SIGTERM calls say(143) and ends the process. Call before any thread starts: threads inherit
    the blocked signal, so only the waiting thread takes it."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})

    def wait() -> None:
        signal.sigwait({signal.SIGTERM})
        try:
            say(EXIT_TERMINATED)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(EXIT_TERMINATED)

    threading.Thread(target=wait, name="sigterm", daemon=True).start()
