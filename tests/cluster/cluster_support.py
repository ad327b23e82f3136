"""Helpers for the cluster tier: a local cluster started as a user starts it, and what tests do to it.

`local_cluster(...)` runs `tfjobgen cluster up` in its own process (its stdout captured: it must
return, holding nothing), yields a LocalCluster, and runs `tfjobgen cluster down` whatever happens;
then no process of the cluster may be left. Clusters of a test session live under one temporary
folder (TFJOBGEN_CLUSTER_HOME), so two sessions on one machine never meet.

The tier needs the programs `make cluster-tools` builds: without them each test says so and is
skipped (a failure under TFJOBGEN_REQUIRE_TOOLS=1, as in CI).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from conftest import REPO, need, tfjobgen_command, uses
from tfjobgen.cluster import api, control, home, processes, tools

SESSION_HOME = Path(tempfile.mkdtemp(prefix="tfjobgen-clusters-"))
_names = itertools.count()
FAIL_LABEL = "pod-container-running-failed.stage.kwok.x-k8s.io"
SUCCEED_LABEL = "tfjobgen.dev/succeed"
LOSE_NODE_LABEL = "node-not-ready.stage.kwok.x-k8s.io"
UP_DEADLINE = 120


@uses("cluster")
def need_cluster_tools(*programs: str) -> None:
    """Skip (fail under CI) unless the control plane's programs, and `programs`, are built."""
    lacking = tools.missing(control.CORE_PROGRAMS + list(programs))
    need("the local cluster's programs", None if lacking else "built",
         f"{', '.join(lacking)} not built: run `make cluster-tools` (binaries go to {tools.cache_root()})")


def cluster_env(extra: dict | None = None) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO / "generator"), home.HOME_ENV: str(SESSION_HOME), **(extra or {})}


@uses("cluster")
def tfjobgen(*args: str, timeout: float = UP_DEADLINE, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(tfjobgen_command() + list(args), capture_output=True, text=True, cwd=REPO,
                          env=cluster_env(env), timeout=timeout, stdin=subprocess.DEVNULL)


@dataclass
class LocalCluster:
    name: str
    kubeconfig: Path
    up_stderr: str

    @property
    def home(self) -> Path:
        return SESSION_HOME / self.name

    @property
    def objects(self) -> api.Objects:
        if not hasattr(self, "_objects"):
            self._objects = api.Objects(api.connect(str(self.kubeconfig)))
        return self._objects

    def state(self) -> dict:
        return json.loads((self.home / "state.json").read_text())

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True,
                timeout: float = 120) -> subprocess.CompletedProcess:
        proc = subprocess.run(["kubectl", f"--kubeconfig={self.kubeconfig}", *args], input=stdin,
                              capture_output=True, text=True, timeout=timeout)
        assert not check or proc.returncode == 0, f"kubectl {' '.join(args)}: {proc.stderr}"
        return proc

    def apply(self, text: str, check: bool = True) -> subprocess.CompletedProcess:
        """Server-side apply, as Argo CD applies (kubectl reads multi-document YAML from stdin)."""
        return self.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=text, check=check)

    def restricted_namespace(self, name: str) -> None:
        """A namespace whose pods must meet Pod Security "restricted" (enforced by the real admission plugin)."""
        self.objects.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": name, "labels": {"pod-security.kubernetes.io/enforce": "restricted",
                                     "pod-security.kubernetes.io/enforce-version": "latest"}}})

    def namespace(self, name: str) -> None:
        """A namespace jobs can run in: with the LocalQueue their profile names when it queues with Kueue
        (a LocalQueue belongs with its namespace; tfjobgen names it and emits none)."""
        self.objects.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        if "kueue" in self.state()["components"]:
            from tfjobgen import pipeline
            from tfjobgen.cluster.controllers import kueue

            queue = kueue.local_queue(pipeline.load_profile(self.state()["profile"] or None), name)
            self.wait(lambda: self.objects.apply(queue), f"LocalQueue {name}/{queue['metadata']['name']}")

    def pods(self, namespace: str, selector: str = "") -> list[dict]:
        return self.objects.list("v1", "Pod", namespace, label_selector=selector)

    def wait(self, check, what: str, timeout: float = 60):
        return api.wait_until(check, timeout, what)

    def fail_pod(self, namespace: str, pod: str, exit_code: int, reason: str = "Error") -> None:
        """End a running pod's container with `exit_code`, through KWOK's chaos stage."""
        self.objects.patch("v1", "Pod", pod, {"metadata": {
            "labels": {FAIL_LABEL: "true"},
            "annotations": {f"{FAIL_LABEL}/exit-code": str(exit_code), f"{FAIL_LABEL}/reason": reason,
                            f"{FAIL_LABEL}/delay": "0", f"{FAIL_LABEL}/jitter-delay": "0"}}}, namespace)

    def succeed_pod(self, namespace: str, pod: str) -> None:
        self.objects.patch("v1", "Pod", pod, {"metadata": {"labels": {SUCCEED_LABEL: "true"}}}, namespace)

    def evict_pod(self, namespace: str, pod: str) -> None:
        """The Eviction API, as `kubectl drain` uses it: the pod gets a DisruptionTarget condition."""
        body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod, "namespace": namespace}}
        self.kubectl("create", "--raw", f"/api/v1/namespaces/{namespace}/pods/{pod}/eviction", "-f", "-",
                     stdin=json.dumps(body))

    def lose_node(self, node: str) -> None:
        """The server is lost: NotReady, tainted by the node lifecycle controller, its pods evicted."""
        self.objects.patch("v1", "Node", node, {"metadata": {"labels": {LOSE_NODE_LABEL: "true"}}})


def leftovers(cluster_home: Path) -> list[int]:
    return processes.running(cluster_home)


@contextlib.contextmanager
def local_cluster(profile: str | Path | None = None, nodes: int | None = 4, *extra: str, env: dict | None = None):
    """A cluster shaped as `profile`, up for the `with` block; every process of it gone after.
    `env`: added to `cluster up`'s environment (such as another tools cache)."""
    need_cluster_tools()
    name = f"t{os.getpid()}-{next(_names)}"
    args = ["cluster", "up", "--name", name, *extra]
    if profile:
        args += ["--profile", str(profile)]
    if nodes:
        args += ["--nodes", str(nodes)]
    started = time.monotonic()
    try:
        proc = tfjobgen(*args, env=env)
        assert proc.returncode == 0, f"cluster up failed ({time.monotonic() - started:.1f}s):\n{proc.stderr}"
        kubeconfig = Path(proc.stdout.strip().splitlines()[-1])
        yield LocalCluster(name, kubeconfig, proc.stderr)
    finally:
        down = tfjobgen("cluster", "down", "--name", name)
        left = leftovers(SESSION_HOME / name)
        assert not left, f"processes of cluster {name} left after down: {left} ({down.stderr})"
