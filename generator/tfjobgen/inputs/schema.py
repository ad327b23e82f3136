"""The JSON Schemas in schemas/: loading, validating, and filling in defaults.

The schemas are the single source of truth for the intent and the profile:
editors and pre-commit read the same files. jsonschema's own messages are
written for schema authors ("'replica' does not match any of the regexes"), so
`check` rewrites each error into what is wrong and what would be right.

Speed: the function checks every intent of every build, and importing jsonschema
costs more than the rest of a cold start together (docs/benchmarks.md). So `check`
first asks schema_fast.valid, a yes/no evaluation of the few keywords these schemas use,
and imports jsonschema only to explain an invalid document.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import os
from types import MappingProxyType
from typing import Any, Mapping

from . import schema_fast
from .problems import Problem, field_path

TRAINING_JOB = "trainingjob"
CLUSTER_PROFILE = "clusterprofile"


def _schema_dir() -> str:
    """schemas/ inside an installed wheel, else the repository's own (shared/package_data.py: the one lookup)."""
    from ..shared import package_data

    return package_data.find("schemas")


@functools.cache
def load(name: str) -> dict:
    with open(schema_path(name), encoding="utf-8") as handle:
        return json.load(handle)


def schema_path(name: str) -> str:
    return os.path.join(_schema_dir(), f"{name}.schema.json")


@functools.cache
def _validator(name: str):
    import jsonschema  # deferred: only paid for when something is validated

    return jsonschema.Draft202012Validator(load(name))


def check(document: Any, name: str, written: Mapping[str, str] = MappingProxyType({})) -> list[Problem]:
    """Every schema violation in `document`, one Problem per field, in document order. `written`: the text of
    scalars as the user wrote them, by field (source.Document.written), for advice that quotes them."""
    root = load(name)
    not_finite = _not_finite(document, root)
    if not not_finite and schema_fast.valid(document, root) is True:
        return []
    problems: dict[str, Problem] = {p.field: p for p in not_finite}  # one problem per field: this one
    suggested: set[str] = set()  # fields a "did you mean" already points at
    for error in _validator(name).iter_errors(document):
        for leaf in _leaves(error):
            problem, suggestion = _explain(leaf, load(name), written)
            if problem.field not in problems:
                problems.setdefault(problem.field + problem.message, problem)
            if suggestion:
                suggested.add(suggestion)
    # `replica: 2` is one mistake: "did you mean 'replicas'" says it; "missing 'replicas'" would repeat it.
    kept = [p for p in problems.values() if not (p.message.startswith("missing required") and p.field in suggested)]
    return sorted(kept, key=lambda p: p.field)


def _not_finite(document: Any, root: dict) -> list[Problem]:
    """YAML's .nan and .inf, which no JSON Schema keyword refuses (NaN compares false with every bound)
    and Kubernetes cannot hold (JSON has neither): one problem per such value, with the field's hint."""
    found, stack = [], [(document, (), root)]
    while stack:
        value, path, subschema = stack.pop()
        subschema = _resolve(subschema, root) if isinstance(subschema, dict) else {}
        if isinstance(value, float) and not math.isfinite(value):
            hint = subschema.get("x-hint")
            shown = ".nan" if math.isnan(value) else ".inf" if value > 0 else "-.inf"
            found.append(Problem(f"{shown} is not a number Kubernetes can hold (JSON has no NaN or infinity): "
                                 + (f"expected {hint}" if hint else "write a finite number"), field_path(*path)))
        elif isinstance(value, (dict, list)):
            if isinstance(value, dict):
                known, extra = subschema.get("properties", {}), subschema.get("additionalProperties")
                stack += [(v, path + (k,), known.get(k, extra if isinstance(extra, dict) else {}))
                          for k, v in value.items()]
            else:
                items = subschema.get("items")
                stack += [(v, path + (i,), items if isinstance(items, dict) else {}) for i, v in enumerate(value)]
    return sorted(found, key=lambda p: p.field)


def with_defaults(document: dict, name: str) -> dict:
    """A copy of a valid `document` with every schema default filled in."""
    root = load(name)
    result = copy.deepcopy(document)
    _fill(result, root, root)
    return result


def _resolve(subschema: dict, root: dict) -> dict:
    """Merge a local `$ref` target with the keywords written beside it."""
    if "$ref" not in subschema:
        return subschema
    target = root
    for part in subschema["$ref"].removeprefix("#/").split("/"):
        target = target[part]
    merged = dict(_resolve(target, root))
    for key, value in subschema.items():
        if key == "properties":
            merged["properties"] = {**merged.get("properties", {}), **value}
        elif key == "required":  # both lists apply, as with allOf
            merged["required"] = sorted(set(merged.get("required", [])) | set(value))
        elif key != "$ref":
            merged[key] = value
    return merged


def _fill(value: Any, subschema: dict, root: dict) -> None:
    subschema = _resolve(subschema, root)
    if isinstance(value, dict):
        for key, prop in subschema.get("properties", {}).items():
            prop = _resolve(prop, root)
            if key not in value and "default" in prop:
                value[key] = copy.deepcopy(prop["default"])
            if key in value:
                value[key] = _integral(value[key], prop)
                _fill(value[key], prop, root)
        extra = subschema.get("additionalProperties")
        if isinstance(extra, dict):
            for key in value.keys() - subschema.get("properties", {}).keys():
                value[key] = _integral(value[key], _resolve(extra, root))
                _fill(value[key], extra, root)
    elif isinstance(value, list) and isinstance(subschema.get("items"), dict):
        items = _resolve(subschema["items"], root)
        for index, item in enumerate(value):
            value[index] = _integral(item, items)
            _fill(value[index], items, root)


def _integral(value: Any, subschema: dict) -> Any:
    """4 for a 4.0 where the schema wants an integer: JSON Schema takes 4.0 as one, but Kubernetes' integer
    fields do not (the API server cannot decode 4.0 into an int32 or int64), and range() does not either."""
    if subschema.get("type") == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _leaves(error):
    """The most specific errors: for `not`/`anyOf` wrappers, their causes; else the error itself."""
    if error.context:
        for sub in error.context:
            yield from _leaves(sub)
    else:
        yield error


def _schema_at(root: dict, schema_path) -> dict:
    """The subschema that owns the failing keyword (following $refs, listed in the path or not)."""
    node: Any = root
    for part in list(schema_path)[:-1]:
        node = _resolve(node, root) if isinstance(node, dict) else node
        if part != "$ref":
            node = node[part]
    return _resolve(node, root) if isinstance(node, dict) else {}


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


_JSON_TYPES = {dict: "a mapping", list: "a list", str: "text", bool: "true/false", int: "a whole number",
               float: "a number", type(None): "empty (null)"}
_TYPE_NAMES = {"object": "a mapping", "array": "a list", "string": "text", "boolean": "true or false",
               "integer": "a whole number", "number": "a number"}


def _explain(error, root: dict, written: Mapping[str, str]) -> tuple[Problem, str]:
    """A Problem for one jsonschema error, and the field a "did you mean" points at ("" if none)."""
    path = list(error.absolute_path)
    at = field_path(*path)
    owner = _schema_at(root, error.absolute_schema_path)
    hint = owner.get("x-hint")
    keyword, value = error.validator, error.instance

    if keyword == "additionalProperties":
        import difflib  # only when explaining a mistake

        allowed = sorted(owner.get("properties", {}))
        unknown = [key for key in value if key not in allowed] if isinstance(value, dict) else []
        key = unknown[0] if unknown else "?"
        close = difflib.get_close_matches(key, allowed, n=1)
        suggestion = f"; did you mean '{close[0]}'?" if close else ""
        message = f"unknown field '{key}'{suggestion} (allowed here: {', '.join(allowed)})"
        return Problem(message, field_path(*path, key)), field_path(*path, close[0]) if close else ""
    if keyword == "required":
        missing = error.message.split("'")[1] if "'" in error.message else "?"
        message, at = f"missing required field '{missing}'", field_path(*path, missing)
    elif keyword == "enum":
        import difflib

        options = ", ".join(str(o) for o in error.validator_value)
        close = difflib.get_close_matches(str(value), [str(o) for o in error.validator_value], n=1)
        suggestion = f"; did you mean '{close[0]}'?" if close else ""
        message = f"{_show(value)} is not allowed{suggestion} (one of: {options})"
    elif keyword == "const":
        message = f"must be {_show(error.validator_value)}, not {_show(value)}"
    elif keyword == "type":
        wanted = error.validator_value
        wanted = [wanted] if isinstance(wanted, str) else wanted
        names = " or ".join(_TYPE_NAMES.get(w, w) for w in wanted)
        got = _JSON_TYPES.get(type(value), type(value).__name__)
        shown = _show(value)
        if at in written and written[at] != shown:  # 012 is 10 to YAML: say both
            shown = f"{written[at]} (which YAML reads as {shown})"
        message = f"must be {names}, not {got}" + ("" if isinstance(value, (dict, list)) else f" {shown}")
        if wanted == ["string"] and isinstance(value, (bool, int, float)):
            hint = hint or f"put it in quotes: \"{written.get(at, _show(value))}\""
        message += f" ({hint})" if hint else ""
    elif keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        relation = {"minimum": "at least", "maximum": "at most", "exclusiveMinimum": "more than",
                    "exclusiveMaximum": "less than"}[keyword]
        message = f"{_show(value)} is out of range: must be {relation} {error.validator_value}"
        # x-limit: why a bound is where it is, when a consumer (the API server, a controller) sets it
        message += f" ({owner['x-limit']})" if keyword in ("maximum", "exclusiveMaximum") and "x-limit" in owner else ""
    elif keyword in ("pattern", "not"):
        message = f"{_show(value)} is not valid" + (f": expected {hint}" if hint else "")
    elif keyword in ("minItems", "minLength", "minProperties"):
        message = "must not be empty" if error.validator_value == 1 else error.message
    elif keyword in ("maxLength", "maxItems", "maxProperties"):
        message = f"is too long: at most {error.validator_value}" + (" entry" if keyword == "maxProperties" else "")
    else:
        message = error.message
    return Problem(message, at), ""
