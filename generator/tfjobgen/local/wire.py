"""Bytes between the tasks of a local run, per TCP connection, from the kernel's own counters.

Every gRPC channel between two TensorFlow tasks is a TCP connection on 127.0.0.1, and the
kernel counts what each socket sent and received (tcp_info's bytes_sent and bytes_received,
which `ss -ti` prints). A Sampler polls them while a run trains:

- a socket belongs to a task when its process carries the run's id (TFJOBGEN_LOCAL_RUN) and a
  TF_CONFIG naming its task; the task at the other end is the one whose TF server port the
  socket is connected to. Only the dialling side is read, so each connection counts once;
- only connections to a TF server port count: the control channel and the metrics servers
  carry no training traffic;
- the counters only grow, so the last value seen is a connection's total; polling every
  0.1 s misses at most a connection's last 0.1 s, after its task stopped training.

What is counted is TCP payload, as gRPC writes it: HTTP/2 frames, gRPC and protobuf envelopes
and RPC requests included; IP and TCP headers not.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import threading
from collections import defaultdict

from . import processes

_SOCKET = re.compile(r"^\s*\d+\s+\d+\s+(\S+):(\d+)\s+(\S+):(\d+)\s+users:\((.*)\)\s*$")
_PID = re.compile(r"pid=(\d+)")
_COUNTER = re.compile(r"\b(bytes_sent|bytes_received):(\d+)")


class WireError(Exception):
    """The counters cannot be read here (no `ss`)."""


def task_ports(run_id: str) -> tuple[dict[int, str], dict[int, str]]:
    """(PID -> task, TF server port -> task) of the run's live processes, from their TF_CONFIG."""
    by_pid, by_port = {}, {}
    for pid, env in processes.environments(run_id).items():
        try:
            config = json.loads(env.get("TF_CONFIG", ""))
            task = f"{config['task']['type']}:{config['task']['index']}"
        except (ValueError, KeyError, TypeError):
            continue  # not a TensorFlow task (a program of your own without TF_CONFIG)
        by_pid[pid] = task
        for role, addresses in config.get("cluster", {}).items():
            for index, address in enumerate(addresses):
                by_port[int(address.rpartition(":")[2])] = f"{role}:{index}"
    return by_pid, by_port


def read_sockets(ss: str) -> list[tuple[int, int, int, int, int]]:
    """(pid, local port, peer port, bytes sent, bytes received) of every established TCP socket on loopback."""
    text = subprocess.run([ss, "-tinpH", "state", "established", "dst", "127.0.0.1"], capture_output=True,
                          text=True, timeout=10, check=True).stdout
    found, head = [], None
    for line in text.splitlines():
        match = _SOCKET.match(line)
        if match:
            head = match
            continue
        if head is None or not line[:1].isspace():
            continue
        counters = dict(_COUNTER.findall(line))
        for pid in _PID.findall(head.group(5)):
            found.append((int(pid), int(head.group(2)), int(head.group(4)), int(counters.get("bytes_sent", 0)),
                          int(counters.get("bytes_received", 0))))
        head = None
    return found


class Sampler:
    """Polls a run's connections in a thread while it runs: `with Sampler(run_id) as wire: ...`, then
    `wire.bytes()`, {(from task, to task): bytes} over every connection seen."""

    def __init__(self, run_id: str, every: float = 0.1):
        self.ss = shutil.which("ss")
        if self.ss is None:
            raise WireError("`ss` (iproute2) is needed to read the kernel's per-connection byte counters")
        self.run_id, self.every = run_id, every
        self.tasks: dict[int, str] = {}  # PID -> task, every process of the run seen
        self.ports: dict[int, str] = {}  # TF server port -> task
        self._examined: set[int] = set()  # PIDs whose environment was read
        self.connections: dict[tuple[int, int, int], tuple[str, str, int, int]] = {}  # socket -> (from, to, out, in)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="wire-sampler", daemon=True)
        self._error: BaseException | None = None

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        if self._error is not None and exc[0] is None:
            raise WireError(f"reading the connections failed: {self._error!r}")

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self.sample()
                self._stop.wait(self.every)
            self.sample()
        except Exception as err:  # noqa: BLE001 - the thread has no caller: __exit__ reports it
            self._error = err

    def sample(self) -> None:
        sockets = read_sockets(self.ss)
        if any(pid not in self._examined for pid, *_ in sockets):  # a new process: perhaps a task that started
            by_pid, by_port = task_ports(self.run_id)
            self.tasks.update(by_pid)
            self.ports.update(by_port)
            self._examined.update(pid for pid, *_ in sockets)
        for pid, local, peer, sent, received in sockets:
            task, other = self.tasks.get(pid), self.ports.get(peer)
            if task is None or other is None or self.ports.get(local) is not None:
                continue  # not the run's, not to a TF server, or the accepting side (counted at the dialler)
            key = (pid, local, peer)
            _, _, before_out, before_in = self.connections.get(key, (task, other, 0, 0))
            self.connections[key] = (task, other, max(before_out, sent), max(before_in, received))

    def bytes(self) -> dict[tuple[str, str], int]:
        """Bytes sent from each task to each other task, over every TF connection seen."""
        totals: dict[tuple[str, str], int] = defaultdict(int)
        for task, other, out, into in self.connections.values():
            totals[(task, other)] += out
            totals[(other, task)] += into
        return dict(totals)
