"""Validate rendered objects: built-in kinds with kubernetes-validate, custom resources with CRD schemas.

kubernetes-validate (strict) knows every built-in kind but no CRD. A custom
resource is checked against its CRD's `openAPIV3Schema`, converted to JSON
Schema the way kubeconform's openapi2jsonschema does it: `x-kubernetes-int-or-string`
becomes integer-or-string, `nullable` admits null, and objects that declare
their properties reject unknown ones unless `x-kubernetes-preserve-unknown-fields`.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import yaml

from ..inputs import source
from ..kit import crd_yaml

KUBERNETES_VERSION = "1.32"


def to_json_schema(node: Any, strict: bool = True) -> Any:
    """An OpenAPI v3 schema (from a CRD) as a JSON Schema draft 4 schema."""
    if isinstance(node, list):
        return [to_json_schema(item, strict) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: to_json_schema(value, strict) for key, value in node.items()
           if key not in ("nullable", "x-kubernetes-int-or-string", "format")}
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out = {"anyOf": [{"type": "integer"}, {"type": "string"}], **out}
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"] if isinstance(out["type"], str) else [*out["type"], "null"]
    if (strict and "properties" in node and "additionalProperties" not in node
            and not node.get("x-kubernetes-preserve-unknown-fields")):
        out["additionalProperties"] = False
    return out


def load(directory: Path) -> dict[tuple[str, str, str], dict]:
    """(group, version, kind) -> JSON Schema, for every CRD document in the folder's YAML files."""
    schemas = {}
    for path in sorted(directory.glob("*.yaml")) + sorted(directory.glob("*.yml")):
        text = source.read_text(str(path), source.MAX_STREAM_BYTES)  # the one reader: regular files, bounded
        for document in yaml.load_all(text, Loader=crd_yaml.Loader):
            if not isinstance(document, dict) or document.get("kind") != "CustomResourceDefinition":
                continue
            spec = document["spec"]
            for version in spec.get("versions", []):
                schema = (version.get("schema") or {}).get("openAPIV3Schema")
                if schema:
                    key = (spec["group"], version["name"], spec["names"]["kind"])
                    schemas[key] = to_json_schema(schema)
    return schemas


def crd_errors(obj: dict, schemas: dict[tuple[str, str, str], dict]) -> list[str] | None:
    """Errors of a custom resource against its CRD (None: no CRD for its kind)."""
    group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
    schema = schemas.get((group, version, str(obj.get("kind", ""))))
    if schema is None:
        return None
    validator = _validator(json.dumps(schema, sort_keys=True))
    return [f"{'.'.join(str(p) for p in error.absolute_path) or '(root)'}: {error.message}"
            for error in sorted(validator.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path)))]


@functools.lru_cache(maxsize=64)
def _validator(schema_json: str):
    import jsonschema

    return jsonschema.Draft4Validator(json.loads(schema_json))


def builtin_errors(obj: dict) -> list[str] | None:
    """Errors of a built-in object under kubernetes-validate --strict (None: it has no schema for it)."""
    import kubernetes_validate

    try:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.SchemaNotFoundError:
        return None
    except kubernetes_validate.ValidationError as err:
        path = ".".join(str(p) for p in err.path) or "(root)"
        return [f"{path}: {err.message}"]
    return []


def validate(objects: list[dict], schemas: dict | None = None) -> list[tuple[dict, str, str]]:
    """(object, severity, message) for every problem: schema errors are errors, a kind with no schema
    at all is one warning."""
    problems, unknown, seen = [], set(), set()
    for obj in objects:
        fingerprint = json.dumps(obj, sort_keys=True)
        if fingerprint in seen:
            continue
        seen.add(fingerprint)
        errors = crd_errors(obj, schemas or {})
        if errors is None:
            errors = builtin_errors(obj)
        if errors is None:
            kind = (obj.get("apiVersion"), obj.get("kind"))
            if kind not in unknown:
                unknown.add(kind)
                problems.append((obj, "warning", f"no schema for {obj.get('kind')} ({obj.get('apiVersion')}): "
                                                 "pass its CRD folder with --crds to validate it"))
            continue
        problems += [(obj, "error", message) for message in errors]
    return problems
