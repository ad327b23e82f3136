"""The control channel: how the chief learns who is up, and tells everyone when training is over or stopped.

Why it exists: a TF parameter server or worker serves until it is killed; it
never exits on its own. Its Kubernetes Job would then never complete and would
hold its (exclusive) cores forever. So the chief runs a small TCP server at
TFJOBGEN_CONTROL_ADDRESS, and every other task keeps a connection to it.

The protocol: one UTF-8 text line per message.

    task  -> chief   HELLO tfjobgen/1 <job> <role>:<index>   once its TF server is serving
    chief -> task    WELCOME <job>                            registered
                     REFUSE <reason>                          wrong job or unknown task: exit 2
                     WAIT                                     every HEARTBEAT s while training runs
                     DONE <job>                               training is over: exit 0
                     ABORT <job> <reason>                     a task failed for good: exit 4
    task  -> chief   FINISHED                                 (tf1 workers) my training loop ended
                     FAILED <code> <reason>                   I exit for good with <code> (ending.py)
                     BYE                                      acknowledges DONE or ABORT; the task closes

Rules that keep a task from exiting by mistake, and from waiting forever:
- only `DONE <its own job>` makes a task exit 0, and only `ABORT <its own job>` makes it
  exit as stopped; a dropped connection never does either;
- a task failing for good says FAILED, on a short connection of its own; the chief then
  sends every task ABORT (once training is over, it has nothing left to stop and ignores it);
- a connection that stays silent for SILENCE_LIMIT s is dead (a vanished pod sends no FIN);
- while the chief is unreachable (not started yet, restarting) the task reconnects every
  RETRY_INTERVAL s; after `absence_limit` s without contact it gives up (exit 3), so a job
  whose chief is gone for good still ends;
- the chief's registry lives in memory: a restarted chief learns who is up from the
  reconnections, within about RETRY_INTERVAL s.

No TensorFlow here: run-local and the tests use this module in plain Python.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass
from typing import Callable

from .errors import SetupError
from .settings import split_address

VERSION = "tfjobgen/1"
HEARTBEAT = 2.0  # seconds between WAITs from the chief
SILENCE_LIMIT = 10.0  # seconds without a line before a connection counts as dead
RETRY_INTERVAL = 1.0  # seconds between connection attempts to an absent chief
FINISHED_LOOK_INTERVAL = 5.0  # seconds between looks for the chief's word that training finished
_POLL = 0.25  # how often connection threads look at shared state
_MAX_LINE = 1024


class Refused(Exception):
    """The chief refused this task: configuration error, restarting will not help."""


class ChiefGone(Exception):
    """The chief stayed unreachable for longer than the task's absence limit."""


class Aborted(Exception):
    """The chief stopped the training because a task failed for good; the message says which."""


class _Lines:
    """Line-based reads on a socket with a timeout (socket.makefile is undefined after a timeout)."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.buffer = b""

    def read(self, timeout: float) -> str | None:
        """The next line, None when none arrived within `timeout`; EOFError when the peer closed."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                self.sock.settimeout(left)  # EBADF too, when the chief's shutdown closed the socket meanwhile
                chunk = self.sock.recv(4096)
            except socket.timeout:
                return None
            except OSError as err:
                raise EOFError(str(err)) from None
            if not chunk:
                raise EOFError("connection closed")
            self.buffer += chunk
            if len(self.buffer) > _MAX_LINE and b"\n" not in self.buffer:
                raise EOFError("line too long")
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode("utf-8", "replace").strip()

    def write(self, text: str) -> None:
        try:
            self.sock.settimeout(SILENCE_LIMIT)
            self.sock.sendall(text.encode() + b"\n")
        except OSError as err:
            raise EOFError(str(err)) from None


# ---- the chief's side ---------------------------------------------------------------------

@dataclass
class TaskState:
    connected: bool = False
    finished: bool = False  # said FINISHED (tf1 workers)
    acknowledged: bool = False  # said BYE after DONE
    connection: int = 0  # which connection is current: an old one closing must not unregister a new one
    since: float = 0.0  # when it (re)connected or dropped


class ChiefServer:
    """The chief's control server. `tasks` are the names (role:index) allowed to register."""

    def __init__(self, address: str, job: str, tasks: list[str], on_change: Callable[[str, str], None] = None,
                 on_failed: Callable[[str, int, str], None] = None):
        """`on_failed(task, code, reason)` runs in a thread of its own when a task says it fails for good."""
        host, self.port = split_address(address)
        # An IP literal (127.0.0.1 under run-local) is bound as is; a DNS name (the chief's own
        # pod name in a cluster) means "every interface of this pod".
        self.host = host if _is_ip(host) else ""
        self.job = job
        self.tasks = {name: TaskState() for name in tasks}
        self.on_change = on_change or (lambda name, state: None)
        self.on_failed = on_failed or (lambda name, code, reason: None)
        self.done = False
        self.aborting: str | None = None  # why, once the chief stops every task
        self.lock = threading.Condition()
        self.connections = 0
        self.open_sockets: set[socket.socket] = set()
        self.listener: socket.socket | None = None

    def start(self) -> None:
        listener = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind((self.host, self.port))
        except OSError as err:
            listener.close()
            raise SetupError(f"cannot listen on control port {self.host or '*'}:{self.port}: {err.strerror}") from None
        listener.listen(128)
        self.listener = listener
        threading.Thread(target=self._accept, name="control-accept", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._serve, args=(sock,), name="control-conn", daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        link = _Lines(sock)
        name = None
        with self.lock:
            self.open_sockets.add(sock)
        try:
            hello = link.read(SILENCE_LIMIT)
            parts = (hello or "").split()
            if len(parts) != 4 or parts[0] != "HELLO" or parts[1] != VERSION:
                link.write(f"REFUSE expected 'HELLO {VERSION} <job> <role>:<index>', got {hello!r}")
                return
            job, name = parts[2], parts[3]
            if job != self.job or name not in self.tasks:
                link.write(f"REFUSE this is the chief of job {self.job}, which has no task {name} of job {job}")
                name = None
                return
            with self.lock:
                self.connections += 1
                connection = self.connections
                state = self.tasks[name]
                state.connected, state.connection, state.since = True, connection, time.time()
                self.lock.notify_all()
            self.on_change(name, "connected")
            link.write(f"WELCOME {self.job}")
            last_sent, said = time.monotonic(), ""
            while True:
                now = self._news()
                if now != said or time.monotonic() - last_sent >= HEARTBEAT:
                    link.write(now)
                    last_sent, said = time.monotonic(), now
                message = link.read(_POLL)
                if message and message.startswith("FAILED "):
                    self._task_failed(name, message)
                elif message == "FINISHED":
                    with self.lock:
                        state.finished = True
                        self.lock.notify_all()
                    self.on_change(name, "finished")
                elif message == "BYE":
                    with self.lock:
                        state.acknowledged = True
                        self.lock.notify_all()
                    return
        except EOFError:
            pass
        finally:
            with self.lock:
                self.open_sockets.discard(sock)
            sock.close()
            if name is not None:
                with self.lock:
                    state = self.tasks[name]
                    current = state.connection == connection
                    if current:
                        state.connected, state.since = False, time.time()
                    self.lock.notify_all()
                if current:
                    self.on_change(name, "disconnected")

    def _news(self) -> str:
        """What every connection says now: ABORT wins over DONE, both over WAIT."""
        if self.aborting is not None:
            return f"ABORT {self.job} {self.aborting}"
        return f"DONE {self.job}" if self.done else "WAIT"

    def _task_failed(self, name: str, message: str) -> None:
        _, code, reason = (message.split(" ", 2) + ["", ""])[:3]
        with self.lock:
            if self.done or self.aborting is not None:
                return  # training is over, or already being stopped
        threading.Thread(target=self.on_failed, args=(name, int(code) if code.isdigit() else 1, reason),
                         name="control-failed", daemon=True).start()

    def missing(self, names: list[str]) -> list[str]:
        """Those of `names` not connected right now."""
        with self.lock:
            return [n for n in names if not self.tasks[n].connected]

    def wait_until_up(self, names: list[str], timeout: float) -> list[str]:
        """Wait until every task of `names` is connected; the ones still missing after `timeout` s."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while True:
                missing = [n for n in names if not self.tasks[n].connected]
                left = deadline - time.monotonic()
                if not missing or left <= 0:
                    return missing
                self.lock.wait(min(left, 1.0))

    def wait_until_finished(self, names: list[str], timeout: float) -> list[str]:
        """tf1: wait until each of `names` said FINISHED or left after connecting; those still training."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while True:
                busy = [n for n in names if not self.tasks[n].finished and self.tasks[n].connected]
                left = deadline - time.monotonic()
                if not busy or left <= 0:
                    return busy
                self.lock.wait(min(left, 1.0))

    def finish(self, linger: float) -> list[str]:
        """Tell every task that training is over; wait up to `linger` s for each to acknowledge.

        Tasks that are not connected now (restarting, say) get DONE if they reconnect in time.
        Returns the tasks that never acknowledged (tf1 workers that said FINISHED count as done).
        """
        deadline = time.monotonic() + linger
        with self.lock:
            self.done = True
            while True:
                waiting = [n for n, s in self.tasks.items()
                           if not s.acknowledged and not (s.finished and not s.connected)]
                left = deadline - time.monotonic()
                if not waiting or left <= 0:
                    return waiting
                self.lock.wait(min(left, 1.0))

    def abort(self, reason: str, linger: float) -> list[str]:
        """Tell every task to stop: ABORT on every connection, now and for up to `linger` s to tasks that
        connect meanwhile. Waits for a BYE from every task connected now and from every task never seen
        yet (it may still be starting); one that came and went is gone. Returns those still awaited."""
        deadline = time.monotonic() + linger
        with self.lock:
            self.aborting = " ".join(reason.split())[:_MAX_LINE // 2]  # one line, well within a read
            while True:
                waiting = [n for n, s in self.tasks.items()
                           if not s.acknowledged and (s.connected or s.connection == 0)]
                left = deadline - time.monotonic()
                if not waiting or left <= 0:
                    return waiting
                self.lock.wait(min(left, 0.5))

    def close(self) -> None:
        """Stop serving, as the chief's exit would: the listener and every connection close."""
        with self.lock:
            sockets = list(self.open_sockets) + ([self.listener] if self.listener is not None else [])
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes the threads blocked in accept() and recv()
            except OSError:
                pass
            sock.close()


def _is_ip(host: str) -> bool:
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
            return True
        except OSError:
            pass
    return False


# ---- every other task's side ---------------------------------------------------------------

class ChiefLink:
    """A task's connection to the chief: register, wait for DONE, reconnect when the chief restarts."""

    def __init__(self, address: str, job: str, name: str, absence_limit: float,
                 notice: Callable[[str], None] = None, on_abort: Callable[[Aborted], None] = None,
                 finished: Callable[[], bool] = None):
        """`on_abort`: what a link running in the background does when the chief says ABORT.
        `finished()`: asked now and then while the chief is away; True counts as DONE (the chief
        finished before this task's pod started, and left word in the model directory)."""
        self.address = address
        self.host, self.port = split_address(address)
        self.job = job
        self.name = name
        self.absence_limit = absence_limit
        self.notice = notice or (lambda message: None)
        self.on_abort = on_abort
        self.finished_elsewhere = finished or (lambda: False)
        self.done = threading.Event()  # set when DONE arrived
        self.failed: Exception | None = None  # Refused, ChiefGone or Aborted, when the link gave up
        self.finished = threading.Event()  # set by the task: tell the chief FINISHED
        self.told_finished = threading.Event()  # set once the chief was told
        self.stopped = threading.Event()  # set when run() returned, for whatever reason

    def run(self) -> None:
        """Blocks until DONE (returns) or until the link ends otherwise (raises Refused, ChiefGone or Aborted)."""
        try:
            self._run()
        except (Refused, ChiefGone, Aborted) as err:
            self.failed = err
            raise
        finally:
            self.stopped.set()

    def start_in_background(self) -> None:
        def body():
            try:
                self.run()
            except Aborted as err:
                if self.on_abort:
                    self.on_abort(err)
            except (Refused, ChiefGone):
                pass  # recorded in self.failed
        threading.Thread(target=body, name="chief-link", daemon=True).start()

    def _run(self) -> None:
        last_contact = last_look = time.monotonic()
        reported = False
        while True:
            try:
                if self._session():
                    return
                last_contact = time.monotonic()  # the session ended after contact: the chief restarts
                reported = False
            except OSError as err:
                if not reported:
                    self.notice(f"chief at {self.address} not reachable ({err.strerror or err}); "
                                f"retrying for up to {self.absence_limit:.0f} s")
                    reported = True
            absent = time.monotonic() - last_contact
            if time.monotonic() - last_look >= FINISHED_LOOK_INTERVAL:
                last_look = time.monotonic()
                if self.finished_elsewhere():
                    self.notice("the chief is gone and training had finished: nothing left to do")
                    self.done.set()
                    return
            if absent > self.absence_limit:
                raise ChiefGone(f"the chief at {self.address} has been unreachable for {absent:.0f} s "
                                f"(limit {self.absence_limit:.0f} s); giving up")
            time.sleep(RETRY_INTERVAL)

    def _session(self) -> bool:
        """One connection. True when DONE arrived; False when the connection was lost after contact."""
        sock = socket.create_connection((self.host, self.port), timeout=5)
        link = _Lines(sock)
        try:
            link.write(f"HELLO {VERSION} {self.job} {self.name}")
            while True:
                # The chief writes at least every HEARTBEAT s, so FINISHED goes out within that time.
                if self.finished.is_set() and not self.told_finished.is_set():
                    link.write("FINISHED")
                    self.told_finished.set()
                message = link.read(SILENCE_LIMIT)
                if message is None:
                    return False  # silent for too long: the chief's pod is gone
                word, _, rest = message.partition(" ")
                if word == "REFUSE":
                    raise Refused(f"the chief at {self.address} refused {self.name}: {rest}")
                if word in ("DONE", "ABORT") and rest.partition(" ")[0] == self.job:
                    try:
                        link.write("BYE")
                    except EOFError:
                        pass
                    if word == "ABORT":
                        raise Aborted(rest.partition(" ")[2] or "the chief stopped the training")
                    self.done.set()
                    return True
        except EOFError:
            return False
        finally:
            sock.close()


def tell_chief_failed(address: str, job: str, name: str, code: int, reason: str, timeout: float = 5.0) -> bool:
    """Say FAILED on a short connection of its own; True when the chief answered ABORT (it stops the others)."""
    host, port = split_address(address)
    deadline = time.monotonic() + timeout
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError:
        return False
    link = _Lines(sock)
    try:
        link.write(f"HELLO {VERSION} {job} {name}")
        while (left := deadline - time.monotonic()) > 0:
            message = link.read(left)
            if message is None:
                return False
            word = message.partition(" ")[0]
            if word == "WELCOME":
                link.write(f"FAILED {code} {' '.join(reason.split())[:_MAX_LINE // 2]}")
            elif word == "ABORT":
                link.write("BYE")
                return True
            elif word in ("DONE", "REFUSE"):
                return False
        return False
    except EOFError:
        return False
    finally:
        sock.close()
