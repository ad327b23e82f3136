"""Where each variable lands, and so the bytes on each PS, by TensorFlow's own placement rules.

Both APIs place variables round-robin over the PS in creation order, one PS per
variable, or per shard of a partitioned variable:

- tf2, ParameterServerStrategy: every variable created under the strategy's
  scope goes to `/job:ps/task:<count % num_ps>` and the count goes up by one;
  a partitioned variable becomes `<name>/part_<i>` shards, each placed the same
  way. A variable created with `colocate_vars_with` (an optimizer slot) goes
  beside its variable and does not advance the count.
- tf1, `replica_device_setter`: every variable op is placed on the next PS in
  turn (its round-robin strategy); slots are created after the model, each on
  its variable's device.

A partitioned variable is split along its first axis, and the first
rows % shards shards are one row longer ("div"). Which variables are split,
and into how many shards, is runtime/sharding.py's rule, the one the runtime
hands TensorFlow. Slots have their variable's shape and dtype, so a PS holds
(1 + slots) x the bytes of each shard placed on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Callable

from ..runtime import sharding
from .variables import Variable

PARTITIONERS = ("none", "fixed", "auto")  # the order tables list them in


@dataclass(frozen=True)
class Shard:
    variable: Variable
    part: int
    parts: int
    rows: int
    ps: int
    first: int = 0  # its first row in the whole variable

    @property
    def value_bytes(self) -> int:
        return self.rows * self.variable.row_bytes

    @property
    def bytes(self) -> int:
        """On its PS: the shard and its optimizer slots."""
        return self.value_bytes * (1 + self.variable.slots)


@dataclass(frozen=True)
class Layout:
    """Every shard's PS under one partitioner."""

    partitioner: str
    num_ps: int
    shards: tuple[Shard, ...]

    @cached_property  # a frozen dataclass still takes it: computed once, read by every table
    def bytes_per_ps(self) -> tuple[int, ...]:
        totals = [0] * self.num_ps
        for shard in self.shards:
            totals[shard.ps] += shard.bytes
        return tuple(totals)

    @property
    def total(self) -> int:
        return sum(self.bytes_per_ps)

    @property
    def max_over_mean(self) -> float:
        return sharding.Placement(self.bytes_per_ps).max_over_mean

    @property
    def hot_ps(self) -> int:
        per_ps = self.bytes_per_ps
        return per_ps.index(max(per_ps))

    @property
    def hot_share(self) -> float:
        return max(self.bytes_per_ps) / self.total if self.total else 0.0

    @property
    def balanced(self) -> bool:
        return self.max_over_mean <= sharding.BALANCE_GOAL


def place(variables: tuple[Variable, ...], num_ps: int, shards_of: Callable[[Variable], int],
          partitioner: str) -> Layout:
    """Round-robin in creation order, each variable split into shards_of(variable) shards."""
    placed, count = [], 0
    for variable in variables:
        parts = shards_of(variable) if variable.shape else 1  # neither API splits a scalar
        first = 0
        for part, rows in enumerate(sharding.shard_rows(variable.rows, parts)):
            placed.append(Shard(variable, part, parts, rows, count % num_ps, first))
            count += 1
            first += rows
    return Layout(partitioner, num_ps, tuple(placed))


def layout(variables: tuple[Variable, ...], num_ps: int, partitioner: str, min_shard_bytes: int) -> Layout:
    """Placement under one of the runtime's partitioners (runtime/sharding.py decides the shard counts)."""
    return place(variables, num_ps, lambda v: sharding.shard_count(v.rows, v.row_bytes, partitioner, num_ps,
                                                                   min_shard_bytes), partitioner)


def shards_to_balance(variables: tuple[Variable, ...], num_ps: int, min_shard_bytes: int,
                      limit: int | None = None) -> tuple[int, Layout] | None:
    """The fewest shards per variable of at least min_shard_bytes that bring max/mean to BALANCE_GOAL,
    with that layout; None when no count up to `limit` (default 4 x num_ps) does."""
    for shards in range(1, (limit or 4 * num_ps) + 1):
        found = place(variables, num_ps, lambda v, n=shards: min(n, v.rows) if v.bytes >= min_shard_bytes else 1,
                      f"{shards} shards")
        if found.balanced:
            return shards, found
    return None
