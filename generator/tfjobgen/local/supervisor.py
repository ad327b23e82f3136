"""Running the local tasks: watch their logs and exits, restart like Kubernetes, decide pass or fail.

The runtime writes events (tfjobgen.runtime.events) into each task's log; the
supervisor reads them to know when a task is up, how far training got, and
why something failed. It acts like the Job controller and kubelet would:

- a task that fails after it had come up is restarted (restartPolicy
  OnFailure), at most `restarts` times: a killed PS, and the chief that
  fails because of it, come back and the chief resumes from its checkpoint;
- a task that fails before it ever came up is not: its error is the message,
  and everything is stopped (a crash at start does not get better by retrying);
- the run succeeds when the chief finished and every other task exited 0
  after it (the chief told them to); whatever is still running then is a bug,
  named and stopped;
- a port that turned out to be taken is reported separately (PortCollision):
  the caller starts the whole cluster again with new ports.

It also injects faults on request (--kill TASK@STEP) and measures recovery.
"""

from __future__ import annotations

import atexit
import signal
import time
from dataclasses import dataclass, field
from typing import Callable

from .. import contract
from ..runtime import events
from . import processes
from .tasks import LocalTask

_TICK = 0.2
_PORT_TAKEN = ("Could not start gRPC server", "the port is in use", "Address already in use")


class PortCollision(Exception):
    """A task could not bind its port: start the cluster again with new ports."""


@dataclass(frozen=True)
class Fault:
    task: str  # role:index
    step: int  # kill once the chief reported at least this step


@dataclass
class TaskState:
    task: LocalTask
    process: processes.TaskProcess | None = None
    state: str = "starting"  # starting, up, training, done, restarting, failed, stopped
    up: bool = False  # this incarnation came up (a trainer connected, a server serves)
    restarts: int = 0
    last_error: str = ""
    last_line: str = ""
    read_offset: int = 0
    partial: bytes = b""


@dataclass
class StepRecord:
    step: int
    loss: float
    steps_per_sec: float
    time: float
    chief_run: int  # which incarnation of the chief reported it


@dataclass
class RunResult:
    ok: bool = False
    message: str = ""
    steps: list[StepRecord] = field(default_factory=list)
    target_steps: int = 0
    first_loss: float | None = None
    final: dict = field(default_factory=dict)  # the chief's `finished` event
    placement: dict = field(default_factory=dict)  # the chief's `placement` event
    resumes: list[dict] = field(default_factory=list)  # `resume` events
    evaluations: list[dict] = field(default_factory=list)
    faults: list[dict] = field(default_factory=list)  # what was killed when, and how long recovery took
    tasks: dict[str, dict] = field(default_factory=dict)  # name -> state, restarts, exit code, log
    leftovers: list[int] = field(default_factory=list)
    seconds: float = 0.0
    interrupted: bool = False


class Interrupted(Exception):
    """SIGTERM or SIGHUP reached run-local: stop everything, like Ctrl-C."""


class Supervisor:
    def __init__(self, tasks: list[LocalTask], run_dir: str, run_id: str, *, uses_runtime: bool, chief: str,
                 target_steps: int, restarts: int, faults: tuple[Fault, ...] = (), stall_limit: float = 360.0,
                 finish_timeout: float = 30.0, on_update: Callable[["Supervisor", str], None] | None = None,
                 on_event: Callable[[str, str, dict], None] | None = None):
        self.states = {t.name: TaskState(t) for t in tasks}
        self.run_dir, self.run_id = run_dir, run_id
        self.uses_runtime, self.chief = uses_runtime, chief
        self.restart_limit = restarts
        self.pending_faults = list(faults)
        self.stall_limit, self.finish_timeout = stall_limit, finish_timeout
        self.on_update = on_update or (lambda supervisor, kind: None)
        self.on_event = on_event or (lambda task, event, fields: None)
        self.result = RunResult(target_steps=target_steps)
        self.all_processes: list[processes.TaskProcess] = []
        self.chief_runs = 0
        self.chief_finished_at: float | None = None
        self.last_activity = time.monotonic()
        self.started = time.monotonic()
        self.notices: list[str] = []
        self.torn_down = False

    # ---- public

    def run(self) -> RunResult:
        """Start every task and supervise until success, failure or interruption; always tears down."""
        previous = {sig: signal.signal(sig, self._interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
        atexit.register(self.teardown)  # a backstop for an exit that skips the finally below
        try:
            for state in self.states.values():
                self._start(state)
            self.result.ok, self.result.message = self._loop()
        except KeyboardInterrupt:
            self.result.message, self.result.interrupted = "interrupted (Ctrl-C): every task was stopped", True
        except Interrupted as err:
            self.result.message, self.result.interrupted = f"{err}: every task was stopped", True
        finally:
            self.teardown()
            atexit.unregister(self.teardown)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        self.result.seconds = time.monotonic() - self.started
        return self.result

    def teardown(self) -> None:
        """Stop every process of the run and record how each task ended. Runs once."""
        if self.torn_down:
            return
        self.torn_down = True
        # A second Ctrl-C (or SIGTERM) must not cut the teardown short and leave tasks running.
        held = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        try:
            self._stop_everything()
        finally:
            for sig, handler in held.items():
                signal.signal(sig, handler)

    def _stop_everything(self) -> None:
        running = {id(p) for p in self.all_processes if p.poll() is None}
        processes.stop(self.all_processes)
        self._read_logs()
        self.result.leftovers = processes.sweep(self.run_id)
        for name, state in self.states.items():
            process = state.process
            if process is not None and state.state not in ("done", "failed"):
                if id(process) in running:
                    state.state = "stopped"  # by this teardown
                else:
                    state.state = "done" if process.returncode == 0 else "failed"
            self.result.tasks[name] = {
                "state": state.state, "restarts": state.restarts, "address": state.task.address,
                "exit_code": process.returncode if process else None,
                "log": process.log_path if process else "", "error": state.last_error,
            }

    def notice(self, message: str) -> None:
        self.notices.append(message)
        self.on_update(self, "notice")

    # ---- the loop

    def _interrupt(self, signum, frame):
        raise Interrupted(f"stopped by {signal.Signals(signum).name}")

    def _loop(self) -> tuple[bool, str]:
        while True:
            time.sleep(_TICK)
            self._read_logs()
            outcome = self._check_exits() or self._check_finish() or self._check_stall()
            if outcome:
                return outcome
            self._inject_faults()
            self.on_update(self, "tick")

    def _start(self, state: TaskState) -> None:
        state.process = processes.start(state.task, self.run_id, self.run_dir, state.restarts)
        self.all_processes.append(state.process)
        state.state, state.up, state.read_offset, state.partial = "starting", False, _size(state.process.log_path), b""
        if state.task.name == self.chief:
            self.chief_runs += 1

    def _read_logs(self) -> None:
        for state in self.states.values():
            if state.process is None:
                continue
            try:
                with open(state.process.log_path, "rb") as log:
                    log.seek(state.read_offset)
                    chunk = log.read()
            except OSError:
                continue
            if not chunk:
                continue
            state.read_offset += len(chunk)
            lines = (state.partial + chunk).split(b"\n")
            state.partial = lines.pop()
            for raw in lines:
                text = raw.decode("utf-8", "replace").rstrip()
                if text.strip():
                    state.last_line = text
                parsed = events.parse(text)
                if parsed:
                    self._on_event(state, *parsed)

    def _on_event(self, state: TaskState, event: str, fields: dict) -> None:
        self.last_activity = time.monotonic()
        self.on_event(state.task.name, event, fields)
        name, is_chief = state.task.name, state.task.name == self.chief
        if event == events.UP:
            state.up, state.state = True, "training" if is_chief else "up"
            self._fault_recovered(name)
        elif event == events.ERROR:
            state.last_error = fields.get("message", "")
        elif event == events.EVAL:
            self.result.evaluations.append(fields)
        if not is_chief:
            return
        if event == events.STEP:
            record = StepRecord(int(fields["step"]), float(fields["loss"]), float(fields.get("steps_per_sec", 0)),
                                float(fields.get("time", time.time())), self.chief_runs)
            self.result.steps.append(record)
            if "first_loss" in fields and self.result.first_loss is None:
                self.result.first_loss = float(fields["first_loss"])  # before the run trained anything
            self._fault_recovered(None, record)
            self.on_update(self, "step")
        elif event == events.PLACEMENT:
            self.result.placement = fields
        elif event == events.RESUME:
            self.result.resumes.append(fields)
            self.on_update(self, "resume")
        elif event == events.FINISHED:
            self.result.final = fields
            state.state = "finishing"

    def _check_exits(self) -> tuple[bool, str] | None:
        for state in self.states.values():
            process = state.process
            if process is None or process.returncode is not None or process.poll() is None:
                continue
            code = process.returncode
            name = state.task.name
            if code == 0:
                state.state = "done"
                if name == self.chief:
                    self.chief_finished_at = time.monotonic()
                    if not self.uses_runtime:
                        return self._own_program_finished()
                self.on_update(self, "exit")
                continue
            why = describe_exit(code)
            detail = state.last_error or state.last_line or "no output"
            if not state.up and any(p in detail for p in _PORT_TAKEN):
                raise PortCollision(f"{name}: {detail}")
            if state.up and self.uses_runtime and self.chief_finished_at is None \
                    and state.restarts < self.restart_limit:
                state.restarts += 1
                state.state = "restarting"
                self.notice(f"{name} {why} ({_clip(detail)}); restarting it as Kubernetes would "
                            f"(restart {state.restarts} of {self.restart_limit})")
                self._start(state)
                continue
            state.state = "failed"
            if not state.up:
                return False, f"{name} {why} before it came up: {_clip(detail, 400)}"
            if state.restarts >= self.restart_limit and self.restart_limit:
                return False, f"{name} {why} after {state.restarts} restart(s): {_clip(detail, 400)}"
            return False, f"{name} {why}: {_clip(detail, 400)}"
        return None

    def _own_program_finished(self) -> tuple[bool, str]:
        return True, "the chief's program exited 0; the remaining tasks were stopped"

    def _check_finish(self) -> tuple[bool, str] | None:
        running = [s for s in self.states.values() if s.process and s.process.returncode is None]
        if not self.uses_runtime:
            # A job's own program: done when every trainer exited 0 (PS never exit on their own).
            trainers = [s for s in self.states.values() if s.task.role in contract.TRAINER_ROLES]
            if trainers and all(s.state == "done" for s in trainers):
                return True, "every worker exited 0; the PS were stopped (they never exit on their own)"
            return None
        if self.chief_finished_at is None:
            return None
        if not running:
            return True, "training finished and every task exited 0"
        if time.monotonic() - self.chief_finished_at > self.finish_timeout:
            names = ", ".join(s.task.name for s in running)
            return False, (f"{names} still running {self.finish_timeout:.0f} s after the chief finished "
                           "(it should have heard DONE on the control channel)")
        return None

    def _check_stall(self) -> tuple[bool, str] | None:
        quiet = time.monotonic() - self.last_activity
        if self.uses_runtime and quiet > self.stall_limit:
            return False, (f"no event from any task for {quiet:.0f} s: the runtime's own deadlines should have "
                           "ended it sooner; see the task logs")
        return None

    # ---- faults

    def _inject_faults(self) -> None:
        if not self.result.steps:
            return
        step = self.result.steps[-1].step
        for fault in list(self.pending_faults):
            state = self.states.get(fault.task)
            if step < fault.step or state is None or state.process is None or state.process.returncode is not None:
                continue
            self.pending_faults.remove(fault)
            state.process.signal_group(signal.SIGKILL)
            self.result.faults.append({"task": fault.task, "at_step": step, "time": time.time()})
            self.notice(f"killed {fault.task} with SIGKILL at step {step} (--kill)")

    def _fault_recovered(self, name: str | None, record: StepRecord | None = None) -> None:
        """Note, per fault, when the killed task was back and when the next step was reported."""
        for fault in self.result.faults:
            if name == fault["task"] and "back_after" not in fault:
                fault["back_after"] = round(time.time() - fault["time"], 2)
            if record is not None and "next_step_after" not in fault and record.time > fault["time"]:
                fault["next_step_after"] = round(record.time - fault["time"], 2)
                fault["next_step"] = record.step
                resumed = [r for r in self.result.resumes if float(r.get("time", 0)) > fault["time"]]
                fault["resumed_from"] = int(resumed[-1]["step"]) if resumed else None


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def _clip(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _size(path: str) -> int:
    try:
        with open(path, "rb") as log:
            return log.seek(0, 2)
    except OSError:
        return 0
