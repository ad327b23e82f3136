"""`tfjobgen status` against servers that are not what a kubeconfig promised, and kubeconfigs that name what is not
there: one line each, exit 1, never a traceback, never a hang, never the Kubernetes client's own log line.

Each server is a real one on 127.0.0.1 at a free port, started by the test and gone at its end: one that sends a
byte a second (a request's timeout bounds each wait, not the answer: only the read's deadline ends it), one that
answers 200 with a web page.
"""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
from pathlib import Path

import pytest
from conftest import run_tfjobgen

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
PAGE = b"<html><body>Sign in</body></html>"


class Server:
    """A server on 127.0.0.1 that answers every request as `answer` says, each connection in a thread."""

    def __init__(self, answer):
        self.answer = answer
        self.stopped = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                connection, _ = self.listener.accept()
            except OSError:  # closed by stop()
                return
            self.connections.append(connection)
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        try:
            connection.recv(65536)
            self.answer(connection, self.stopped)
        except OSError:  # the client gave up: what a deadline is for
            pass
        finally:
            connection.close()

    def stop(self) -> None:
        self.stopped.set()
        # shutdown wakes the thread blocked in accept(): close alone would leave the port listening until it returns
        self.listener.shutdown(socket.SHUT_RDWR)
        self.thread.join(5)
        self.listener.close()
        for connection in self.connections:
            connection.close()


def trickle(connection: socket.socket, stopped: threading.Event) -> None:
    """A valid start of an answer, one byte a second, for ever (until the test ends)."""
    for byte in HEAD + b" " * 100000:
        if stopped.wait(1):
            return
        connection.sendall(bytes([byte]))


def web_page(connection: socket.socket, stopped: threading.Event) -> None:
    connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(PAGE) + PAGE)


@pytest.fixture
def serve():
    started: list[Server] = []

    def start(answer) -> Server:
        started.append(Server(answer))
        return started[-1]

    yield start
    for server in started:
        server.stop()
    for server in started:  # the port is free again: nothing of the server is left
        with socket.create_server(("127.0.0.1", server.port)):
            pass


def kubeconfig(path: Path, cluster: dict, user: dict) -> Path:
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": cluster}], "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    return path


def one_line(proc) -> str:
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    assert "ERROR:root" not in proc.stderr and "Warning" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert proc.stdout == ""
    return lines[0]


def status(config: Path, *extra: str):
    return run_tfjobgen("status", "wide-deep", "-n", "ml", "--kubeconfig", str(config), *extra)


def test_a_server_that_sends_a_byte_a_second_is_given_up_on_at_the_deadline(serve, tmp_path):
    server = serve(trickle)
    config = kubeconfig(tmp_path / "kc", {"server": f"http://127.0.0.1:{server.port}"}, {"token": "t"})
    begun = time.monotonic()
    proc = status(config, "--timeout", "3")
    took = time.monotonic() - begun
    assert one_line(proc) == (f"tfjobgen status: the cluster at http://127.0.0.1:{server.port} did not answer in "
                              "3 s (--timeout SECONDS gives it longer)")
    assert took < 15, f"{took:.1f} s"
    listing = run_tfjobgen("status", "-n", "ml", "--kubeconfig", str(config), "--timeout", "2")
    assert "did not answer in 2 s" in one_line(listing)


def test_a_200_answer_that_is_not_json_says_the_server_is_no_api_server(serve, tmp_path):
    server = serve(web_page)
    config = kubeconfig(tmp_path / "kc", {"server": f"http://127.0.0.1:{server.port}"}, {"token": "t"})
    line = one_line(status(config))
    assert line.startswith(f"tfjobgen status: the server at http://127.0.0.1:{server.port} answered /apis/")
    assert line.endswith("with something that is not JSON (it begins '<html><body>Sign in</body></html>'): is it a "
                         "Kubernetes API server? (the kubeconfig's cluster.server names it)")


@pytest.mark.parametrize("server, why", [
    ("https://[::1", "is not a URL (Invalid IPv6 URL)"),
    ("http://127.0.0.1:notaport", "is not a URL (Port could not be cast to integer value as 'notaport')"),
    ("127.0.0.1:6443", "is not an http(s) URL"),
    ("ftp://127.0.0.1", "is not an http(s) URL"),
    ("https://exa mple.com", "names no host and port one can connect to"),
])
def test_a_malformed_server_url_is_named(tmp_path, server, why):
    config = kubeconfig(tmp_path / "kc", {"server": server}, {"token": "t"})
    assert one_line(status(config)) == (f"tfjobgen status: the kubeconfig's cluster.server {server!r} {why}: "
                                        "expected https://HOST:PORT, such as https://127.0.0.1:6443")


def test_what_the_kubeconfig_names_is_said_as_the_kubeconfigs_problem(serve, tmp_path):
    server = f"http://127.0.0.1:{serve(web_page).port}"
    tls = f"https://127.0.0.1:{serve(web_page).port}"
    config = tmp_path / "kc"
    (tmp_path / "not-a-certificate").write_text("hello\n")
    cases = {
        "token file missing": ({"server": server}, {"tokenFile": str(tmp_path / "no-token")},
                               f"{config}: user 'u': tokenFile {tmp_path / 'no-token'}: cannot read: no such file"),
        "token file a folder": ({"server": server}, {"tokenFile": str(tmp_path)},
                                f"{config}: user 'u': tokenFile {tmp_path} is a folder: name the file"),
        "CA file missing": ({"server": tls, "certificate-authority": "no-ca.crt"}, {"token": "t"},
                            f"{config}: cluster 'c': certificate-authority {tmp_path / 'no-ca.crt'}: cannot read"),
        "CA file not a certificate": (
            {"server": tls, "certificate-authority": str(tmp_path / "not-a-certificate")}, {"token": "t"},
            f"{config}: cluster 'c': certificate-authority {tmp_path / 'not-a-certificate'} holds no PEM certificate"),
        "CA data not a certificate": (
            {"server": tls, "certificate-authority-data": base64.b64encode(b"hello").decode()}, {"token": "t"},
            f"{config}: cluster 'c': certificate-authority-data holds no PEM certificate"),
        "exec plugin not installed": (
            {"server": server}, {"exec": {"apiVersion": "client.authentication.k8s.io/v1",
                                          "command": "no-such-credentials-plugin", "interactiveMode": "Never"}},
            f"{config}: user 'u': exec.command 'no-such-credentials-plugin' is not an installed program"),
        "exec plugin failing": (
            {"server": server}, {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "false",
                                          "interactiveMode": "Never"}},
            "the kubeconfig's credentials plugin (user.exec) failed: exec: process returned 1"),
        "exec plugin printing no credentials": (
            {"server": server}, {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "echo",
                                          "args": ["hello"], "interactiveMode": "Never"}},
            "the kubeconfig's credentials plugin (user.exec) failed: exec: failed to decode process output"),
    }
    for case, (cluster, user, said) in cases.items():
        line = one_line(status(kubeconfig(config, cluster, user)))
        assert line.startswith(f"tfjobgen status: {said}"), (case, line)
