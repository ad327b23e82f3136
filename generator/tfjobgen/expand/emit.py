"""How objects leave tfjobgen: kustomize's order, as YAML or as JSON.

`render` prints exactly what `kustomize build` would: objects in kustomize's
default ("legacy") order, each serialized like go-yaml does. The KRM function
answers in the same YAML: kustomize keeps a YAML object's styles, so the build
prints our bytes, and it reads YAML far faster than JSON, which it converts
twice (measured in docs/benchmarks.md).
"""

from __future__ import annotations

import json

from ..inputs import yamlstyle

# kustomize's legacy sort (api/builtins/SortOrderTransformer, default options).
_ORDER_FIRST = [
    "Namespace", "ResourceQuota", "StorageClass", "CustomResourceDefinition", "ServiceAccount",
    "PodSecurityPolicy", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding", "ConfigMap", "Secret",
    "Endpoints", "Service", "LimitRange", "PriorityClass", "PersistentVolume", "PersistentVolumeClaim",
    "Deployment", "StatefulSet", "CronJob", "PodDisruptionBudget",
]
_ORDER_LAST = ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"]
_RANK = {kind: i - len(_ORDER_FIRST) for i, kind in enumerate(_ORDER_FIRST)}
_RANK.update({kind: i + 1 for i, kind in enumerate(_ORDER_LAST)})


def _gvk(obj: dict) -> str:
    group, _, version = obj.get("apiVersion", "").rpartition("/")
    return "_".join((group or "~G", version or "~V", obj.get("kind") or "~K"))


def _kustomize_key(obj: dict) -> tuple:
    meta = obj.get("metadata", {})
    return (_RANK.get(obj.get("kind"), 0), _gvk(obj),
            f"{meta.get('namespace', 'default')}|{_gvk(obj)}|{meta.get('name', '')}")


def kustomize_order(objects: list[dict]) -> list[dict]:
    return sorted(objects, key=_kustomize_key)


def to_yaml(objects: list[dict]) -> str:
    """A multi-document stream, byte for byte as kustomize prints it."""
    return yamlstyle.write(objects)


def to_json(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
