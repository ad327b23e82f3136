"""The JobSet controller (sigs.k8s.io/jobset): every cluster runs it, any job may ask for backend jobset.

Its webhooks are part of its behaviour, not an option: the defaulting webhook sets the child
Jobs' completion mode, restart policy and DNS hostnames, and the pod webhooks place follower
pods beside their leaders in exclusive placement. They come from the module's own webhook
manifests (config/components/webhook, its patches applied by kustomize), served on 127.0.0.1.
"""

from __future__ import annotations

from ...artifacts import programs
from ..context import Context
from .base import install, kustomized, load_yaml_files, manager_settings, start_manager

NAME = "jobset"
PROGRAMS = ["jobset-controller", "kustomize"]


def wanted(profile) -> bool:
    return True


def start(context: Context) -> None:
    # The release this cluster's Kubernetes runs (versions.yaml's needs_kubernetes: 1.30 runs JobSet v0.10.1).
    family = programs.family_for("jobset-controller", context.kubernetes)
    programs.program("jobset-controller", family.version)  # ToolsMissing names the command that builds it
    install(context.objects, load_yaml_files(family.asset("config/components/crd/bases")))
    webhook_port, health_port, metrics_port = context.ports("webhook", "health", "metrics")
    certificates = context.serving_certificate(NAME)
    configuration = {"apiVersion": "config.jobset.x-k8s.io/v1alpha1", "kind": "Configuration",
                     **manager_settings(webhook_port, health_port, metrics_port, certificates)}
    config_file = context.write_config("jobset.json", configuration)
    start_manager(context, NAME, "jobset-controller", config_file, webhook_port, health_port, family.version)
    webhooks = [o for o in kustomized(family.asset("config/components/webhook")) if "Webhook" in o["kind"]]
    context.register_webhooks(webhooks, webhook_port, NAME)
