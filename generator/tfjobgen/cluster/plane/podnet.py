"""The local cluster's pod network: where the API server's connections to pods go.

KWOK's pods have addresses (10.244.0.0/16) and no process behind them, and the API server will not
proxy to a loopback address (pods/proxy wants a global unicast pod IP: "address not allowed"). So the
API server sends its traffic to the cluster (egress selection "cluster": pods/proxy, services/proxy,
kubelets) through this HTTP CONNECT proxy, on a Unix socket in the cluster's folder, which connects

- a pod annotated cluster.tfjobgen.dev/local-port=N to 127.0.0.1:N: a process run on this machine
  stands for the pod's container, on every port of it (`tfjobgen status` reads a real tfjobgen
  metrics server through the API server this way);
- no other pod (502 at once: a KWOK pod runs no process, so nothing listens);
- a pod of a real node (an address in --direct) directly: a container listens there;
- any address that is no pod's as the API server would have, directly.

    python -m tfjobgen.cluster.plane.podnet --socket PATH --server URL --ca FILE --cert FILE --key FILE [--direct CIDR]

Started by `cluster up` (control.py) before the API server; stdlib only.
"""

from __future__ import annotations

import argparse
import http.client
import ipaddress
import json
import socket
import socketserver
import ssl
import threading
from urllib.parse import quote

LOCAL_PORT_ANNOTATION = "cluster.tfjobgen.dev/local-port"
DIAL_TIMEOUT = 5.0


class _Cluster:
    """Reads pods from the API server with the admin's client certificate."""

    def __init__(self, server: str, ca: str, cert: str, key: str):
        self.host, _, port = server.removeprefix("https://").partition(":")
        self.port = int(port or 443)
        self.context = ssl.create_default_context(cafile=ca)
        self.context.load_cert_chain(cert, key)

    def pods_at(self, ip: str) -> list[dict]:
        connection = http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=DIAL_TIMEOUT)
        try:
            connection.request("GET", f"/api/v1/pods?fieldSelector={quote(f'status.podIP={ip}')}")
            response = connection.getresponse()
            body = response.read()
        finally:
            connection.close()
        if response.status != 200:
            raise OSError(f"listing the pods at {ip}: HTTP {response.status}")
        return json.loads(body).get("items") or []


def local_port(pods: list[dict]) -> int | None:
    """The local port that stands for the pod at an address (its live pod first), None when it has none."""
    ordered = sorted(pods, key=lambda p: (p.get("status") or {}).get("phase") in ("Succeeded", "Failed"))
    for pod in ordered:
        value = ((pod.get("metadata") or {}).get("annotations") or {}).get(LOCAL_PORT_ANNOTATION)
        if value and value.isdigit() and 0 < int(value) < 65536:
            return int(value)
    return None


class _Tunnel(socketserver.StreamRequestHandler):
    cluster: _Cluster
    direct: tuple = ()  # networks whose addresses are dialled as they are (real nodes' pods)

    def handle(self) -> None:
        request = self.rfile.readline(4096).decode("latin-1").split()
        while self.rfile.readline(4096) not in (b"\r\n", b"\n", b""):
            pass  # the request's headers: nothing in them matters here
        if len(request) != 3 or request[0] != "CONNECT":
            return self._answer(405, "only CONNECT")
        host, _, port = request[1].rpartition(":")
        host = host.strip("[]")
        try:
            address = ipaddress.ip_address(host)
            pods = [] if any(address in network for network in self.direct) else self.cluster.pods_at(host)
        except ValueError:
            pods = []  # a name, not an address: no pod's
        except OSError as err:
            return self._answer(502, str(err))
        target = (host, int(port))
        if pods:
            local = local_port(pods)
            if local is None:
                return self._answer(502, f"no process listens in this KWOK pod (annotate it {LOCAL_PORT_ANNOTATION}=N "
                                         "to serve it from 127.0.0.1:N)")
            target = ("127.0.0.1", local)
        try:
            upstream = socket.create_connection(target, timeout=DIAL_TIMEOUT)
        except OSError as err:
            return self._answer(502, f"{target[0]}:{target[1]}: {err}")
        upstream.settimeout(None)
        self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        self.wfile.flush()
        _splice(self.connection, upstream)

    def _answer(self, code: int, why: str) -> None:
        text = why.replace("\r", " ").replace("\n", " ")
        self.wfile.write(f"HTTP/1.1 {code} {text}\r\nContent-Length: 0\r\n\r\n".encode("latin-1", "replace"))


def _splice(client: socket.socket, upstream: socket.socket) -> None:
    """Copy both ways until both sides are done."""
    def pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        try:
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
    back.start()
    pump(client, upstream)
    back.join()
    upstream.close()


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tfjobgen.cluster.plane.podnet", description=__doc__.split("\n\n")[0])
    for flag in ("--socket", "--server", "--ca", "--cert", "--key"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--direct", action="append", default=[], metavar="CIDR")
    args = parser.parse_args(argv)
    _Tunnel.cluster = _Cluster(args.server, args.ca, args.cert, args.key)
    _Tunnel.direct = tuple(ipaddress.ip_network(cidr) for cidr in args.direct)
    with _Server(args.socket, _Tunnel) as server:
        server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
