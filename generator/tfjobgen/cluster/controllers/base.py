"""What every controller's start() uses beyond its context (context.py): installing its objects, waiting until
it serves, a controller-runtime manager's settings and start, and start_all, which starts the controllers
of the face's MODULES that a profile wants, in that order.
"""

from __future__ import annotations

import importlib
import json
import socket
import ssl
import time
from pathlib import Path

from ...artifacts import programs
from ...kube import api
from .. import processes
from ..context import Context
from ..plane import pki
from ..plane.components import API_BURST, API_QPS
from . import MODULES


def start_manager(context: Context, name: str, program: str, config_file: Path, webhook_port: int,
                  health_port: int, release: str = "") -> processes.Started:
    """A controller-runtime manager (JobSet, Kueue) started with its Configuration file (manager_settings),
    returned once its webhook server answers and it is ready. `release`: of the program (default: versions.yaml's)."""
    process = context.launch(processes.Component(name, [
        str(programs.program(program, release)), f"--config={config_file}", f"--kubeconfig={context.files.kubeconfig}",
        "--zap-log-level=info",
    ]))
    wait_serving(process, webhook_port, context.ca)
    wait_healthy(process, health_port, "/readyz")
    return process


def manager_settings(webhook_port: int, health_port: int, metrics_port: int, certificates: Path) -> dict:
    """What the Configuration file of a controller-runtime manager (JobSet, Kueue) says of its servers and
    its client: every server on 127.0.0.1, its webhook's certificate from `certificates`, no leader election."""
    return {
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},  # it would write a Secret and rotate certificates in-cluster
        "webhook": {"port": webhook_port, "host": "127.0.0.1", "certDir": str(certificates)},
        "metrics": {"bindAddress": f"127.0.0.1:{metrics_port}"},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "clientConnection": {"qps": API_QPS, "burst": API_BURST},
    }


class InstallRefused(Exception):
    """The API server refused one of a controller's objects: a CRD this release cannot take, say."""


def install(client: api.Objects, objects: list[dict]) -> None:
    """Create objects (CRDs first), waiting for every CRD to be Established."""
    from kubernetes.client.exceptions import ApiException

    crds = [o for o in objects if o.get("kind") == "CustomResourceDefinition"]
    for obj in crds + [o for o in objects if o not in crds]:
        try:
            client.apply(obj, manager="tfjobgen-cluster")
        except ApiException as err:
            if err.status not in (400, 422):
                raise
            try:  # the Status body's message names the field and the rule
                why = json.loads(err.body or "{}").get("message", "") or err.reason
            except ValueError:
                why = err.reason
            raise InstallRefused(f"the API server refused {obj['kind']} {obj['metadata']['name']}: "
                                 f"{why[:300]}") from None
    for crd in crds:
        name = crd["metadata"]["name"]
        api.wait_until(lambda: _established(client.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)),
                       30, f"CRD {name} Established")


def _established(crd: dict | None) -> bool:
    conditions = ((crd or {}).get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


def wait_serving(process: processes.Started, port: int, ca: pki.Pair, timeout: float = 60) -> None:
    """Until a TLS server of the cluster's CA answers on 127.0.0.1:port (a webhook can be called)."""
    context = ssl.create_default_context(cafile=str(ca.cert))

    def handshake() -> bool:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as raw:
            with context.wrap_socket(raw, server_hostname="127.0.0.1"):
                return True

    processes.wait_for(process, handshake, timeout, f"its webhook server on 127.0.0.1:{port}")


def wait_healthy(process: processes.Started, port: int, path: str = "/healthz", timeout: float = 60) -> None:
    import urllib.request

    def healthy() -> bool:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=1) as response:
            return response.status == 200

    processes.wait_for(process, healthy, timeout, f"health ({path} on 127.0.0.1:{port})")


def load_yaml_files(path: Path) -> list[dict]:
    """Every object in a YAML file, or in the *.yaml files of a folder (sorted)."""
    import yaml

    from ...kit import crd_yaml

    files = sorted(path.glob("*.yaml")) if path.is_dir() else [path]
    return [doc for f in files for doc in yaml.load_all(f.read_text(), Loader=crd_yaml.Loader) if doc]


def kustomized(folder: Path) -> list[dict]:
    """`kustomize build` of a folder of a controller's own manifests (its patches applied)."""
    import subprocess

    import yaml

    built = subprocess.run([str(programs.program("kustomize")), "build", str(folder)], capture_output=True, text=True,
                           check=True, timeout=60)
    return [doc for doc in yaml.safe_load_all(built.stdout) if doc]


def start_all(context: Context) -> None:
    """Start every controller the profile wants, recording each in context.running; leave out (and say) those
    that cannot run, recording why in context.missing."""
    for module_name in MODULES:
        module = importlib.import_module(f"{__package__}.{module_name}")
        if not module.wanted(context.profile) or getattr(module, "ASKED", "") not in ("", *context.asked):
            continue
        try:
            lacking = programs.missing(module.PROGRAMS, context.kubernetes)
        except programs.TooOld as err:  # versions.yaml's needs_kubernetes: no release of it runs on this cluster
            _leave_out(context, module.NAME, str(err))
            continue
        if lacking:
            _leave_out(context, module.NAME, f"{', '.join(lacking)} not built (make cluster-tools)")
            continue
        first, ports_before = len(context.started), dict(context.ports_taken)
        begun = time.monotonic()
        context.part = module.NAME
        try:
            module.start(context)
        except (processes.StartFailed, TimeoutError, OSError, InstallRefused, programs.ToolsMissing) as err:
            for process in context.started[first:]:
                process.popen.kill()
                process.popen.wait()
            context.ports_taken.clear()  # a controller left out holds no port
            context.ports_taken.update(ports_before)
            _leave_out(context, module.NAME, f"could not start: {err}")
            continue
        finally:
            context.part = ""
        context.running.append(module.NAME)
        context.say(f"{module.NAME} started in {time.monotonic() - begun:.1f}s")


def _leave_out(context: Context, name: str, reason: str) -> None:
    context.missing[name] = reason
    context.warn(f"{name} left out: {reason}")
