"""What Kubernetes makes of rendered Jobs: one pod per task, with its env resolved.

This follows the Job controller and the kubelet closely enough to run or
check a job without a cluster:

- an Indexed Job gets one pod per index, hostname `<job-name>-<index>`, the
  annotation and label batch.kubernetes.io/job-completion-index, and the env
  var JOB_COMPLETION_INDEX appended to each container;
- env entries resolve in order: `value` with `$(VAR)` expanded from earlier
  entries (`$$` escapes, unknown references stay as written), `configMapKeyRef`
  from the rendered ConfigMaps, `fieldRef` from the pod's metadata;
- command and args get the same `$(VAR)` expansion.

`tfjobgen run-local` starts these pods as processes; the tests use them to
check that every TF_CONFIG names exactly the pod it is in.
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
    job_name: str  # the batch/v1 Job that owns it
    namespace: str
    hostname: str
    subdomain: str
    labels: dict[str, str]
    annotations: dict[str, str]
    spec: dict  # the pod spec, containers' env resolved to plain values
    env: dict[str, str] = field(default_factory=dict)  # the training container's resolved env
    unresolved: list[str] = field(default_factory=list)  # env it could not resolve (secrets)

    @property
    def role(self) -> str:
        return self.labels.get(labels.ROLE, "")

    @property
    def index(self) -> int:
        return int(self.labels.get(labels.INDEX) or self.labels.get(labels.JOB_COMPLETION_INDEX) or 0)

    @property
    def fqdn(self) -> str:
        return f"{self.hostname}.{self.subdomain}.{self.namespace}.svc"

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


def _resolve_env(container: dict, meta: dict, config_maps: dict, namespace: str) -> tuple[dict, list[str]]:
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
            path = source["fieldRef"]["fieldPath"]
            match = _FIELD.match(path)
            value = meta.get(match.group(1), {}).get(match.group(2)) if match else \
                {"metadata.name": meta.get("name"), "metadata.namespace": namespace}.get(path)
            if value is None:
                missing.append(name)
            else:
                known[name] = value
        else:
            missing.append(name)  # secrets and resource fields do not exist outside a cluster
    return known, missing


def _pod(job: dict, index: int | None, config_maps: dict) -> Pod:
    template = copy.deepcopy(job["spec"]["template"])
    meta = {"labels": dict(template.get("metadata", {}).get("labels", {})),
            "annotations": dict(template.get("metadata", {}).get("annotations", {}))}
    spec = template["spec"]
    namespace = job["metadata"]["namespace"]
    meta["labels"]["batch.kubernetes.io/job-name"] = job["metadata"]["name"]
    if index is not None:
        meta["annotations"][labels.JOB_COMPLETION_INDEX] = str(index)
        meta["labels"][labels.JOB_COMPLETION_INDEX] = str(index)
        spec.setdefault("hostname", f"{job['metadata']['name']}-{index}")
        for container in spec.get("containers", []):
            container.setdefault("env", []).append({"name": "JOB_COMPLETION_INDEX", "value": str(index)})
    meta["name"] = spec.get("hostname", job["metadata"]["name"])
    unresolved: list[str] = []
    env: dict[str, str] = {}
    for position, container in enumerate(spec.get("containers", [])):
        resolved, missing = _resolve_env(container, meta, config_maps, namespace)
        container["env"] = [{"name": k, "value": v} for k, v in resolved.items()]
        for key in ("command", "args"):
            if key in container:
                container[key] = [expand_references(arg, resolved) for arg in container[key]]
        if position == 0:
            env, unresolved = resolved, missing
    return Pod(job["metadata"]["name"], namespace, spec.get("hostname", ""), spec.get("subdomain", ""),
               meta["labels"], meta["annotations"], spec, env, unresolved)


def from_objects(objects: list[dict]) -> list[Pod]:
    """Every pod the Jobs among `objects` would create, in object order."""
    config_maps = {(o["metadata"].get("namespace", ""), o["metadata"]["name"]): o.get("data", {})
                   for o in objects if o.get("kind") == "ConfigMap"}
    pods = []
    for obj in objects:
        if obj.get("kind") != "Job" or obj.get("apiVersion") != "batch/v1":
            continue
        if obj["spec"].get("completionMode") == "Indexed":
            pods += [_pod(obj, i, config_maps) for i in range(obj["spec"].get("completions", 1))]
        else:
            pods.append(_pod(obj, None, config_maps))
    return pods
