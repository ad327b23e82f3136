"""A local cluster's folder: everything `cluster up` writes, and nothing anywhere else.

    ~/.local/state/tfjobgen/clusters/<name>/     (TFJOBGEN_CLUSTER_HOME moves the parent)
        .made-by-tfjobgen  written by `up` the moment it makes the folder: `down` removes no folder without it
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

A cluster's name becomes a path that `down` removes recursively: folder() is the one check every command that
takes a name goes through (up, down, list, place's clusters). It takes a plain name only (NAME_PATTERN), whose
folder sits directly in the clusters' home and is no symbolic link, and refuses anything else with NameRefused.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path

HOME_ENV = "TFJOBGEN_CLUSTER_HOME"
DEFAULT_NAME = "tfjobgen"
NAME_MAX = 40
# fullmatch: `$` alone would let a trailing newline through
NAME_PATTERN = re.compile(r"[a-z0-9]([-a-z0-9]{0,%d}[a-z0-9])?" % (NAME_MAX - 2))
MARKER_FILE = ".made-by-tfjobgen"
_SHOWN = 48  # of a refused name, the characters printed: the line stays one line (a 300-character name)


class HomeUnusable(Exception):
    """One line: the clusters' home is there but is no folder."""


def checked_root() -> Path:
    root = clusters_root()
    if root.exists() and not root.is_dir():
        raise HomeUnusable(f"the clusters' home {root} is not a folder: remove it, or point {HOME_ENV} at a folder")
    return root


class NameRefused(Exception):
    """One line: a cluster name that is not a plain name of the clusters' home."""

    def __init__(self, name: str, problem: str):
        super().__init__(f"--name {shown(name)}: {problem}")
        self.name, self.problem = name, problem


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


def name_problem(name: str) -> str:
    """What is wrong with a cluster name, or ""."""
    if name == "":
        return "is empty: name a cluster (`tfjobgen cluster list` shows them)"
    if len(name) > NAME_MAX:
        return (f"is {len(name)} characters; use lowercase letters, digits and '-', at most {NAME_MAX}, "
                f"such as {DEFAULT_NAME}")
    if not NAME_PATTERN.fullmatch(name):
        return (f"use lowercase letters, digits and '-', starting and ending with a letter or digit "
                f"(at most {NAME_MAX}), such as {DEFAULT_NAME}")
    return ""


def shown(name: str) -> str:
    """A name as a refusal prints it: escaped (repr: a NUL, a newline), cut short."""
    return repr(name if len(name) <= _SHOWN else name[:_SHOWN] + "...")


def folder(name: str) -> Path:
    """The folder of the cluster `name`, inside the clusters' home; NameRefused for any other name. The one check
    of a cluster name: every path of a cluster is made from what this returns."""
    problem = name_problem(name)
    if problem:
        raise NameRefused(name, problem)
    root = checked_root()
    path = root / name
    if path.is_symlink():
        raise NameRefused(name, f"{path} is a symbolic link (to {os.readlink(path)}); a cluster's folder is one "
                                "`tfjobgen cluster up` made: remove the link yourself")
    # The name is one plain component, so only a link could lead elsewhere; the home itself may be reached
    # through links (/tmp on some systems), hence both resolved.
    if path.resolve().parent != root.resolve():
        raise NameRefused(name, f"{path} resolves outside the clusters' home {root}")
    return path


def made_by_up(path: Path) -> bool:
    """`up` made this folder: it holds the marker `up` writes first (a file, not a link to one)."""
    marker = path / MARKER_FILE
    return marker.is_file() and not marker.is_symlink()


def mark(path: Path) -> None:
    (path / MARKER_FILE).write_text("made by `tfjobgen cluster up`; `tfjobgen cluster down` removes this folder\n")


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


class StateUnreadable(Exception):
    """One line: a state.json that is there but cannot be read as this version writes it."""


def load(name: str) -> ClusterState | None:
    """The state of a cluster that finished coming up, or None (none yet). StateUnreadable when it is there but
    not as this version writes it (cut short, edited, or of another version)."""
    path = folder(name) / "state.json"
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise StateUnreadable(f"{path}: cannot read it ({getattr(err, 'strerror', None) or err})") from None
    if not isinstance(data, dict):
        raise StateUnreadable(f"{path}: holds {type(data).__name__}, not the object `up` writes")
    known = {f.name for f in fields(ClusterState)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise StateUnreadable(f"{path}: unknown field {unknown[0]!r} (written by another version of tfjobgen?)")
    lacking = sorted(f.name for f in fields(ClusterState) if f.name not in data
                     and f.default is MISSING and f.default_factory is MISSING)
    if lacking:
        raise StateUnreadable(f"{path}: no field {lacking[0]!r} (written by another version of tfjobgen?)")
    return ClusterState(**data)


def names() -> list[str]:
    """Every entry of the clusters' home that could be a cluster's folder, unchecked: folder() checks each."""
    root = checked_root()
    try:
        return sorted(p.name for p in root.iterdir() if p.is_dir() or p.is_symlink())
    except FileNotFoundError:
        return []
    except OSError as err:
        raise HomeUnusable(f"cannot list the clusters' home {root}: {err.strerror}") from None


def remove(path: Path, keep_logs: bool = False) -> None:
    """Remove a cluster's folder, checked by folder() and made by `up` (the caller says); with keep_logs, all of it
    but logs/ and the marker (a failed `up` points at the logs; the next `up` or `down` of the name removes them)."""
    if not keep_logs:
        shutil.rmtree(path, ignore_errors=True)
        return
    for entry in path.iterdir() if path.is_dir() else ():
        if entry.name in ("logs", MARKER_FILE):
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
