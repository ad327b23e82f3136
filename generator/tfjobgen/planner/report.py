"""One job's plan: capacity, PS load, traffic and advice, made once and shown three ways.

`make` is pure (job, profile, workload) -> Plan; `text`, `markdown` and
`as_json` only format it, so the terminal, the pull-request comment and
scripts always agree.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..concerns import capacity as capacity_lib
from ..concerns import numa
from ..concerns.workload import Workload
from ..inputs.intents import Intent
from ..inputs.profile import ClusterProfile, NodeShape
from ..inputs.quantity import describe_bytes, describe_cpu
from ..inputs.trainingjob import TrainingJob
from ..kit import table
from ..shared.variable_placement import round_robin
from ..shared.variable_placement.sharding import BALANCE_GOAL
from . import advice as advice_lib
from . import traffic
from .units import percent, size

MAX_PS_ROWS = 32  # bytes per PS are listed one row per PS up to this many PS


@dataclass(frozen=True)
class Load:
    """PS load and traffic under one layout."""

    layout: round_robin.ShardLayout
    step: traffic.StepTraffic
    topologies: tuple[traffic.TopologyTraffic, ...]


@dataclass(frozen=True)
class Plan:
    job: TrainingJob
    profile: str
    workload: Workload | None
    layouts: dict[str, round_robin.ShardLayout]  # every partitioner (empty without a workload)
    balance: tuple[int, round_robin.ShardLayout] | None  # fewest shards that reach the goal
    own: Load | None  # the job as written
    after: Load | None  # with the advised partitioner (None: no change advised)
    capacity: capacity_lib.Capacity
    advice: tuple[advice_lib.Advice, ...]
    notes: tuple[str, ...]

    @property
    def key(self) -> str:
        return f"{self.job.namespace}/{self.job.name}"


def _load(job: TrainingJob, workload: Workload, layout: round_robin.ShardLayout,
          workers_per_node: int) -> Load:
    step = traffic.per_step(workload, layout)
    return Load(layout, step, tuple(traffic.by_topology(job, step, workers_per_node)))


def make(job: TrainingJob, profile: ClusterProfile, workload: Workload | None, document: dict | None = None) -> Plan:
    """The plan of a valid job. With the intent `document` it came from, advice whose change tfjobgen would
    refuse (colocated on a backend that cannot carry it, say) becomes a note saying why."""
    num_ps = job.roles["ps"].replicas
    found = capacity_lib.capacity(job, profile)
    advice, notes = [], []
    layouts, balance, own, after = {}, None, None, None
    if workload is None:
        notes.append("the job runs a program of its own and declares no variables: declare them in spec.model "
                     "(or pass --checkpoint) to see PS load, traffic and partitioning advice")
    else:
        layouts = {p: round_robin.layout(workload.variables, num_ps, p, workload.min_shard_bytes)
                   for p in round_robin.PARTITIONERS}
        balance = round_robin.shards_to_balance(workload.variables, num_ps, workload.min_shard_bytes)
        workers_per_node = next(r.per_node for r in found.roles if r.role == "worker")
        own = _load(job, workload, layouts[workload.partitioner], workers_per_node)
        advised, better = advice_lib.partitioning(workload, layouts, balance)
        after = _load(job, workload, better, workers_per_node) if better is not None else None
        advice += advised + advice_lib.optimizer(workload) + advice_lib.memory(job, own.layout)
        advice += advice_lib.topology(job, (after or own).topologies, found)
        if not workload.order_known:
            notes.append("a checkpoint lists variables by name, not in creation order: with partitioner none the "
                         "real round-robin may put them on other PS; totals and auto/fixed are unaffected")
        if not any(v.lookups for v in workload.variables):
            notes.append("no variable is read by lookups (lookupsPerStep), so traffic counts every variable "
                         "read whole on every step")
    advice += advice_lib.star_server(job) + advice_lib.threads(job) + advice_lib.capacity(found)
    if document is not None:
        advice, refused = _accepted(advice, document, profile)
        notes += refused
    return Plan(job, profile.name, workload, layouts, balance, own, after, found, tuple(advice), tuple(notes))


def _accepted(advice: list[advice_lib.Advice], document: dict, profile: ClusterProfile) -> tuple[list, list[str]]:
    """The advice whose changes pass `tfjobgen validate` when written into the intent, and a note for each
    of the others with the first reason it would be refused."""
    from ..expand import pipeline  # validation is the judge of advice; imported when a plan has the intent

    kept, notes = [], []
    for item in advice:
        if item.changes:
            _, problems = pipeline.validate(Intent(advice_lib.applied(document, item)), profile)
            errors = [p for p in problems if p.is_error]
            if errors:
                notes.append(f"{item.field}: {item.message}; not advised: tfjobgen would then refuse the job "
                             f"({errors[0].field}: {errors[0].message})")
                continue
        kept.append(item)
    return kept, notes


# ---- the tables, as rows (shared by text and Markdown) -----------------------------------------

def _title(plan: Plan) -> str:
    job = plan.job
    return f"{plan.key} ({job.api}, {job.protocol}, {job.topology.mode}, qos {job.qos}) on profile {plan.profile}"


def _node(plan: Plan, node: NodeShape) -> str:
    """A node shape as the packing read it: with its NUMA nodes where the Topology Manager packs per NUMA node."""
    cpu = f"{describe_cpu(node.cpu)} CPU"
    if numa.aligned(plan.job, node):
        free = "+".join(str(f) for f in node.numa_free)
        cpu += f" ({free} on {node.numa_nodes} NUMA nodes, {node.topology_manager_policy})"
    return f"{cpu}, {describe_bytes(node.memory)}"


def capacity_rows(plan: Plan) -> tuple[list[str], list[list]]:
    rows = [[r.role, r.replicas, describe_cpu(r.cpu), describe_bytes(r.memory), r.pool, _node(plan, r.node),
             r.per_node]
            for r in plan.capacity.roles]
    return ["ROLE", "TASKS", "CPU", "MEMORY", "POOL", "NODE", "PER NODE"], rows


def group_rows(plan: Plan) -> tuple[list[str], list[list]]:
    rows = []
    for g in plan.capacity.groups:
        which = f"ps:{g.first}" if g.first == g.last else f"ps:{g.first}-{g.last}"
        rows.append([which, g.workers, describe_cpu(g.cpu), describe_bytes(g.memory),
                     _node(plan, g.node), "yes" if g.fits else "NO"])
    return ["GROUP", "WORKERS", "CPU", "MEMORY", "NODE", "FITS"], rows


def topology_rows(plan: Plan) -> tuple[list[str], list[list]]:
    counts = plan.capacity.node_counts
    rows = []
    for packing in plan.capacity.packings:
        nodes = ", ".join(f"{n}" + (f" of {counts[p]}" if counts.get(p) else "") + ("" if p == "any" else f" ({p})")
                          for p, n in sorted(packing.nodes.items())) or "0"
        pending = "; ".join(f"{p.tasks}: {p.reason}" for p in packing.pending) or "-"
        mode = packing.mode + (" (this job)" if packing.mode == plan.job.topology.mode else "")
        rows.append([mode, nodes, pending])
    return ["TOPOLOGY", "NODES", "PENDING"], rows


def share_rows(plan: Plan) -> tuple[list[str], list[list]]:
    rows = [[s.pool, f"{s.nodes_used} of {s.nodes}", percent(s.nodes_used / s.nodes), percent(float(s.cpu)),
             percent(float(s.memory))] for s in plan.capacity.shares]
    return ["POOL", "NODES", "OF NODES", "OF CPU", "OF MEMORY"], rows


def partitioner_rows(plan: Plan) -> tuple[list[str], list[list]]:
    rows = []
    for name, layout in plan.layouts.items():
        own = " (this job)" if plan.workload and name == plan.workload.partitioner else ""
        rows.append([name + own, f"{layout.max_over_mean:.2f}", f"ps:{layout.hot_ps}", percent(layout.hot_share),
                     size(max(layout.bytes_per_ps)), size(layout.total)])
    if plan.balance and plan.balance[1].num_ps > 1:
        shards, layout = plan.balance
        rows.append([f"fewest shards: {shards} per variable >= {size(plan.workload.min_shard_bytes)}",
                     f"{layout.max_over_mean:.2f}", f"ps:{layout.hot_ps}", percent(layout.hot_share),
                     size(max(layout.bytes_per_ps)), size(layout.total)])
    return ["PARTITIONER", "MAX/MEAN", "HOT PS", "HOT SHARE", "ON HOT PS", "TOTAL"], rows


def ps_rows(plan: Plan) -> tuple[list[str], list[list]]:
    own, after = plan.own, plan.after
    headers = ["PS", f"BYTES ({own.layout.partitioner})", "SHARE", "PER WORKER STEP"]
    if after:
        headers += [f"BYTES ({after.layout.partitioner})", "SHARE"]
    rows = []
    for i, b in enumerate(own.layout.bytes_per_ps):
        row = [f"ps:{i}", f"{b:,}", percent(b / own.layout.total if own.layout.total else 0),
               size(own.step.per_ps[i])]
        if after:
            a = after.layout.bytes_per_ps[i]
            row += [f"{a:,}", percent(a / after.layout.total if after.layout.total else 0)]
        rows.append(row)
    return headers, rows


def traffic_rows(plan: Plan, load: Load) -> tuple[list[str], list[list]]:
    rows = []
    for t in load.topologies:
        mode = t.mode + (" (this job)" if t.mode == plan.job.topology.mode else "")
        rows.append([mode, size(t.cross), size(t.local), percent(t.local_share), f"{t.busiest} server",
                     size(t.busiest_bytes)])
    return ["TOPOLOGY", "CROSS-SERVER", "INSIDE A SERVER", "LOCAL", "BUSIEST", "ITS NETWORK"], rows


def _traffic_caption(plan: Plan, load: Load) -> str:
    workers = plan.job.roles["worker"].replicas
    return (f"Bytes per round ({workers} workers x 1 step; {size(load.step.total)} per worker step), "
            f"partitioner {load.layout.partitioner}")


def _summary(plan: Plan) -> list[str]:
    lines = [_title(plan)]
    if plan.workload:
        w = plan.workload
        slots = "" if w.optimizer is None else f", optimizer {w.optimizer}"
        lines.append(f"variables: {w.source}: {len(w.variables)} variables, {size(plan.own.layout.total)} on the PS "
                     f"with their slots{slots}, partitioner {w.partitioner}")
    return lines


# ---- text ---------------------------------------------------------------------------------

def text(plan: Plan) -> str:
    blocks = ["\n".join(_summary(plan))]
    blocks.append("CAPACITY\n" + table.render(*capacity_rows(plan)))
    if plan.capacity.groups:
        blocks.append("COLOCATED GROUPS (1 PS + its workers on one server)\n" + table.render(*group_rows(plan)))
    blocks.append("NODES EACH TOPOLOGY NEEDS\n" + table.render(*topology_rows(plan)))
    if plan.capacity.shares:
        blocks.append("SHARE OF THE CLUSTER\n" + table.render(*share_rows(plan)))
    if plan.own:
        blocks.append(f"PS LOAD ({len(plan.own.layout.bytes_per_ps)} PS; goal max/mean <= {BALANCE_GOAL:.2f})\n"
                      + table.render(*partitioner_rows(plan)))
        if len(plan.own.layout.bytes_per_ps) <= MAX_PS_ROWS:
            blocks.append("BYTES PER PS (variables and optimizer slots)\n" + table.render(*ps_rows(plan)))
        blocks.append("TRAFFIC: " + _traffic_caption(plan, plan.own) + "\n"
                      + table.render(*traffic_rows(plan, plan.own)))
        if plan.after:
            blocks.append("TRAFFIC AFTER THE ADVICE: " + _traffic_caption(plan, plan.after) + "\n"
                          + table.render(*traffic_rows(plan, plan.after)))
    if plan.advice:
        blocks.append("ADVICE\n" + "\n".join(f"- {a.field}: {a.message}" for a in plan.advice))
    else:
        blocks.append("ADVICE\nnothing to change")
    if plan.notes:
        blocks.append("\n".join(f"note: {n}" for n in plan.notes))
    return "\n\n".join(blocks) + "\n"


# ---- Markdown (the pull-request comment) -------------------------------------------------------

def markdown(plan: Plan, heading: str = "###") -> str:
    out = [f"{heading} Plan for `{plan.key}`", "", " ".join(f"_{line}_" for line in _summary(plan)[1:]) or "", ""]
    if plan.advice:
        out += [f"- `{a.field}`: {table.markdown_cell(a.message)}" for a in plan.advice] + [""]
    out += ["**Capacity**", "", table.markdown(*capacity_rows(plan)), ""]
    if plan.capacity.groups:
        out += ["**Colocated groups**", "", table.markdown(*group_rows(plan)), ""]
    out += ["**Nodes each topology needs**", "", table.markdown(*topology_rows(plan)), ""]
    if plan.capacity.shares:
        out += ["**Share of the cluster**", "", table.markdown(*share_rows(plan)), ""]
    if plan.own:
        out += [f"**PS load** (goal max/mean <= {BALANCE_GOAL:.2f})", "", table.markdown(*partitioner_rows(plan)), ""]
        if len(plan.own.layout.bytes_per_ps) <= MAX_PS_ROWS:
            out += ["**Bytes per PS**", "", table.markdown(*ps_rows(plan)), ""]
        out += [f"**Traffic**: {_traffic_caption(plan, plan.own)}", "", table.markdown(*traffic_rows(plan, plan.own)),
                ""]
        if plan.after:
            out += [f"**Traffic after the advice**: {_traffic_caption(plan, plan.after)}", "",
                    table.markdown(*traffic_rows(plan, plan.after)), ""]
    out += [f"_note: {n}_" for n in plan.notes]
    return "\n".join(out).rstrip() + "\n"


# ---- JSON ---------------------------------------------------------------------------------

def _layout_json(layout: round_robin.ShardLayout) -> dict:
    return {"ps_bytes": list(layout.bytes_per_ps), "max_over_mean": round(layout.max_over_mean, 4),
            "hot_ps": layout.hot_ps, "hot_share": round(layout.hot_share, 4), "total_bytes": layout.total}


def _load_json(load: Load) -> dict:
    return {**_layout_json(load.layout), "partitioner": load.layout.partitioner,
            "per_worker_step_bytes": [round(b) for b in load.step.per_ps],
            "per_worker_step_pull_bytes": [round(b) for b in load.step.pull],  # PS to worker
            "per_worker_step_push_bytes": [round(b) for b in load.step.push],  # worker to PS
            "topologies": [{"mode": t.mode, "cross_server_bytes": round(t.cross), "local_bytes": round(t.local),
                            "busiest_server": t.busiest, "busiest_server_bytes": round(t.busiest_bytes)}
                           for t in load.topologies]}


def as_json(plan: Plan) -> dict:
    """The plan for scripts: `ps_bytes` is the predicted bytes per PS in task order, as the job is written."""
    cap = plan.capacity
    data = {
        "job": plan.key, "profile": plan.profile, "api": plan.job.api, "topology": plan.job.topology.mode,
        "capacity": {
            "roles": [{"role": r.role, "tasks": r.replicas, "pool": r.pool, "per_node": r.per_node}
                      for r in cap.roles],
            "colocated_groups": [{"first_ps": g.first, "last_ps": g.last, "workers": g.workers, "fits": g.fits}
                                 for g in cap.groups],
            "topologies": [{"mode": p.mode, "nodes": p.nodes,
                            "pending": [{"role": q.role, "indexes": list(q.indexes), "reason": q.reason}
                                        for q in p.pending]} for p in cap.packings],
            "node_counts": {k: v for k, v in cap.node_counts.items() if v is not None},
            "shares": [{"pool": s.pool, "nodes_used": s.nodes_used, "nodes": s.nodes, "cpu": round(float(s.cpu), 4),
                        "memory": round(float(s.memory), 4)} for s in cap.shares],
        },
        "advice": [{"field": a.field, "message": a.message,
                    "changes": {f: (None if v == advice_lib.REMOVE else v) for f, v in a.changes}}
                   for a in plan.advice],
        "notes": list(plan.notes),
    }
    if plan.workload and plan.own:
        data.update({
            "source": plan.workload.source, "partitioner": plan.workload.partitioner,
            **{k: v for k, v in _layout_json(plan.own.layout).items()},
            "partitioners": {name: _layout_json(layout) for name, layout in plan.layouts.items()},
            "shards_to_balance": ({"shards": plan.balance[0], **_layout_json(plan.balance[1])}
                                  if plan.balance else None),
            "traffic": _load_json(plan.own),
            "after_advice": _load_json(plan.after) if plan.after else None,
        })
    return data
