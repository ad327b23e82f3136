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
import re
from pathlib import Path
from typing import Any

from ..inputs import source
from ..inputs.problems import InvalidInput, Problem

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
    """(group, version, kind) -> JSON Schema, for every CRD document in the folder's YAML files.

    The folder is input like a job file: read by inputs/source.py's one safe reader (regular files, bounded
    size and nesting, anchors and aliases refused: a "billion laughs" would expand while converted), and
    InvalidInput, one located line, for a folder that is not there or a CRD whose fields have the wrong shape.
    """
    if not directory.is_dir():
        raise InvalidInput([Problem("--crds names no folder (give the folder of the CustomResourceDefinition "
                                    "YAML files, such as ../shared/crds)", file=str(directory))])
    schemas = {}
    for path in sorted(directory.glob("*.yaml")) + sorted(directory.glob("*.yml")):
        text = source.read_text(str(path), source.MAX_STREAM_BYTES)
        for index, document in enumerate(source.parse_stream(text, str(path))):
            if not isinstance(document, dict) or document.get("kind") != "CustomResourceDefinition":
                continue
            try:
                schemas.update(_schemas_of(document))
            except _Shape as wrong:  # located only now: a line map costs more than the fast reader
                at = source.parse_documents(text, str(path))[index].line_of(wrong.field)
                raise InvalidInput([Problem(str(wrong), wrong.field, file=str(path), line=at)]) from None
    return schemas


class _Shape(ValueError):
    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def _schemas_of(crd: dict) -> dict[tuple[str, str, str], dict]:
    """A CRD's schemas by (group, version, kind); _Shape when a field they need has the wrong type."""
    def mapping(value, at: str) -> dict:
        if not isinstance(value, dict):
            raise _Shape(at, f"a CustomResourceDefinition's {at.rpartition('.')[2]} is a mapping, not {value!r}")
        return value

    def text(value, at: str) -> str:
        if not isinstance(value, str) or not value:
            raise _Shape(at, f"a CustomResourceDefinition's {at} is a non-empty string, not {value!r}")
        return value

    spec = mapping(crd.get("spec"), "spec")
    group = text(spec.get("group"), "spec.group")
    kind = text(mapping(spec.get("names"), "spec.names").get("kind"), "spec.names.kind")
    versions = spec.get("versions", [])
    if not isinstance(versions, list):
        raise _Shape("spec.versions", f"a CustomResourceDefinition's spec.versions is a list, not {versions!r}")
    found = {}
    for index, version in enumerate(versions):
        version = mapping(version, f"spec.versions[{index}]")
        schema = mapping(version.get("schema") or {}, f"spec.versions[{index}].schema").get("openAPIV3Schema")
        if schema:
            mapping(schema, f"spec.versions[{index}].schema.openAPIV3Schema")
            found[(group, text(version.get("name"), f"spec.versions[{index}].name"), kind)] = to_json_schema(schema)
    return found


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
    """Errors of a built-in object under kubernetes-validate --strict (None: it has no schema for it): the first
    error, as kubernetes_validate.validate raises it."""
    validator = _builtin_validator(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
    if validator is None:
        return None
    error = next(iter(validator.iter_errors(obj)), None)
    if error is None:
        return []
    return [f"{'.'.join(str(p) for p in error.path) or '(root)'}: {error.message}"]


# kubernetes_validate.validate finds, reads and parses its schemas again for every object, the 1.3 MB of
# shared definitions included: about 110 objects a second. These are the same schemas under the same draft,
# each read and compiled once per process (tests/gitops/test_crds.py holds the two to one verdict).
_GROUP_DOMAIN = re.compile(r"^([^./]*)(?:\.[^/]*)?/")  # rbac.authorization.k8s.io/v1 -> rbac-v1, as its files are named


@functools.lru_cache(maxsize=None)
def _builtin_validator(api_version: str, kind: str):
    import jsonschema
    from referencing import Registry, Resource

    folder = _strict_schemas()
    group_version = _GROUP_DOMAIN.sub(r"\1-", api_version)
    schema = _schema_file(f"{folder}/{kind.lower()}-{group_version}.json")
    if schema is None:
        return None
    registry = Resource.from_contents(_schema_file(f"{folder}/_definitions.json")) @ (
        Resource.from_contents(schema) @ Registry())
    return jsonschema.validators.Draft202012Validator(schema, registry=registry)


@functools.lru_cache(maxsize=None)
def _strict_schemas() -> str:
    """kubernetes-validate's folder of strict schemas for KUBERNETES_VERSION: its newest release not newer."""
    from kubernetes_validate import utils

    wanted = utils.major_minor(KUBERNETES_VERSION)
    release = [v for v in utils.all_versions() if utils.major_minor(v) <= wanted][-1]
    return f"kubernetes-json-schema/v{release}-local-strict"


@functools.lru_cache(maxsize=None)
def _schema_file(name: str) -> dict | None:
    from kubernetes_validate import utils

    try:
        return utils.schema_contents(name, KUBERNETES_VERSION)
    except FileNotFoundError:
        return None


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
