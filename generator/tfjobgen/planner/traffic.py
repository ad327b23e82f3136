"""Bytes per training step between the workers and each PS, and how many of them cross servers.

The model, per worker step and per shard (a whole variable is one shard):

- a variable read whole (no lookupsPerStep): the forward pass pulls its value;
- a looked-up table: the forward pass sends k_s ids and pulls k_s rows, where
  k_s = lookups x shard rows / table rows (ids spread evenly over the rows);
  the update touches u_s distinct rows, the expected number of distinct rows
  k uniform draws hit, R x (1 - (1 - 1/R)^k), scaled to the shard;
- the update: each updated row (all rows of a variable read whole, or of a
  table under dense adam) moves (reads, writes) rows of variable and slot
  data, plus an 8-byte index per row for each sparse read or write. With
  tfjobgen's runtime the rules' arithmetic runs on the worker, so the counts
  come from runtime/variables.UPDATE_ROWS (adagrad: read the accumulator,
  write the accumulator and the variable: (1, 2)); a program of your own is
  taken to use TensorFlow's fused optimizer kernels, which run on the PS: only
  the gradient travels, (0, 1).
- variables that are not trained (the global step) are left out.

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

Limits: real ids are skewed (hot rows make fewer distinct rows and a hotter
first shard under "div" partitioning); TCP/gRPC framing, the chief's own
traffic and StarServer's batching are not counted.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import TrainingJob
from ..runtime import variables as layout
from .placement import Layout
from .variables import ID_BYTES, RULES_ON_WORKER, Workload

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
    return layout.UPDATE_ROWS[workload.optimizer]["sparse" if sparse else "dense"]


def per_step(workload: Workload, placed: Layout) -> StepTraffic:
    pull, push = [0.0] * placed.num_ps, [0.0] * placed.num_ps
    # A fused kernel takes the table's gradient as it comes (rows), whatever it then does on the PS;
    # the runtime's dense adam turns it into a whole-table gradient on the worker first.
    sparse_updates = workload.rules_on != RULES_ON_WORKER or workload.optimizer in layout.SPARSE_UPDATES
    for shard in placed.shards:
        variable, p = shard.variable, shard.ps
        if not variable.trainable:
            continue  # the global step: read and bumped by a few bytes
        updated = shard.value_bytes
        if variable.lookups:
            lookups = variable.lookups * shard.rows / variable.rows
            pull[p] += lookups * variable.row_bytes
            push[p] += lookups * ID_BYTES
            if sparse_updates:
                touched = shard.rows * (1 - (1 - 1 / variable.rows) ** variable.lookups)
                reads, writes = _update_rows(workload, sparse=True)
                pull[p] += reads * touched * variable.row_bytes
                push[p] += writes * touched * variable.row_bytes + (reads + writes) * touched * ID_BYTES
                continue
        else:
            pull[p] += shard.value_bytes  # the forward pass reads it whole
        reads, writes = _update_rows(workload, sparse=False)  # every row of it
        pull[p] += reads * updated
        push[p] += writes * updated
    return StepTraffic(tuple(pull), tuple(push))


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
