"""A local cluster's folder: everything `cluster up` writes, and nothing anywhere else.

    ~/.local/state/tfjobgen/clusters/<name>/     (TFJOBGEN_CLUSTER_HOME moves the parent)
        state.json      what runs: profile, ports, components (written last: a cluster is up once it exists)
        kubeconfig      the admin's kubeconfig (client certificate of group system:masters)
        pki/            the CA, serving and client certificates, the service-account key
        etcd/           the store
        logs/<component>.log
        config/         configuration files of the components
        certs/<name>/   each webhook server's self-signed certificate
        pod-network.sock  the API server's way to pods (podnet.py)
        argocd/         Argo CD's repository server, plugin sidecar, Redis and their temporary files
        volcano/        Volcano's log-level socket
        nodes/          real nodes: host.json (what the host had), the registry's and CoreDNS's files, and
                        <node>/ each node's containerd, kubelet, CNI files (nodes/teardown.py removes what they made)

ClusterFiles names the files in it that the components are told of. `cluster down` stops every process of
the folder (processes.py) and removes it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path

HOME_ENV = "TFJOBGEN_CLUSTER_HOME"
DEFAULT_NAME = "tfjobgen"
NAME_PATTERN = re.compile(r"^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$")


@dataclass(frozen=True)
class ClusterFiles:
    """Files of one cluster, under its folder."""

    home: Path

    @property
    def pki(self) -> Path:
        return self.home / "pki"

    @property
    def config(self) -> Path:
        return self.home / "config"

    @property
    def kubeconfig(self) -> Path:
        return self.home / "kubeconfig"

    @property
    def pod_network(self) -> Path:
        return self.home / "pod-network.sock"

    @property
    def nodes(self) -> Path:
        return self.home / "nodes"


def clusters_root() -> Path:
    configured = os.environ.get(HOME_ENV)
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "tfjobgen" / "clusters"


def folder(name: str) -> Path:
    return clusters_root() / name


@dataclass
class ClusterState:
    name: str
    profile: str  # the profile file it was shaped from ("" for the embedded default)
    profile_name: str
    api_port: int
    nodes: int
    components: list[str] = field(default_factory=list)  # what was started, in order
    missing: list[str] = field(default_factory=list)  # controllers the profile asks for that could not run
    ports: dict[str, int] = field(default_factory=dict)  # every port taken, by what took it
    argocd: dict = field(default_factory=dict)  # Argo CD's settings when it runs (controllers/argocd.py)
    real_nodes: list[str] = field(default_factory=list)  # the nodes that run containers (nodes/)
    kubernetes: str = ""  # the control plane's release, v1.34.12 (plane/release.py)

    @property
    def home(self) -> Path:
        return folder(self.name)

    @property
    def kubeconfig(self) -> Path:
        return self.home / "kubeconfig"

    def save(self) -> None:
        path = self.home / "state.json"
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(asdict(self), indent=1, sort_keys=True) + "\n")
        temporary.replace(path)


def load(name: str) -> ClusterState | None:
    """The state of a cluster that finished coming up, or None."""
    try:
        data = json.loads((folder(name) / "state.json").read_text())
    except (OSError, ValueError):
        return None
    return ClusterState(**data)


def names() -> list[str]:
    root = clusters_root()
    return sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


def remove(name: str, keep_logs: bool = False) -> None:
    """Remove the cluster's folder; with keep_logs, all of it but logs/ (a failed `up` points at them; the next
    `up` or `down` of the name removes them)."""
    if not keep_logs:
        shutil.rmtree(folder(name), ignore_errors=True)
        return
    for entry in folder(name).iterdir() if folder(name).is_dir() else ():
        if entry.name == "logs":
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def kubeconfig_text(cluster: str, server: str, ca: bytes, cert: bytes, key: bytes) -> str:
    """A kubeconfig with everything inline, so it can be copied elsewhere on the machine."""
    import base64

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": cluster,
        "clusters": [{"name": cluster, "cluster": {"server": server, "certificate-authority-data": b64(ca)}}],
        "users": [{"name": f"{cluster}-admin", "user": {"client-certificate-data": b64(cert),
                                                         "client-key-data": b64(key)}}],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": f"{cluster}-admin"}}],
    }
    return json.dumps(config, indent=1) + "\n"  # JSON is YAML: every client reads it
