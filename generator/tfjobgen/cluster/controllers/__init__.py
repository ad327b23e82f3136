"""Controllers a local cluster runs besides the control plane, one module each.

Every module here has:

    NAME              what it is called in messages and logs
    PROGRAMS          the binaries it needs (cluster-tools/versions.yaml)
    wanted(profile)   whether a cluster of this profile runs it
    start(context)    install its CRDs, start it, register its webhooks, wait until it serves

They run out of cluster, as local processes with the admin's kubeconfig; a webhook is served on
127.0.0.1 with a certificate of the cluster's CA and registered by URL. One that cannot be built
or started is left out: `cluster up` says so on stderr and starts the rest.

    jobset              the JobSet controller and its webhooks
    training_operator   Kubeflow's training-operator (TFJob), with or without a gang scheduler
    volcano             Volcano's scheduler (PodGroups, task-topology)
    scheduler_plugins   the coscheduling scheduler and its PodGroup controller
    kueue               Kueue, admitting by quota
"""

from __future__ import annotations

import importlib
import json
import socket
import ssl
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ...inputs.profile import ClusterProfile
from ...kit import owned
from ...kube import api
from .. import processes
from ...artifacts import programs
from ..plane import pki
from ..home import ClusterFiles
from ..plane.components import API_BURST, API_QPS

# In the order they start: the gang schedulers' CRDs before the training-operator, which writes their
# PodGroups for TFJobs; Kueue last, once the kinds it admits (JobSet, TFJob) exist.
MODULES = ("jobset", "volcano", "scheduler_plugins", "training_operator", "kueue")


@dataclass
class Context:
    """What a controller's start() may use and must record."""

    files: ClusterFiles
    ca: pki.Pair
    objects: api.Objects
    profile: ClusterProfile
    say: Callable[[str], None]
    warn: Callable[[str], None]
    running: tuple[str, ...] = ()  # the controllers started before this one (their NAMEs)
    kubernetes: str = ""  # the control plane's release (v1.30.14): a controller may need another of its own
    started: list[processes.Started] = field(default_factory=list)  # by this controller
    ports_taken: dict[str, int] = field(default_factory=dict)

    def ports(self, *purposes: str) -> list[int]:
        """Free ports on 127.0.0.1, one per purpose (recorded in the cluster's state)."""
        found = owned.free_ports(len(purposes))
        self.ports_taken.update(zip(purposes, found))
        return found

    def launch(self, component: processes.Component) -> processes.Started:
        process = processes.start(component, self.files.home)
        self.started.append(process)
        return process

    def serving_certificate(self, name: str) -> Path:
        """A folder with tls.crt and tls.key (and ca.crt) for a server on 127.0.0.1: controller-runtime's layout."""
        folder = self.files.home / "certs" / name
        pki.issue(self.ca, folder, "tls", name, server=True)
        (folder / "ca.crt").write_bytes(self.ca.cert.read_bytes())
        return folder

    def write_config(self, file_name: str, configuration: dict) -> Path:
        """A controller's configuration file in the cluster's config folder, as JSON (YAML readers take it too)."""
        path = self.files.config / file_name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(configuration, indent=1) + "\n")
        return path

    def start_manager(self, name: str, program: str, config_file: Path, webhook_port: int,
                      health_port: int, release: str = "") -> processes.Started:
        """A controller-runtime manager (JobSet, Kueue) started with its Configuration file (manager_settings),
        returned once its webhook server answers and it is ready. `release`: of the program (default: versions.yaml's)."""
        process = self.launch(processes.Component(name, [
            str(programs.program(program, release)), f"--config={config_file}", f"--kubeconfig={self.files.kubeconfig}",
            "--zap-log-level=info",
        ]))
        wait_serving(process, webhook_port, self.ca)
        wait_healthy(process, health_port, "/readyz")
        return process

    def install(self, objects: list[dict]) -> None:
        install(self.objects, objects)

    def register_webhooks(self, configurations: list[dict], port: int, owner: str) -> None:
        """Webhook configurations of a controller's manifests, pointed at https://127.0.0.1:port."""
        bundle = __import__("base64").b64encode(self.ca.cert.read_bytes()).decode()
        for configuration in configurations:
            configuration = dict(configuration, metadata={"name": f"{owner}-{configuration['metadata']['name']}"})
            for webhook in configuration.get("webhooks", []):
                path = webhook["clientConfig"].get("service", {}).get("path", "/")
                webhook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": bundle}
            self.objects.apply(configuration, manager="tfjobgen-cluster")


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

    files = sorted(path.glob("*.yaml")) if path.is_dir() else [path]
    return [doc for f in files for doc in yaml.safe_load_all(f.read_text()) if doc]


def kustomized(folder: Path) -> list[dict]:
    """`kustomize build` of a folder of a controller's own manifests (its patches applied)."""
    import subprocess

    import yaml

    built = subprocess.run([str(programs.program("kustomize")), "build", str(folder)], capture_output=True, text=True,
                           check=True, timeout=60)
    return [doc for doc in yaml.safe_load_all(built.stdout) if doc]


@dataclass
class Outcome:
    started: list[str] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)  # controller -> why it does not run
    ports: dict[str, int] = field(default_factory=dict)


def start_all(files: ClusterFiles, ca: pki.Pair, objects: api.Objects, profile: ClusterProfile,
              say: Callable[[str], None], warn: Callable[[str], None], all_started: list,
              kubernetes: str = "") -> Outcome:
    """Start every controller the profile wants; leave out (and say) those that cannot run."""
    outcome = Outcome()
    for module_name in MODULES:
        module = importlib.import_module(f"{__name__}.{module_name}")
        if not module.wanted(profile):
            continue
        try:
            lacking = programs.missing(module.PROGRAMS, kubernetes)
        except programs.TooOld as err:  # versions.yaml's needs_kubernetes: no release of it runs on this cluster
            outcome.missing[module.NAME] = str(err)
            warn(f"{module.NAME} left out: {err}")
            continue
        if lacking:
            reason = f"{', '.join(lacking)} not built (make cluster-tools)"
            outcome.missing[module.NAME] = reason
            warn(f"{module.NAME} left out: {reason}")
            continue
        context = Context(files, ca, objects, profile, say, warn, tuple(outcome.started), kubernetes=kubernetes)
        begun = time.monotonic()
        try:
            module.start(context)
        except (processes.StartFailed, TimeoutError, OSError, InstallRefused, programs.ToolsMissing) as err:
            for process in context.started:
                process.popen.kill()
                process.popen.wait()
            outcome.missing[module.NAME] = f"could not start: {err}"
            warn(f"{module.NAME} left out: could not start: {err}")
            continue
        finally:
            all_started.extend(context.started)
        outcome.started.append(module.NAME)
        outcome.ports.update({f"{module.NAME} {k}": v for k, v in context.ports_taken.items()})
        say(f"{module.NAME} started in {time.monotonic() - begun:.1f}s")
    return outcome
