"""The Kubeflow training-operator v1.9 (TFJob): every cluster runs it, any job may ask for backend tfjob.

Started with `--enable-scheme=tfjob` only: the TFJob CRD is the one installed, and the operator
watches no other kind. The binary is upstream's controllers and webhooks behind a main of ours
(cluster-tools/training-operator/main.go), because upstream's main cannot run out of cluster as
this cluster runs its controllers: it serves its webhook on every interface, takes its
certificate from the machine-wide /tmp/k8s-webhook-server/serving-certs, and holds its
controllers back until its cert rotator has written Secret `training-operator-webhook-cert` in
$MY_POD_NAMESPACE and found it mounted as files, which only a kubelet does. Ours serves the
webhook on 127.0.0.1 with a certificate of the cluster's CA from its own folder, and the
validating webhook (TFJob's spec checks: replica types, the `tensorflow` container, names) is
registered by URL from the module's own manifests.

`arguments(profile, ...)` is the one place its flags are written: what a profile asks of the
operator (a gang scheduler's name) goes there. The operator watches its gang scheduler's PodGroups
and does not start without their CRD, so a gang scheduler left out (not built) leaves the operator
without gang: it runs TFJobs, and `cluster up` says their PodGroups are not written.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from ...artifacts import programs
from ...concerns import gang_schedulers
from ...inputs.profile import ClusterProfile
from ..context import Context
from ..processes import Component
from .base import install, kustomized, load_yaml_files, wait_healthy, wait_serving

NAME = "training-operator"
PROGRAMS = ["training-operator", "kustomize"]
CRD = "manifests/base/crds/kubeflow.org_tfjobs.yaml"
WEBHOOKS = "manifests/base/webhook"


def wanted(profile: ClusterProfile) -> bool:
    return True


def arguments(profile: ClusterProfile, *, kubeconfig: Path, certificates: Path, webhook_port: int,
              health_port: int, metrics_port: int, gang_running: bool = True) -> list[str]:
    """The operator's command line for a cluster of `profile` (`gang_running`: its gang scheduler runs)."""
    chosen = gang_schedulers.of(profile)
    gang_flags = []
    if gang_running and chosen.operator_makes_pod_group:  # the operator then writes each TFJob's PodGroup (tfjob.py)
        gang_flags = [f"--gang-scheduler-name={chosen.scheduler_name or profile.gang.scheduler_name}"]
    return [
        str(programs.program("training-operator")),
        f"--kubeconfig={kubeconfig}",
        "--enable-scheme=tfjob",
        "--webhook-host=127.0.0.1", f"--webhook-server-port={webhook_port}", f"--webhook-cert-dir={certificates}",
        f"--health-probe-bind-address=127.0.0.1:{health_port}",
        f"--metrics-bind-address=127.0.0.1:{metrics_port}",
        # Its default of 20 requests a second makes a 100-node job's pods and Services wait in line.
        "--kube-api-qps=500", "--kube-api-burst=1000",
        "--zap-log-level=info",
        *gang_flags,
    ]


def tfjob_webhooks(configurations: list[dict]) -> list[dict]:
    """The module's validating webhook configuration, kept to the webhook of the kind this cluster serves."""
    kept = []
    for configuration in configurations:
        hooks = [w for w in configuration.get("webhooks", [])
                 if any("tfjobs" in rule.get("resources", []) for rule in w.get("rules", []))]
        if hooks:
            kept.append({**configuration, "webhooks": hooks})
    return kept


def start(context: Context) -> None:
    family = programs.family_of("training-operator")
    install(context.objects, load_yaml_files(family.asset(CRD)))
    webhook_port, health_port, metrics_port = context.ports("webhook", "health", "metrics")
    certificates = context.serving_certificate(NAME)
    scheduler = context.profile.gang.scheduler
    chosen = gang_schedulers.of(context.profile)
    gang_running = not chosen.operator_makes_pod_group or all(
        importlib.import_module(f"{__package__}.{module}").NAME in context.running for module in chosen.controllers)
    if not gang_running:
        context.warn(f"{NAME} runs without gang scheduling: {scheduler} is not running, so no TFJob gets a PodGroup")
    process = context.launch(Component(NAME, arguments(
        context.profile, kubeconfig=context.files.kubeconfig, certificates=certificates, webhook_port=webhook_port,
        health_port=health_port, metrics_port=metrics_port,
        gang_running=gang_running)))
    wait_serving(process, webhook_port, context.ca)
    wait_healthy(process, health_port, "/readyz")
    configurations = [o for o in kustomized(family.asset(WEBHOOKS)) if o["kind"] == "ValidatingWebhookConfiguration"]
    context.register_webhooks(tfjob_webhooks(configurations), webhook_port, NAME)
