"""What `cluster up --monitoring` costs, and how soon its Prometheus says a PS is gone.

    .venv/bin/python benchmarks/monitoring_time.py [--kills 3]

- start: the seconds `cluster up --nodes 2 --real-nodes 2 --monitoring` spends on the monitoring stack, as
  it prints them (`prometheus-operator started in ...`: its CRDs, the operator, the Prometheus pod pulled
  from the cluster's registry and Ready; `kube-state-metrics started in ...`), and the whole `up`.
- memory: resident memory of the operator and kube-state-metrics (/proc), and the working set of the
  Prometheus pod's two containers as its kubelet's cAdvisor reports it, with one job of 4 tasks scraped
  every 5 s (tests/nodes/profiles/monitoring.yaml).
- fault -> alert: a PS of tests/nodes/jobs/watched.yaml killed with SIGKILL, seconds until TFJobGenPSDown
  is firing on Prometheus' API, and until it has cleared (the PS's new pod scraped); `--kills` times.

Needs root, `make cluster-tools` (prometheus-operator, kube-state-metrics) and `make images`. Prints a
Markdown table (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

import commands  # noqa: E402 - benchmarks/commands.py, beside this script
REPO = Path(__file__).resolve().parents[1]

from tfjobgen.cluster import home  # noqa: E402
from tfjobgen.cluster.controllers import prometheus_operator  # noqa: E402
from tfjobgen.harness import conformance  # noqa: E402
from tfjobgen.harness.pods import container_pid  # noqa: E402
from tfjobgen.kit import owned  # noqa: E402
from tfjobgen.kube import api  # noqa: E402

PROFILE = REPO / "tests" / "nodes" / "profiles" / "monitoring.yaml"
JOB = REPO / "tests" / "nodes" / "jobs" / "watched.yaml"
NAMESPACE = "bench"
STARTED = re.compile(r"(prometheus-operator|kube-state-metrics) started in ([0-9.]+)s")



def tfjobgen(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return commands.tfjobgen(*args, check=check)


def prometheus(objects: api.Objects, path: str, **query) -> dict:
    pod = objects.get("v1", "Pod", prometheus_operator.POD, "monitoring")
    url = f"http://{pod['status']['podIP']}:{prometheus_operator.PORT}/api/v1/{path}"
    with urllib.request.urlopen(url + ("?" + urllib.parse.urlencode(query) if query else ""), timeout=10) as answer:
        return json.loads(answer.read())["data"]


def until(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.25)
    raise SystemExit(f"timed out waiting for {what}")


def rss_mib(folder: Path, component: str) -> float:
    """Resident memory of the cluster's process of that component (its log's name), from /proc."""
    for status in Path("/proc").glob("[0-9]*/environ"):
        try:
            environ = status.read_bytes().split(b"\0")
            if f"TFJOBGEN_CLUSTER={folder}".encode() not in environ:
                continue
            cmdline = (status.parent / "cmdline").read_bytes().split(b"\0")[0].decode()
            if Path(cmdline).name == component:
                match = re.search(r"VmRSS:\s+(\d+) kB", (status.parent / "status").read_text())
                return int(match.group(1)) / 1024
        except OSError:
            continue
    raise SystemExit(f"no process {component} of {folder}")




def ps_down(objects: api.Objects) -> list[dict]:
    return [a for a in prometheus(objects, "alerts")["alerts"] if a["labels"]["alertname"] == "TFJobGenPSDown"]


def kill_a_ps(objects: api.Objects) -> tuple[float, float]:
    """(seconds from SIGKILL to TFJobGenPSDown firing, to its clearing)."""
    def running_ps():
        pods = [p for p in objects.list("v1", "Pod", NAMESPACE, label_selector="tfjobgen.dev/role=ps")
                if (p.get("status") or {}).get("phase") == "Running"]
        return pods if len(pods) == 2 and not ps_down(objects) else None

    ps = until(running_ps, 180, "both PS running, no alert")[0]
    until(lambda: prometheus(objects, "query", query=f'up{{pod="{ps["metadata"]["name"]}"}} == 1')["result"], 60,
          "the PS scraped")
    killed = time.monotonic()
    os.kill(container_pid(ps), signal.SIGKILL)
    until(lambda: any(a["state"] == "firing" for a in ps_down(objects)), 120, "TFJobGenPSDown firing")
    fired = time.monotonic() - killed
    until(lambda: not ps_down(objects), 300, "TFJobGenPSDown cleared")
    return fired, time.monotonic() - killed


def main() -> int:
    owned.unwind_on_sigterm()  # killed, it still stops the cluster it started
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault(home.HOME_ENV, tempfile.mkdtemp(prefix="tfjobgen-bench-"))
    name = "bench-monitoring"
    started = time.monotonic()
    up = tfjobgen("cluster", "up", "--name", name, "--profile", str(PROFILE), "--nodes", "2", "--real-nodes", "2",
                  "--monitoring")
    whole = time.monotonic() - started
    parts = dict((m.group(1), float(m.group(2))) for m in STARTED.finditer(up.stderr))
    kubeconfig = Path(up.stdout.strip().splitlines()[-1])
    try:
        objects = api.Objects(api.connect(str(kubeconfig)))
        objects.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        rendered = conformance.render(JOB, PROFILE, "native", NAMESPACE)
        subprocess.run(["kubectl", f"--kubeconfig={kubeconfig}", "apply", "--server-side", "-f", "-"], check=True,
                       input=json.dumps({"apiVersion": "v1", "kind": "List", "items": rendered}), text=True,
                       capture_output=True)
        kills = [kill_a_ps(objects) for _ in range(args.kills)]
        folder = home.folder(name)
        memory = {"prometheus-operator": rss_mib(folder, "prometheus-operator"),
                  "kube-state-metrics": rss_mib(folder, "kube-state-metrics")}
        for series in prometheus(objects, "query", query='container_memory_working_set_bytes{namespace="monitoring",'
                                                         f'pod="{prometheus_operator.POD}", container!=""}}')["result"]:
            memory[f"Prometheus pod: {series['metric']['container']}"] = float(series["value"][1]) / 2**20
        print(f"kills (fired s, cleared s): {kills}; memory MiB: {memory}", file=sys.stderr)
    finally:
        tfjobgen("cluster", "down", "--name", name, check=False)

    def row(what: str, values: list[float], unit: str) -> str:
        return (f"| {what} | {statistics.median(values):.1f} {unit} | {min(values):.1f} {unit} | "
                f"{max(values):.1f} {unit} |")

    print("| what | median | min | max |\n| --- | ---: | ---: | ---: |")
    print(row("`cluster up --nodes 2 --real-nodes 2 --monitoring`, until it returns", [whole], "s"))
    for part, seconds in parts.items():
        print(row(f"of which {part} (started and serving)", [seconds], "s"))
    for what, mib in memory.items():
        print(row(f"memory: {what}", [mib], "MiB"))
    print(row("PS SIGKILL -> TFJobGenPSDown firing (interval 5 s, for 0m)", [k[0] for k in kills], "s"))
    print(row("PS SIGKILL -> TFJobGenPSDown cleared (its new pod scraped)", [k[1] for k in kills], "s"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
