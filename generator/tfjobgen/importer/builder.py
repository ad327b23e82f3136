"""The intent under construction: its fields, the comment above each choice, the report's rows, and which
source field each intent field came from. Every step of the conversion writes through one Builder."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .report import CARRIED, Row
from .sources import Refusal

API_VERSION, KIND = "tfjobgen.dev/v1alpha1", "TrainingJob"


@dataclass
class Imported:
    intent: dict
    notes: dict[str, str]  # intent field -> the comment written above it
    rows: list[Row]
    provenance: dict[str, str]  # intent field -> the source field it came from
    name: str = ""


@dataclass
class Builder:
    """The intent under construction, and the rows and comments that say how."""

    intent: dict = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    rows: list[Row] = field(default_factory=list)
    provenance: dict[str, str] = field(default_factory=dict)
    refusals: list[Refusal] = field(default_factory=list)
    # Env entries carried, until every role's are known (_place_env): those every role has go to spec.env.
    env: list[tuple[str, str, Any, int]] = field(default_factory=list)

    def put(self, target: str, value: Any, source: str = "", note: str = "") -> None:
        node = self.intent
        *parents, last = target.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
        if source:
            self.provenance.setdefault(target, source)
        if note:
            self.notes[target] = note if target not in self.notes else f"{self.notes[target]}; {note}"

    def row(self, source: str, outcome: str, target: str, why: str) -> None:
        self.rows.append(Row(source, outcome, target, why))

    def carry(self, source: str, target: str, value: Any, why: str = "", note: str = "") -> None:
        self.put(target, value, source, note)
        self.row(source, CARRIED, target, why or note)

    def refuse(self, where: str, message: str) -> None:
        self.refusals.append(Refusal(where, message))

