"""The README's job, scaled down, training in pods on a local cluster with real nodes.

    make demo-nodes        (.venv/bin/python demos/real_nodes.py [--backend native|jobset|tfjob])

It starts `tfjobgen cluster up --real-nodes 2` with the node tier's profile (two kubelets on this
machine, each with containerd, the CNI bridge and kube-router, CoreDNS and a registry beside them),
applies tests/nodes/jobs/tiny.yaml (1 PS, 2 workers, a chief; 1,500 steps) as kubectl would, shows
one live line (the tasks' phases and the chief's step) and ends with a table: each task, its node,
its steps, its exit code. The cluster is stopped and everything it made removed, Ctrl-C included.
Needs root, `make cluster-tools` and `make images` (docs/nodes.md).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

from tfjobgen.concerns import promises  # noqa: E402
from tfjobgen.harness import conformance  # noqa: E402
from tfjobgen.kit import table  # noqa: E402
from tfjobgen.kube import api  # noqa: E402

PROFILE = REPO / "tests" / "nodes" / "profiles" / "real-nodes.yaml"
JOB = REPO / "tests" / "nodes" / "jobs" / "tiny.yaml"
NAMESPACE = "ml-demo"
STEP = re.compile(r"event=(?:step|finished) .*?step=(\d+)")
COMPLETE = {"native": ("batch/v1", "Job", "Complete"), "jobset": ("jobset.x-k8s.io/v1alpha2", "JobSet", "Completed"),
            "tfjob": ("kubeflow.org/v1", "TFJob", "Succeeded")}
TIMEOUT = 300


def tfjobgen(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO / "generator")}
    return subprocess.run([sys.executable, "-m", "tfjobgen", *args], env=env, text=True, stdout=subprocess.PIPE)


def kubectl(kubeconfig: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["kubectl", f"--kubeconfig={kubeconfig}", *args], input=stdin, capture_output=True,
                          text=True)


def last_step(kubeconfig: str, pod: str) -> str:
    steps = STEP.findall(kubectl(kubeconfig, "logs", "-n", NAMESPACE, pod).stdout)
    return steps[-1] if steps else "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=sorted(COMPLETE), default="native")
    args = parser.parse_args()
    name = "demo-nodes"
    up = tfjobgen("cluster", "up", "--name", name, "--profile", str(PROFILE), "--nodes", "2", "--real-nodes", "2")
    if up.returncode:
        return up.returncode
    kubeconfig = up.stdout.strip().splitlines()[-1]
    try:
        return run(kubeconfig, args.backend)
    except KeyboardInterrupt:
        print("\ninterrupted: stopping the cluster", file=sys.stderr)
        return 130
    finally:
        tfjobgen("cluster", "down", "--name", name)


def run(kubeconfig: str, backend: str) -> int:
    objects = api.Objects(api.connect(kubeconfig))
    objects.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": NAMESPACE, "labels": {"pod-security.kubernetes.io/enforce": "restricted"}}})
    rendered = [o for o in conformance.render(JOB, PROFILE, backend, NAMESPACE)
                if not o["apiVersion"].startswith("monitoring.coreos.com")]  # no Prometheus Operator here
    applied = kubectl(kubeconfig, "apply", "-f", "-",
                      stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": rendered}))
    if applied.returncode:
        print(applied.stderr, file=sys.stderr)
        return 1
    api_version, kind, condition = COMPLETE[backend]
    started, seen = time.monotonic(), {}
    while True:
        pods = objects.list("v1", "Pod", NAMESPACE)
        seen.update({p["metadata"]["name"]: p for p in pods})
        phases = {}
        for pod in pods:
            phases[pod["status"].get("phase", "?")] = phases.get(pod["status"].get("phase", "?"), 0) + 1
        chief = next((p for p in pods if p["metadata"]["labels"].get("tfjobgen.dev/role") == "chief"
                      and p["status"].get("phase") in ("Running", "Succeeded")), None)
        step = last_step(kubeconfig, chief["metadata"]["name"]) if chief else "-"
        done = [o for o in objects.list(api_version, kind, NAMESPACE)
                if any(c["type"] == condition and c["status"] == "True" for c in (o.get("status") or {}).get("conditions") or [])]
        phase_text = ", ".join(f"{count} {phase}" for phase, count in sorted(phases.items()))
        print(f"\r[{time.monotonic() - started:5.1f}s] pods: {phase_text or 'none yet'}; chief at step {step}   ",
              end="", file=sys.stderr, flush=True)
        if done and len(done) == len(objects.list(api_version, kind, NAMESPACE)):
            break
        if time.monotonic() - started > TIMEOUT:
            print(f"\nnot {condition} after {TIMEOUT} s", file=sys.stderr)
            return 1
        time.sleep(1)
    print(file=sys.stderr)
    rows = []
    for pod in sorted(seen.values(), key=lambda p: p["metadata"]["name"]):
        current = objects.get("v1", "Pod", pod["metadata"]["name"], NAMESPACE) or pod
        state = ((current["status"].get("containerStatuses") or [{}])[0].get("state") or {}).get("terminated") or {}
        task = promises.task_of(current)
        rows.append([task.name, current["metadata"]["name"], current["spec"].get("nodeName", "-"),
                     last_step(kubeconfig, current["metadata"]["name"]) if task.role == "chief" else "-",
                     str(state.get("exitCode", "deleted" if current is pod else "-"))])
    print(table.render(["TASK", "POD", "NODE", "STEPS", "EXIT"], rows))
    print(f"{kind} {condition} after {time.monotonic() - started:.1f} s from apply ({backend})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
