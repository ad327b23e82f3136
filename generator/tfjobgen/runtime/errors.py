"""How a task fails, and the exit code each way gets (docs/runtime.md has the table).

The runtime never lets a traceback be the explanation: each failure it knows
about is one of these, and its message is one line naming what is wrong.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1  # training failed; a restart may help (a lost PS, a missing task)
EXIT_SETUP = 2  # configuration is wrong; a restart will not help
EXIT_CHIEF_GONE = 3  # the chief stayed unreachable for too long
EXIT_INTERRUPTED = 130


class SetupError(Exception):
    """The task cannot run as configured (bad env, missing data file, port in use)."""

    exit_code = EXIT_SETUP


class TaskFailed(Exception):
    """Training started but cannot go on (a PS was lost, a task never came up)."""

    exit_code = EXIT_FAILED
