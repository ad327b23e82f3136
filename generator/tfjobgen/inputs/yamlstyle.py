"""YAML read and written the way kustomize (go-yaml) reads and writes it.

Two reasons this module exists:
- a value must mean the same thing to `tfjobgen validate` as to the function
  run by kustomize: go-yaml reads `yes` and `on` as strings (YAML 1.2), PyYAML
  as booleans (YAML 1.1), so we load with go-yaml's rules;
- `tfjobgen render` must print the same bytes as `kustomize build`, which
  re-emits every object with go-yaml: sorted keys, 80-column folding, literal
  blocks for multi-line text, and double quotes around any string that a
  YAML 1.1 or 1.2 reader could take for something else.

Reading and writing both use libyaml through PyYAML's C bindings: go-yaml is a
port of libyaml, so its emitter makes the same layout choices.
"""

from __future__ import annotations

import datetime
import functools
import io
import math
import re

import yaml
from yaml._yaml import CEmitter, CParser  # libyaml bindings (PyYAML wheels ship them)

STR_TAG = "tag:yaml.org,2002:str"

# go-yaml v3 (resolve.go): what a plain scalar becomes.
_NULLS = {"", "~", "null", "Null", "NULL"}
_BOOLS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_SPECIAL_FLOATS = {
    ".inf": math.inf, ".Inf": math.inf, ".INF": math.inf,
    "+.inf": math.inf, "+.Inf": math.inf, "+.INF": math.inf,
    "-.inf": -math.inf, "-.Inf": -math.inf, "-.INF": -math.inf,
    ".nan": math.nan, ".NaN": math.nan, ".NAN": math.nan,
}
# YAML 1.1 booleans that go-yaml v2 and kustomize still quote on output.
_YAML11_BOOLS = {
    "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
    "on", "On", "ON", "off", "Off", "OFF",
}
_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_INT = re.compile(r"^[-+]?(0b[01]+|0o[0-7]+|0x[0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)$")
# go-yaml's timestamp layouts: 2006-1-2, "2006-1-2 15:4:5.9", 2006-1-2T15:4:5.9Z07:00.
_TIMESTAMP = re.compile(
    r"^([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})"
    r"(?:([Tt])([0-9]{1,2}):([0-9]{1,2}):([0-9]{1,2})(?:\.[0-9]+)?(?:Z|[-+][0-9]{2}:[0-9]{2})"
    r"| ([0-9]{1,2}):([0-9]{1,2}):([0-9]{1,2})(?:\.[0-9]+)?)?$"
)
# YAML 1.1 sexagesimal numbers (190:20:30): go-yaml quotes them on output.
_BASE60 = re.compile(r"^[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?$")


def _is_timestamp(text: str) -> bool:
    match = _TIMESTAMP.match(text)
    if not match:
        return False
    year, month, day, _, *clock = match.groups()
    hour, minute, second = [int(part) for part in clock if part is not None] or (0, 0, 0)
    try:
        datetime.datetime(int(year), int(month), int(day), hour, minute, second)
    except ValueError:
        return False  # Go's time.Parse rejects 2021-13-01 and 25:00:00 as well
    return True


def _parse_int(text: str) -> int | None:
    plain = text.replace("_", "")
    if not _INT.match(plain):
        return None
    sign = -1 if plain[0] == "-" else 1
    digits = plain.lstrip("+-")
    if digits[:2] in ("0b", "0o", "0x"):
        return sign * int(digits[2:], {"b": 2, "o": 8, "x": 16}[digits[1]])
    if len(digits) > 1 and digits[0] == "0":
        return sign * int(digits, 8)  # Go's base-0 parsing: a leading 0 means octal
    return sign * int(digits)


def plain_scalar_value(text: str):
    """The value go-yaml gives an unquoted scalar: None, bool, int, float or the text itself."""
    if text in _NULLS:
        return None
    if text in _BOOLS:
        return _BOOLS[text]
    if text in _SPECIAL_FLOATS:
        return _SPECIAL_FLOATS[text]
    if text[:1] in "+-.0123456789":
        if _is_timestamp(text):
            return text  # kept as text: nothing in our schemas takes a date
        number = _parse_int(text)
        if number is not None:
            return number
        if _FLOAT.match(text.replace("_", "")):
            return float(text.replace("_", ""))
    return text


def needs_quotes(text: str) -> bool:
    """True when an unquoted `text` would be read back as something other than that string.

    Mirrors go-yaml: a YAML 1.2 reader (resolve) or a YAML 1.1 reader (old
    booleans, sexagesimals, timestamps) could misread it, so it is double-quoted.
    """
    if "\n" in text:
        return False  # written as a literal block
    if text in _YAML11_BOOLS or _BASE60.match(text) or _is_timestamp(text):
        return True
    return not isinstance(plain_scalar_value(text), str)


class _GoResolver(yaml.resolver.BaseResolver):
    """Tags a plain scalar as go-yaml would; quoted scalars are always strings."""

    def resolve(self, kind, value, implicit):
        if kind is yaml.ScalarNode and implicit[0]:
            parsed = plain_scalar_value(value)
            if parsed is None:
                return "tag:yaml.org,2002:null"
            if isinstance(parsed, bool):
                return "tag:yaml.org,2002:bool"
            if isinstance(parsed, int):
                return "tag:yaml.org,2002:int"
            if isinstance(parsed, float):
                return "tag:yaml.org,2002:float"
            return STR_TAG
        return super().resolve(kind, value, implicit)


class _GoConstructor(yaml.constructor.SafeConstructor):
    def _plain(self, node):
        return plain_scalar_value(self.construct_scalar(node))


for _tag in ("null", "bool", "int", "float"):
    _GoConstructor.add_constructor(f"tag:yaml.org,2002:{_tag}", _GoConstructor._plain)


class Loader(CParser, _GoConstructor, _GoResolver):
    """libyaml parser with go-yaml's scalar rules."""

    def __init__(self, stream):
        CParser.__init__(self, stream)
        _GoConstructor.__init__(self)
        _GoResolver.__init__(self)


def _go_key_less(a: str, b: str) -> bool:
    """go-yaml's map key order (sorter.go): symbols, then numbers by value, then letters.

    The order is not transitive for keys such as "08", "0b2" and "1.5", where
    Go's and Python's sorts may disagree; Kubernetes keys never look like that.
    """
    for i, (x, y) in enumerate(zip(a, b)):
        if x == y:
            continue
        x_letter, y_letter = x.isalpha(), y.isalpha()
        if x_letter and y_letter:
            return x < y
        if x_letter or y_letter:
            return y_letter
        x_number = y_number = 0
        if x == "0" or y == "0":
            j = i - 1
            while j >= 0 and a[j].isdigit():
                if a[j] != "0":
                    x_number = y_number = 1
                    break
                j -= 1
        x_end = i
        while x_end < len(a) and a[x_end].isdigit():
            x_number = x_number * 10 + int(a[x_end])
            x_end += 1
        y_end = i
        while y_end < len(b) and b[y_end].isdigit():
            y_number = y_number * 10 + int(b[y_end])
            y_end += 1
        if x_number != y_number:
            return x_number < y_number
        if x_end != y_end:
            return x_end < y_end
        return x < y
    return len(a) < len(b)


go_key_order = functools.cmp_to_key(lambda a, b: -1 if _go_key_less(a, b) else (1 if _go_key_less(b, a) else 0))


@functools.lru_cache(maxsize=None)
def _key_order(keys: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(sorted(keys, key=go_key_order))  # cached: thousands of objects share a few dict shapes


_PLAIN, _QUOTED, _TYPED = (True, True), (False, True), (True, False)  # (plain implicit, quoted implicit)
_INF_NAN = {math.inf: ".inf", -math.inf: "-.inf"}


@functools.lru_cache(maxsize=1 << 16)
def _string_event(value: str) -> yaml.ScalarEvent:
    """The event of one string (cached: the emitter only reads events, and keys and values repeat a lot)."""
    if "\n" in value:
        return yaml.ScalarEvent(None, None, _PLAIN, value, style="|")
    if needs_quotes(value):
        return yaml.ScalarEvent(None, None, _QUOTED, value, style='"')
    # plain where libyaml can, else it picks single quotes, as go-yaml's emitter does
    return yaml.ScalarEvent(None, None, _PLAIN, value)


_MAPPING = {True: yaml.MappingStartEvent(None, None, True, flow_style=True),  # {} for an empty mapping
            False: yaml.MappingStartEvent(None, None, True, flow_style=False)}
_SEQUENCE = {True: yaml.SequenceStartEvent(None, None, True, flow_style=True),
             False: yaml.SequenceStartEvent(None, None, True, flow_style=False)}
_MAPPING_END, _SEQUENCE_END = yaml.MappingEndEvent(), yaml.SequenceEndEvent()
_TRUE, _FALSE, _NULL = (yaml.ScalarEvent(None, None, _TYPED, text) for text in ("true", "false", "null"))


def _events(value, emit) -> None:
    """Feed libyaml the events of one value, choosing each scalar's style as go-yaml does."""
    kind = type(value)
    if kind is str:
        emit(_string_event(value))
    elif kind is dict:
        emit(_MAPPING[not value])
        for key in _key_order(tuple(value)):
            _events(key, emit)
            _events(value[key], emit)
        emit(_MAPPING_END)
    elif kind is list:
        emit(_SEQUENCE[not value])
        for item in value:
            _events(item, emit)
        emit(_SEQUENCE_END)
    elif kind is bool:
        emit(_TRUE if value else _FALSE)
    elif kind is int:
        emit(yaml.ScalarEvent(None, None, _TYPED, str(value)))
    elif value is None:
        emit(_NULL)
    elif kind is float:
        text = ".nan" if value != value else _INF_NAN.get(value, repr(value))
        emit(yaml.ScalarEvent(None, None, _TYPED, text))
    else:
        raise TypeError(f"cannot write a {kind.__name__} as YAML")


def write(documents: list) -> str:
    """Documents as one YAML stream laid out like go-yaml (block style, go-yaml key order, 80 columns).

    Events go straight to libyaml's C emitter: PyYAML's Python representer was four times slower,
    and this runs inside every kustomize build.
    """
    out = io.StringIO()
    emitter = CEmitter(out, canonical=False, indent=2, width=80, allow_unicode=True)
    emitter.emit(yaml.StreamStartEvent())
    for position, document in enumerate(documents):
        emitter.emit(yaml.DocumentStartEvent(explicit=position > 0))  # "---" between documents only
        _events(document, emitter.emit)
        emitter.emit(yaml.DocumentEndEvent(explicit=False))
    emitter.emit(yaml.StreamEndEvent())
    return out.getvalue()
