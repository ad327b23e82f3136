"""The JobSet controller (sigs.k8s.io/jobset): every cluster runs it, any job may ask for backend jobset.

Its webhooks are part of its behaviour, not an option: the defaulting webhook sets the child
Jobs' completion mode, restart policy and DNS hostnames, and the pod webhooks place follower
pods beside their leaders in exclusive placement. They come from the module's own webhook
manifests (config/components/webhook, its patches applied by kustomize), served on 127.0.0.1.
"""

from __future__ import annotations

from ...inputs.profile import release
from .. import tools
from . import Context, kustomized, load_yaml_files, manager_settings

NAME = "jobset"
PROGRAMS = ["jobset-controller", "kustomize"]
# JobSet v0.12.0's CRD has a CEL rule on an embedded template's metadata.namespace, which the API server
# of Kubernetes 1.30 cannot compile (it refuses the CRD; measured): such a cluster runs the release before.
OLDER_KUBERNETES = ((1, 30), "v0.10.1")  # (the newest Kubernetes release that needs it, JobSet's release)


def release_for(kubernetes: str) -> str:
    """The JobSet release a cluster of that Kubernetes release runs ("": versions.yaml's jobset)."""
    newest, jobset = OLDER_KUBERNETES
    return jobset if kubernetes and release(kubernetes) <= newest else ""


def wanted(profile) -> bool:
    return True


def start(context: Context) -> None:
    chosen = release_for(context.kubernetes)
    family = tools.family_of("jobset-controller", chosen)
    tools.program("jobset-controller", chosen)  # ToolsMissing names the command that builds it
    context.install(load_yaml_files(family.asset("config/components/crd/bases")))
    webhook_port, health_port, metrics_port = context.ports("webhook", "health", "metrics")
    certificates = context.serving_certificate(NAME)
    configuration = {"apiVersion": "config.jobset.x-k8s.io/v1alpha1", "kind": "Configuration",
                     **manager_settings(webhook_port, health_port, metrics_port, certificates)}
    config_file = context.write_config("jobset.json", configuration)
    context.start_manager(NAME, "jobset-controller", config_file, webhook_port, health_port, chosen)
    webhooks = [o for o in kustomized(family.asset("config/components/webhook")) if "Webhook" in o["kind"]]
    context.register_webhooks(webhooks, webhook_port, NAME)
