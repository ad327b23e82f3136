"""Bytes per training step between the workers and each PS, and how many of them cross servers.

The model, per worker step and per shard (a whole variable is one shard):

- a variable read whole (no lookupsPerStep): the forward pass pulls its value;
- a looked-up table: the forward pass sends the ids that fall in the shard and pulls
  as many rows back; the update touches the distinct rows among them. Where lookups
  land follows the workload's id rule, row floor(rows x u ** id_skew) for u uniform:
  id_skew 1 is uniform (k x shard rows / rows lookups, and R x (1 - (1 - 1/R)^k)
  distinct rows of R for k lookups, in proportion per shard); the runtime's
  synthetic ids (shared/variable_placement/reference_model.ID_SKEW) put most lookups, and most distinct
  rows, on the first shard of each table ("div" sharding keeps the low ids there);
- the update: each updated row (all rows of a variable read whole, or of a
  table under dense adam) moves (reads, writes) rows of variable and slot
  data. With tfjobgen's runtime the rules' arithmetic runs on the worker, so the
  counts come from reference_model.UPDATE_ROWS (adagrad: read the accumulator,
  write the accumulator and the variable: (1, 2)); a program of your own is
  taken to use TensorFlow's fused optimizer kernels, which run on the PS: only
  the gradient travels, (0, 1). A sparse update also sends the rows' 8-byte
  index, once;
- a tensor crosses to a PS once per step however many ops there read it:
  the ids and the row index of an update are sent once for the gather and
  every scatter, and once for all the tables the same ids look up and that
  are split alike (the runtime's embedding and wide tables);
- every tensor that crosses costs FRAMING_BYTES more (below);
- variables that are not trained (the global step) are left out.

Held to what the kernel counts on run-local's connections by
benchmarks/runtime/traffic.py and tests/runtime/test_traffic_measured.py.

A round is one step of every worker. Topologies differ only in which of
those bytes stay inside a server:

- colocated: worker w shares a server with PS w // workersPerServer: its
  bytes to that PS stay local, the rest cross;
- isolated: every worker-PS byte crosses;
- spread, none: workers are not placed relative to any PS; counted as all
  crossing (an upper bound: a worker may land beside a PS by chance).

The busiest server is the hot PS's (every worker's bytes to it arrive there)
or, when that carries less, a server full of workers (colocated: a PS's
server, which also sends its own workers' bytes to the other PS).

Limits: the ids of files and of programs of your own are taken as uniform
(real ids are skewed: fewer distinct rows, a hotter first shard); the
chief's own traffic, checkpoints and StarServer's batching are not counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..concerns.workload import ID_BYTES, RULES_ON_WORKER, Workload
from ..inputs.trainingjob import TrainingJob
from ..shared.variable_placement import reference_model
from ..shared.variable_placement.round_robin import Shard, ShardLayout

# TensorFlow's gRPC bytes around each tensor that crosses between tasks: the receiver's RecvTensor
# request naming it, the reply's metadata, HTTP/2 and gRPC frames. Measured on run-local's loopback
# connections (benchmarks/runtime/traffic.py, TensorFlow 2.21): 310-380 bytes per tensor under tf2.
FRAMING_BYTES = 330
_BLOCK_GROWTH = 100  # distinct_rows' blocks: 1 + first row // this rows, whose odds differ by under 1%

TOPOLOGIES = ("colocated", "isolated", "spread", "none")


@dataclass(frozen=True)
class StepTraffic:
    """One worker step: bytes each PS sends to the worker (pull) and receives from it (push)."""

    pull: tuple[float, ...]
    push: tuple[float, ...]

    @property
    def per_ps(self) -> tuple[float, ...]:
        return tuple(a + b for a, b in zip(self.pull, self.push))

    @property
    def total(self) -> float:
        return sum(self.per_ps)


def _update_rows(workload: Workload, sparse: bool) -> tuple[int, int]:
    if workload.rules_on != RULES_ON_WORKER or workload.optimizer is None:
        return 0, 1  # fused kernels on the PS: the gradient is all that travels
    return reference_model.UPDATE_ROWS[workload.optimizer]["sparse" if sparse else "dense"]


def lookup_share(skew: float, rows: int, first: int, stop: int) -> float:
    """The share of lookups that land in rows [first, stop) of a table of `rows` rows."""
    return (stop / rows) ** (1 / skew) - (first / rows) ** (1 / skew)


def distinct_rows(skew: float, rows: int, lookups: float, first: int, stop: int) -> float:
    """The expected number of rows of [first, stop) that `lookups` lookups touch: the sum over those
    rows of 1 - (1 - p)^lookups, p the odds of a lookup hitting the row."""
    if skew == 1:
        return (stop - first) * _touched(1 / rows, lookups)
    total, row = 0.0, first
    while row < stop:  # in blocks of rows with almost the same odds: cheap for a billion rows
        end = min(stop, row + 1 + row // _BLOCK_GROWTH)
        total += (end - row) * _touched(lookup_share(skew, rows, row, end) / (end - row), lookups)
        row = end
    return total


def _touched(p: float, lookups: float) -> float:
    """The odds that a row with odds p is hit at least once by `lookups` lookups."""
    return 1.0 if p >= 1 else -math.expm1(lookups * math.log1p(-p))


def per_step(workload: Workload, placed: ShardLayout) -> StepTraffic:
    pull, push = [0.0] * placed.num_ps, [0.0] * placed.num_ps
    # A fused kernel takes the table's gradient as it comes (rows), whatever it then does on the PS;
    # the runtime's dense adam turns it into a whole-table gradient on the worker first.
    sparse_updates = workload.rules_on != RULES_ON_WORKER or workload.optimizer in reference_model.SPARSE_UPDATES
    sent: set[tuple] = set()  # the ids already on a PS this step, by where they come from
    for shard in placed.shards:
        variable, p = shard.variable, shard.ps
        if not variable.trainable:
            continue  # the global step: read and bumped by a few bytes
        if variable.lookups:
            stop = shard.first + shard.rows
            # Measured: skewed ids crowd a table's first shard; even shares missed PS by -47% to +167%.
            lookups = variable.lookups * lookup_share(workload.id_skew, variable.rows, shard.first, stop)
            # Measured: a tensor reaches a PS once a step however many ops there read it, so the ids
            # and the index count once, not once per table, read and write.
            first_time = _ids_of(shard) not in sent
            sent.add(_ids_of(shard))
            pull[p] += _tensor(lookups * variable.row_bytes)
            push[p] += _tensor(lookups * ID_BYTES) if first_time else 0.0
            if sparse_updates:
                touched = distinct_rows(workload.id_skew, variable.rows, variable.lookups, shard.first, stop)
                reads, writes = _update_rows(workload, sparse=True)
                pull[p] += reads * _tensor(touched * variable.row_bytes)
                push[p] += writes * _tensor(touched * variable.row_bytes)
                push[p] += _tensor(touched * ID_BYTES) if first_time else 0.0  # the rows' index
                continue
        else:
            pull[p] += _tensor(shard.value_bytes)  # the forward pass reads it whole
        reads, writes = _update_rows(workload, sparse=False)  # every row of it
        pull[p] += reads * _tensor(shard.value_bytes)
        push[p] += writes * _tensor(shard.value_bytes)
    return StepTraffic(tuple(pull), tuple(push))


def _ids_of(shard: Shard) -> tuple:
    """What the ids sent to a shard's PS are computed from: tables looked up by the same ids and split
    alike get the same ones (TensorFlow merges the identical partitioning ops), and a whole table the
    ids themselves."""
    variable = shard.variable
    split = (variable.rows, shard.parts, shard.part) if shard.parts > 1 else ()
    return (shard.ps, variable.ids or variable.name, *split)


def _tensor(payload: float) -> float:
    """A tensor's bytes on the wire: without the framing, a PS of a few biases came out 28-38% short."""
    return payload + FRAMING_BYTES


@dataclass(frozen=True)
class TopologyTraffic:
    mode: str
    cross: float  # bytes per round that cross between servers
    local: float  # bytes per round that stay inside a server
    busiest: str  # the server whose network carries the most: "ps:3's", or "10 workers'"
    busiest_bytes: float  # in + out of that server per round

    @property
    def local_share(self) -> float:
        total = self.cross + self.local
        return self.local / total if total else 0.0


def by_topology(job: TrainingJob, step: StepTraffic, workers_per_node: int) -> list[TopologyTraffic]:
    """Each topology's cross-server bytes per round, for this job's PS and worker counts;
    `workers_per_node`: how many workers share a server where they run apart from the PS."""
    workers = job.roles["worker"].replicas
    per_ps = step.per_ps
    total = sum(per_ps)
    hot = per_ps.index(max(per_ps)) if per_ps else 0
    crowd = max(1, min(workers, workers_per_node))
    found = []
    for mode in TOPOLOGIES:
        if mode == "colocated":
            found.append(_colocated(per_ps, workers, job.topology.workers_per_server))
        elif crowd * total > workers * per_ps[hot]:  # a full server of workers sends more than the hot PS gets
            found.append(TopologyTraffic(mode, workers * total, 0.0, f"{crowd} workers'", crowd * total))
        else:
            found.append(TopologyTraffic(mode, workers * total, 0.0, f"ps:{hot}'s", workers * per_ps[hot]))
    return found


def _colocated(per_ps: tuple[float, ...], workers: int, group: int) -> TopologyTraffic:
    num_ps, total = len(per_ps), sum(per_ps)
    local = cross = 0.0
    server_bytes = [0.0] * num_ps
    for w in range(workers):
        home = w // group
        if home < num_ps:
            local += per_ps[home]
            server_bytes[home] += total - per_ps[home]  # its bytes to the other PS leave its server
        else:
            home = -1  # no PS server for it (too many workers): all its bytes cross
        cross += total - (per_ps[home] if home >= 0 else 0.0)
        for p in range(num_ps):
            if p != home:
                server_bytes[p] += per_ps[p]  # arrive at PS p's server from elsewhere
    busiest = max(range(num_ps), key=lambda p: server_bytes[p]) if num_ps else 0
    return TopologyTraffic("colocated", cross, local, f"ps:{busiest}'s", server_bytes[busiest] if num_ps else 0.0)
