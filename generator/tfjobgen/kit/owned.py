"""Ports and processes tfjobgen takes on this machine, finding what it left behind, and SIGTERM made a
way out that runs every cleanup.

run-local's tasks and a local cluster's components are started with a marker variable in their
environment (its value names the run or the cluster); a sweep of /proc finds every process that
carries it, even one that escaped its process group or outlived the command that started it.
"""

from __future__ import annotations

import os
import signal
import socket


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the main thread is, as Ctrl-C is: every finally and cleanup on the way out runs."""


def unwind_on_sigterm() -> None:
    """From now on SIGTERM raises Terminated, unless this process was told to ignore it (that is kept)."""
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _raise_terminated)


def _raise_terminated(signum, frame) -> None:
    raise Terminated


def free_ports(count: int) -> list[int]:
    """`count` distinct ports on 127.0.0.1 that were free a moment ago (callers retry on a clash)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))  # holding them all open at once keeps the kernel from repeating one
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def environments(variable: str, value: str) -> dict[int, dict[str, str]]:
    """The environment of every live process whose environment has variable=value, by PID
    (zombies have none and are left out)."""
    needle = f"{variable}={value}".encode()
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as environ:
                variables = environ.read().split(b"\0")
        except OSError:
            continue  # gone, or someone else's
        if needle in variables:
            found[int(entry)] = dict(v.decode(errors="replace").partition("=")[::2] for v in variables if v)
    return found


def marked(variable: str, value: str) -> list[int]:
    """PIDs of live processes whose environment has variable=value."""
    return sorted(environments(variable, value))


def kill(pids: list[int], sig: int = signal.SIGKILL) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
