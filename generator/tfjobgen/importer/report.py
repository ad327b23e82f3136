"""The import report: one row per source field, what became of it, and why.

Every field of the source ends in one of three outcomes: carried over (to which TrainingJob field),
dropped (why: tfjobgen does it itself, or restricted Pod Security refuses it), or needing a decision
(the closest tfjobgen field, or what the schema lacks). `cover` adds a row for every field no rule
read, so nothing of the source leaves the report unnamed. Pure, but for the two renderings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..inputs.problems import field_path
from ..kit import table

CARRIED, DROPPED, DECIDE = "carried", "dropped", "needs a decision"


@dataclass(frozen=True)
class Row:
    field: str  # the source's field path (spec.tfReplicaSpecs.PS.template.spec.containers[0].image)
    outcome: str  # CARRIED, DROPPED or DECIDE
    target: str  # the TrainingJob field it went to, or the closest one; "" when none
    why: str
    file: str = ""
    line: int = 0
    job: str = ""  # the imported job's name, for reports of several jobs


def leaves(data: Any, path: str = "") -> list[str]:
    """The path of every scalar, empty mapping and empty list of a document."""
    if isinstance(data, dict) and data:
        return [leaf for key, value in data.items() for leaf in leaves(value, field_path(path, key) if path else str(key))]
    if isinstance(data, list) and data:
        return [leaf for i, value in enumerate(data) for leaf in leaves(value, f"{path}[{i}]")]
    return [path]


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + ".") or path.startswith(prefix + "[")


def _ancestors(path: str) -> list[str]:
    """'a.b[0].c' -> ['a', 'a.b', 'a.b[0]', 'a.b[0].c']."""
    ends = [m.start() for m in re.finditer(r"[.\[]", path) if m.start()] + [len(path)]
    return [path[:end] for end in ends]


def cover(data: Any, rows: list[Row]) -> list[Row]:
    """Rows for the fields of `data` that no row names (nor any field above them): import read nothing there.
    One row per wholly unread field (hostAliases, not each of its hostnames)."""
    named = [row.field for row in rows]
    missing: dict[str, Row] = {}
    for leaf in leaves(data):
        if any(_under(leaf, prefix) for prefix in named):
            continue
        top = next((a for a in _ancestors(leaf) if not any(_under(p, a) for p in named)), leaf)
        missing.setdefault(top, Row(top, DECIDE, "", "import has no rule for this field: nothing carries it; "
                                                     "decide whether the job needs it"))
    return rows + list(missing.values())


HEADERS = ["SOURCE", "FIELD", "OUTCOME", "TRAININGJOB", "WHY"]


def _cells(row: Row) -> list[str]:
    where = f"{row.file}:{row.line}" if row.line else row.file
    return [where, row.field, row.outcome, row.target or "-", row.why]


def text(rows: list[Row]) -> str:
    return table.render(HEADERS, [_cells(r) for r in rows])


def markdown(rows: list[Row], additions: dict[str, list[str]], warnings: dict[str, list[str]] | None = None) -> str:
    """The report as a Markdown page: per job, its rows, what tfjobgen adds of its own, and what tfjobgen's
    validation warns of."""
    out = ["# tfjobgen import report", ""]
    for job in dict.fromkeys(r.job for r in rows):
        mine = [r for r in rows if r.job == job]
        counts = {o: sum(r.outcome == o for r in mine) for o in (CARRIED, DROPPED, DECIDE)}
        out += [f"## {job}", "", ", ".join(f"{n} {o}" for o, n in counts.items()), "",
                table.markdown(HEADERS, [_cells(r) for r in mine]), ""]
        if additions.get(job):
            out += ["tfjobgen's own additions to every pod:", ""] + [f"- {a}" for a in additions[job]] + [""]
        if (warnings or {}).get(job):
            out += ["tfjobgen validate warns:", ""] + [f"- {w}" for w in warnings[job]] + [""]
    return "\n".join(out).rstrip("\n") + "\n"
