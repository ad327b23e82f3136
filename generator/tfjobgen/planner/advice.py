"""What to change before launching, each line with the field to change and the reason in numbers.

The seed's lesson, in the order it cost them: one unpartitioned variable puts
the load on one PS; dense Adam on a big embedding updates every row on every
step; StarServer wants 8-10 workers per PS; thread pools larger than the
CPUs, or PS polling without dedicated cores, steal the cores training needs.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from ..concerns import environment, qos
from ..concerns.capacity import Capacity
from ..concerns.workload import RULES_ON_WORKER, Workload
from ..inputs.trainingjob import TrainingJob
from ..shared.variable_placement import reference_model
from ..shared.variable_placement.round_robin import ShardLayout
from ..shared.variable_placement.sharding import BALANCE_GOAL
from .traffic import TopologyTraffic
from .units import size

STAR_SERVER_RATIO = (8, 10)  # workers per PS DeepRec recommends for StarServer
BIG_TABLE_BYTES = 64 << 20  # a looked-up table this big makes a dense update costly


REMOVE = "(remove)"  # a change that deletes its field (the default then applies)


@dataclass(frozen=True)
class Advice:
    field: str  # the intent field to change
    message: str  # what to set, and why
    # The change the advice names, as (field, value) pairs to write into the intent (value REMOVE: delete
    # the field); empty when it names no single value. report.make keeps only advice whose changes validate.
    changes: tuple[tuple[str, Any], ...] = ()


def applied(document: dict, advice: Advice) -> dict:
    """A copy of an intent document with the advice's changes written in."""
    changed = copy.deepcopy(document)
    for field, value in advice.changes:
        *parents, last = field.split(".")
        node = changed
        for key in parents:
            node = node.setdefault(key, {})
        if value == REMOVE:
            node.pop(last, None)
        else:
            node[last] = value
    return changed


def partitioning(workload: Workload, layouts: dict[str, ShardLayout],
                 balance: tuple[int, ShardLayout] | None) -> tuple[list[Advice], ShardLayout | None]:
    """Advice on the partitioner, and the layout it leads to (None: keep the job's)."""
    own = layouts[workload.partitioner]
    if own.balanced:
        return [], None
    field = f"{workload.field}.partitioner"
    lead = (f"ps:{own.hot_ps} would hold {100 * own.hot_share:.0f}% of {size(own.total)} "
            f"(max/mean {own.max_over_mean:.2f} on {own.num_ps} PS) with partitioner {workload.partitioner}")
    for choice in ("auto", "fixed"):
        if choice != workload.partitioner and layouts[choice].balanced:
            how = "" if workload.field == "spec.training" else (
                f" (in your program: {_program_partitioner(choice, own.num_ps, workload.min_shard_bytes)})")
            return [Advice(field, f"{lead}: set {choice}{how}, max/mean {layouts[choice].max_over_mean:.2f}",
                           ((field, choice),))], layouts[choice]
    tried = (f"neither auto ({layouts['auto'].max_over_mean:.2f}) nor fixed ({layouts['fixed'].max_over_mean:.2f}) "
             f"reaches {BALANCE_GOAL:.2f}")
    if balance:
        shards, found = balance
        return [Advice(field, (
            f"{lead}; {tried}, {shards} shards of every variable of at least {size(workload.min_shard_bytes)} "
            f"would ({found.max_over_mean:.2f}; in a program of your own: FixedShardsPartitioner({shards}) on "
            "those); or use fewer PS (spec.roles.ps.replicas)"))], found
    return [Advice(field, f"{lead}; {tried}, nor does any shard count up to {4 * own.num_ps}: the variables are "
                          "too few or too small to share out; fewer PS would do (spec.roles.ps.replicas)")], None


def _program_partitioner(choice: str, num_ps: int, min_shard_bytes: int) -> str:
    if choice == "fixed":
        return (f"variable_partitioner=tf.distribute.experimental.partitioners.FixedShardsPartitioner({num_ps}), "
                f"or tf1 fixed_size_partitioner({num_ps})")
    return (f"FixedShardsPartitioner({num_ps}) for variables of at least {size(min_shard_bytes)}, "
            "the others whole")


def optimizer(workload: Workload) -> list[Advice]:
    """Dense updates and slot memory on big looked-up tables."""
    if workload.optimizer is None:
        return []
    advice = []
    field = f"{workload.field}.optimizer"
    tables = [v for v in workload.variables if v.lookups and v.bytes >= BIG_TABLE_BYTES]
    for table in tables:
        if workload.optimizer not in reference_model.SPARSE_UPDATES:
            how = ("read and written by the worker" if workload.rules_on == RULES_ON_WORKER
                   else "read and written on the PS")
            advice.append(Advice(field, (
                f"{workload.optimizer} updates every one of the {table.rows:,} rows of '{table.name}' and of its "
                f"{table.slots} slots on every worker step ({size(table.bytes * (1 + table.slots))} {how}), where "
                f"a batch looks up at most {min(table.rows, table.lookups):,} rows: set lazy_adam, which updates "
                "only those (the seed's advice)"), ((field, "lazy_adam"),)))
    slotted = [t for t in tables if t.slots]
    if slotted and workload.optimizer in reference_model.SPARSE_UPDATES:
        slots = slotted[0].slots
        each = ", ".join(f"'{t.name}' {size(t.bytes)} -> {size(t.bytes * (1 + t.slots))}" for t in slotted)
        advice.append(Advice(field, (
            f"{workload.optimizer} keeps {slots} slot{'s' if slots > 1 else ''} the size of each variable beside it "
            f"on the PS: {each} (sgd keeps no slot, adagrad one, ftrl and lazy_adam two)")))
    return advice


def memory(job: TrainingJob, own: ShardLayout) -> list[Advice]:
    """PS whose variables alone would not fit in the memory the PS asks for."""
    limit = job.roles["ps"].memory
    over = [i for i, b in enumerate(own.bytes_per_ps) if b > limit]
    if not over:
        return []
    worst = max(own.bytes_per_ps)
    return [Advice("spec.roles.ps.memory", (
        f"{len(over)} PS would hold more variable bytes than their {job.roles['ps'].memory_text} "
        f"(ps:{own.hot_ps}: {size(worst)}, before TensorFlow's own memory): raise the memory"
        + ("" if own.balanced else " or partition the variables") + " before the PS are OOM-killed"))]


def star_server(job: TrainingJob) -> list[Advice]:
    if not job.uses_star_server:
        return []
    advice = []
    workers, ps = job.roles["worker"].replicas, job.roles["ps"].replicas
    low, high = STAR_SERVER_RATIO
    ratio = workers / ps
    if not low <= ratio <= high:
        target = max(1, round(workers / ((low + high) / 2)))
        advice.append(Advice("spec.roles.ps.replicas", (
            f"{workers} workers on {ps} PS is {ratio:.1f}:1; DeepRec recommends {low}-{high}:1 for StarServer: "
            f"{target} PS would make it {workers / target:.1f}:1"), (("spec.roles.ps.replicas", target),)))
    star = job.star_server
    if job.qos == "cpuset" and not star.ps_polling:
        advice.append(Advice("spec.starServer.psPolling", (
            "the PS have exclusive cores (qos cpuset): psPolling: true lets their network threads poll "
            "instead of sleeping (DeepRec: only with dedicated cores)"), (("spec.starServer.psPolling", True),)))
    if job.qos != "cpuset" and not star.ps_polling:
        advice.append(Advice("spec.qos", (
            "PS polling is off because the PS share cores (qos shared): a polling thread takes a whole core; "
            "with qos: cpuset the PS get dedicated cores and may poll"), (("spec.qos", "cpuset"),)))
    return advice


def threads(job: TrainingJob) -> list[Advice]:
    """Thread pools larger than the CPUs a task may use (StarServer's network threads included)."""
    advice = []
    network = dict(zip(("ps", "worker"), environment.star_server_cores(job))) if job.uses_star_server else {}
    for role in job.roles.values():
        budget = qos.cpu_budget(job, role.name)
        intra, inter = environment.threads(job, role.name)
        polls = job.uses_star_server and (job.star_server.ps_polling if role.name == "ps"
                                          else job.star_server.worker_polling if role.name == "worker" else False)
        busy = intra + (network.get(role.name, 0) if polls else 0)
        if busy > budget:
            extra = f" + {network[role.name]} polling network threads" if polls else ""
            field, fits = f"spec.roles.{role.name}.threads.intraOp", max(1, budget - (network.get(role.name, 0)
                                                                                      if polls else 0))
            advice.append(Advice(field, (
                f"{intra} compute threads{extra} on {budget} CPUs: set intraOp to {fits} (the seed cut context "
                "switches about 40% by matching the pools to the CPU limit)"), ((field, fits),)))
        elif inter > max(budget, 2) and role.inter_op is not None:
            field = f"spec.roles.{role.name}.threads.interOp"
            advice.append(Advice(field, f"{inter} inter-op threads on {budget} CPUs: remove it to match the CPU "
                                        "limit", ((field, REMOVE),)))
    return advice


def topology(job: TrainingJob, after: tuple[TopologyTraffic, ...], found: Capacity) -> list[Advice]:
    """When colocation pays (few PS: a worker's PS is mostly its neighbour) and when it cannot."""
    by_mode = {t.mode: t for t in after}
    colocated, isolated = by_mode["colocated"], by_mode["isolated"]
    ps = job.roles["ps"].replicas
    if job.topology.mode == "colocated" and colocated.local_share < 0.25:
        return [Advice("spec.topology.mode", (
            f"colocated keeps {100 * colocated.local_share:.0f}% of the bytes inside a server: each worker talks "
            f"to all {ps} PS and only one is its neighbour, so it saves {size(isolated.cross - colocated.cross)} "
            f"per round of {size(isolated.cross)}; the PS balance matters more than the topology here"))]
    if job.topology.mode != "colocated" and colocated.local_share >= 0.5:
        packing = next(p for p in found.packings if p.mode == "colocated")
        fits = ("" if not packing.pending else
                f", but a PS and {job.topology.workers_per_server} workers do not fit on one node: "
                "lower spec.topology.workersPerServer or the tasks' sizes first")
        return [Advice("spec.topology.mode", (
            f"colocated would keep {100 * colocated.local_share:.0f}% of the bytes inside a server "
            f"({size(colocated.cross)} instead of {size(by_mode[job.topology.mode].cross)} crossing per round)"
            + fits), (("spec.topology.mode", "colocated"),))]
    return []


def capacity(found: Capacity) -> list[Advice]:
    advice = [Advice(p.field, f"{p.tasks} would stay Pending: {p.reason}") for p in found.own.pending]
    for share in found.shares:
        if share.nodes_used and share.nodes_used >= share.nodes:
            advice.append(Advice("spec.roles", (
                f"the job takes all {share.nodes} nodes of pool {share.pool}: another job, or a node drained for "
                "maintenance, leaves tasks Pending")))
    return advice
