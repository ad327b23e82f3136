"""Free TCP ports on 127.0.0.1, chosen by the kernel.

A port is free when it is chosen, not necessarily when a task binds it a few
seconds later; run-local therefore retries the whole cluster with new ports
when a task reports that its port is taken.
"""

from __future__ import annotations

import socket


def free_ports(count: int) -> list[int]:
    """`count` distinct ports that were free a moment ago."""
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
