"""The Volcano scheduler (volcano.sh/volcano), a second scheduler beside kube-scheduler, for
profiles whose spec.gang.scheduler is volcano.

It schedules the pods whose schedulerName is `volcano`, a PodGroup at a time: the enqueue action
admits a PodGroup once its queue has room for minResources, and the gang plugin binds none of its
pods until minMember of them fit. PodGroup status (phase, running, conditions) is written by the
scheduler itself, and it creates its `default` queue on start; Volcano's controller manager only
makes PodGroups for pods that name none and keeps Queue status counts, which our jobs do not need,
so it is not run. A queue the profile names (spec.gang.queue) is created here.

The configuration is the plugins of Volcano's own chart, changed in two ways for colocated jobs on
`spec.gang.colocatedGroups: scheduler`, which name their groups as tasks (gang.py): task-topology,
with a weight that decides between nodes, puts each group's pods where its others are; and nodes
are packed (binpack up, nodeorder's least-requested off: the chart's weights spread pods over every
server), so that whole servers stay free for a group. task-topology is a score: a group is whole
only where one server has room for all of it (docs/schedulers.md, gang admission, has the figures).
"""

from __future__ import annotations

from ...artifacts import programs
from ...concerns import gang_schedulers
from ...kube import api
from ..context import Context
from ..processes import Component
from .base import install, load_yaml_files, wait_healthy

NAME = "volcano"
PROGRAMS = ["vc-scheduler"]
SCHEDULER_NAME = gang_schedulers.SCHEDULERS["volcano"].scheduler_name  # the pods' schedulerName
TASK_TOPOLOGY_WEIGHT = 100  # the other node scorers add up to a few hundred; a group's pull must win
PACKING_WEIGHT = 10  # binpack's default is 1: level with the chart's least-requested, which spreads
# nodeorder's pod-affinity score (up to 100 times this) must outweigh packing (up to 100 times the above):
# at its default of 1, binpack put a spread job's PS on one server beside each other (measured, 2 orders of 3).
AFFINITY_WEIGHT = 2 * PACKING_WEIGHT

CONFIGURATION = {
    "actions": "enqueue, allocate, backfill",
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang", "enablePreemptable": False}, {"name": "conformance"}]},
        {"plugins": [{"name": "overcommit"}, {"name": "drf", "enablePreemptable": False}, {"name": "predicates"},
                     {"name": "proportion"},
                     {"name": "nodeorder", "arguments": {"leastrequested.weight": 0,
                                                         "podaffinity.weight": AFFINITY_WEIGHT}},
                     {"name": "binpack", "arguments": {"binpack.weight": PACKING_WEIGHT}},
                     {"name": "task-topology", "arguments": {"task-topology.weight": TASK_TOPOLOGY_WEIGHT}}]},
    ],
}


def wanted(profile) -> bool:
    return gang_schedulers.runs(profile, __name__)


def start(context: Context) -> None:
    family = programs.family_of("vc-scheduler")
    install(context.objects, load_yaml_files(family.asset("installer/helm/chart/volcano/crd/bases")))
    (health_port,) = context.ports("health")
    config_file = context.write_config("volcano-scheduler.conf", CONFIGURATION)  # YAML, which reads JSON
    process = context.launch(Component(NAME, [
        str(programs.program("vc-scheduler")), f"--kubeconfig={context.files.kubeconfig}",
        f"--scheduler-name={SCHEDULER_NAME}", f"--scheduler-conf={config_file}",
        "--schedule-period=200ms",  # its default is 1 s between sessions: a gang waits that long to be seen
        "--leader-elect=false", "--enable-healthz", f"--healthz-address=127.0.0.1:{health_port}",
        "--enable-metrics=false", "--cache-dumper=false", "--kube-api-qps=500", "--kube-api-burst=1000",
        "--percentage-nodes-to-find=100",  # score every node, as our placement claims assume
        "--logtostderr", "-v=2",
    ], env={  # its log-level socket, in /tmp/klog-socks by default: one path for every Volcano on the machine
        "DEBUG_SOCKET_DIR": str(context.files.home / "volcano")}))
    wait_healthy(process, health_port)
    queue = context.profile.gang.queue
    if queue and queue != "default":
        context.objects.apply({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                               "metadata": {"name": queue}, "spec": {"weight": 1, "reclaimable": True}},
                              manager="tfjobgen-cluster")
    # The scheduler makes its default queue once its caches have synced: then it is scheduling.
    api.wait_until(lambda: context.objects.get("scheduling.volcano.sh/v1beta1", "Queue", "default"), 60,
                   "Volcano's default queue")
