"""How a task fails, and the exit code each way gets (docs/runtime.md has the table).

The runtime never lets a traceback be the explanation: each failure it knows
about is one of these, and its message is one line naming what is wrong.
"""

from __future__ import annotations

from ..shared.contract import EXIT_ABORTED, EXIT_CHIEF_GONE, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_SETUP  # noqa: F401


class SetupError(Exception):
    """The task cannot run as configured (bad env, missing data file, port in use)."""

    exit_code = EXIT_SETUP


class TaskFailed(Exception):
    """Training started but cannot go on (a PS was lost, a task never came up)."""

    exit_code = EXIT_FAILED
