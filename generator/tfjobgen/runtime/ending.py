"""How a task ends when something fails for good, so that no task of the job keeps its cores.

A task fails for good when it exits with a permanent code (contract.PERMANENT_EXIT_CODES),
or with any other failure on its last attempt: its failure count (the Job controller's
annotation, TFJOBGEN_TASK_FAILURES) has reached its budget (TFJOBGEN_TASK_RETRIES).
Kubernetes then fails its Job (generator/tfjobgen/concerns/lifecycle.py), but the other roles'
Jobs would go on, their PS and workers waiting for a chief that will not finish. So,
before it exits:

- a task that is not the chief tells the chief (FAILED on the control channel);
- the chief, told so or failing for good itself, tells every task to stop (ABORT): each
  exits with EXIT_ABORTED, a permanent code too, so every Job of the job fails at once.

A task that is stopped (EXIT_ABORTED), or that cannot reach the chief (EXIT_CHIEF_GONE),
tells nobody: the chief already knows, or cannot hear. Plain Python, no TensorFlow.
"""

from __future__ import annotations

import os
import sys
import threading

from ..shared.contract import PERMANENT_EXIT_CODES
from . import control, events
from .errors import EXIT_ABORTED, EXIT_CHIEF_GONE, EXIT_OK
from .settings import Task

# Seconds the chief keeps saying ABORT, unless every task has answered sooner: long enough for a task
# still importing TensorFlow (5 s on an idle node, 20 s on a busy one) to connect and hear it.
ABORT_LINGER = 20.0


def absence_limit(task: Task) -> float:
    """How long a task waits for an absent chief: twice the chief's own startup deadline.

    A replaced chief needs its new pod, its TensorFlow import and up to
    startupTimeoutSeconds for the other tasks; twice that is ample, and still
    ends the task (and frees its cores) when the chief is gone for good.
    """
    return 2.0 * task.training.startup_timeout


class Ending:
    def __init__(self, task: Task, report: events.Reporter):
        self.task, self.report = task, report
        self.server: control.ChiefServer | None = None  # the chief's, once it listens
        self.lock = threading.Lock()
        self.exiting = False  # the first way out wins; the others only wait for the process to end

    def for_good(self, code: int) -> bool:
        return code in PERMANENT_EXIT_CODES or (code != EXIT_OK and self.task.last_attempt)

    def before_exit(self, code: int, reason: str) -> None:
        """Called with the code the task is about to exit with, and why."""
        with self.lock:
            if self.exiting:
                return
            self.exiting = True
        if not self.for_good(code) or code in (EXIT_ABORTED, EXIT_CHIEF_GONE):
            return
        why = f"exit {code}" + (", its last attempt" if code not in PERMANENT_EXIT_CODES else "")
        if self.task.is_chief:
            self._stop_everyone(f"{self.task.name} failed for good ({why}): {reason}")
        elif control.tell_chief_failed(self.task.control_address, self.task.job, self.task.name, code,
                                       f"({why}) {reason}"):
            self.report(events.NOTICE, message="told the chief, which stops every task")

    def _stop_everyone(self, reason: str) -> None:
        if self.server is None:
            return
        still = self.server.abort(reason, ABORT_LINGER)
        self.report(events.NOTICE, message="told every task to stop" + (
            f"; {', '.join(still)} did not answer" if still else ""))

    def task_failed(self, name: str, code: int, reason: str) -> None:
        """The chief's control server heard FAILED from `name`: stop every task, then this one."""
        with self.lock:
            if self.exiting:
                return
            self.exiting = True
        message = f"{name} failed for good {reason}".strip()
        self.report(events.ERROR, message=f"{message}; stopping every task")
        self._stop_everyone(message)
        self._exit_now(EXIT_ABORTED)

    def aborted(self, err: control.Aborted) -> None:
        """A link in the background heard ABORT while the task works in TensorFlow: leave now."""
        with self.lock:
            if self.exiting:
                return
            self.exiting = True
        self.report(events.ERROR, message=f"stopped by the chief: {err}")
        self._exit_now(EXIT_ABORTED)

    def watchdog_expired(self, message: str) -> None:
        """The watchdog ends the process with EXIT_FAILED right after this."""
        self.report(events.ERROR, message=message)
        self.before_exit(1, message)
        self.report(events.EXIT, code=1)

    def link(self) -> control.ChiefLink:
        """This task's link to the chief: reconnecting, and ending the process on ABORT.

        A task whose new pod starts after a failure or an eviction may find the chief gone
        because training finished meanwhile (the Job controller waits 10 s or more before a
        new pod): the chief's word in the model directory (modeldir.FINISHED_FILE) then counts
        as DONE. A chief that finds the same word at its start has nothing to train either.
        """
        return control.ChiefLink(self.task.control_address, self.task.job, self.task.name, absence_limit(self.task),
                                 notice=lambda message: self.report(events.NOTICE, message=message),
                                 on_abort=self.aborted, finished=self._training_finished)

    def _training_finished(self) -> bool:
        from . import modeldir  # TensorFlow's filesystems; every task with a link has imported TensorFlow by now

        training = self.task.training
        return modeldir.finished(training.model_dir, self.task.job, training.steps)

    def _exit_now(self, code: int) -> None:
        self.report(events.EXIT, code=code)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)  # the main thread may be inside TensorFlow, which Python cannot interrupt
