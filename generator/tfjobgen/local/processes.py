"""Starting task processes and making sure none outlives the run.

Each task runs in its own process group (a new session), so a signal reaches
everything it started. Only groups this run created are ever signalled:

- an exit is noticed with waitid(WNOWAIT), which leaves the zombie in place,
  so the group id cannot have been reused when the rest of its group is killed;
- teardown sends SIGTERM to every live group, waits, then SIGKILL;
- every process carries TFJOBGEN_LOCAL_RUN=<run id> (the run's directory) in its environment, and
  a last sweep of /proc kills any process with this run's id that escaped its
  group (and reports it: nothing should).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field

from ..kit import owned
from ..shared import contract
from .tasks import LocalTask

RUN_MARKER = "TFJOBGEN_LOCAL_RUN"
# Variables of the parent that must not leak into tasks: the pod env sets its own, and
# GRPC_FAIL_FAST=false makes the tf2 coordinator hang after a worker dies (measured).
_NOT_INHERITED_PREFIXES = (contract.GENERATED_PREFIX, contract.TF_CONFIG, "TF_NUM_", contract.OMP_ENV, "GRPC_FAIL_FAST",
                           "TF_SEASTAR_", "KMP_")
_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def environment(task: LocalTask, run_id: str, temp_dir: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment minus what the pod defines, then the pod's env, then run-local's own."""
    base = dict(os.environ if base is None else base)
    env = {k: v for k, v in base.items() if not k.startswith(_NOT_INHERITED_PREFIXES)}
    env.update(task.env)
    env[RUN_MARKER] = run_id
    # TensorFlow's autograph writes a file per converted function and removes them at exit, which a
    # task stopped by a signal never reaches: they stay in the run's folder, not in the machine's /tmp.
    env["TMPDIR"] = temp_dir
    env["PYTHONUNBUFFERED"] = "1"  # events reach the log (and the status line) at once
    # The tasks import tfjobgen from the same tree as this process.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_PARENT, base.get("PYTHONPATH", "")) if p)
    return env


@dataclass
class TaskProcess:
    task: LocalTask
    log_path: str
    popen: subprocess.Popen
    started: float = field(default_factory=time.time)
    returncode: int | None = None

    @property
    def pid(self) -> int:
        return self.popen.pid

    def poll(self) -> int | None:
        """The exit code (negative: killed by that signal) once the task ended, else None."""
        if self.returncode is not None:
            return self.returncode
        try:
            ended = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            ended = True
        if not ended:
            return None
        self.signal_group(signal.SIGKILL)  # anything the task left in its group; its zombie pins the group id
        self.returncode = self.popen.wait()
        return self.returncode

    def signal_group(self, sig: int) -> None:
        if self.returncode is not None:
            return  # reaped: the group id may belong to someone else by now
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def start(task: LocalTask, run_id: str, run_dir: str, attempt: int) -> TaskProcess:
    log_dir = os.path.join(run_dir, "logs")
    task_dir = os.path.join(run_dir, "tasks", task.file_name)
    os.makedirs(log_dir, exist_ok=True)
    temp_dir = os.path.join(task_dir, "tmp")
    os.makedirs(temp_dir, exist_ok=True)
    log_path = os.path.join(log_dir, f"{task.file_name}.log")
    with open(log_path, "ab") as log:
        if attempt:
            log.write(f"\n----- run-local: restart {attempt} of {task.name} -----\n".encode())
            log.flush()
        popen = subprocess.Popen(task.command, env=environment(task, run_id, temp_dir), cwd=task_dir,
                                 stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    if task.cpus:
        try:
            os.sched_setaffinity(popen.pid, task.cpus)  # before TF sizes anything from its affinity
        except OSError:
            pass
    return TaskProcess(task, log_path, popen)


def stop(processes: list[TaskProcess], grace: float = 5.0) -> None:
    """SIGTERM every live task's group, wait up to `grace` s, then SIGKILL; reap them all."""
    live = [p for p in processes if p.poll() is None]
    for process in live:
        process.signal_group(signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(p.poll() is None for p in live):
        time.sleep(0.05)
    for process in live:
        if process.poll() is None:
            process.signal_group(signal.SIGKILL)
    for process in live:
        try:
            process.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        process.poll()


def environments(run_id: str) -> dict[int, dict[str, str]]:
    """The environment of every process that carries this run's id, by PID."""
    return owned.environments(RUN_MARKER, run_id)


def leftovers(run_id: str) -> list[int]:
    """PIDs of processes that still carry this run's id in their environment."""
    return owned.marked(RUN_MARKER, run_id)


def sweep(run_id: str) -> list[int]:
    """Kill whatever of this run is left (should be nothing); the PIDs it found."""
    found = leftovers(run_id)
    owned.kill(found)
    return found
