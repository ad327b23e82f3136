"""Starting a cluster's components so that they outlive `cluster up`, and stopping every one.

Each component runs in a session of its own with no hold on the caller's terminal: its standard
input is /dev/null and its output goes to a log file, so `kc=$(tfjobgen cluster up ...)` returns.
Each carries TFJOBGEN_CLUSTER=<the cluster's folder> in its environment: `cluster down` (or a
failed `up`) finds them all by that mark, whoever their parent is now, and no other process.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..kit import owned

MARKER = "TFJOBGEN_CLUSTER"


class StartFailed(Exception):
    """A component did not come up; the message ends with the last lines of its log."""


@dataclass(frozen=True)
class Component:
    name: str  # also its log's name: logs/<name>.log
    argv: list[str]
    env: dict[str, str] | None = None  # added to a clean environment
    cgroup: str = ""  # a cgroup path made in every v1 hierarchy beforehand (a real node's), joined before exec


@dataclass
class Started:
    component: Component
    popen: subprocess.Popen
    log: Path

    def exited(self) -> int | None:
        return self.popen.poll()

    def failure(self) -> str:
        """Why it stopped, in one line from its log (a Go program's panic, not its stack), and where the log is."""
        return f"{why_stopped(self.log)} (its log: {self.log})"


# Where a Go program's stack begins: what comes before it says why it stopped.
_STACK = re.compile(r"^(goroutine \d+ \[|runtime stack:|\[signal |SIGSEGV|SIGABRT|\t)")
_SAYS_WHY = re.compile(r"(fatal error|panic|error|failed|cannot|unable|invalid|refused|denied|^[FE]\d{4} )", re.I)


def why_stopped(log: Path, limit: int = 300) -> str:
    """The line of a component's log that says why it stopped: the last one before a Go stack that reads like an
    error (a panic's message, `fatal error: runtime: cannot allocate memory`, a klog F/E line), else its last line."""
    try:
        with open(log, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - (1 << 20)))  # the end of a big log is enough
            lines = handle.read().decode(errors="replace").splitlines()
    except OSError:
        return "its log cannot be read"
    before_stack = []
    for line in lines:
        if _STACK.match(line) and before_stack:
            break
        if line.strip():
            before_stack.append(line.strip())
    said = [line for line in before_stack if _SAYS_WHY.search(line)]
    chosen = (said or before_stack or ["its log is empty"])[-1]
    if chosen.startswith("panic: ") and len(said) > 1:  # zap's panic repeats the message: the line before has the error
        chosen = f"{chosen}: {_error_of(said[-2])}" if _error_of(said[-2]) else chosen
    return chosen if len(chosen) <= limit else chosen[:limit - 3] + "..."


def _error_of(line: str) -> str:
    """The `error` field of a JSON (zap) log line, '' when it has none."""
    import json

    try:
        entry = json.loads(line)
    except ValueError:
        return ""
    return str(entry.get("error", "")) if isinstance(entry, dict) else ""


def start(component: Component, home: Path) -> Started:
    log = home / "logs" / f"{component.name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    env = {key: os.environ[key] for key in ("PATH", "HOME", "LANG", "TZ") if key in os.environ}
    env.update(component.env or {})
    env[MARKER] = str(home)
    with open(log, "ab") as output:
        popen = subprocess.Popen(component.argv, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                                 env=env, cwd=home, start_new_session=True, close_fds=True,
                                 preexec_fn=_joining(component.cgroup) if component.cgroup else None)
    return Started(component, popen, log)


def _joining(cgroup: str):
    """What the child runs before exec: move itself into `cgroup` of every v1 hierarchy that has it."""
    files = [str(p) for p in Path("/sys/fs/cgroup").glob(f"*/{cgroup.strip('/')}/cgroup.procs")]

    def join() -> None:
        for path in files:
            with open(path, "w") as procs:
                procs.write("0")

    return join


def wait_for(started: Started, ready: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll `ready` until it holds; StartFailed when the process exits or the time is up."""
    deadline = time.monotonic() + timeout
    while True:
        code = started.exited()
        if code is not None:
            raise StartFailed(f"{started.component.name} exited with code {code} before {what}: "
                              f"{started.failure()}")
        try:
            if ready():
                return
        except Exception:  # not listening yet, refused, TLS not ready: all mean "not yet"
            pass
        if time.monotonic() > deadline:
            raise StartFailed(f"{started.component.name}: no {what} after {timeout:.0f} s; last said: "
                              f"{started.failure()}")
        time.sleep(0.1)


def running(home: Path) -> list[int]:
    """PIDs of live processes of the cluster whose folder is `home`."""
    return owned.marked(MARKER, str(home))


# The store and its server hold nothing worth a graceful end (the folder and its data are removed
# next), and the API server's own drains its watches for many seconds: they get SIGKILL at once,
# after everything that talks to them has been asked to stop.
_NO_GRACE = ("etcd", "kube-apiserver")


def stop_all(home: Path, started: list[Started] = (), grace: float = 5.0) -> list[int]:
    """Stop every process of the cluster: SIGTERM to the clients, then SIGKILL to what is left.

    `started`: the components this process started itself (a failed `up`), reaped here so that no
    zombie is left; from another process (`down`), init reaps them. The PIDs found.
    """
    found = running(home)
    clients = [pid for pid in found if _command_name(pid) not in _NO_GRACE]
    owned.kill(clients, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and set(clients) & set(_still_running(home, started)):
        time.sleep(0.05)
    owned.kill(running(home), signal.SIGKILL)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _still_running(home, started):
        time.sleep(0.05)
    return found


def _command_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _still_running(home: Path, started: list[Started]) -> list[int]:
    for process in started:
        process.popen.poll()  # reaps it once it has exited
    return running(home)
