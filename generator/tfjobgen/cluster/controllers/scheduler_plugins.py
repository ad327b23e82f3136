"""The scheduler-plugins scheduler with Coscheduling (sigs.k8s.io/scheduler-plugins), a second
scheduler named as the profile's spec.gang.schedulerName, for profiles whose spec.gang.scheduler
is scheduler-plugins; and its controller (cmd/controller), which writes PodGroup status.

Coscheduling holds each pod of a PodGroup at Permit until minMember of them have a node, for at
most the PodGroup's scheduleTimeoutSeconds; then it rejects them all and backs the group off.
Its plugin configuration is the one of the module's manifests/coscheduling, with a backoff (the
default, 0, retries a group that cannot fit at once, holding places each time).
"""

from __future__ import annotations

import ssl
import urllib.request

from ...artifacts import programs
from ...concerns import gang_schedulers
from .. import processes
from ..context import Context
from ..plane import components
from ..processes import Component
from .base import install, load_yaml_files, wait_healthy

NAME = "scheduler-plugins"
PROGRAMS = ["coscheduler", "coscheduling-controller"]
PERMIT_WAITING_SECONDS = 60  # the module's default, for a PodGroup that sets no scheduleTimeoutSeconds
POD_GROUP_BACKOFF_SECONDS = 5  # after a group is rejected, before its pods are tried again
# A pod the plugin's PreFilter refused (its group does not fit) is tried again only on the events the
# plugin registers: a pod added, a PodGroup added or changed. Room freed by a pod that ends is not one
# of them, so it waits for kube-scheduler's flush of unschedulable pods, 5 minutes by default
# (measured in docs/schedulers.md). A local cluster retries after this long instead.
UNSCHEDULABLE_RETRY = "10s"


def wanted(profile) -> bool:
    return gang_schedulers.runs(profile, __name__)


def configuration(context: Context) -> dict:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(context.files.kubeconfig), "qps": components.API_QPS,
                             "burst": components.API_BURST},
        "leaderElection": {"leaderElect": False},
        "profiles": [{
            "schedulerName": context.profile.gang.scheduler_name,
            "plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                        "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]}},
            "pluginConfig": [{"name": "Coscheduling", "args": {
                "permitWaitingTimeSeconds": PERMIT_WAITING_SECONDS,
                "podGroupBackoffSeconds": POD_GROUP_BACKOFF_SECONDS}}],
        }],
    }


def start(context: Context) -> None:
    family = programs.family_of("coscheduler")
    # The controller also reconciles ElasticQuotas: without their CRD its manager does not start.
    install(context.objects, load_yaml_files(family.asset("manifests/coscheduling/crd.yaml"))
                    + load_yaml_files(family.asset("manifests/capacityscheduling/crd.yaml")))
    scheduler_port, probe_port, metrics_port = context.ports("scheduler", "controller-health", "controller-metrics")
    config_file = context.write_config("coscheduler.json", configuration(context))
    controller = context.launch(Component("coscheduling-controller", [
        str(programs.program("coscheduling-controller")), f"--probeAddr=127.0.0.1:{probe_port}",
        f"--metricsAddr=127.0.0.1:{metrics_port}", "--qps=500", "--burst=1000", "--workers=4",
    ], env={"KUBECONFIG": str(context.files.kubeconfig)}))  # it reads no --kubeconfig flag of its own
    scheduler = context.launch(Component("coscheduler", [
        str(programs.program("coscheduler")), f"--config={config_file}",
        "--bind-address=127.0.0.1", f"--secure-port={scheduler_port}", "--profiling=false", "--v=1",
        f"--pod-max-in-unschedulable-pods-duration={UNSCHEDULABLE_RETRY}",
    ]))
    wait_healthy(controller, probe_port, "/readyz")
    local_only = ssl._create_unverified_context()  # its self-made serving certificate, on 127.0.0.1

    def healthy() -> bool:
        with urllib.request.urlopen(f"https://127.0.0.1:{scheduler_port}/healthz", timeout=1,
                                    context=local_only) as response:
            return response.status == 200

    processes.wait_for(scheduler, healthy, 60, "health (/healthz)")
