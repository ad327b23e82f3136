"""A real Prometheus (Debian's `prometheus` package) scrapes a real run-local job, and promtool tests the alerts.

The scrape test starts `tfjobgen run-local` on the tests' small tf2 job, reads where each task serves its
metrics from run-local's output, starts Prometheus on a free port with a temporary TSDB and the scrape
config run-local wrote (every task each second; the job's alert rules added, so a rule Prometheus
cannot parse fails here too), and after the run queries every metric runtime/metrics.py names for every
task that serves it. The PS bytes must equal what the chief measured on the real variables.

Skipped with the reason when prometheus or promtool is missing; under .ci/run (TFJOBGEN_REQUIRE_TOOLS=1)
that is a failure: .ci/run installs the package.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import urllib.parse
import urllib.request

import yaml
from conftest import REPO, SAMPLE, need, render, tfjobgen_command, uses
from runtime_support import JOBS, need_tensorflow, task_env

from tfjobgen.kit.owned import free_ports
from tfjobgen.local import processes, scrape
from tfjobgen.runtime import metrics
from tfjobgen.shared import contract

NAMESPACE = "ml-test"  # tf2-small.yaml's; Prometheus Operator adds the pod's namespace as `namespace`
GPU_CASE = REPO / "tests" / "golden" / "gpu-monitoring"
_ENDPOINT = re.compile(r"(\w+:\d+) http://([0-9.]+:\d+)" + re.escape(contract.METRICS_PATH))


@uses("prometheus")
def _prometheus() -> str:
    return need("prometheus", shutil.which("prometheus"), "apt-get install prometheus (Debian's Prometheus 2.x)")


@uses("prometheus")
def _promtool() -> str:
    return need("promtool", shutil.which("promtool"), "apt-get install prometheus (it ships promtool)")


def _rules_of(objects: list[dict]) -> dict:
    """The PrometheusRule's spec: what a Prometheus rule file holds (the Operator writes it so)."""
    (rule,) = [o for o in objects if o["kind"] == "PrometheusRule"]
    return rule["spec"]


def _query(address: str, expr: str) -> list[dict]:
    url = f"http://{address}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as response:
        body = json.load(response)
    assert body["status"] == "success", body
    return body["data"]["result"]


def _wait_ready(address: str, proc: subprocess.Popen, deadline: float) -> None:
    while time.monotonic() < deadline:
        assert proc.poll() is None, "prometheus exited at start"
        try:
            with urllib.request.urlopen(f"http://{address}/-/ready", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise AssertionError("prometheus was not ready in time")


def test_prometheus_scrapes_every_metric_of_every_task_of_a_local_run(tmp_path):
    need_tensorflow()
    prometheus = _prometheus()
    job = JOBS / "tf2-small.yaml"
    work_dir, report = tmp_path / "run", tmp_path / "report.json"
    command = tfjobgen_command() + ["run-local", str(job), "--work-dir", str(work_dir), "--report", str(report),
                                    "--steps", "400"]
    env = {**os.environ, "PYTHONPATH": str(REPO / "generator")}
    run = subprocess.Popen(command, cwd=SAMPLE, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           start_new_session=True)
    lines: list[str] = []
    found = threading.Event()

    def read() -> None:
        for text in run.stdout:
            lines.append(text)
            if _ENDPOINT.search(text):
                found.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    server = None
    try:
        assert found.wait(60), "run-local printed no metrics endpoints:\n" + "".join(lines)
        endpoints = dict(_ENDPOINT.findall(next(t for t in lines if _ENDPOINT.search(t))))
        address = f"127.0.0.1:{free_ports(1)[0]}"
        rules = tmp_path / "rules.yaml"
        rules.write_text(yaml.safe_dump(_rules_of(render(job, profile=GPU_CASE / "profile.yaml"))))
        # run-local's own scrape config (local/scrape.py), with the job's alert rules added.
        written = yaml.safe_load((work_dir / scrape.FILE_NAME).read_text())
        targets = {c["labels"]["task"]: c["targets"][0] for c in written["scrape_configs"][0]["static_configs"]}
        assert targets == endpoints and all(c["labels"]["namespace"] == NAMESPACE
                                            for c in written["scrape_configs"][0]["static_configs"])
        config = tmp_path / "prometheus.yml"
        config.write_text(yaml.safe_dump({**written, "rule_files": [str(rules)]}))
        server = subprocess.Popen(
            ["nice", "-n", "10", prometheus, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
             f"--web.listen-address={address}", "--log.level=warn"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
        _wait_ready(address, server, time.monotonic() + 60)
        try:
            run.wait(timeout=240)
        except subprocess.TimeoutExpired:
            os.killpg(run.pid, signal.SIGTERM)
            run.wait(timeout=30)
        reader.join(10)
        output = "".join(lines)
        assert run.returncode == 0, output
        time.sleep(2)  # one more scrape interval: the last samples are in

        result = json.loads(report.read_text())
        for task in sorted(endpoints):
            role, index = task.split(":")
            chief = role == "chief"
            for name in metrics.names_for(role, chief):
                series = name + "_count" if name == "tfjobgen_step_duration_seconds" else name
                expr = (f'last_over_time({series}{{training_job="small", role="{role}", index="{index}", '
                        f'namespace="{NAMESPACE}"}}[10m])')
                found_series = _query(address, expr)
                assert len(found_series) == 1, f"{task}: {expr} -> {found_series}\n{output}"
                value = float(found_series[0]["value"][1])
                if name == "tfjobgen_ps_variable_bytes":
                    assert value == result["bytes_per_ps"][int(index)], \
                        f"{task} serves {value} bytes, the chief measured {result['bytes_per_ps']}"
                elif name in ("tfjobgen_steps_total", "tfjobgen_step_duration_seconds"):
                    assert 0 < value <= 400, (task, name, value)
                elif name == "tfjobgen_startup_seconds":
                    assert 0 < value < 240, (task, value)
                elif name == "tfjobgen_last_checkpoint_timestamp_seconds":
                    assert time.time() - 600 < value <= time.time(), (task, value)
        # Examples are steps times the batch size: both from the chief's last scrape.
        batch = json.loads(task_env(job, "chief", 0)[contract.TRAINING_ENV])["batchSize"]
        (ratio,) = _query(address, 'last_over_time(tfjobgen_examples_total{training_job="small"}[10m]) / '
                                   'last_over_time(tfjobgen_steps_total{training_job="small"}[10m])')
        assert float(ratio["value"][1]) == batch
        up = _query(address, 'count(up{job="tfjobgen"})')
        assert int(up[0]["value"][1]) == len(endpoints)
    finally:
        for proc in (run, server):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
        assert processes.sweep(str(work_dir)) == [], "tasks of the run survived it"


# ---- the alerts, with promtool on synthetic series -----------------------------------------------------

def _alert(rule: dict, **extra_labels: str) -> dict:
    return {"exp_labels": {**rule["labels"], **extra_labels}, "exp_annotations": rule["annotations"]}


def test_promtool_fires_each_alert_on_its_case_and_not_otherwise(tmp_path):
    promtool = _promtool()
    spec = _rules_of(render(GPU_CASE / "job.yaml", profile=GPU_CASE / "profile.yaml"))
    by_name = {rule["alert"]: rule for rule in spec["groups"][0]["rules"]}
    assert set(by_name) == {"TFJobGenNoProgress", "TFJobGenHotPS", "TFJobGenTaskPending", "TFJobGenTasksFailing",
                            "TFJobGenTaskOOMKilled", "TFJobGenPSDown"}
    ours = 'namespace="ml-training", training_job="gpu-ranker"'
    pod = 'namespace="ml-training", pod="gpu-ranker-worker-1-x7k2p"'
    other_pod = 'namespace="ml-training", pod="other-job-worker-0-abcde"'
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(spec))
    tests = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": [
                # 10 minutes of progress, then none: the 15-minute window is flat from minute 25.
                {"series": f'tfjobgen_steps_total{{{ours}, role="chief", index="0"}}', "values": "0+10x10 100x30"},
                # ps:0 holds 4 GB, ps:1 1 GB: max/mean 1.6 > 1.5.
                {"series": f'tfjobgen_ps_variable_bytes{{{ours}, role="ps", index="0"}}', "values": "4e9x40"},
                {"series": f'tfjobgen_ps_variable_bytes{{{ours}, role="ps", index="1"}}', "values": "1e9x40"},
                # A task of this job Pending from minute 0; another job's pod too (not ours to alert on).
                {"series": f'kube_pod_status_phase{{{pod}, phase="Pending"}}', "values": "1x40"},
                {"series": f'kube_pod_status_phase{{{other_pod}, phase="Pending"}}', "values": "1x40"},
                # Three failed pods from minute 20 (the profile allows 2).
                *({"series": f'kube_pod_status_phase{{namespace="ml-training", pod="gpu-ranker-ps-0-{s}", '
                            f'phase="Failed"}}', "values": "0x19 1x20"} for s in ("aaaaa", "bbbbb", "ccccc")),
                # ps-0's new pod is scraped from minute 30; ps-1 serves throughout and never failed.
                {"series": 'up{namespace="ml-training", pod="gpu-ranker-ps-0-ddddd"}', "values": "_x30 1x10"},
                # the failed pod's own last scrape: its `up` stays 1 until discovery drops it (not Running: ignored)
                {"series": 'up{namespace="ml-training", pod="gpu-ranker-ps-0-ccccc"}', "values": "1x25"},
                {"series": 'up{namespace="ml-training", pod="gpu-ranker-ps-1-eeeee"}', "values": "1x40"},
                {"series": 'kube_pod_status_phase{namespace="ml-training", pod="gpu-ranker-ps-0-ddddd", '
                           'phase="Running"}', "values": "_x30 1x10"},
                {"series": 'kube_pod_status_phase{namespace="ml-training", pod="gpu-ranker-ps-1-eeeee", '
                           'phase="Running"}', "values": "1x40"},
                {"series": 'kube_pod_status_phase{namespace="ml-training", pod="gpu-ranker-ps-1-eeeee", '
                           'phase="Failed"}', "values": "0x40"},
                # worker 1 killed for memory at minute 10.
                {"series": f'kube_pod_container_status_terminated_reason{{{pod}, container="tensorflow", '
                           'reason="OOMKilled"}', "values": "_x9 1x30"},
            ],
            "alert_rule_test": [
                {"eval_time": "12m", "alertname": "TFJobGenNoProgress", "exp_alerts": []},
                {"eval_time": "28m", "alertname": "TFJobGenNoProgress", "exp_alerts": [_alert(
                    by_name["TFJobGenNoProgress"])]},
                {"eval_time": "3m", "alertname": "TFJobGenHotPS", "exp_alerts": []},  # for: 5m
                {"eval_time": "10m", "alertname": "TFJobGenHotPS", "exp_alerts": [_alert(by_name["TFJobGenHotPS"])]},
                {"eval_time": "10m", "alertname": "TFJobGenTaskPending", "exp_alerts": []},  # pendingMinutes 15
                {"eval_time": "20m", "alertname": "TFJobGenTaskPending", "exp_alerts": [_alert(
                    by_name["TFJobGenTaskPending"], pod="gpu-ranker-worker-1-x7k2p")]},
                {"eval_time": "15m", "alertname": "TFJobGenTasksFailing", "exp_alerts": []},
                {"eval_time": "25m", "alertname": "TFJobGenTasksFailing", "exp_alerts": [_alert(
                    by_name["TFJobGenTasksFailing"])]},
                {"eval_time": "5m", "alertname": "TFJobGenTaskOOMKilled", "exp_alerts": []},
                {"eval_time": "12m", "alertname": "TFJobGenTaskOOMKilled", "exp_alerts": [_alert(
                    by_name["TFJobGenTaskOOMKilled"], pod="gpu-ranker-worker-1-x7k2p")]},
                {"eval_time": "15m", "alertname": "TFJobGenPSDown", "exp_alerts": []},
                {"eval_time": "25m", "alertname": "TFJobGenPSDown", "exp_alerts": [_alert(
                    by_name["TFJobGenPSDown"], task="ps-0")]},
                {"eval_time": "35m", "alertname": "TFJobGenPSDown", "exp_alerts": []},  # its new pod is scraped
            ],
        }, {
            "interval": "1m",
            "input_series": [  # balanced PS: no hot-PS alert
                {"series": f'tfjobgen_ps_variable_bytes{{{ours}, role="ps", index="0"}}', "values": "1.1e9x20"},
                {"series": f'tfjobgen_ps_variable_bytes{{{ours}, role="ps", index="1"}}', "values": "1e9x20"},
            ],
            "alert_rule_test": [{"eval_time": "15m", "alertname": "TFJobGenHotPS", "exp_alerts": []}],
        }],
    }
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(tests))
    proc = subprocess.run([promtool, "test", "rules", "tests.yaml"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_promtool_accepts_the_rules_of_every_overlay_job(overlay_objects, tmp_path):
    promtool = _promtool()
    for overlay, objects in overlay_objects.items():
        for rule in (o for o in objects if o["kind"] == "PrometheusRule"):
            path = tmp_path / f"{overlay}-{rule['metadata']['name']}.yaml"
            path.write_text(yaml.safe_dump(rule["spec"]))
            proc = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
            assert proc.returncode == 0, f"{overlay} {rule['metadata']['name']}: {proc.stdout}{proc.stderr}"
