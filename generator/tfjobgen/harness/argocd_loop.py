"""The GitOps loop's parts, shared by the live GitOps tests (tests/cluster/test_gitops_live.py) and
`make demo-gitops` (demos/gitops_loop.py): a git repository of tfjobgen's layout that they commit to (Repo),
Argo CD beside a local cluster and what it says of each commit (ArgoCD, Seen), and readers of what a job
became on the cluster.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, TypeVar

from . import sample

SEED_PROFILE = sample.OVERLAYS / "seed-80c" / "cluster-profile.yaml"
# Enough 80-core nodes for every job of seed-80c (6,644 CPUs requested) to be placed: no pending
# parameter server preempts the jobs a test watches.
NODES = 100
GIT_IDENTITY = {"GIT_AUTHOR_NAME": "tfjobgen", "GIT_AUTHOR_EMAIL": "gitops@example.com",
                "GIT_COMMITTER_NAME": "tfjobgen", "GIT_COMMITTER_EMAIL": "gitops@example.com",
                "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
T = TypeVar("T")


# ---- the git repository Argo CD reads ------------------------------------------------------------

class Repo:
    """A git repository of tfjobgen's layout that tests and the demo commit to."""

    def __init__(self, path: Path):
        self.path = path

    @classmethod
    def clone(cls, checkout: Path, path: Path) -> "Repo":
        """A clone of `checkout`'s branch, with the working tree's uncommitted changes as one more commit."""
        subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(checkout), str(path)], check=True,
                       capture_output=True, env={**os.environ, **GIT_IDENTITY}, timeout=120)
        repo = cls(path)
        listed = subprocess.run(["git", "-C", str(checkout), "ls-files", "-z", "--modified", "--deleted", "--others",
                                 "--exclude-standard"], capture_output=True, check=True, timeout=60).stdout
        for name in sorted({n for n in listed.decode().split("\0") if n}):
            origin, copy = checkout / name, path / name
            if origin.is_file():
                copy.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(origin, copy)
            elif copy.is_file():
                copy.unlink()
        if repo.git("status", "--porcelain"):
            repo.commit("The working tree's uncommitted changes")
        return repo

    def git(self, *args: str) -> str:
        proc = subprocess.run(["git", "-C", str(self.path), *args], capture_output=True, text=True,
                              env={**os.environ, **GIT_IDENTITY}, timeout=60)
        if proc.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)}: {proc.stderr.strip()}")
        return proc.stdout.strip()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")

    def commit(self, message: str) -> str:
        self.git("add", "-A")
        self.git("commit", "--quiet", "-m", message)
        return self.head()

    def job_path(self, name: str) -> Path:
        return self.path / "jobs" / f"{name}.yaml"

    def write_job(self, name: str, text: str) -> None:
        """jobs/<name>.yaml with `text`, listed in jobs/kustomization.yaml."""
        self.job_path(name).write_text(text)
        listing = self.path / "jobs" / "kustomization.yaml"
        line = f"- {name}.yaml\n"
        if line not in listing.read_text():
            listing.write_text(listing.read_text() + line)

    def remove_job(self, name: str) -> None:
        self.job_path(name).unlink()
        listing = self.path / "jobs" / "kustomization.yaml"
        listing.write_text(listing.read_text().replace(f"- {name}.yaml\n", ""))

    def keep_jobs(self, names: list[str]) -> str:
        """A commit that keeps only these job files (and rendered/ to match)."""
        for path in sorted((self.path / "jobs").glob("*.yaml")):
            if path.name != "kustomization.yaml" and path.stem not in names:
                self.remove_job(path.stem)
        self.hydrate()
        return self.commit(f"Keep the jobs {', '.join(sorted(names))}")

    def hydrate(self) -> None:
        """`tfjobgen hydrate` of the repository with its own generator (rendered mode's commits carry rendered/)."""
        proc = subprocess.run([sys.executable, "-m", "tfjobgen", "hydrate"], cwd=self.path, capture_output=True,
                              text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(self.path / "generator")})
        if proc.returncode != 0:
            raise RuntimeError(f"tfjobgen hydrate: {proc.stderr.strip()}")


def small_job(name: str, namespace: str = "ml-training", workers: int = 2, worker_cpu: str = "2",
              extra: str = "", cluster: str = "seed-80c") -> str:
    """A job of tfjobgen's own runtime with cores of its own (qos cpuset): 1 PS, `workers` workers, a chief, on
    `cluster` only (the one Argo CD syncs here; its modelDir is its own)."""
    return (f"apiVersion: tfjobgen.dev/v1alpha1\nkind: TrainingJob\nmetadata:\n  name: {name}\n"
            f"  namespace: {namespace}\nspec:\n  image: registry.example.com/ml/tfjobgen-runtime:0.1.0\n"
            f"  clusters: [{cluster}]\n"
            f"  qos: cpuset\n  roles:\n    ps: {{replicas: 1, cpu: 2, memory: 4Gi}}\n"
            f"    worker: {{replicas: {workers}, cpu: {worker_cpu}, memory: 4Gi}}\n"
            f"    chief: {{cpu: 1, memory: 2Gi}}\n  training:\n    steps: 1000\n    data: {{format: synthetic}}\n"
            f"    modelDir: gs://ml-checkpoints/{name}\n{extra}")


# ---- what Argo CD says ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Seen:
    """One state of an Application, as the application-controller wrote it."""

    at: float  # time.monotonic() when it was seen
    app: str
    sync: str  # Synced | OutOfSync | Unknown
    revision: str
    health: str
    phase: str  # of the last sync operation: Running | Succeeded | Failed | Error | ""
    operation_revision: str
    errors: tuple[str, ...]  # the Application's conditions (ComparisonError, SyncError, ...), "Type: message"
    out_of_sync: tuple[tuple[str, str, str], ...]  # (kind, namespace, name) of resources that differ from git
    operation_message: str
    synced: tuple[tuple[str, str, str, str], ...]  # the last operation: (kind, namespace, name, message)
    resources: tuple[dict, ...]
    diff: tuple[dict, ...] = ()  # Argo CD's own diff of the out-of-sync resources (redis), when caught

    @classmethod
    def of(cls, app: dict, at: float) -> "Seen":
        status = app.get("status") or {}
        operation = status.get("operationState") or {}
        result = operation.get("syncResult") or {}
        resources = tuple(status.get("resources") or [])
        return cls(
            at=at, app=app["metadata"]["name"], sync=(status.get("sync") or {}).get("status", ""),
            revision=(status.get("sync") or {}).get("revision", ""),
            health=(status.get("health") or {}).get("status", ""), phase=operation.get("phase", ""),
            operation_revision=result.get("revision") or ((operation.get("operation") or {}).get("sync") or {})
            .get("revision", ""),
            errors=tuple(f"{c['type']}: {c.get('message', '')}" for c in status.get("conditions") or []),
            out_of_sync=tuple(sorted((r["kind"], r.get("namespace", ""), r["name"]) for r in resources
                                     if r.get("status") == "OutOfSync")),
            operation_message=operation.get("message", ""),
            synced=tuple((r["kind"], r.get("namespace", ""), r["name"], r.get("message", ""))
                         for r in result.get("resources") or []),
            resources=resources)

    def settled_at(self, sha: str) -> bool:
        """Synced to `sha`, with no operation running."""
        return self.sync == "Synced" and self.revision == sha and self.phase != "Running"


class ArgoCD:
    """Watches the Applications of a local cluster's Argo CD: every state the controller writes is kept."""

    def __init__(self, kubeconfig: Path, redis_port: int, namespace: str = "argocd"):
        from tfjobgen.kube import api

        self.objects = api.Objects(api.connect(str(kubeconfig)))
        self.namespace, self.redis_port = namespace, redis_port
        self.history: list[Seen] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()

    def _watch(self) -> None:
        resource = self.objects.resource("argoproj.io/v1alpha1", "Application")
        version = None
        while not self._stop.is_set():
            try:
                if version is None:
                    listed = resource.get(namespace=self.namespace)
                    for item in listed.items:
                        self._record(item.to_dict())
                    version = listed.metadata.resourceVersion
                for event in self.objects.dynamic.watch(resource, namespace=self.namespace, resource_version=version,
                                                        timeout=5):
                    if self._stop.is_set():
                        return
                    obj = event["raw_object"]
                    if event["type"] == "ERROR":
                        version = None  # expired: list again
                        break
                    version = obj["metadata"]["resourceVersion"]
                    if event["type"] != "DELETED":
                        self._record(obj)
            except Exception:  # a watch cut short, the server busy: list again
                version = None
                time.sleep(0.2)

    def _record(self, app: dict) -> None:
        seen = Seen.of(app, time.monotonic())
        if seen.sync == "OutOfSync" and seen.out_of_sync:
            # The diff Argo CD computed for this comparison is in its cache until the next one (after the sync).
            with contextlib.suppress(OSError, ValueError):
                seen = Seen(**{**seen.__dict__, "diff": tuple(self.managed_resources(seen.app, modified_only=True))})
        with self._lock:
            self.history.append(seen)

    def latest(self, app: str) -> Seen | None:
        with self._lock:
            return next((s for s in reversed(self.history) if s.app == app), None)

    def since(self, app: str, moment: float) -> list[Seen]:
        with self._lock:
            return [s for s in self.history if s.app == app and s.at >= moment]

    def applied(self, app: str, sha: str, since: float) -> set[tuple[str, str, str, str]]:
        """(kind, namespace, name, message) of what every sync of `sha` did since `since`. (Argo CD may sync a
        commit twice: after pruning Jobs in the foreground it finds them still terminating and prunes again.)"""
        with self._lock:
            return {r for s in self.history if s.app == app and s.at >= since and s.operation_revision == sha
                    and s.phase != "Running" for r in s.synced}

    def applications(self) -> list[str]:
        with self._lock:
            return sorted({s.app for s in self.history})

    def wait(self, check: Callable[[], T | None], timeout: float, what: str,
             progress: Callable[[], None] | None = None) -> T:
        deadline = time.monotonic() + timeout
        while True:
            result = check()
            if result:
                return result
            if progress:
                progress()
            if time.monotonic() > deadline:
                states = "; ".join(_describe(self.latest(a)) for a in self.applications())
                raise TimeoutError(f"{what}: not after {timeout:.0f} s ({states})")
            time.sleep(0.1)

    def _cached(self, key: str):
        """An item of the controller's cache (redis; what argocd-server shows the UI and CLI), decoded."""
        raw = _redis(self.redis_port, "GET", key)
        if raw is None:
            return None
        return json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)

    def _cache_key(self, prefix: str) -> str | None:
        """The full key of `prefix` (the controller appends its cache format's version)."""
        keys = [k.decode() for k in _redis(self.redis_port, "KEYS", f"{prefix}|*") or []]
        return next((k for k in keys if k.count("|") == prefix.count("|") + 1), None)

    def managed_resources(self, app: str, modified_only: bool = False) -> list[dict]:
        """Argo CD's comparison of `app` as `argocd app diff` shows it: each resource's live state normalized,
        the state a sync would leave, and the fields that differ."""
        key = self._cache_key(f"app|managed-resources|{app}")
        found = []
        for diff in (self._cached(key) if key else None) or []:
            if modified_only and not diff.get("modified"):
                continue
            live = json.loads(diff.get("normalizedLiveState") or "null")
            predicted = json.loads(diff.get("predictedLiveState") or "null")
            found.append({"kind": diff.get("kind"), "namespace": diff.get("namespace", ""), "name": diff.get("name"),
                          "modified": bool(diff.get("modified")), "fields": changed_fields(live, predicted)})
        return found

    def resource_tree(self, app: str) -> list[dict]:
        """The nodes of `app`'s resource tree, each with the health Argo CD computed for it (Argo CD 3 keeps
        resource health there, not in the Application) as `argocd app get` shows it."""
        key = self._cache_key(f"app|resources-tree|{app}")
        if key is None:
            return []
        first = self._cached(key) or {}
        nodes = list(first.get("nodes") or [])
        version = key.rsplit("|", 1)[1]
        for shard in range(1, first.get("shardsCount") or 1):
            nodes += (self._cached(f"app|resources-tree|{app}|{shard}|{version}") or {}).get("nodes") or []
        return nodes

    def health_of(self, app: str, kind: str, name: str) -> tuple[str, str]:
        for node in self.resource_tree(app):
            if node.get("kind") == kind and node.get("name") == name:
                health = node.get("health") or {}
                return health.get("status", ""), health.get("message", "")
        return "", ""


def changed_fields(before, after, path: str = "") -> dict[str, tuple]:
    """{dotted path: (before, after)} of every leaf that differs (a missing side is None)."""
    if isinstance(before, dict) and isinstance(after, dict):
        changed = {}
        for key in sorted(set(before) | set(after)):
            changed.update(changed_fields(before.get(key), after.get(key), f"{path}.{key}" if path else key))
        return changed
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        changed = {}
        for index, (old, new) in enumerate(zip(before, after)):
            changed.update(changed_fields(old, new, f"{path}.{index}"))
        return changed
    return {} if before == after else {path: (before, after)}


def _redis(port: int, *command: str):
    """One command to redis (RESP): a bulk string's bytes, an array's list, or None."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as connection:
        request = f"*{len(command)}\r\n" + "".join(f"${len(c.encode())}\r\n{c}\r\n" for c in command)
        connection.sendall(request.encode())
        reader = connection.makefile("rb")
        return _read_reply(reader)


def _read_reply(reader):
    line = reader.readline().rstrip(b"\r\n")
    kind, rest = line[:1], line[1:]
    if kind == b"$":
        size = int(rest)
        return None if size < 0 else reader.read(size + 2)[:-2]
    if kind == b"*":
        return [_read_reply(reader) for _ in range(max(int(rest), 0))]
    if kind == b"-":
        raise ValueError(rest.decode())
    return rest


def sync_state(seen: Seen | None) -> str:
    if seen is None:
        return "no Application yet"
    text = f"{seen.sync or '-'} {seen.health or '-'} @{seen.revision[:7] or '-'}"
    if seen.phase:
        text += f", last sync {seen.phase}"
    if seen.errors:
        text += f", {seen.errors[0][:160]}"
    return text


def _describe(seen: Seen | None) -> str:
    return f"{seen.app}: {sync_state(seen)}" if seen else sync_state(seen)


# ---- what happened to one commit -----------------------------------------------------------------

def did(applied: set[tuple[str, str, str, str]]) -> str:
    """What syncs did, counted by what Argo CD said of each resource ('created', 'configured', ...)."""
    verbs: dict[str, int] = {}
    for _kind, _namespace, _name, message in applied:
        verb = message.rsplit(" ", 1)[-1] if message else "synced"
        verbs[verb] = verbs.get(verb, 0) + 1
    return ", ".join(f"{count} {verb}" for verb, count in sorted(verbs.items())) or "nothing to do"


def located(errors: tuple[str, ...], path: str) -> str:
    """tfjobgen's `path:line: field: message` out of Argo CD's condition (which quotes the plugin's stderr)."""
    for error in errors:
        if f"{path}:" in error:
            text = error[error.index(f"{path}:"):]
            return text.split("\\n", 1)[0].split("\n", 1)[0]
    return ""


@dataclass
class Step:
    commit: str
    message: str
    did: str = ""
    took: list[str] = field(default_factory=list)


def job_pods(objects, job: str) -> list[dict]:
    return objects.list("v1", "Pod", label_selector=f"tfjobgen.dev/job={job}")


TRACKING = "argocd.argoproj.io/tracking-id"


def job_objects(objects, job: str, namespace: str, tracked_only: bool = False) -> dict[tuple[str, str], str]:
    """{(kind, name): uid} of the objects of `job` (its label), pods aside; with `tracked_only`, only those an
    Application tracks (not the Jobs a JobSet made)."""
    found = {}
    for api_version, kind in (("v1", "ConfigMap"), ("v1", "Service"), ("batch/v1", "Job"),
                              ("networking.k8s.io/v1", "NetworkPolicy"), ("apps/v1", "Deployment"),
                              ("jobset.x-k8s.io/v1alpha2", "JobSet")):
        for obj in objects.list(api_version, kind, namespace, label_selector=f"tfjobgen.dev/job={job}"):
            if not tracked_only or TRACKING in (obj["metadata"].get("annotations") or {}):
                found[(kind, obj["metadata"]["name"])] = obj["metadata"]["uid"]
    return found
