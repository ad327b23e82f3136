"""Monitoring objects of one job, for clusters whose profile turns monitoring on (spec.monitoring).

    PodMonitor      Prometheus Operator scrapes every task's `metrics` port (runtime/metrics.py)
    PrometheusRule  the alerts docs/observability.md explains, one group per job
    ConfigMap       the job's Grafana dashboard (dashboard.py), labelled for Grafana's sidecar

An add-on, as TensorBoard (tensorboard.py) is: the pipeline's render step adds what `objects(plan)`
returns to the backend's objects, so these are the same whichever controller runs the pods, and no
backend knows them. The NetworkPolicy's scrape rule is in backends/common.py.

The alerts on pods (Pending, Failed) read kube-state-metrics, which knows pods
by name: they select the job's pods by the name prefix `<job>-<role>-`, which
the Job controller gives every task's pod (names.pods_pattern).
"""

from __future__ import annotations

from ..concerns import labels, metadata, names
from ..concerns.jobplan import JobPlan
from ..inputs.problems import Problem
from ..shared import contract
from . import dashboard

API_VERSION = "monitoring.coreos.com/v1"


def objects(plan: JobPlan) -> list[dict]:
    """The job's monitoring objects; none unless the profile turns monitoring on."""
    settings = plan.profile.monitoring
    if not settings.enabled:
        return []
    found = [pod_monitor(plan), prometheus_rule(plan)]
    if settings.dashboards:
        found.append(dashboard_config_map(plan))
    return found


def check(job, profile) -> list[Problem]:
    """A job in the monitoring namespace: the NetworkPolicy's scrape rule would admit every pod beside it (the
    rule admits that namespace), and Prometheus' own pods would share the team's quota and policies."""
    settings = profile.monitoring
    if settings.enabled and job.namespace == settings.namespace:
        return [Problem(f"'{job.namespace}' is the cluster's monitoring namespace (the profile's "
                        "spec.monitoring.namespace), where Prometheus runs and which the job's NetworkPolicy admits "
                        "to every metrics port: put the job in its team's namespace", "metadata.namespace")]
    return []


def _metadata(plan: JobPlan, name: str, extra: dict, namespace: str | None = None) -> dict:
    meta = metadata.of(plan.job, name, {**labels.recommended(plan.job, "monitoring"), **extra})
    if namespace:
        meta["namespace"] = namespace
    return meta


def pod_monitor(plan: JobPlan) -> dict:
    """Every task's metrics port, scraped at the profile's interval."""
    settings = plan.profile.monitoring
    return {
        "apiVersion": API_VERSION,
        "kind": "PodMonitor",
        "metadata": _metadata(plan, plan.job.name, settings.pod_monitor_labels),
        "spec": {
            "podMetricsEndpoints": [{
                # The runtime's labels (training_job, role, index) are its own: keep them as served.
                "honorLabels": True,
                "interval": settings.interval,
                "path": contract.METRICS_PATH,
                "port": contract.METRICS_PORT_NAME,
            }],
            "podTargetLabels": [labels.ROLE],
            "selector": {"matchLabels": labels.job_selector(plan.job)},
        },
    }


def rules(plan: JobPlan) -> list[dict]:
    """The job's alerting rules, in a fixed order."""
    job, alerts = plan.job, plan.profile.monitoring.alerts
    ours = f'namespace="{job.namespace}", training_job="{job.name}"'
    pods = f'namespace="{job.namespace}", pod=~"{names.pods_pattern(job)}"'
    common = {"namespace": job.namespace, "training_job": job.name}
    found = [{
        "alert": "TFJobGenNoProgress",
        "annotations": {
            "summary": f"{job.name} made no training step for {alerts.stalled_minutes} minutes",
            "description": "The chief reports no new global step. Look at the chief's log (`kubectl logs`) for the "
                           "task it waits for; docs/observability.md lists the usual causes.",
        },
        "expr": f"sum by (namespace, training_job) (increase(tfjobgen_steps_total{{{ours}}}"
                f"[{alerts.stalled_minutes}m])) == 0",
        "for": "1m",
        "labels": {**common, "severity": "warning"},
    }]
    if "ps" in job.roles and job.roles["ps"].replicas > 1:
        found.append({
            "alert": "TFJobGenHotPS",
            "annotations": {
                "summary": f"one PS of {job.name} holds more than {alerts.hot_ps_ratio:g}x the mean PS bytes",
                "description": "The busiest PS limits every step. Run `tfjobgen plan` on the job's file: it shows "
                               "bytes per PS under each partitioner and the spec.training setting that balances them.",
            },
            "expr": f"max by (namespace, training_job) (tfjobgen_ps_variable_bytes{{{ours}}}) / "
                    f"avg by (namespace, training_job) (tfjobgen_ps_variable_bytes{{{ours}}}) > {alerts.hot_ps_ratio:g}",
            "for": "5m",
            "labels": {**common, "severity": "warning"},
        })
    found += [{
        "alert": "TFJobGenTaskPending",
        "annotations": {
            "summary": f"a task of {job.name} has been Pending for {alerts.pending_minutes} minutes",
            "description": "The scheduler finds no node for it. `kubectl describe pod` says why; `tfjobgen plan` "
                           "shows whether the job fits the cluster at all.",
        },
        "expr": f"sum by (namespace, pod) (kube_pod_status_phase{{{pods}, phase=\"Pending\"}}) > 0",
        "for": f"{alerts.pending_minutes}m",
        "labels": {**common, "severity": "warning"},
    }, {
        "alert": "TFJobGenTasksFailing",
        "annotations": {
            "summary": f"more than {alerts.restarts} pods of {job.name} failed",
            "description": "Each failed pod is a task the Job controller replaced (or gave up on). Read the failed "
                           "pods' last log lines and exit codes; docs/runtime.md explains the exit codes.",
        },
        "expr": f"sum by (namespace) (kube_pod_status_phase{{{pods}, phase=\"Failed\"}}) > {alerts.restarts}",
        "for": "0m",
        "labels": {**common, "severity": "critical"},
    }, {
        "alert": "TFJobGenTaskOOMKilled",
        "annotations": {
            "summary": f"a task of {job.name} was killed for going over its memory limit",
            "description": "The kernel ended the container at its memory limit (OOMKilled, exit 137); its Job "
                           "replaces it against the task's failure budget. Raise the role's memory, or lower what "
                           "the task holds (`tfjobgen plan` shows each PS's bytes).",
        },
        "expr": f"sum by (namespace, pod) (kube_pod_container_status_terminated_reason{{{pods}, "
                f"reason=\"OOMKilled\"}}) > 0",
        "for": "0m",
        "labels": {**common, "severity": "warning"},
    }]
    if "ps" in job.roles:
        found.append(_ps_down(plan))
    return found


def _ps_down(plan: JobPlan) -> dict:
    """A PS whose pod failed and that no pod of its task serves again: every step waits for it. The failed
    pod comes from kube-state-metrics; that the task is back, from a Running pod of it being scraped (`up`). A PS that
    ended well (the chief said training is over) is no failed pod, so a finished job does not fire."""
    job = plan.job
    ps = f'namespace="{job.namespace}", pod=~"{names.pods_pattern(job, ("ps",))}"'
    task = f'"task", "$1-$2", "pod", "{names.pods_pattern(job, ("ps",)).replace("-[0-9]+", "-([0-9]+)", 1)}"'
    return {
        "alert": "TFJobGenPSDown",
        "annotations": {
            "summary": f"a PS of {job.name} failed and is not back",
            "description": "Its pod failed (killed, out of memory, its node lost) and no new pod of the task serves "
                           "yet: the chief fails and resumes from its checkpoint once the PS is back. It clears when "
                           "the new pod is scraped; if it stays, `kubectl get pods` shows why the new pod waits.",
        },
        # A pod of the task counts as back only if Running as well as scraped: the failed pod's own `up` keeps
        # its last 1 until discovery drops its target (up to 5 s after the pod fails), which would hold the
        # alert back; its phase comes in the same kube-state-metrics sample as the Failed one.
        "expr": f"count by (namespace, task) (label_replace(kube_pod_status_phase{{{ps}, phase=\"Failed\"}} == 1, "
                f"{task})) unless on (namespace, task) count by (namespace, task) (label_replace((up{{{ps}}} == 1) "
                f"and on (namespace, pod) (kube_pod_status_phase{{{ps}, phase=\"Running\"}} == 1), {task}))",
        "for": "0m",
        "labels": {"namespace": job.namespace, "training_job": job.name, "severity": "critical"},
    }


def prometheus_rule(plan: JobPlan) -> dict:
    return {
        "apiVersion": API_VERSION,
        "kind": "PrometheusRule",
        "metadata": _metadata(plan, plan.job.name, plan.profile.monitoring.rule_labels),
        "spec": {"groups": [{"name": f"tfjobgen-{plan.job.name}", "rules": rules(plan)}]},
    }


def dashboard_config_map(plan: JobPlan) -> dict:
    """The dashboard JSON, in the namespace Grafana's sidecar watches, with the label it loads."""
    settings = plan.profile.monitoring
    return {
        "apiVersion": "v1",
        "data": {f"{plan.job.name}.json": dashboard.json_text(plan)},
        "kind": "ConfigMap",
        "metadata": _metadata(plan, names.dashboard(plan.job), {settings.dashboard_label: "1"},
                              settings.dashboard_namespace),
    }
