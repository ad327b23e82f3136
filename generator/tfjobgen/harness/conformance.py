"""What a real controller made of a job, held to what the job's backend `decode` predicts.

Each backend's `decode` plays its controller: the pods it creates (names, labels, env) and the
Services. On a local cluster the controller itself runs (the Job controller, JobSet's, the
training-operator), so the prediction can be compared with the objects it created:

- the same pods, by name: a Job's pods are named `<job>-<index>-` plus the API server's five
  random characters (generateName), a TFJob's exactly as decode names them;
- each pod's labels and annotations as decode predicts them (those it cannot know, such as
  uids, aside: `unpredictable`), its hostname and subdomain;
- each pod's environment, expanded as the kubelet would (pods.resolve_env: KWOK runs no
  container), equal to decode's, TF_CONFIG byte for byte;
- the same Services by name, headless, with the same selector, ports and publishing of
  not-ready addresses.

Used by the cluster tier (tests/cluster/test_backends_real.py) and by the whole matrix
(benchmarks/real_controllers.py). `differences` returns sentences; none means conforming.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import backends
from ..backends.base import DecodedJob
from ..concerns import gang_schedulers, pods
from ..concerns.gang import KUEUE_QUEUE_LABEL, pod_set
from ..expand import pipeline
from ..inputs import source
from ..inputs.intents import Intent
from ..inputs.problems import has_errors
from ..kube import api
from ..place import place
from ..shared import contract
from . import gangs

# What the API server appends to a generateName (k8s.io/apiserver names.SimpleNameGenerator).
_RANDOM_SUFFIX = re.compile(r"^[bcdfghjklmnpqrstvwxz2456789]{5}$")
# Labels and annotations whose values only the cluster knows (uids of objects it created).
UNPREDICTABLE = ("batch.kubernetes.io/controller-uid", "controller-uid", "jobset.sigs.k8s.io/jobset-uid")
# Kinds of an add-on the conformance cluster does not run (kube-prometheus-stack): their CRDs are
# installed from a folder so that a job's every object is applied, as Argo CD would.
ADDON_CRDS = ("monitoring.coreos.com_podmonitors.yaml", "monitoring.coreos.com_prometheusrules.yaml")


# spec.gang of each gang setting the matrix runs (a cell's profile is the base profile with it): the
# gang schedulers on the default release. The coscheduler gives a waiting group back after 60 s, not
# the default 600, so a test of that ends in a test's time.
GANG_SETTINGS = {
    gangs.NONE: None,
    "volcano": gangs.SCHEDULERS["volcano"].settings,
    "scheduler-plugins": gangs.SCHEDULERS["scheduler-plugins"].with_settings(scheduleTimeoutSeconds=60).settings,
    "kueue": gangs.SCHEDULERS["kueue"].settings,
}


def profile_variant(base: Path, gang: str, folder: Path) -> Path:
    """`base`, or a copy of it in `folder` with spec.gang set as GANG_SETTINGS[gang] says."""
    import yaml

    if GANG_SETTINGS[gang] is None:
        return base
    variant = folder / f"{base.parent.name}-{gang}.yaml"
    if not variant.exists():
        data = yaml.safe_load(base.read_text())
        data["metadata"]["name"] = f"{data['metadata']['name']}-{gang}"
        data["spec"]["gang"] = GANG_SETTINGS[gang]
        variant.write_text(yaml.safe_dump(data, sort_keys=False))
    return variant


class Refused(Exception):
    """The job cannot be rendered on this backend and profile (one line: the first error)."""


def render(job_file: Path, profile_file: Path | None, backend: str, namespace: str) -> list[dict]:
    """The objects a job file becomes on `backend`, in `namespace` (the intent is copied, then changed)."""
    text = source.read_text(str(job_file))
    document = source.parse_documents(text, str(job_file))[0]
    data = json.loads(json.dumps(document.data))
    data["spec"]["backend"] = backend
    data["metadata"]["namespace"] = namespace
    expansion = pipeline.expand([Intent(data, str(job_file), document)],
                                pipeline.load_profile(str(profile_file) if profile_file else None))
    if has_errors(expansion.problems):
        raise Refused(next(p.message for p in expansion.problems if p.is_error))
    return expansion.in_order()


@dataclass
class Observed:
    """The objects of one namespace as the cluster holds them."""

    pods: list[dict]
    services: list[dict]
    config_maps: dict[tuple[str, str], dict] = field(default_factory=dict)


def observe(objects: api.Objects, namespace: str) -> Observed:
    config_maps = {(namespace, c["metadata"]["name"]): c.get("data") or {}
                   for c in objects.list("v1", "ConfigMap", namespace)}
    return Observed(objects.list("v1", "Pod", namespace), objects.list("v1", "Service", namespace), config_maps)


def real_env(pod: dict, config_maps: dict) -> tuple[dict[str, str], list[str]]:
    """The training container's environment as the kubelet would give it."""
    container = next(c for c in pod["spec"]["containers"] if c["name"] == contract.CONTAINER_NAME)
    return pods.resolve_env(container, pod, config_maps)


def host_of(pod: dict) -> str:
    """A pod's hostname: spec.hostname when set (a Job's Indexed pods), else its name (the kubelet's rule)."""
    return pod["spec"].get("hostname") or pod["metadata"]["name"]


def live(pod: dict) -> bool:
    return not pod["metadata"].get("deletionTimestamp") and pod.get("status", {}).get("phase") not in ("Succeeded", "Failed")


# What gang admission writes on the pods it admits, beside what the job's own controller writes.
KUEUE_PREFIX = "kueue.x-k8s.io/"
ASSIGNED = "<assigned by the cluster>"  # present, with a value only the cluster knows


def admission_marks(decoded: DecodedJob, gang: str) -> dict[str, tuple[dict, dict]]:
    """Per predicted pod (hostname): the labels and annotations the gang controllers add on admission.

    - Kueue, on every backend: the pod's LocalQueue (the workload object's queue-name label), its
      PodSet (`main` for a batch/v1 Job, the replicatedJob for a JobSet, the replica type for a
      TFJob: gang.pod_set), and the ClusterQueue and Workload it was admitted through (names Kueue makes);
    - the training-operator run with --gang-scheduler-name, for a TFJob with a schedulingPolicy: its
      PodGroup's name (the TFJob's) as Volcano's annotation with the replica type as Volcano's task,
      or as the coscheduling label;
    - the backend's controller, from what only the cluster knows (Backend.cluster_valued_pod_labels:
      JobSet 0.12's pod webhook labels each pod with its PriorityClass's value).
    Native and jobset pods carry their PodGroup marks in the template already (gang.pod_template).
    """
    marks: dict[str, tuple[dict, dict]] = {}
    queue = next(((o["metadata"].get("labels") or {}).get(KUEUE_QUEUE_LABEL) for o in decoded.objects
                  if (o["metadata"].get("labels") or {}).get(KUEUE_QUEUE_LABEL)), None)
    carrier = next((o for o in decoded.objects if o.get("kind") == "TFJob"), None)
    backend = backends.get(decoded.backend)
    one_object = backend.one_object
    chosen = gang_schedulers.SCHEDULERS[gang]
    for pod in decoded.pods:
        pod_labels, annotations = {}, {}
        pod_labels.update(dict.fromkeys(backend.cluster_valued_pod_labels, ASSIGNED))
        if chosen.admits_objects and queue:
            pod_labels.update({KUEUE_PREFIX + "local-queue-name": queue, KUEUE_PREFIX + "cluster-queue-name": ASSIGNED,
                               KUEUE_PREFIX + "podset": pod_set(pod.role, one_object)})
            annotations[KUEUE_PREFIX + "workload"] = ASSIGNED
        if carrier is not None and (carrier["spec"].get("runPolicy") or {}).get("schedulingPolicy"):
            if chosen.group_annotation:  # the operator names the replica type as the task
                annotations.update({chosen.group_annotation: decoded.name, chosen.task_annotation: pod.role})
            if chosen.group_label:
                pod_labels[chosen.group_label] = decoded.name
        marks[pod.hostname] = (pod_labels, annotations)
    return marks


def differences(decoded: DecodedJob, observed: Observed, gang: str = "none") -> list[str]:
    """Every way the real controller's pods and Services differ from decode's prediction (and, under
    a gang scheduler, what its admission adds: admission_marks)."""
    found = []
    real = {host_of(p): p for p in observed.pods if live(p)}
    predicted = {p.hostname: p for p in decoded.pods}
    for host in sorted(set(predicted) - set(real)):
        found.append(f"pod {host}: predicted, not created")
    for host in sorted(set(real) - set(predicted)):
        found.append(f"pod {real[host]['metadata']['name']}: created, not predicted")
    added = admission_marks(decoded, gang)
    for host in sorted(set(real) & set(predicted)):
        found += [f"pod {host}: {d}" for d in _pod_differences(predicted[host], real[host], observed.config_maps,
                                                               added.get(host, ({}, {})))]
    expected_services = {s["metadata"]["name"]: s for s in decoded.created + [
        o for o in decoded.objects if o.get("kind") == "Service" and o.get("apiVersion") == "v1"]}
    services = {s["metadata"]["name"]: s for s in observed.services}
    for name in sorted(set(expected_services) ^ set(services)):
        found.append(f"Service {name}: " + ("predicted, not created" if name in expected_services
                                            else "created, not predicted"))
    for name in sorted(set(expected_services) & set(services)):
        found += [f"Service {name}: {d}" for d in _service_differences(expected_services[name], services[name])]
    return found


def _pod_differences(predicted: pods.Pod, pod: dict, config_maps: dict,
                     admitted: tuple[dict, dict] = ({}, {})) -> list[str]:
    found = []
    name = pod["metadata"]["name"]
    if predicted.generate_name:
        suffix = name[len(predicted.generate_name):]
        if not (name.startswith(predicted.generate_name) and _RANDOM_SUFFIX.match(suffix)):
            found.append(f"named {name}, predicted {predicted.generate_name}<5 random characters>")
    elif name != predicted.hostname:
        found.append(f"named {name}, predicted {predicted.hostname}")
    if (pod["spec"].get("subdomain") or "") != predicted.subdomain:
        found.append(f"subdomain {pod['spec'].get('subdomain')!r}, predicted {predicted.subdomain!r}")
    for what, mine, theirs in (("label", {**predicted.labels, **admitted[0]}, pod["metadata"].get("labels") or {}),
                               ("annotation", {**predicted.annotations, **admitted[1]},
                                pod["metadata"].get("annotations") or {})):
        for key in sorted(set(mine) | set(theirs)):
            if key in UNPREDICTABLE or (mine.get(key) == ASSIGNED and theirs.get(key)):
                continue
            if mine.get(key) != theirs.get(key):
                found.append(f"{what} {key}={theirs.get(key)!r}, predicted {mine.get(key)!r}")
    env, unresolved = real_env(pod, config_maps)
    if env.get(contract.TF_CONFIG) != predicted.env.get(contract.TF_CONFIG):
        found.append(f"TF_CONFIG {env.get(contract.TF_CONFIG)!r}, predicted {predicted.env.get(contract.TF_CONFIG)!r}")
    for key in sorted((set(env) | set(predicted.env)) - {contract.TF_CONFIG}):
        if env.get(key) != predicted.env.get(key):
            found.append(f"env {key}={env.get(key)!r}, predicted {predicted.env.get(key)!r}")
    if sorted(unresolved) != sorted(predicted.unresolved):
        found.append(f"env the kubelet cannot resolve here: {unresolved}, predicted {predicted.unresolved}")
    return found


def _ports(service: dict) -> list[tuple]:
    return sorted((p.get("name", ""), int(p["port"]), int(p.get("targetPort", p["port"])), p.get("protocol", "TCP"))
                  for p in service["spec"].get("ports") or [])


def _service_differences(predicted: dict, real: dict) -> list[str]:
    found = []
    mine, theirs = predicted["spec"], real["spec"]
    if theirs.get("clusterIP") != mine.get("clusterIP"):
        found.append(f"clusterIP {theirs.get('clusterIP')!r}, predicted {mine.get('clusterIP')!r}")
    if bool(theirs.get("publishNotReadyAddresses")) != bool(mine.get("publishNotReadyAddresses")):
        found.append(f"publishNotReadyAddresses {bool(theirs.get('publishNotReadyAddresses'))}, predicted "
                     f"{bool(mine.get('publishNotReadyAddresses'))}")
    if (theirs.get("selector") or {}) != (mine.get("selector") or {}):
        found.append(f"selector {theirs.get('selector')}, predicted {mine.get('selector')}")
    if _ports(real) != _ports(predicted):
        found.append(f"ports {_ports(real)}, predicted {_ports(predicted)}")
    return found


# ---- applying and waiting --------------------------------------------------------------------

def install_addon_crds(objects: api.Objects, crd_folder: Path) -> None:
    """The CRDs of the kinds a job emits for add-ons the cluster does not run (monitoring)."""
    from ..cluster.controllers.base import install, load_yaml_files

    install(objects, [crd for name in ADDON_CRDS for crd in load_yaml_files(crd_folder / name)])


def apply(objects: api.Objects, rendered: list[dict]) -> None:
    """Server-side apply of every object, namespaces first (as Argo CD applies a rendered set)."""
    for namespace in sorted({o["metadata"]["namespace"] for o in rendered if o["metadata"].get("namespace")}):
        if objects.get("v1", "Namespace", namespace) is None:
            place.job_namespace(objects, namespace)
    for obj in rendered:
        objects.apply(obj, manager="tfjobgen")


def remove(objects: api.Objects, rendered: list[dict]) -> None:
    """Delete a job's objects, their pods with them (in the background, as `kubectl delete` does).

    Not its namespace: on Kubernetes 1.34 (ordered namespace deletion: pods first) a namespace
    deleted under running Jobs stayed Terminating for good on these clusters, every pod Failed and
    still holding the Job controller's batch.kubernetes.io/job-tracking finalizer.
    """
    for obj in reversed(rendered):
        objects.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace"),
                       body={"propagationPolicy": "Background"})


def wait_running(objects: api.Objects, namespace: str, count: int, timeout: float) -> float:
    """Seconds until `count` pods of the namespace are Running (TimeoutError naming how many are)."""
    started = time.monotonic()

    def running() -> bool:
        found = objects.list("v1", "Pod", namespace)
        return sum(p.get("status", {}).get("phase") == "Running" and live(p) for p in found) >= count

    api.wait_until(running, timeout, f"{count} pods Running in namespace {namespace}", interval=0.25)
    return time.monotonic() - started


def settled_differences(objects: api.Objects, namespace: str, decoded: DecodedJob,
                        timeout: float = 60, gang: str = "none") -> tuple[list[str], Observed]:
    """The differences once the controller has caught up (none), or those still there at the timeout.

    Pods Running is not the end of a controller's work: the training-operator creates each pod before
    its Service, and a 55-task TFJob was seen Running with 13 Services still to come.
    """
    deadline = time.monotonic() + timeout
    while True:
        observed = observe(objects, namespace)
        found = differences(decoded, observed, gang)
        if not found or time.monotonic() > deadline:
            return found, observed
        time.sleep(0.5)


def decoded_job(rendered: list[dict]) -> DecodedJob:
    (job,) = backends.decode(rendered)
    return job
