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
and into how many shards, is sharding.py's rule, the one the runtime
hands TensorFlow. Slots have their variable's shape and dtype, so a PS holds
(1 + slots) x the bytes of each shard placed on it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Callable

from . import reference_model, sharding

PARTITIONERS = ("none", "fixed", "auto")  # the order tables list them in
DTYPE_BYTES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "int16": 2,
               "int8": 1, "uint8": 1, "bool": 1, "uint16": 2, "uint32": 4, "uint64": 8, "complex64": 8,
               "complex128": 16, "half": 2, "double": 8}


@dataclass(frozen=True)
class Variable:
    """A variable as its PS holds it: its value and its optimizer slots."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    trainable: bool
    slots: int  # optimizer slots beside it on the same PS, each of its shape and dtype
    lookups: int  # ids one worker step looks up in it; 0: a step reads it whole
    ids: str = ""  # the input whose ids look it up, when tables share them ("": its own)

    @property
    def rows(self) -> int:
        return self.shape[0] if self.shape else 1

    @property
    def row_bytes(self) -> int:
        return math.prod(self.shape[1:]) * DTYPE_BYTES[self.dtype]

    @property
    def bytes(self) -> int:
        """The value alone, without its slots."""
        return self.rows * self.row_bytes


def reference_variables(api: str, optimizer: str, batch_size: int, vocabulary: int, embedding_dim: int,
                        hidden_units: tuple[int, ...]) -> tuple[Variable, ...]:
    """The reference model's variables as the runtime creates them (the runtime's PS count their bytes)."""
    slots = len(reference_model.SLOTS[optimizer])
    return tuple(Variable(v.name, v.shape, v.dtype, v.trainable, slots if v.trainable else 0,
                          v.lookups_per_example * batch_size, v.ids)
                 for v in reference_model.created_variables(api, vocabulary, embedding_dim, hidden_units))


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
class ShardLayout:
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
          partitioner: str) -> ShardLayout:
    """Round-robin in creation order, each variable split into shards_of(variable) shards."""
    placed, count = [], 0
    for variable in variables:
        parts = shards_of(variable) if variable.shape else 1  # neither API splits a scalar
        first = 0
        for part, rows in enumerate(sharding.shard_rows(variable.rows, parts)):
            placed.append(Shard(variable, part, parts, rows, count % num_ps, first))
            count += 1
            first += rows
    return ShardLayout(partitioner, num_ps, tuple(placed))


def layout(variables: tuple[Variable, ...], num_ps: int, partitioner: str, min_shard_bytes: int) -> ShardLayout:
    """Placement under one of the runtime's partitioners (sharding.py decides the shard counts)."""
    return place(variables, num_ps, lambda v: sharding.shard_count(v.rows, v.row_bytes, partitioner, num_ps,
                                                                   min_shard_bytes), partitioner)


def shards_to_balance(variables: tuple[Variable, ...], num_ps: int, min_shard_bytes: int,
                      limit: int | None = None) -> tuple[int, ShardLayout] | None:
    """The fewest shards per variable of at least min_shard_bytes that bring max/mean to BALANCE_GOAL,
    with that layout; None when no count up to `limit` (default 4 x num_ps) does."""
    for shards in range(1, (limit or 4 * num_ps) + 1):
        found = place(variables, num_ps, lambda v, n=shards: min(n, v.rows) if v.bytes >= min_shard_bytes else 1,
                      f"{shards} shards")
        if found.balanced:
            return shards, found
    return None
