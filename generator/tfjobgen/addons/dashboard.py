"""The job's Grafana dashboard: the runtime's metrics next to what the kubelet measures, one row per PS.

    Training    steps/s, loss, step time quantiles, checkpoint age, startup wait per task
    Per role    CPU, memory, network in and out of every role's pods (the kubelet's cAdvisor metrics)
    PS $ps      repeated per PS: bytes it holds, its CPU, its network; a hot PS stands out

Each panel says where its data comes from (its description): the runtime's `tfjobgen_*` metrics, which a
program of your own (spec.command) shows only if it serves them (docs/observability.md, own programs), or
the kubelet's cAdvisor, there for any program. For a program of your own, the titles of the first kind
also end in RUNTIME_MARK.
cAdvisor labels its series by pod, not by role: the role is read from the pod
name (`<job>-<role>-<index>-<suffix>`, names.pods_pattern) with label_replace.
The JSON is written with sorted keys, so the same plan gives the same bytes.
"""

from __future__ import annotations

import json

from ..concerns import names
from ..concerns.jobplan import JobPlan
from ..shared import contract

_WIDTH = 24  # Grafana's grid is 24 columns wide
_HEIGHT = 8
RUNTIME_MARK = " (tfjobgen_* metrics)"
_FROM_RUNTIME = ("From tfjobgen's runtime metrics (tfjobgen_*, docs/observability.md): a program of your own shows "
                 "data here only if it serves them on its metrics port.")
_FROM_KUBELET = "From the kubelet's cAdvisor: there for any program."


def _uid(plan: JobPlan) -> str:
    """Stable per namespace/job and within Grafana's 40 characters."""
    import hashlib  # here: its import is a twentieth of the KRM function's start, needed only with dashboards

    return "tfjobgen-" + hashlib.sha256(f"{plan.job.namespace}/{plan.job.name}".encode()).hexdigest()[:20]


def _panel(title: str, unit: str, targets: list[tuple[str, str]], x: int, y: int, width: int = 8) -> dict:
    runtime = any("tfjobgen_" in expr for expr, _ in targets)
    return {
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "description": _FROM_RUNTIME if runtime else _FROM_KUBELET,
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "gridPos": {"h": _HEIGHT, "w": width, "x": x, "y": y},
        "targets": [{"datasource": {"type": "prometheus", "uid": "${datasource}"}, "expr": expr,
                     "legendFormat": legend, "refId": chr(ord("A") + i)} for i, (expr, legend) in enumerate(targets)],
        "title": title,
        "type": "timeseries",
    }


def _row(title: str, y: int, repeat: str | None = None) -> dict:
    row = {"collapsed": False, "gridPos": {"h": 1, "w": _WIDTH, "x": 0, "y": y}, "panels": [], "title": title,
           "type": "row"}
    if repeat:
        row["repeat"] = repeat
    return row


def dashboard(plan: JobPlan) -> dict:
    job = plan.job
    ours = f'namespace="{job.namespace}", training_job="{job.name}"'
    pods = f'namespace="{job.namespace}", pod=~"{names.pods_pattern(job)}"'
    training = f'container="{contract.CONTAINER_NAME}"'
    role_of = f'"role", "$1", "pod", "{job.name}-([a-z]+)-.*"'

    def by_role(metric: str, container: bool = True, rate: bool = True) -> str:
        selector = f"{pods}, {training}" if container else pods
        series = f"rate({metric}{{{selector}}}[5m])" if rate else f"{metric}{{{selector}}}"
        return f"sum by (role) (label_replace({series}, {role_of}))"

    ps_pod = f'namespace="{job.namespace}", pod=~"{job.name}-ps-$ps-.+"'
    panels = [
        _row("Training", 0),
        _panel("Steps per second", "ops", [(f"sum(rate(tfjobgen_steps_total{{{ours}}}[5m]))", "steps/s")], 0, 1),
        _panel("Loss", "none", [(f"tfjobgen_loss{{{ours}}}", "loss")], 8, 1),
        _panel("Step time", "s", [
            (f"histogram_quantile({q}, sum by (le) (rate(tfjobgen_step_duration_seconds_bucket{{{ours}}}[5m])))",
             f"p{round(q * 100)}") for q in (0.5, 0.9, 0.99)], 16, 1),
        _panel("Seconds since the last checkpoint", "s", [
            (f"time() - max(tfjobgen_last_checkpoint_timestamp_seconds{{{ours}}} > 0)", "age")], 0, 9, 12),
        _panel("Startup wait per task", "s", [
            (f"tfjobgen_startup_seconds{{{ours}}}", "{{role}}:{{index}}")], 12, 9, 12),
        _row("Per role (kubelet)", 17),
        _panel("CPU (cores)", "none", [(by_role("container_cpu_usage_seconds_total"), "{{role}}")], 0, 18, 6),
        _panel("Memory (working set)", "bytes", [
            (by_role("container_memory_working_set_bytes", rate=False), "{{role}}")], 6, 18, 6),
        _panel("Network in", "Bps", [(by_role("container_network_receive_bytes_total", container=False),
                                      "{{role}}")], 12, 18, 6),
        _panel("Network out", "Bps", [(by_role("container_network_transmit_bytes_total", container=False),
                                       "{{role}}")], 18, 18, 6),
    ]
    if "ps" in job.roles:
        panels += [
            _row("PS $ps", 26, repeat="ps"),
            _panel("Bytes held", "bytes", [(f'tfjobgen_ps_variable_bytes{{{ours}, index="$ps"}}', "ps:$ps")], 0, 27),
            _panel("CPU (cores)", "none", [
                (f"sum(rate(container_cpu_usage_seconds_total{{{ps_pod}, {training}}}[5m]))", "ps:$ps")], 8, 27),
            _panel("Network", "Bps", [
                (f"sum(rate(container_network_receive_bytes_total{{{ps_pod}}}[5m]))", "in"),
                (f"sum(rate(container_network_transmit_bytes_total{{{ps_pod}}}[5m]))", "out")], 16, 27),
        ]
    variables = [{"name": "datasource", "query": "prometheus", "type": "datasource", "label": "Prometheus"}]
    if "ps" in job.roles:
        variables.append({
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "includeAll": True, "multi": True, "name": "ps", "label": "PS",
            "current": {"text": "All", "value": "$__all"},
            "query": {"query": f"label_values(tfjobgen_ps_variable_bytes{{{ours}}}, index)", "refId": "ps"},
            "refresh": 2, "sort": 3, "type": "query",
        })
    if not job.uses_runtime:  # the panels that stay empty unless the program serves tfjobgen_* itself
        for panel in panels:
            if panel.get("description") == _FROM_RUNTIME:
                panel["title"] += RUNTIME_MARK
    return {
        "editable": False,
        "panels": panels,
        "refresh": "30s",
        "schemaVersion": 39,
        "tags": ["tfjobgen", job.namespace],
        "templating": {"list": variables},
        "time": {"from": "now-6h", "to": "now"},
        "title": f"tfjobgen {job.namespace}/{job.name}",
        "uid": _uid(plan),
    }


def json_text(plan: JobPlan) -> str:
    """Compact, keys sorted: Python's C encoder writes it (an indented dump takes the pure-Python
    encoder, 4 ms a job, a third of the function's time on prod-96c's benchmark)."""
    return json.dumps(dashboard(plan), separators=(",", ":"), sort_keys=True)
