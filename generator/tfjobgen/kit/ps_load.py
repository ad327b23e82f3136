"""How the PS's load is shown: bytes per PS, their shares, max/mean against the balance goal.

One home for run-local's summary and `tfjobgen status`, which read the same numbers from
different places (the runtime's reports, the pods' metrics).
"""

from __future__ import annotations

from ..shared.variable_placement.sharding import BALANCE_GOAL
from . import table


def ps_balance(per_ps: list[int], partitioner: str | None) -> str:
    """Bytes on each PS, their shares and max/mean: how run-local and `tfjobgen status` show the PS's load."""
    total = sum(per_ps) or 1
    mean = sum(per_ps) / len(per_ps)
    ratio = max(per_ps) / mean if mean else 1.0
    rows = [[f"ps:{i}", f"{b:,}", f"{100 * b / total:.1f}%"] for i, b in enumerate(per_ps)]
    note = "" if ratio <= BALANCE_GOAL else (
        f"  (above {BALANCE_GOAL}: one PS carries more than its share"
        + (": partitioner none keeps the embedding whole)" if partitioner == "none" else ")"))
    return (table.render(["PS", "BYTES", "SHARE"], rows)
            + f"\nPS balance max/mean {ratio:.2f} (partitioner {partitioner or '?'}){note}")
