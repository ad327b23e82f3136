"""A yes/no JSON Schema evaluator of the few keywords tfjobgen's schemas use: schema.py's fast path.

Importing jsonschema costs more than the rest of a cold start together (docs/benchmarks.md),
so schema.check asks `valid` first and imports jsonschema only to explain an invalid
document. `valid` gives up (None: jsonschema decides) on any keyword it does not know;
tests/test_properties.py holds it to jsonschema's answer on generated documents.
"""

from __future__ import annotations

import functools
import re
from typing import Any

# Keywords that only annotate: they never make a document invalid.
_ANNOTATIONS = {"$schema", "$id", "$defs", "title", "description", "default", "x-hint", "x-limit", "examples"}
_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    # JSON Schema counts 1.0 as an integer, as jsonschema does
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _same(a: Any, b: Any) -> bool:
    """JSON equality, as jsonschema compares enum and const: true is not 1, 1 is 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if _number(a) and _number(b):
        return a == b
    return type(a) is type(b) and a == b


@functools.cache
def _pattern(text: str) -> re.Pattern:
    return re.compile(text)


def valid(value: Any, root: dict) -> bool | None:
    """True or False as jsonschema would answer for `value` against the schema `root`; None when the schema
    uses a keyword this evaluator does not know."""
    return _valid(value, root, root)


def _valid(value: Any, subschema: Any, root: dict) -> bool | None:
    """True or False as jsonschema would answer for these keywords; None for a keyword it does not know."""
    if isinstance(subschema, bool):
        return subschema
    unknown = False  # a False answers at once, whatever else the schema says; None only if nothing is False
    for keyword, wanted in subschema.items():
        if keyword in _ANNOTATIONS:
            continue
        if keyword == "$ref":
            if not wanted.startswith("#/"):
                return None
            target = root
            for part in wanted[2:].split("/"):
                target = target[part]
            result = _valid(value, target, root)
        elif keyword == "type":
            result = any(_TYPES[t](value) for t in ([wanted] if isinstance(wanted, str) else wanted))
        elif keyword == "enum":
            result = any(_same(value, option) for option in wanted)
        elif keyword == "const":
            result = _same(value, wanted)
        elif keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            result = not _number(value) or {"minimum": value >= wanted, "maximum": value <= wanted,
                                             "exclusiveMinimum": value > wanted,
                                             "exclusiveMaximum": value < wanted}[keyword]
        elif keyword in ("minLength", "maxLength"):
            result = not isinstance(value, str) or (len(value) >= wanted if keyword == "minLength"
                                                    else len(value) <= wanted)
        elif keyword == "pattern":
            result = not isinstance(value, str) or _pattern(wanted).search(value) is not None
        elif keyword in ("minItems", "maxItems"):
            result = not isinstance(value, list) or (len(value) >= wanted if keyword == "minItems"
                                                     else len(value) <= wanted)
        elif keyword == "items":
            result = not isinstance(value, list) or _all(_valid(item, wanted, root) for item in value)
        elif keyword in ("minProperties", "maxProperties"):
            result = not isinstance(value, dict) or (len(value) >= wanted if keyword == "minProperties"
                                                     else len(value) <= wanted)
        elif keyword == "required":
            result = not isinstance(value, dict) or all(key in value for key in wanted)
        elif keyword == "properties":
            result = not isinstance(value, dict) or _all(
                _valid(value[key], sub, root) for key, sub in wanted.items() if key in value)
        elif keyword == "additionalProperties":
            known = subschema.get("properties", {})
            result = not isinstance(value, dict) or _all(
                _valid(value[key], wanted, root) for key in value if key not in known)
        elif keyword == "propertyNames":
            result = not isinstance(value, dict) or _all(_valid(key, wanted, root) for key in value)
        elif keyword == "not":
            inner = _valid(value, wanted, root)
            result = None if inner is None else not inner
        else:
            result = None  # a keyword this fast path does not know: jsonschema decides
        if result is False:
            return False
        unknown = unknown or result is None
    return None if unknown else True


def _all(results) -> bool | None:
    """False if any result is False, else None if any is unknown, else True."""
    unknown = False
    for result in results:
        if result is False:
            return False
        unknown = unknown or result is None
    return None if unknown else True
