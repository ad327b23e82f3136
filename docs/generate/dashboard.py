"""Draw docs/dashboard.png: the job dashboard's main panels from the real metrics of a local run.

    .venv/bin/python docs/generate/dashboard.py          (about a minute; needs prometheus and TensorFlow)

Runs `tfjobgen run-local` on the tests' small tf2 job (2 PS, 2 workers, a chief; 600 steps), starts
Debian's Prometheus on the scrape config run-local writes, and after the run draws what Prometheus
recorded with the dashboard's own queries where they carry over (dashboard.py; cAdvisor's container
metrics exist only on a cluster, so CPU comes from each task's process_cpu_seconds_total here).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
JOB = REPO / "tests" / "runtime" / "jobs" / "tf2-small.yaml"
OUT = REPO / "docs" / "dashboard.png"
STEPS = 600


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def query_range(address: str, expr: str, start: float, end: float) -> list[dict]:
    url = f"http://{address}/api/v1/query_range?" + urllib.parse.urlencode(
        {"query": expr, "start": start, "end": end, "step": "1s"})
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.load(response)["data"]["result"]


def main() -> int:
    prometheus = shutil.which("prometheus")
    if not prometheus:
        print("docs/generate/dashboard.py needs Prometheus: apt-get install prometheus", file=sys.stderr)
        return 1
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    work = Path(tempfile.mkdtemp(prefix="tfjobgen-dashboard-"))
    run_dir = work / "run"
    tfjobgen = [sys.executable, "-m", "tfjobgen"]
    env = {**os.environ, "PYTHONPATH": str(REPO / "generator")}
    print(f"run-local {JOB.relative_to(REPO)} --steps {STEPS} (logs in {run_dir}) ...", flush=True)
    run = subprocess.Popen(tfjobgen + ["run-local", str(JOB), "--steps", str(STEPS), "--work-dir", str(run_dir)],
                           cwd=REPO, env=env)
    config = run_dir / "prometheus.yml"
    while not config.exists():
        if run.poll() is not None:
            print("run-local ended before writing its scrape config", file=sys.stderr)
            return 1
        time.sleep(0.2)
    address = f"127.0.0.1:{free_port()}"
    print(f"prometheus on {address}, scraping every task each second ...", flush=True)
    server = subprocess.Popen([prometheus, f"--config.file={config}", f"--storage.tsdb.path={work / 'tsdb'}",
                               f"--web.listen-address={address}", "--log.level=warn"])
    start = time.time()
    try:
        if run.wait() != 0:
            print("run-local failed", file=sys.stderr)
            return 1
        time.sleep(3)
        end = time.time()
        job = 'training_job="small"'
        panels = [
            ("Steps per second", f"rate(tfjobgen_steps_total{{{job}}}[5s])", lambda s: "chief"),
            ("Loss", f"tfjobgen_loss{{{job}}}", lambda s: "loss"),
            ("Step time p50 / p90 (s)", None, None),
            # The runtime's process collector has no job labels: run-local's scrape config names each task.
            ("CPU per task (cores)", 'rate(process_cpu_seconds_total{job="tfjobgen"}[5s])', lambda s: s["task"]),
            ("Bytes held per PS (MB)", f"tfjobgen_ps_variable_bytes{{{job}}} / 1e6", lambda s: f"ps:{s['index']}"),
            ("Startup wait per task (s)", f"tfjobgen_startup_seconds{{{job}}}", lambda s: f"{s['role']}:{s['index']}"),
        ]
        figure, axes = plt.subplots(2, 3, figsize=(15, 7.5))
        for ax, (title, expr, label) in zip(axes.flat, panels):
            if expr is None:
                series = [(f"p{round(q * 100)}", query_range(address, f"histogram_quantile({q}, sum by (le) "
                           f"(rate(tfjobgen_step_duration_seconds_bucket{{{job}}}[10s])))", start, end))
                          for q in (0.5, 0.9)]
                found = [(name, s) for name, result in series for s in result]
            else:
                found = [(label(s["metric"]), s) for s in query_range(address, expr, start, end)]
            for name, s in sorted(found, key=lambda item: item[0]):
                points = [(float(t) - start, float(v)) for t, v in s["values"] if v not in ("NaN", "+Inf")]
                if points:
                    ax.plot(*zip(*points), label=name)
            ax.set_title(title)
            ax.set_ylim(bottom=0)
            ax.set_xlabel("seconds since Prometheus started")
            ax.grid(alpha=0.3)
            if found:
                ax.legend(fontsize=8)
        figure.suptitle(f"tfjobgen run-local {JOB.name}: {STEPS} steps, 2 PS + 2 workers + chief, "
                        "as Prometheus scraped it")
        figure.tight_layout()
        figure.savefig(OUT, dpi=80)
        print(f"wrote {OUT.relative_to(REPO)}")
        return 0
    finally:
        for proc in (run, server):
            if proc.poll() is None:
                proc.terminate()
                proc.wait(30)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
