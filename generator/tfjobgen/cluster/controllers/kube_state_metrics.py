"""kube-state-metrics (k8s.io/kube-state-metrics), for `cluster up --monitoring`: pods' phases and their
containers' terminations as metrics, which the pod alerts of every job's PrometheusRule read (Pending,
Failed, OOMKilled, a PS down).

It runs out of cluster, as the controllers do, watching pods only, and serves its metrics on the real
nodes' bridge address, which pods reach (the Prometheus pod scrapes it there); its own telemetry stays on
127.0.0.1. A ScrapeConfig with the profile's podMonitorLabels points the operator's Prometheus at it.
"""

from __future__ import annotations

from ...artifacts import programs
from ..context import Context
from ..nodes.network import BRIDGE_ADDRESS
from ..processes import Component
from .base import wait_healthy

NAME = "kube-state-metrics"
PROGRAMS = ["kube-state-metrics"]
ASKED = "--monitoring"
RESOURCES = "pods"  # what the rules read; every other kind would be series nobody reads


def wanted(profile) -> bool:
    return profile.monitoring.enabled


def start(context: Context) -> None:
    metrics_port, telemetry_port = context.ports("metrics", "telemetry")
    process = context.launch(Component(NAME, [
        str(programs.program("kube-state-metrics")), f"--kubeconfig={context.files.kubeconfig}",
        f"--resources={RESOURCES}", f"--host={BRIDGE_ADDRESS}", f"--port={metrics_port}",
        "--telemetry-host=127.0.0.1", f"--telemetry-port={telemetry_port}",
    ]))
    wait_healthy(process, telemetry_port, "/metrics")
    context.objects.apply(scrape_config(context.profile.monitoring, metrics_port), manager="tfjobgen-cluster")


def scrape_config(monitoring, port: int) -> dict:
    return {
        "apiVersion": "monitoring.coreos.com/v1alpha1", "kind": "ScrapeConfig",
        "metadata": {"name": "tfjobgen-kube-state-metrics", "namespace": monitoring.namespace,
                     "labels": dict(monitoring.pod_monitor_labels)},
        "spec": {
            "staticConfigs": [{"targets": [f"{BRIDGE_ADDRESS}:{port}"]}],
            "honorLabels": True,  # its namespace and pod labels are the pods', not the target's
            "scrapeInterval": monitoring.interval,
        },
    }
