"""What Kubernetes makes of a pod template: the pod, with its env resolved as the kubelet does.

Backends emulate their controllers with `make_pod` (`job_pods` is the Job
controller, which JobSet's child Jobs go through too):

- an Indexed Job gets one pod per index, hostname `<job-name>-<index>`, the
  annotation and label batch.kubernetes.io/job-completion-index, and the env
  var JOB_COMPLETION_INDEX appended to each container; with backoffLimitPerIndex
  also the annotation batch.kubernetes.io/job-index-failure-count (0 on a first pod);
- env entries resolve in order (`resolve_env`, the one kubelet-style expander: decode
  uses it on the pods it predicts, the cluster tier on the pods a real controller
  created): `value` with `$(VAR)` expanded from earlier entries (`$$` escapes, unknown
  references stay as written), `configMapKeyRef` from the ConfigMaps given, `fieldRef`
  from the pod (an absent label or annotation gives "", as the kubelet's downward API
  does; spec and status fields only once the pod has them);
- command and args get the same `$(VAR)` expansion.

`tfjobgen run-local` starts these pods as processes; the tests check that every
TF_CONFIG names exactly the pod it is in, here and on pods real controllers created.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field

from . import labels

_REFERENCE = re.compile(r"\$\$|\$\(([-._a-zA-Z][-._a-zA-Z0-9]*)\)")
_FIELD = re.compile(r"^metadata\.(annotations|labels)\['([^']+)'\]$")


@dataclass
class Pod:
    owner: str  # the object whose controller created it (a Job's name, say)
    namespace: str
    hostname: str
    subdomain: str
    labels: dict[str, str]
    annotations: dict[str, str]
    spec: dict  # the pod spec, containers' env resolved to plain values
    env: dict[str, str] = field(default_factory=dict)  # the training container's resolved env
    unresolved: list[str] = field(default_factory=list)  # env it could not resolve (secrets)
    index: int = 0  # the task's index within its role
    # The Job controller names its pods by generateName (`<job>-<index>-` on an Indexed Job, `<job>-`
    # otherwise) and the API server adds 5 random characters; "" when the pod is named `hostname`.
    generate_name: str = ""

    @property
    def role(self) -> str:
        return self.labels.get(labels.ROLE, "")

    @property
    def task(self) -> str:
        """role:index, as the runtime and run-local name tasks."""
        return f"{self.role}:{self.index}"

    @property
    def container(self) -> dict:
        return self.spec["containers"][0]


def expand_references(text: str, known: dict[str, str]) -> str:
    """Kubernetes' $(VAR) expansion: known names replaced, $$ -> $, anything else kept."""
    def replace(match: re.Match) -> str:
        if match.group(0) == "$$":
            return "$"
        return known.get(match.group(1), match.group(0))

    return _REFERENCE.sub(replace, text)


# The downward API's fields the kubelet resolves besides labels and annotations (pkg/kubelet podFieldSelectorRuntimeValue).
_POD_FIELDS = {"metadata.name": ("metadata", "name"), "metadata.namespace": ("metadata", "namespace"),
               "metadata.uid": ("metadata", "uid"), "spec.nodeName": ("spec", "nodeName"),
               "spec.serviceAccountName": ("spec", "serviceAccountName"), "status.hostIP": ("status", "hostIP"),
               "status.podIP": ("status", "podIP")}


def _field(pod: dict, path: str) -> str | None:
    match = _FIELD.match(path)
    if match:
        return (pod.get("metadata", {}).get(match.group(1)) or {}).get(match.group(2), "")
    part, key = _POD_FIELDS.get(path, ("", ""))
    return (pod.get(part) or {}).get(key) if part else None


def resolve_env(container: dict, pod: dict, config_maps: dict) -> tuple[dict[str, str], list[str]]:
    """A container's environment as the kubelet gives it: (name -> value, names it could not resolve).

    `pod` is a pod object (metadata with namespace, spec, status as far as known); `config_maps`
    maps (namespace, name) to a ConfigMap's data. Secrets and resource fields are never resolved.
    """
    namespace = pod.get("metadata", {}).get("namespace", "")
    known: dict[str, str] = {}
    missing = []
    for entry in container.get("env", []):
        name, source = entry["name"], entry.get("valueFrom")
        if source is None:
            known[name] = expand_references(entry.get("value", ""), known)
        elif "configMapKeyRef" in source:
            ref = source["configMapKeyRef"]
            data = config_maps.get((namespace, ref["name"]), {})
            if ref["key"] in data:
                known[name] = data[ref["key"]]
            else:
                missing.append(name)
        elif "fieldRef" in source:
            value = _field(pod, source["fieldRef"]["fieldPath"])
            if value is None:
                missing.append(name)
            else:
                known[name] = value
        else:
            missing.append(name)  # secrets and resource fields do not exist outside a cluster
    return known, missing


def make_pod(owner: str, namespace: str, template: dict, config_maps: dict, *, index: int,
             hostname: str, subdomain: str = "", extra_labels: dict | None = None,
             extra_annotations: dict | None = None, extra_env: list[dict] | None = None,
             generate_name: str = "") -> Pod:
    """The pod a controller creates from `template`: its metadata as the controller adds it, env resolved."""
    template = copy.deepcopy(template)
    meta = {"labels": {**template.get("metadata", {}).get("labels", {}), **(extra_labels or {})},
            "annotations": {**template.get("metadata", {}).get("annotations", {}), **(extra_annotations or {})}}
    spec = template["spec"]
    spec.setdefault("hostname", hostname)
    if subdomain:
        spec.setdefault("subdomain", subdomain)
    meta["name"] = spec["hostname"]
    for container in spec.get("containers", []):
        container.setdefault("env", []).extend(copy.deepcopy(extra_env or []))
    unresolved: list[str] = []
    env: dict[str, str] = {}
    pod = {"metadata": {**meta, "namespace": namespace}, "spec": spec}
    for position, container in enumerate(spec.get("containers", [])):
        resolved, missing = resolve_env(container, pod, config_maps)
        container["env"] = [{"name": k, "value": v} for k, v in resolved.items()]
        for key in ("command", "args"):
            if key in container:
                container[key] = [expand_references(arg, resolved) for arg in container[key]]
        if position == 0:
            env, unresolved = resolved, missing
    return Pod(owner, namespace, spec["hostname"], spec.get("subdomain", ""), meta["labels"], meta["annotations"],
               spec, env, unresolved, index, generate_name)


def job_pods(job: dict, config_maps: dict, extra_labels: dict | None = None,
             extra_annotations: dict | None = None) -> list[Pod]:
    """The pods the Job controller creates for one batch/v1 Job (Indexed: one per completion index)."""
    name, namespace = job["metadata"]["name"], job["metadata"].get("namespace", "")
    template, spec = job["spec"]["template"], job["spec"]
    # Both names of the job label: Kubernetes 1.34 still sets the legacy one beside the prefixed one.
    common_labels = {"batch.kubernetes.io/job-name": name, "job-name": name, **(extra_labels or {})}
    if spec.get("completionMode") != "Indexed":
        task_labels = template.get("metadata", {}).get("labels", {})
        return [make_pod(name, namespace, template, config_maps, index=int(task_labels.get(labels.INDEX, 0)),
                         hostname=name, extra_labels=common_labels, extra_annotations=extra_annotations,
                         generate_name=f"{name}-")]
    pods = []
    for i in range(spec.get("completions", 1)):
        index = {labels.JOB_COMPLETION_INDEX: str(i)}
        failures = {labels.JOB_INDEX_FAILURE_COUNT: "0"} if "backoffLimitPerIndex" in spec else {}
        pods.append(make_pod(name, namespace, template, config_maps, index=i, hostname=f"{name}-{i}",
                             extra_labels={**common_labels, **index},
                             extra_annotations={**(extra_annotations or {}), **index, **failures},
                             extra_env=[{"name": "JOB_COMPLETION_INDEX", "value": str(i)}],
                             generate_name=f"{name}-{i}-"))
    return pods
