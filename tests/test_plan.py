"""`tfjobgen plan`: placement by TensorFlow's rules, traffic, capacity against the scheduler model, advice, errors.

The placement predictions are held to measurements: benchmarks/runtime/results/balance.json
holds bytes per PS that real TensorFlow reported (docs/runtime.md); tests/runtime/
test_plan_prediction.py runs fresh ones. Capacity is held to the real kube-scheduler in
tests/cluster/test_topology_real.py.
"""

from __future__ import annotations

import importlib.util
import json
import re
import struct

import pytest
from conftest import JOBS, OVERLAYS, REPO, SAMPLE, need, run_tfjobgen

from tfjobgen.concerns import capacity
from tfjobgen.concerns.workload import RULES_ON_PS, RULES_ON_WORKER, Workload, of_job
from tfjobgen.expand import pipeline
from tfjobgen.inputs import schema
from tfjobgen.inputs.intents import Intent
from tfjobgen.planner import advice as advice_lib
from tfjobgen.planner import report, traffic
from tfjobgen.shared.variable_placement import reference_model, round_robin, sharding

SEED_PROFILE = SAMPLE / "overlays" / "seed-80c" / "cluster-profile.yaml"


def _validated(path, profile=None):
    loaded = pipeline.load_profile(str(profile) if profile else None)
    intents, problems = pipeline.load_intents([str(path)])
    job, found = pipeline.validate(intents[0], loaded)
    assert job is not None, [p.format() for p in problems + found]
    return job, loaded


def _write(tmp_path, text: str, name="job.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _variable(name, shape, slots=0, lookups=0, dtype="float32", trainable=True):
    return round_robin.Variable(name, tuple(shape), dtype, trainable, slots, lookups)


# ---- placement ---------------------------------------------------------------------------

def test_predictions_equal_every_measured_placement_of_the_runtime_balance_benchmark():
    measured = json.loads((REPO / "benchmarks/runtime/results/balance.json").read_text())
    shape = measured["model"]
    assert len(measured["runs"]) == 12
    for run in measured["runs"]:
        found = tuple(_variable(v.name, v.shape, 1 if v.trainable else 0, dtype=v.dtype, trainable=v.trainable)
                      for v in reference_model.created_variables(run["api"], shape["vocabularySize"],
                                                                 shape["embeddingDim"],
                                                                 tuple(shape["hiddenUnits"])))  # adagrad: one slot
        predicted = round_robin.layout(found, run["ps"], run["partitioner"], 256 << 10)
        assert list(predicted.bytes_per_ps) == run["bytes_per_ps"], run


def test_round_robin_in_creation_order_and_tensorflows_div_split():
    # ParameterServerStrategy's own example: 10 rows in 4 shards are 3, 3, 2, 2 rows.
    assert sharding.shard_rows(10, 4) == [3, 3, 2, 2]
    found = (_variable("a", [10, 1]), _variable("b", [4]), _variable("c", [6, 1]), _variable("step", [], dtype="int64",
                                                                                            trainable=False))
    whole = round_robin.layout(found, 2, "none", 1024)
    assert [(s.variable.name, s.ps) for s in whole.shards] == [("a", 0), ("b", 1), ("c", 0), ("step", 1)]
    split = round_robin.layout(found, 4, "fixed", 1024)
    assert [(s.variable.name, s.rows, s.ps) for s in split.shards] == [
        ("a", 3, 0), ("a", 3, 1), ("a", 2, 2), ("a", 2, 3), ("b", 1, 0), ("b", 1, 1), ("b", 1, 2), ("b", 1, 3),
        ("c", 2, 0), ("c", 2, 1), ("c", 1, 2), ("c", 1, 3), ("step", 1, 0)]  # a scalar is never split


def test_slots_sit_beside_their_variable_and_multiply_its_bytes():
    found = (_variable("table", [1000, 8], slots=2), _variable("bias", [8], slots=2))
    placed = round_robin.layout(found, 2, "none", 1024)
    assert placed.bytes_per_ps == (1000 * 8 * 4 * 3, 8 * 4 * 3)


def test_the_fewest_shards_that_balance_one_big_table_on_five_ps():
    found = (_variable("table", [100000, 16], slots=1), _variable("bias", [16], slots=1))
    assert round_robin.layout(found, 5, "none", 256 << 10).max_over_mean > 4.9  # the seed's one busy PS of 5
    shards, balanced = round_robin.shards_to_balance(found, 5, 256 << 10)
    assert shards == 5 and balanced.max_over_mean <= sharding.BALANCE_GOAL
    assert round_robin.place(found, 5, lambda v: 4 if v.bytes >= 256 << 10 else 1, "4").max_over_mean > 1.10


def test_the_layout_lists_the_model_in_creation_order_with_the_global_step_where_each_api_makes_it():
    # tests/runtime/test_plan_prediction.py checks that the runtime's WideDeep creates exactly these.
    names = [v.name for v in reference_model.model_variables(10, 4, (3, 2))]
    assert names == ["embedding", "wide", "hidden_0/kernel", "hidden_0/bias", "hidden_1/kernel", "hidden_1/bias",
                     "output/kernel", "output/bias"]
    assert [v.name for v in reference_model.created_variables("tf1", 10, 4, (3,))][0] == "global_step"
    assert [v.name for v in reference_model.created_variables("tf2", 10, 4, (3,))][-1] == "global_step"


def test_spec_model_enums_are_the_runtimes():
    spec = schema.load(schema.TRAINING_JOB)["properties"]["spec"]["properties"]
    declared, training = spec["model"]["properties"], spec["training"]["properties"]
    assert declared["optimizer"]["enum"] == training["optimizer"]["enum"]
    assert set(declared["optimizer"]["enum"]) == set(reference_model.OPTIMIZERS)
    assert set(declared["partitioner"]["enum"]) == set(sharding.MODES) == set(round_robin.PARTITIONERS)
    assert set(declared["variables"]["items"]["properties"]["dtype"]["enum"]) <= set(round_robin.DTYPE_BYTES)


# ---- traffic --------------------------------------------------------------------------------

FRAMING = traffic.FRAMING_BYTES  # gRPC's bytes around every tensor that crosses


def test_a_dense_variable_moves_whole_each_step_and_a_table_only_the_rows_looked_up():
    dense = Workload("t", (_variable("w", [100, 10], slots=1),), "none", 1024, "adagrad",
                     RULES_ON_PS, "spec.model")
    step = traffic.per_step(dense, round_robin.layout(dense.variables, 1, "none", 1024))
    assert step.pull == (4000 + FRAMING,) and step.push == (4000 + FRAMING,)  # the value; the gradient (fused)
    # Two lookups in a 2-row table touch 1.5 distinct rows on average (1 - (1/2)^2 of each row).
    table = Workload("t", (_variable("e", [2, 4], lookups=2),), "none", 1024, "sgd",
                     RULES_ON_PS, "spec.model")
    step = traffic.per_step(table, round_robin.layout(table.variables, 1, "none", 1024))
    assert step.pull == (2 * 16 + FRAMING,)  # both looked-up rows come back
    # ids, then 1.5 gradient rows and their index: three tensors
    assert step.push == (pytest.approx(2 * 8 + 1.5 * 16 + 1.5 * 8 + 3 * FRAMING),)


def test_the_runtimes_update_rules_move_slot_rows_through_the_worker():
    # adagrad on the worker: read the accumulator, write accumulator and variable, on top of the forward read.
    dense = Workload("t", (_variable("w", [100, 10], slots=1),), "none", 1024, "adagrad",
                     RULES_ON_WORKER, "spec.training")
    step = traffic.per_step(dense, round_robin.layout(dense.variables, 1, "none", 1024))
    assert step.pull == (2 * (4000 + FRAMING),) and step.push == (2 * (4000 + FRAMING),)
    # A sparse update sends its rows' index once, for the gather and both scatters.
    table = Workload("t", (_variable("e", [2, 4], slots=1, lookups=2),), "none", 1024, "adagrad",
                     RULES_ON_WORKER, "spec.training")
    step = traffic.per_step(table, round_robin.layout(table.variables, 1, "none", 1024))
    assert step.pull == (pytest.approx(2 * 16 + 1.5 * 16 + 2 * FRAMING),)  # rows, then accumulator rows
    assert step.push == (pytest.approx(2 * 8 + 2 * 1.5 * 16 + 1.5 * 8 + 4 * FRAMING),)


def test_tables_looked_up_by_the_same_ids_and_split_alike_get_them_once():
    def step(ids: str, wide_rows: int):
        tables = (round_robin.Variable("embedding", (1000, 4), "float32", True, 0, 100, ids),
                  round_robin.Variable("wide", (wide_rows, 1), "float32", True, 0, 100, ids))
        workload = Workload("t", tables, "fixed", 1, "sgd", RULES_ON_WORKER, "spec.training")
        return traffic.per_step(workload, round_robin.layout(tables, 2, "fixed", 1))

    shared, apart = step("ids", 1000), step("", 1000)
    # embedding and wide part_0 on ps:0, part_1 on ps:1: each PS gets one copy of the ids (half the 100
    # lookups) and of the update's row index (the rows of its half touched) instead of two
    touched = 500 * (1 - (1 - 1 / 1000) ** 100)
    for ps in (0, 1):
        assert apart.push[ps] - shared.push[ps] == pytest.approx(50 * 8 + FRAMING + touched * 8 + FRAMING)
        assert apart.pull[ps] == shared.pull[ps]
    assert step("ids", 999).push == step("", 999).push  # split at other rows: other ids


def test_skewed_ids_put_most_lookups_and_touched_rows_on_a_tables_first_shard():
    rows, lookups = 1000, 500
    assert traffic.lookup_share(3.0, rows, 0, 500) == pytest.approx(0.5 ** (1 / 3))  # 79% on the first half
    assert traffic.lookup_share(1.0, rows, 0, 500) == pytest.approx(0.5)
    for first, stop in ((0, 500), (500, 1000), (0, 1000)):
        exact = sum(1 - (1 - traffic.lookup_share(3.0, rows, i, i + 1)) ** lookups for i in range(first, stop))
        assert traffic.distinct_rows(3.0, rows, lookups, first, stop) == pytest.approx(exact, rel=1e-4)
    uniform = traffic.distinct_rows(1.0, rows, lookups, 0, rows)
    assert uniform == pytest.approx(rows * (1 - (1 - 1 / rows) ** lookups))
    assert traffic.distinct_rows(3.0, rows, lookups, 0, rows) < 0.8 * uniform  # hot ids repeat
    assert traffic.distinct_rows(3.0, 10 ** 9, 4096, 0, 10 ** 9) == pytest.approx(4096, rel=0.05)


def test_colocation_keeps_everything_local_with_one_ps_and_one_nth_with_n_balanced_ps():
    one, _ = _validated(JOBS / "scene1-case1.yaml")
    plan = report.make(one, pipeline.load_profile(None), of_job(one))
    by_mode = {t.mode: t for t in plan.own.topologies}
    assert by_mode["colocated"].cross == 0 and by_mode["colocated"].local_share == 1.0
    assert by_mode["isolated"].local_share == 0.0 and by_mode["isolated"].cross == pytest.approx(
        10 * plan.own.step.total)
    four, _ = _validated(JOBS / "scene1-case4.yaml")
    plan = report.make(four, pipeline.load_profile(None), of_job(four))
    fixed = report._load(four, plan.workload, plan.layouts["fixed"], 13)  # every PS an equal share
    colocated = next(t for t in fixed.topologies if t.mode == "colocated")
    assert colocated.local_share == pytest.approx(1 / 20, rel=0.01)


# ---- capacity (held to the real scheduler in tests/cluster/test_topology_real.py) -------------------

@pytest.mark.parametrize("scene, case, servers", [(1, 1, 1), (1, 2, 5), (1, 4, 20), (2, 1, 2), (2, 2, 10),
                                                  (2, 4, 40)])
def test_nodes_needed_are_the_seeds_servers(scene, case, servers):
    job, profile = _validated(JOBS / f"scene{scene}-case{case}.yaml")
    needed = capacity.capacity(job, profile).own
    assert needed.nodes == {capacity.NO_POOL: servers} and needed.pending == ()
    if servers > 1:
        assert capacity.capacity(job, _count_profile(servers - 1)).own.pending, "one server fewer leaves tasks Pending"


def _count_profile(count: int):
    return pipeline.profile_from({"apiVersion": "tfjobgen.dev/v1alpha1", "kind": "ClusterProfile",
                                  "metadata": {"name": "counted"}, "spec": {"nodeCount": count}})


def test_pending_tasks_are_named_with_the_rule_that_keeps_them_out():
    job, _ = _validated(JOBS / "scene2-case4.yaml")  # 20 PS alone on their servers, 200 workers 10 per server
    found = capacity.capacity(job, _count_profile(30))
    assert found.own.nodes == {capacity.NO_POOL: 30}
    (pending,) = found.own.pending
    assert pending.role == "worker" and pending.indexes == tuple(range(100, 200))
    assert "without a PS" in pending.reason
    (share,) = found.shares
    assert share.nodes_used == share.nodes == 30
    assert float(share.cpu) == pytest.approx((20 * 16 + 200 * 7) / (30 * 80))


def test_colocated_groups_that_do_not_fit_show_in_the_comparison():
    job, _ = _validated(JOBS / "scene2-case1.yaml")  # 1 PS of 16 CPU + 10 workers of 7 CPU: 86 CPU, on 80-CPU nodes
    colocated = next(p for p in capacity.capacity(job, pipeline.load_profile(None)).packings
                     if p.mode == "colocated")
    assert [(p.role, p.indexes) for p in colocated.pending] == [("worker", (8, 9))]


# ---- advice ---------------------------------------------------------------------------------

WIDE_DEEP = (JOBS / "wide-deep.yaml").read_text()


def test_partitioner_none_and_dense_adam_are_advised_against_with_the_fields_to_change(tmp_path):
    path = _write(tmp_path, WIDE_DEEP.replace("partitioner: auto", "partitioner: none")
                  .replace("optimizer: adagrad", "optimizer: adam"))
    job, profile = _validated(path)
    plan = report.make(job, profile, of_job(job))
    fields = [a.field for a in plan.advice]
    assert "spec.training.partitioner" in fields and "spec.training.optimizer" in fields
    assert plan.own.layout.max_over_mean > 3.8 and plan.after.layout.partitioner == "auto"
    assert plan.after.layout.balanced
    # dense adam sends the whole 640 MB table and its slots through the worker every step
    assert plan.own.step.total > 5 * 640e6


def test_star_server_ratio_and_thread_advice(tmp_path):
    text = (JOBS / "deeprec-starserver.yaml").read_text().replace("ps: {replicas: 10,", "ps: {replicas: 4,")
    job, profile = _validated(_write(tmp_path, text))
    plan = report.make(job, profile, None)
    ratio = next(a for a in plan.advice if a.field == "spec.roles.ps.replicas")
    assert "80 workers on 4 PS is 20.0:1" in ratio.message and "9 PS" in ratio.message
    # The default PS pool already leaves the 8 polling cores free (24 - 8 = 16 compute threads);
    # a user who sets intraOp to the whole CPU limit is told to give the polling threads their cores.
    assert not [a for a in plan.advice if a.field == "spec.roles.ps.threads.intraOp"]
    job, profile = _validated(_write(tmp_path, text.replace("ps: {replicas: 4,", "ps: {replicas: 4, threads: {intraOp: 24},")))
    (threads,) = [a for a in report.make(job, profile, None).advice if a.field == "spec.roles.ps.threads.intraOp"]
    assert "24 compute threads + 8 polling network threads on 24 CPUs" in threads.message
    assert "set intraOp to 16" in threads.message


def test_a_balanced_job_gets_no_partitioning_advice():
    job, profile = _validated(JOBS / "wide-deep.yaml")
    plan = report.make(job, profile, of_job(job))
    assert plan.after is None and plan.own.layout.balanced
    assert not [a for a in plan.advice if a.field.endswith("partitioner")]


# ---- spec.model: a program's own variables --------------------------------------------------

OWN = """\
apiVersion: tfjobgen.dev/v1alpha1
kind: TrainingJob
metadata: {name: own, namespace: ml-training}
spec:
  image: registry.example.com/ml/own:1.0
  command: [python, /app/train.py]
  api: tf1
  roles:
    ps: {replicas: 3, cpu: 4, memory: 8Gi}
    worker: {replicas: 12, cpu: 4, memory: 8Gi}
  model:
    optimizer: adagrad
    partitioner: none
    variables:
    - {name: global_step, shape: [], dtype: int64, trainable: false}
    - {name: user_embedding, shape: [1000000, 16], lookupsPerStep: 4096}
    - {name: item_embedding, shape: [300000, 16], lookupsPerStep: 4096}
    - {name: tower/kernel, shape: [256, 64]}
"""


def test_declared_variables_are_placed_in_their_order_with_the_optimizers_slots(tmp_path):
    proc = run_tfjobgen("plan", str(_write(tmp_path, OWN)), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    user, item, kernel = 1000000 * 16 * 4 * 2, 300000 * 16 * 4 * 2, 256 * 64 * 4 * 2  # adagrad: 1 slot each
    assert data["ps_bytes"] == [8 + kernel, user, item]  # step, user, item, kernel: round-robin over 3 PS
    assert data["partitioners"]["fixed"]["max_over_mean"] < 1.01
    assert {a["field"] for a in data["advice"]} >= {"spec.model.partitioner"}


@pytest.mark.parametrize("change, field, words", [
    ("    - {name: tower/kernel, shape: [256, 64]}", "spec.model.variables[3].name",
     "'user_embedding' is already declared at spec.model.variables[1]"),
    ("    - {name: bad, shape: [], lookupsPerStep: 5}", "spec.model.variables[3].lookupsPerStep",
     "a scalar has no rows to look up"),
    ("    - {name: bad, shape: [10, x]}", "spec.model.variables[3].shape[1]", ""),
    ("    - {name: bad, shape: [10], dtype: float8}", "spec.model.variables[3].dtype", "float32"),
    ("    - {name: bad, shape: [10], rows: 4}", "spec.model.variables[3].rows", "unknown field"),
])
def test_malformed_variable_lists_are_errors_at_their_line(tmp_path, change, field, words):
    text = OWN.replace("    - {name: tower/kernel, shape: [256, 64]}",
                       change.replace("tower/kernel", "user_embedding"))
    path = _write(tmp_path, text)
    proc = run_tfjobgen("plan", str(path))
    assert proc.returncode == 1 and proc.stdout == ""
    line = len(text.splitlines())  # variables[3] is the file's last line
    assert f"{path}:{line}: {field}: " in proc.stderr and words in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_spec_model_on_the_runtime_is_an_error_naming_both_fields(tmp_path):
    text = WIDE_DEEP + "  model:\n    variables:\n    - {name: x, shape: [4]}\n"
    proc = run_tfjobgen("validate", str(_write(tmp_path, text)))
    assert proc.returncode == 1
    assert ": spec.model: describes the model of a program of your own" in proc.stderr


@pytest.mark.tensorflow  # `tfjobgen plan --checkpoint` starts it
def test_an_unreadable_checkpoint_is_one_line_naming_it(tmp_path):
    junk = tmp_path / "model.ckpt"
    (tmp_path / "model.ckpt.index").write_bytes(b"not a checkpoint")
    proc = run_tfjobgen("plan", str(JOBS / "wide-deep.yaml"), "--checkpoint", str(junk))
    if "needs TensorFlow" in proc.stderr:
        need("tensorflow", None, "install the runtime extra")
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.splitlines()[-1].startswith(f"tfjobgen plan: {junk}: not a readable checkpoint")


def test_without_tensorflow_a_checkpoint_cannot_be_read_and_the_error_says_what_to_install(tmp_path):
    shadow = tmp_path / "shadow" / "tensorflow"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('No module named tensorflow')\n")  # as if not installed
    (tmp_path / "ckpt.index").write_bytes(b"")
    proc = run_tfjobgen("plan", str(JOBS / "wide-deep.yaml"), "--checkpoint", str(tmp_path / "ckpt"),
                        env={"PYTHONPATH": f"{tmp_path / 'shadow'}:{REPO / 'generator'}"})
    assert proc.returncode == 1
    assert "reading a checkpoint needs TensorFlow" in proc.stderr and "tfjobgen[runtime]" in proc.stderr


# ---- the command ------------------------------------------------------------------------------

def test_json_markdown_and_table_agree_and_repeat_byte_for_byte(tmp_path):
    args = [str(JOBS / "scene1-case2.yaml"), "--profile", str(SEED_PROFILE)]
    first, second = (run_tfjobgen("plan", *args, "--format", "json") for _ in range(2))
    assert first.returncode == 0 and first.stdout == second.stdout
    data = json.loads(first.stdout)
    table = run_tfjobgen("plan", *args).stdout
    markdown = run_tfjobgen("plan", *args, "--format", "markdown").stdout
    hot = max(data["ps_bytes"])
    assert f"{hot:,}" in table and f"{hot:,}" in markdown
    assert data["capacity"]["topologies"][0] == {"mode": "colocated", "nodes": {"any": 5}, "pending": []}


def test_png_draws_the_predictions_and_repeats_byte_for_byte(tmp_path):
    need("matplotlib", "matplotlib" if importlib.util.find_spec("matplotlib") else None, "pip install -e '.[plot]'")
    job = _write(tmp_path, WIDE_DEEP.replace("partitioner: auto", "partitioner: none"))
    pictures = []
    for name in ("a.png", "b.png"):
        proc = run_tfjobgen("plan", str(job), "--png", str(tmp_path / name))
        assert proc.returncode == 0, proc.stderr
        pictures.append((tmp_path / name).read_bytes())
    assert pictures[0][:8] == b"\x89PNG\r\n\x1a\n" and pictures[0] == pictures[1]
    width, height = struct.unpack(">II", pictures[0][16:24])
    assert width > 400 and height > 200
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.png", "b.png", "job.yaml"]  # nothing half-written


def test_auto_leaving_a_mid_size_table_whole_is_advised_to_fixed(tmp_path):
    # The wide table (50,000 x 1 floats, 200 kB, 600 kB with lazy_adam's slots) is under minShardBytes:
    # auto keeps it whole on one of 3 PS.
    text = WIDE_DEEP.replace("partitioner: auto", "partitioner: auto\n    minShardBytes: 262144").replace(
        "{vocabularySize: 5000000, embeddingDim: 32, hiddenUnits: [256, 128, 64]}",
        "{vocabularySize: 50000, embeddingDim: 12, hiddenUnits: [48]}").replace(
        "optimizer: adagrad", "optimizer: lazy_adam").replace("ps: {replicas: 4,", "ps: {replicas: 3,")
    job, profile = _validated(_write(tmp_path, text))
    plan = report.make(job, profile, of_job(job))
    assert plan.own.layout.bytes_per_ps == (3000624, 2459964, 2400488)  # as TensorFlow placed it (run-local)
    (advice,) = [a for a in plan.advice if a.field == "spec.training.partitioner"]
    assert "set fixed" in advice.message and plan.after.layout.partitioner == "fixed"


def test_variables_too_few_to_share_out_are_said_so():
    found = tuple(_variable(f"v{i}", [1, 1000], slots=1) for i in range(3))  # one row each: nothing to split
    workload = Workload("t", found, "none", 1024, "adagrad", RULES_ON_PS, "spec.model")
    layouts = {p: round_robin.layout(found, 4, p, 1024) for p in round_robin.PARTITIONERS}
    assert round_robin.shards_to_balance(found, 4, 1024) is None
    (advice,), after = advice_lib.partitioning(workload, layouts, None)
    assert after is None and "too few or too small to share out" in advice.message


def test_ps_memory_smaller_than_the_variables_is_advised(tmp_path):
    text = WIDE_DEEP.replace("ps: {replicas: 4, cpu: 8, memory: 32Gi}", "ps: {replicas: 4, cpu: 8, memory: 1Gi}")
    job, profile = _validated(_write(tmp_path, text.replace("partitioner: auto", "partitioner: none")))
    plan = report.make(job, profile, of_job(job))
    (advice,) = [a for a in plan.advice if a.field == "spec.roles.ps.memory"]
    assert advice.message.startswith("1 PS would hold more variable bytes than their 1Gi (ps:0: 1.3 GB")


def test_the_unpartitioned_example_of_plan_md_shows_the_seeds_hot_ps():
    job, profile = _validated(REPO / "docs/plan-examples/scene1-case2-unpartitioned.yaml", SEED_PROFILE)
    plan = report.make(job, profile, of_job(job))
    assert plan.own.layout.hot_share > 0.96 and plan.own.layout.max_over_mean > 4.8  # one PS of five
    assert plan.after.layout.partitioner == "auto" and plan.after.layout.max_over_mean < 1.01
    assert [a.field for a in plan.advice][0] == "spec.training.partitioner"


def test_node_pools_are_counted_apart_and_their_counts_bound_them(tmp_path):
    golden = REPO / "tests/golden/isolated-node-pools"
    profile_text = (golden / "profile.yaml").read_text().replace(
        "      node: {cpu: 64, reservedCpus: 2, memory: 512Gi}",
        "      node: {cpu: 64, reservedCpus: 2, memory: 512Gi}\n      nodeCount: 1")
    assert "nodeCount: 1" in profile_text
    profile = _write(tmp_path, profile_text, "profile.yaml")
    job, loaded = _validated(golden / "job.yaml", profile)
    found = capacity.capacity(job, loaded)
    assert found.own.nodes == {"ps-highmem": 1, "cpu-workers": 1}
    (pending,) = found.own.pending  # isolated PS repel each other: the second finds no node of its pool
    assert (pending.role, pending.indexes, pending.field) == ("ps", (1,), "spec.roles.ps.replicas")
    assert "the 1 node(s) of pool ps-highmem are taken" in pending.reason
    (share,) = found.shares
    assert (share.pool, share.nodes_used, share.nodes) == ("ps-highmem", 1, 1)
    colocated = next(p for p in found.packings if p.mode == "colocated")
    assert ("worker", "spec.topology.nodePools") in {(p.role, p.field) for p in colocated.pending}  # not in PS pool


# ---- placement that cannot happen, said before sync -------------------------------------------------

SPREAD_JOB = """\
apiVersion: tfjobgen.dev/v1alpha1
kind: TrainingJob
metadata: {name: spread, namespace: ml}
spec:
  image: registry.example.com/tf:1
  topology: {mode: spread, spread: required}
  roles:
    ps: {replicas: 5, cpu: 4, memory: 8Gi}
    worker: {replicas: 4, cpu: 4, memory: 8Gi%s}
"""


def test_required_spread_beyond_the_profiles_nodes_is_a_warning_on_the_spread(tmp_path):
    """5 PS that must each have a node of their own, on a cluster the profile says has 3 nodes: two stay
    Pending for good. Said at validate, on the field that asks for it; the build still succeeds (nodes
    may be added)."""
    profile = _write(tmp_path, SEED_PROFILE.read_text() + "  nodeCount: 3\n", "profile.yaml")
    path = _write(tmp_path, SPREAD_JOB % "")
    intents, _ = pipeline.load_intents([str(path)])
    job, problems = pipeline.validate(intents[0], pipeline.load_profile(str(profile)))
    assert job is not None
    (warning,) = [p for p in problems if "Pending" in p.message]
    assert (warning.severity, warning.field, warning.line) == ("warning", "spec.topology.spread", 6)
    assert warning.message.startswith("ps:3-4 would stay Pending: ") and "3 node(s)" in warning.message
    without_count = pipeline.validate(intents[0], pipeline.load_profile(str(SEED_PROFILE)))[1]
    assert not [p for p in without_count if "Pending" in p.message], "no count, nothing known"


def test_gpu_tasks_beyond_the_gpu_pool_are_a_warning_and_plan_names_the_gpus(tmp_path):
    golden = REPO / "tests/golden/gpu-monitoring"
    profile = _write(tmp_path, (golden / "profile.yaml").read_text().replace(
        "      node: {cpu: 32, reservedCpus: 1, memory: 256Gi}",
        "      node: {cpu: 32, reservedCpus: 1, memory: 256Gi}\n      nodeCount: 2"), "profile.yaml")
    path = _write(tmp_path, SPREAD_JOB.replace("spread: required", "spread: preferred").replace(
        "replicas: 5", "replicas: 1") % ", gpu: 4")
    loaded = pipeline.load_profile(str(profile))
    intents, _ = pipeline.load_intents([str(path)])
    job, problems = pipeline.validate(intents[0], loaded)
    (warning,) = [p for p in problems if "Pending" in p.message]
    assert (warning.severity, warning.field) == ("warning", "spec.roles.worker.gpu")
    assert warning.message.startswith("worker:2-3 would stay Pending: ")
    (pending,) = capacity.capacity(job, loaded).own.pending
    assert "4 GPU" in pending.reason and "CPU" not in pending.reason, pending.reason


# ---- advice that validates ----------------------------------------------------------------------------

def test_every_advice_of_every_example_passes_validate_when_applied():
    """What plan advises, written into the job file, is a job tfjobgen accepts on that cluster."""
    applied = 0
    for overlay in [None] + OVERLAYS:
        profile = pipeline.load_profile(str(SAMPLE / "overlays" / overlay / "cluster-profile.yaml") if overlay
                                        else None)
        intents, _ = pipeline.load_intents([str(JOBS)])
        for intent in intents:
            job, problems = pipeline.validate(intent, profile)
            assert job is not None, [p.format() for p in problems]
            for advice in report.make(job, profile, of_job(job), intent.data).advice:
                if not advice.changes:
                    continue  # it names no single value to write (raise the memory, say)
                changed = Intent(advice_lib.applied(intent.data, advice), intent.file)
                errors = [p.format() for p in pipeline.validate(changed, profile)[1] if p.is_error]
                assert not errors, f"{overlay}: {intent.name}: {advice.field}: {advice.message}\n" + "\n".join(errors)
                applied += 1
    assert applied, "some example gets advice with a change"


def test_plan_does_not_advise_a_topology_the_backend_refuses(capsys):
    from tfjobgen import cli

    assert cli.main(["plan", str(JOBS / "ctr-jobset.yaml")]) == 0
    out = capsys.readouterr().out
    assert "- spec.topology.mode: colocated" not in out
    assert re.search(r"note: spec.topology.mode: colocated would keep \d+% of the bytes inside a server", out)
    assert "not advised: tfjobgen would then refuse the job (spec.backend: topology colocated needs" in out
