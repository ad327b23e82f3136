"""Kueue (sigs.k8s.io/kueue), for profiles whose spec.gang.scheduler is kueue.

Kueue admits a whole Workload against a ClusterQueue's quota: its webhooks suspend every JobSet,
TFJob or batch/v1 Job that names a LocalQueue (the label kueue.x-k8s.io/queue-name), and it
unsuspends the object once all of its PodSets fit. Its webhooks are therefore required; they,
and the conversion webhooks of its CRDs (v1beta1 and v1beta2 are both served), are served on
127.0.0.1 with a certificate of the cluster's CA and registered by URL.

What `cluster up` creates for it: the ResourceFlavor `default` and the ClusterQueue `tfjobgen`,
whose quota is everything the nodes can allocate (CPU, memory and every extended resource), for
every namespace; and the LocalQueue the profile names (spec.gang.queue) in namespace `default`.
When the profile says its Kueue is topology-aware (spec.gang.topologyAware), also the Topology
`tfjobgen` of one level, kubernetes.io/hostname, which the flavor names: Kueue then admits a job
only once it has found every pod a server (and pins the pod there), not merely quota. A flavor
with a Topology must select nodes by label (a CEL rule of its CRD); every node, KWOK's and a
kubelet's, has kubernetes.io/os: linux. Every flavor of the ClusterQueue then has a Topology, and
Kueue places every Workload of it on servers, annotated or not (TAS "implied"; tfjobgen's JobSets
and TFJobs carry the annotation all the same, gang.pod_set_template).
A LocalQueue is namespaced and belongs with the namespace, as the ClusterQueue it draws on belongs
with the cluster: tfjobgen names it on every job and emits none (two jobs of a namespace would
emit it twice). A namespace made later gets it from `local_queue(profile, namespace)`, as
tests/cluster/cluster_support.py's `LocalCluster.namespace` does.
"""

from __future__ import annotations

import base64
import os
import shutil
from fractions import Fraction
from pathlib import Path

from ...artifacts import programs
from ...concerns import gang_schedulers
from ...inputs import quantity
from ...kube import api
from ..context import Context
from .base import install, load_yaml_files, manager_settings, start_manager

NAME = "kueue"
PROGRAMS = ["kueue"]
API = "kueue.x-k8s.io/v1beta2"
NAMESPACE = "kueue-system"  # its own namespace (events, MultiKueue secrets), as upstream installs it
FLAVOR, CLUSTER_QUEUE, TOPOLOGY = "default", "tfjobgen", "tfjobgen"
SERVER_LEVEL = "kubernetes.io/hostname"  # TAS's lowest level: a domain is one server
EVERY_NODE = {"kubernetes.io/os": "linux"}  # what a TAS flavor selects nodes by (it must name one label)
# What tfjobgen's backends emit. Kueue 0.19's shipped config leaves kubeflow.org/tfjob out (its built-in default
# is batch/job alone): a TFJob it does not manage runs unqueued, so ours names it (tfjob.check warns of
# the others).
FRAMEWORKS = ["batch/job", "jobset.x-k8s.io/jobset", "kubeflow.org/tfjob"]
# Webhooks of Kueue's own kinds and of the integrations above; the others would only answer for
# kinds we never create (Kueue serves them as no-ops), and each is one more call per object.
WEBHOOK_PATHS = ("kueue-x-k8s-io", "-batch-v1-job", "-jobset-x-k8s-io-", "-kubeflow-org-v1-tfjob")
# With internalCertManagement off, Kueue (0.17 to 0.19) reads its metrics server's certificate from this fixed
# path (cmd/kueue/main.go; no setting moves it) and exits when it is missing. One pair there serves
# every local cluster: nothing scrapes the metrics, so whose CA signed it does not matter.
METRICS_CERTS = Path("/etc/kueue/metrics/certs")
CONVERTED = ("localqueues", "clusterqueues", "cohorts", "workloads", "multikueueclusters")  # config/components/crd/patches


def wanted(profile) -> bool:
    return gang_schedulers.runs(profile, __name__)


def start(context: Context) -> None:
    family = programs.family_of("kueue")
    webhook_port, health_port, metrics_port = context.ports("webhook", "health", "metrics")
    bundle = base64.b64encode(context.ca.cert.read_bytes()).decode()
    crds = load_yaml_files(family.asset("config/components/crd/bases"))
    for crd in crds:
        if crd["metadata"]["name"].split(".")[0] in CONVERTED:
            crd["spec"]["conversion"] = {"strategy": "Webhook", "webhook": {
                "clientConfig": {"url": f"https://127.0.0.1:{webhook_port}/convert", "caBundle": bundle},
                "conversionReviewVersions": ["v1"]}}
    install(context.objects, crds + [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}])
    certificates = context.serving_certificate(NAME)
    _metrics_certificate(certificates)
    configuration = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
        "namespace": NAMESPACE,
        **manager_settings(webhook_port, health_port, metrics_port, certificates),
        "integrations": {"frameworks": FRAMEWORKS},
        # waitForPodsReady left out: Kueue 0.19 then evicts and requeues a Workload whose pods are not all
        # Ready 30 minutes after admission, as a stock install does (docs/schedulers.md, gang admission).
        # The visibility API server would listen on every address (port 8082) and wants an APIService.
        "featureGates": {"VisibilityOnDemand": False},
    }
    config_file = context.write_config("kueue.json", configuration)
    start_manager(context, NAME, "kueue", config_file, webhook_port, health_port)
    manifests = load_yaml_files(family.asset("config/components/webhook/manifests.yaml"))
    for configuration_object in manifests:
        configuration_object["webhooks"] = [
            w for w in configuration_object.get("webhooks", [])
            if any(part in w["clientConfig"]["service"]["path"] for part in WEBHOOK_PATHS)]
    context.register_webhooks(manifests, webhook_port, NAME)
    for obj in queues(context.profile, nodes=context.objects.list("v1", "Node")):
        # Kueue's own webhooks validate these: they answer once its caches have synced.
        api.wait_until(lambda obj=obj: context.objects.apply(obj, manager="tfjobgen-cluster"), 60,
                       f"{obj['kind']} {obj['metadata']['name']} accepted")
    api.wait_until(lambda: _active(context.objects.get(API, "ClusterQueue", CLUSTER_QUEUE)), 60,
                   f"ClusterQueue {CLUSTER_QUEUE} Active")
    api.wait_until(lambda: _suspends_queued_jobs(context.objects, context.profile), 60,
                   "Kueue's webhook suspending a queued Job")


def _suspends_queued_jobs(objects: api.Objects, profile) -> bool:
    """Whether a Job naming the LocalQueue comes back suspended from a dry run. The API server takes
    webhook configurations up from a watch, later than they are written: a job created before then
    skips Kueue's webhook and runs unsuspended, over quota."""
    probe = {"apiVersion": "batch/v1", "kind": "Job",
             "metadata": {"name": "tfjobgen-kueue-probe", "namespace": "default",
                          "labels": {gang_schedulers.SCHEDULERS[NAME].queue_label: profile.gang.queue}},
             "spec": {"template": {"spec": {"restartPolicy": "Never",
                                            "containers": [{"name": "probe", "image": "probe"}]}}}}
    created = objects.create(probe, dry_run="All")
    return bool(created.to_dict()["spec"].get("suspend"))


def _metrics_certificate(certificates: Path) -> None:
    """Our webhook pair, copied to METRICS_CERTS (each file replaced whole: another cluster may be reading)."""
    METRICS_CERTS.mkdir(parents=True, exist_ok=True)
    for name in ("tls.crt", "tls.key"):
        staged = METRICS_CERTS / f".{name}.{os.getpid()}"
        shutil.copyfile(certificates / name, staged)
        staged.chmod(0o600)
        staged.replace(METRICS_CERTS / name)


def queues(profile, nodes: list[dict]) -> list[dict]:
    """The ResourceFlavor (with its Topology when the profile's Kueue is topology-aware), the ClusterQueue
    covering every node's allocatable, and the LocalQueue in `default`."""
    totals: dict[str, Fraction] = {}
    for node in nodes:
        for resource, amount in ((node.get("status") or {}).get("allocatable") or {}).items():
            if resource in ("cpu", "memory") or "/" in resource:  # not pods, ephemeral-storage, hugepages
                totals[resource] = totals.get(resource, Fraction(0)) + quantity.parse(amount)
    covered = sorted(totals)
    flavor = {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": FLAVOR}, "spec": {}}
    topology = []
    if profile.gang.topology_aware:
        topology = [{"apiVersion": API, "kind": "Topology", "metadata": {"name": TOPOLOGY},
                     "spec": {"levels": [{"nodeLabel": SERVER_LEVEL}]}}]
        flavor["spec"] = {"nodeLabels": dict(EVERY_NODE), "topologyName": TOPOLOGY}
    cluster_queue = {
        "apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": CLUSTER_QUEUE},
        "spec": {"namespaceSelector": {}, "resourceGroups": [{
            "coveredResources": covered,
            "flavors": [{"name": FLAVOR, "resources": [
                {"name": r, "nominalQuota": _quantity(r, totals[r])} for r in covered]}]}]},
    }
    return topology + [flavor, cluster_queue, local_queue(profile, "default")]


def local_queue(profile, namespace: str) -> dict:
    """The LocalQueue a profile's jobs name (spec.gang.queue), in `namespace`, on the ClusterQueue."""
    return {"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": profile.gang.queue, "namespace": namespace},
            "spec": {"clusterQueue": CLUSTER_QUEUE}}


def open_queue(objects: api.Objects, profile, namespace: str) -> None:
    """When the profile queues with Kueue, its LocalQueue in `namespace` (which must exist): Kueue admits
    nothing from a namespace without it. Retried while Kueue's webhook is still starting."""
    if wanted(profile):
        queue = local_queue(profile, namespace)
        api.wait_until(lambda: objects.apply(queue), 60, f"LocalQueue {namespace}/{profile.gang.queue}")


def _quantity(resource: str, amount: Fraction) -> str:
    if resource == "cpu":
        return quantity.cpu_text(amount)
    return str(int(amount))


def _active(queue: dict | None) -> bool:
    conditions = ((queue or {}).get("status") or {}).get("conditions") or []
    return any(c["type"] == "Active" and c["status"] == "True" for c in conditions)
