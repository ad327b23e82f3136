"""An imported intent as YAML, with a comment above each field where import made a choice.

PyYAML writes no comments, so this writes the few shapes an intent has (mappings, lists of
scalars, lists of mappings) itself, each scalar quoted by PyYAML so that it reads back as the same
value. Keys come in the order the reference documents them, so the same source always gives the
same bytes.
"""

from __future__ import annotations

from typing import Any

import yaml

ORDER = ["apiVersion", "kind", "metadata", "name", "namespace", "labels", "annotations", "spec", "image", "command",
         "args", "env", "backend", "qos", "readOnlyRootFilesystem", "serviceAccountName", "topology", "mode", "roles",
         "ps", "worker", "chief", "evaluator", "replicas", "cpu", "cpuLimit", "memory", "gpu", "threads", "intraOp",
         "interOp", "failurePolicy", "backoffLimitPerTask", "activeDeadlineSeconds", "value", "valueFrom"]
_RANK = {key: i for i, key in enumerate(ORDER)}
ROLE_ORDER = ["replicas", "cpu", "cpuLimit", "memory", "gpu", "threads", "env"]  # a role's keys, env last
_ROLE_RANK = {key: i for i, key in enumerate(ROLE_ORDER)}


def scalar(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, width=10**9, allow_unicode=True)
    return text[:-5] if text.endswith("\n...\n") else text.rstrip("\n")


def _keys(data: dict, path: str) -> list:
    # Known keys in the reference's order; labels, annotations and env's own keys as written.
    rank = _ROLE_RANK if path.startswith("spec.roles.") and path.count(".") == 2 else _RANK
    return sorted(data, key=lambda k: rank.get(k, len(rank)))


def emit(intent: dict, notes: dict[str, str], header: list[str] = ()) -> str:
    lines = [f"# {line}" if line else "#" for line in header]
    _mapping(intent, "", 0, notes, lines)
    return "\n".join(lines) + "\n"


def _mapping(data: dict, path: str, indent: int, notes: dict[str, str], lines: list[str], first: str = "") -> None:
    pad = " " * indent
    for n, key in enumerate(_keys(data, path)):
        here = f"{path}.{key}" if path else str(key)
        lead = first if n == 0 and first else pad
        if notes.get(here):  # above the key, at the indentation of its line's first character
            lines.append(" " * (len(lead) - len(lead.lstrip(" "))) + f"# {notes[here]}")
        value = data[key]
        name = scalar(str(key))
        if isinstance(value, dict) and value:
            lines.append(f"{lead}{name}:")
            _mapping(value, here, indent + 2, notes, lines)
        elif isinstance(value, list) and value:
            lines.append(f"{lead}{name}:")
            _sequence(value, here, indent + 2, notes, lines)
        else:
            lines.append(f"{lead}{name}: {scalar(value)}")


def _sequence(items: list, path: str, indent: int, notes: dict[str, str], lines: list[str]) -> None:
    pad = " " * indent
    for i, item in enumerate(items):
        if isinstance(item, dict) and item:
            _mapping(item, f"{path}[{i}]", indent + 2, notes, lines, first=f"{pad}- ")
        else:
            lines.append(f"{pad}- {scalar(item)}")
