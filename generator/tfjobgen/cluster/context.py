"""One cluster as its steps see it: what `cluster up`'s steps use and what they record, in one place.

control.py makes one Context per `up` and hands it to every step in turn, the plane's, the real nodes'
(nodes/), the controllers' (controllers/) and Argo CD's: each starts its processes with launch() and takes
its ports with ports(), so that a failed `up` stops every process it started and state.json names every
port. `down`, and `up` clearing a dead cluster's debris, make one of the folder alone: the processes
there are found by their mark (processes.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..inputs.profile import ClusterProfile
from ..kit import owned
from ..kube import api
from . import processes
from .home import ClusterFiles
from .plane import pki
from .plane.release import Release


def _silent(line: str) -> None:
    pass


@dataclass
class Context:
    """What a step of `up` may use, and what it records."""

    files: ClusterFiles
    profile: ClusterProfile | None = None  # None when only stopping a cluster
    release: Release | None = None  # the control plane's (plane/release.py)
    say: Callable[[str], None] = _silent
    warn: Callable[[str], None] = _silent
    # Made by the plane's steps, for the steps after them:
    ca: pki.Pair | None = None
    api_port: int = 0
    objects: api.Objects | None = None
    # What the steps record:
    started: list[processes.Started] = field(default_factory=list)  # every process, in the order started
    ports_taken: dict[str, int] = field(default_factory=dict)  # by purpose, as state.json names them
    running: list[str] = field(default_factory=list)  # the controllers started (their NAMEs), in order
    missing: dict[str, str] = field(default_factory=dict)  # controller -> why it does not run
    argocd: dict = field(default_factory=dict)  # Argo CD's settings, when it runs
    asked: tuple[str, ...] = ()  # the flags of `up` that start a part (a controller's ASKED): "--monitoring"
    part: str = ""  # the part being started (a controller's NAME, "argocd"): its ports are named after it

    @property
    def kubernetes(self) -> str:
        """The control plane's release (v1.30.14): a controller may need another of its own."""
        return self.release.version if self.release else ""

    def launch(self, component: processes.Component) -> processes.Started:
        process = processes.start(component, self.files.home)
        self.started.append(process)
        return process

    def ports(self, *purposes: str) -> list[int]:
        """Free ports on 127.0.0.1, one per purpose (recorded in the cluster's state, after the part's name)."""
        found = owned.free_ports(len(purposes))
        self.ports_taken.update((f"{self.part} {p}" if self.part else p, port) for p, port in zip(purposes, found))
        return found

    def serving_certificate(self, name: str) -> Path:
        """A folder with tls.crt and tls.key (and ca.crt) for a server on 127.0.0.1: controller-runtime's layout."""
        folder = self.files.home / "certs" / name
        pki.issue(self.ca, folder, "tls", name, server=True)
        (folder / "ca.crt").write_bytes(self.ca.cert.read_bytes())
        return folder

    def write_config(self, file_name: str, configuration: dict) -> Path:
        """A configuration file in the cluster's config folder, as JSON (YAML readers take it too)."""
        path = self.files.config / file_name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(configuration, indent=1) + "\n")
        return path

    def register_webhooks(self, configurations: list[dict], port: int, owner: str) -> None:
        """Webhook configurations of a controller's manifests, pointed at https://127.0.0.1:port."""
        bundle = __import__("base64").b64encode(self.ca.cert.read_bytes()).decode()
        for configuration in configurations:
            configuration = dict(configuration, metadata={"name": f"{owner}-{configuration['metadata']['name']}"})
            for webhook in configuration.get("webhooks", []):
                path = webhook["clientConfig"].get("service", {}).get("path", "/")
                webhook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": bundle}
            self.objects.apply(configuration, manager="tfjobgen-cluster")
