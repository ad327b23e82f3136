"""How variables are split across PS, and how evenly they ended up.

The seed's lesson: TensorFlow places whole variables on PS round-robin, so a
model with one big embedding loads one PS and leaves the others idle. A
partitioner splits big variables along their first axis, one shard per PS.

    none   whole variables, round-robin (one big embedding -> one hot PS)
    fixed  every variable with rows is split into one shard per PS
    auto   variables of at least minShardBytes are split into one shard per PS;
           smaller ones stay whole (splitting a 2 KB bias buys nothing)

`partitions` has the signature both TF APIs call, (shape, dtype) ->
shards per axis: ParameterServerStrategy's variable_partitioner (tf2) and
variable_scope's partitioner (tf1). Everything here is plain Python, so it is
tested without TensorFlow.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterable

MODES = ("auto", "fixed", "none")
BALANCE_GOAL = 1.10  # max/mean bytes per PS that counts as balanced (run-local, tfjobgen plan)
_PS_DEVICE = re.compile(r"/job:ps/(?:replica:\d+/)?task:(\d+)")


def shard_count(rows: int, row_bytes: int, mode: str, num_ps: int, min_shard_bytes: int) -> int:
    """Shards along the first axis for a variable of `rows` rows of `row_bytes` bytes each."""
    if mode == "none" or num_ps <= 1 or rows <= 1:
        return 1
    if mode == "auto" and rows * row_bytes < min_shard_bytes:
        return 1
    return min(num_ps, rows)


def shard_rows(rows: int, shards: int) -> list[int]:
    """Rows of each shard, as both APIs split a variable ("div"): the first rows % shards are one longer."""
    base, extra = divmod(rows, shards)
    return [base + (1 if i < extra else 0) for i in range(shards)]


def partitioner(mode: str, num_ps: int, min_shard_bytes: int) -> Callable | None:
    """A partitioner for TensorFlow, or None for `none` (TF then keeps variables whole)."""
    if mode not in MODES:
        raise ValueError(f"unknown partitioner {mode!r}")
    if mode == "none":
        return None

    def partitions(shape, dtype, **_ignored) -> list[int]:
        dims = [int(d) for d in shape]
        if not dims:
            return []
        row_bytes = int(dtype.size)
        for d in dims[1:]:
            row_bytes *= d
        return [shard_count(dims[0], row_bytes, mode, num_ps, min_shard_bytes)] + [1] * (len(dims) - 1)

    return partitions


def ps_index(device: str) -> int | None:
    """The PS task a device string names ('/job:ps/replica:0/task:1/device:CPU:0' -> 1), else None."""
    match = _PS_DEVICE.search(device or "")
    return int(match.group(1)) if match else None


@dataclass(frozen=True)
class Placement:
    bytes_per_ps: tuple[int, ...]

    @property
    def total(self) -> int:
        return sum(self.bytes_per_ps)

    @property
    def max_over_mean(self) -> float:
        """1.0 is perfectly even; N means one PS holds everything of N."""
        mean = self.total / len(self.bytes_per_ps) if self.bytes_per_ps else 0
        return max(self.bytes_per_ps) / mean if mean else 1.0

    def as_dict(self) -> dict:
        return {"bytes_per_ps": list(self.bytes_per_ps), "max_over_mean": round(self.max_over_mean, 4),
                "total_bytes": self.total}


def placement(variables: Iterable[tuple[str, int]], num_ps: int) -> Placement:
    """Bytes per PS from (device, bytes) of every variable (non-PS devices are left out)."""
    totals = [0] * num_ps
    for device, size in variables:
        index = ps_index(device)
        if index is not None and index < num_ps:
            totals[index] += size
    return Placement(tuple(totals))
