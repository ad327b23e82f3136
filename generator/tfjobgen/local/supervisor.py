"""Running the local tasks: watch their logs and exits, replace them like Kubernetes, decide pass or fail.

The runtime writes events (tfjobgen.runtime.events) into each task's log; the
supervisor reads them to know when a task is up, how far training got, and
why something failed. For failures it plays the Job controller, by the job's
own rules (lifecycle.after_failure: the decision the generated Jobs ask of
Kubernetes):

- a failed task gets a new process (a new pod: restartPolicy Never) only once
  the old one has exited, after the controller's delay (10 s, doubling), while
  its own budget lasts; a killed PS, and the chief that fails because of it,
  come back and the chief resumes from its checkpoint;
- a permanent exit code, or a failure beyond the budget, fails the task's Job
  for good: the Job's other tasks are stopped, as the controller stops a failed
  Job's pods. The other Jobs' tasks are left alone, as in a cluster; with the
  runtime the chief tells them to stop, and the run measures how long every
  task took to end (run-local stops the rest itself after END_GRACE);
- a task evicted on request (--evict) is a disruption: replaced, not counted;
- on jobset and tfjob, the tasks whose success completes the whole job (JobSet's
  successPolicy: every task of the chief's or the workers' Job; the TFJob operator: the
  chief, else worker 0) exiting 0 stops every task still running, as those controllers
  delete them (seen on JobSet v0.10.1 and the operator v1.9.4 within a second);
- the run succeeds when the chief finished and every other task exited 0
  after it (the chief told them to); whatever is still running then is a bug,
  named and stopped;
- a port that turned out to be taken is reported separately (PortCollision):
  the caller starts the whole cluster again with new ports.

It also injects faults on request (--kill, --evict TASK@STEP) and measures recovery.
"""

from __future__ import annotations

import atexit
import signal
import time
from dataclasses import dataclass, field
from typing import Callable

from ..concerns import lifecycle
from ..concerns.lifecycle import Lifecycle
from ..runtime import events
from ..shared import contract
from . import processes
from .tasks import LocalTask

_TICK = 0.2
END_GRACE = 60.0  # seconds every task gets to end once one failed for good (a cluster has no such limit)
_PORT_TAKEN = ("Could not start gRPC server", "the port is in use", "Address already in use")


class PortCollision(Exception):
    """A task could not bind its port: start the cluster again with new ports."""


@dataclass(frozen=True)
class Fault:
    task: str  # role:index
    step: int  # act once the chief reported at least this step
    evict: bool = False  # False: SIGKILL (a crash, counted); True: SIGTERM as an eviction (a disruption)


@dataclass
class TaskState:
    task: LocalTask
    process: processes.TaskProcess | None = None
    state: str = "starting"  # starting, up, training, finishing, done, waiting, failed, stopping, stopped
    up: bool = False  # this incarnation came up (a trainer connected, a server serves)
    restarts: int = 0  # new pods after failures
    counted: int = 0  # failures that count against its budget
    ignored: int = 0  # failures that do not (disruptions)
    start_at: float | None = None  # when its next pod starts (state waiting)
    disrupted: bool = False  # run-local evicted it: its exit is the cluster's doing
    last_error: str = ""
    last_line: str = ""
    read_offset: int = 0
    partial: bytes = b""
    ended_at: float | None = None  # when its last process exited (time.monotonic())
    error_at: float | None = None  # when its current process reported an error (time.monotonic())


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
    failed_for_good: dict = field(default_factory=dict)  # the first task that did: task, exit_code, message, time
    ended_after: float | None = None  # seconds from then until the last task ended (None: some did not)
    ended_after_by_task: dict[str, float] = field(default_factory=dict)  # the same, per task
    leftovers: list[int] = field(default_factory=list)
    seconds: float = 0.0
    interrupted: bool = False


class Interrupted(Exception):
    """SIGTERM or SIGHUP reached run-local: stop everything, like Ctrl-C."""


class Supervisor:
    def __init__(self, tasks: list[LocalTask], run_dir: str, run_id: str, *, uses_runtime: bool, chief: str,
                 target_steps: int, lifecycle: Lifecycle, completed_by: tuple[str, ...] = (),
                 faults: tuple[Fault, ...] = (), stall_limit: float = 360.0,
                 finish_timeout: float = 60.0, on_update: Callable[["Supervisor", str], None] | None = None,
                 on_event: Callable[[str, str, dict], None] | None = None):
        self.states = {t.name: TaskState(t) for t in tasks}
        self.run_dir, self.run_id = run_dir, run_id
        self.uses_runtime, self.chief = uses_runtime, chief
        self.lifecycle = lifecycle
        self.completed_by = set(completed_by) & set(self.states)
        self.completed = False  # the whole job completed by its controller's rule (completed_by)
        self.pending_faults = list(faults)
        self.stall_limit, self.finish_timeout = stall_limit, finish_timeout
        self.on_update = on_update or (lambda supervisor, kind: None)
        self.on_event = on_event or (lambda task, event, fields: None)
        self.result = RunResult(target_steps=target_steps)
        self.all_processes: list[processes.TaskProcess] = []
        self.chief_runs = 0
        self.chief_finished_at: float | None = None
        self.failed_at: float | None = None  # when the first task failed for good
        self.failure_message = ""
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
            if self.result.ok and self.pending_faults:  # asked for, never done: this run did not test it
                missed = ", ".join(f"{f.task}@{f.step}" for f in self.pending_faults)
                self.result.ok = False
                self.result.message = (f"{self.result.message}, but the fault(s) asked for were never injected "
                                       f"({missed}): training ended before that step")
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
            if process is not None and state.state not in ("done", "failed", "stopped", "waiting"):
                if id(process) in running:
                    state.state = "stopped"  # by this teardown
                else:
                    state.state = "done" if process.returncode == 0 else "failed"
            elif state.state == "waiting":
                state.state = "stopped"  # its next pod never started
            self.result.tasks[name] = {
                "state": state.state, "restarts": state.restarts, "failures": state.counted,
                "disruptions": state.ignored, "address": state.task.address or "-",
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
            outcome = (self._check_exits() or self._check_ended() or self._check_finish() or self._check_deadline()
                       or self._check_stall())
            if outcome:
                return outcome
            self._start_due()
            self._inject_faults()
            self.on_update(self, "tick")

    def _start(self, state: TaskState) -> None:
        if state.task.counts_failures:  # the Job controller's annotation on the new pod, read by the runtime
            state.task.env[contract.FAILURES_ENV] = str(state.counted)
        state.process = processes.start(state.task, self.run_id, self.run_dir, state.restarts)
        self.all_processes.append(state.process)
        state.state, state.up, state.read_offset, state.partial = "starting", False, _size(state.process.log_path), b""
        state.start_at, state.disrupted, state.error_at = None, False, None
        if state.task.name == self.chief:
            self.chief_runs += 1

    def _start_due(self) -> None:
        now = time.monotonic()
        for state in self.states.values():
            if state.state == "waiting" and state.start_at is not None and now >= state.start_at:
                self._start(state)

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
            state.error_at = state.error_at or time.monotonic()
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
            state.ended_at = time.monotonic()
            if code == 0:
                state.state = "done"
                if name == self.chief:
                    self.chief_finished_at = time.monotonic()
                self._complete_if_due()
                if name == self.chief and not self.uses_runtime and (not self.completed_by or self.completed):
                    return self._own_program_finished()
                self.on_update(self, "exit")
                continue
            why = describe_exit(code, self.uses_runtime)
            detail = state.last_error or state.last_line or "no output"
            if not state.up and any(p in detail for p in _PORT_TAKEN):
                raise PortCollision(f"{name}: {detail}")
            if state.state == "stopping":  # its Job failed and it was stopped, as the controller does
                state.state = "stopped"
                continue
            exit_code = 128 - code if code < 0 else code  # a container killed by signal n exits 128 + n
            decision = lifecycle.after_failure(self.lifecycle, exit_code, state.disrupted, state.counted,
                                                     state.ignored)
            if decision.counted:
                state.counted += 1
            else:
                state.ignored += 1
            before = "" if state.up else " before it came up"
            if decision.fails_job:
                state.state = "failed"
                if self.uses_runtime and exit_code == contract.EXIT_ABORTED:  # the aftermath, not the cause
                    self._failed_for_good(state, exit_code, f"{name} stopped: the chief told it to ({why})",
                                          cause=False)
                else:
                    self._failed_for_good(state, exit_code, f"{name} {why}{before} and failed for good "
                                                            f"({decision.reason}): {_clip(detail, 400)}")
                continue
            if self.failed_at is not None:  # the job failed already: nothing is replaced any more
                state.state = "failed"
                continue
            state.restarts += 1
            state.state, state.start_at = "waiting", time.monotonic() + decision.delay
            self.notice(f"{name} {why}{before} ({_clip(detail)}); {decision.reason}: its new pod starts in "
                        f"{decision.delay:.0f} s, as the Job controller would")
        return None

    def _complete_if_due(self) -> None:
        """Once every task of completed_by exited 0, the JobSet or TFJob completes and its controller
        deletes the tasks still running (SIGTERM, as a deleted pod gets)."""
        if self.completed or not self.completed_by or self.failed_at is not None \
                or any(self.states[name].state != "done" for name in self.completed_by):
            return
        self.completed = True
        stopped = []
        for other in self.states.values():
            if other.state == "waiting":
                other.state = "stopped"
                stopped.append(other.task.name)
            elif other.process is not None and other.process.returncode is None and other.state != "stopping":
                other.state = "stopping"
                other.process.signal_group(signal.SIGTERM)
                stopped.append(other.task.name)
        if stopped:
            self.notice(f"the job completed ({', '.join(sorted(self.completed_by))} exited 0): its controller "
                        f"stops the tasks still running, {', '.join(stopped)}")

    def _failed_for_good(self, state: TaskState, exit_code: int, message: str, cause: bool = True) -> None:
        """The task's Job fails: the controller stops the Job's other pods; other Jobs go on.

        The time counts from when the task said why (a chief lingers to tell the others
        before it exits); a task the chief stopped is not the cause, only its aftermath.
        """
        said = state.error_at or time.monotonic()
        self.failed_at = said if self.failed_at is None else min(self.failed_at, said)
        if cause and not self.result.failed_for_good:
            self.failure_message = message
            self.result.failed_for_good = {"task": state.task.name, "exit_code": exit_code, "message": message,
                                           "time": time.time()}
        self.notice(message)
        for other in self.states.values():
            if other is state or other.task.owner != state.task.owner:
                continue
            if other.state == "waiting":
                other.state = "stopped"
            elif other.process is not None and other.process.returncode is None and other.state != "stopping":
                other.state = "stopping"
                other.process.signal_group(signal.SIGTERM)

    def _check_ended(self) -> tuple[bool, str] | None:
        """After a failure for good: over once every task has ended, or after END_GRACE."""
        if self.failed_at is None:
            return None
        running = [s for s in self.states.values()
                   if s.state == "waiting" or (s.process is not None and s.process.returncode is None)]
        message = self.failure_message or "the chief stopped every task"
        if not running:
            self.result.ended_after_by_task = {s.task.name: round(max((s.ended_at or self.failed_at) - self.failed_at,
                                                                      0.0), 2) for s in self.states.values()}
            self.result.ended_after = max(self.result.ended_after_by_task.values())
            return False, f"{message}; every task ended within {self.result.ended_after:.1f} s"
        if time.monotonic() - self.failed_at > END_GRACE:
            names = ", ".join(s.task.name for s in running)
            return False, f"{message}; {names} still running {END_GRACE:.0f} s later (nothing told them to stop)"
        return None

    def _check_deadline(self) -> tuple[bool, str] | None:
        deadline = self.lifecycle.deadline_seconds
        if deadline and time.monotonic() - self.started > deadline:
            return False, (f"the job ran past its activeDeadlineSeconds ({deadline} s): every Job fails "
                           "(DeadlineExceeded) and its tasks are stopped")
        return None

    def _own_program_finished(self) -> tuple[bool, str]:
        return True, f"the chief's program exited 0; the remaining tasks were stopped ({self._in_a_cluster()})"

    def _in_a_cluster(self) -> str:
        """What would end a program's leftover PS in a cluster."""
        deadline = self.lifecycle.deadline_seconds
        return (f"in a cluster their Jobs end at the deadline, {deadline} s" if deadline else
                "in a cluster nothing would end them; validation warns")

    def _check_finish(self) -> tuple[bool, str] | None:
        running = [s for s in self.states.values() if s.process and s.process.returncode is None]
        waiting = any(s.state == "waiting" for s in self.states.values())
        if not self.uses_runtime:
            # A job's own program: done when every trainer exited 0 (PS never exit on their own).
            trainers = [s for s in self.states.values() if s.task.role in contract.TRAINER_ROLES]
            if trainers and all(s.state == "done" for s in trainers):
                return True, f"every worker exited 0; the PS were stopped ({self._in_a_cluster()})"
            return None
        if self.chief_finished_at is None:
            return None
        if not running and not waiting:
            failed = [s.task.name for s in self.states.values() if s.state == "failed"]
            if failed:
                return False, f"training finished, but {', '.join(failed)} failed"
            stopped = sorted(s.task.name for s in self.states.values() if s.state == "stopped")
            if stopped:
                return True, f"training finished; the job completed and its controller stopped {', '.join(stopped)}"
            return True, "training finished and every task exited 0"
        if not waiting and time.monotonic() - self.chief_finished_at > self.finish_timeout:
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
            state.disrupted = fault.evict  # an eviction is the cluster's doing: the Job does not count it
            state.process.signal_group(signal.SIGTERM if fault.evict else signal.SIGKILL)
            kind = "evicted" if fault.evict else "killed"
            self.result.faults.append({"task": fault.task, "at_step": step, "time": time.time(), "kind": kind})
            self.notice(f"{kind} {fault.task} with {'SIGTERM' if fault.evict else 'SIGKILL'} at step {step} "
                        f"({'--evict' if fault.evict else '--kill'})")

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


def describe_exit(code: int, runtime: bool) -> str:
    """How a task's process ended (`code` as Popen gives it: -n when signal n killed it), with what the
    code means (contract.exit_meaning; `runtime`: it ran tfjobgen's runtime)."""
    if code < 0:
        return f"was killed by {contract.signal_name(-code)}"
    meaning = contract.exit_meaning(code, runtime) if code else ""
    return f"exited with code {code}" + (f" ({meaning})" if meaning else "")


def _clip(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _size(path: str) -> int:
    try:
        with open(path, "rb") as log:
            return log.seek(0, 2)
    except OSError:
        return 0
