"""The runtime reads exactly what the generator writes: TF_CONFIG, threads, control address, training.

No TensorFlow here: settings, sharding and events are plain Python.
"""

from __future__ import annotations

import json

import pytest
from conftest import JOBS
from runtime_support import task_env

from tfjobgen.expand import pipeline
from tfjobgen.runtime import events, settings
from tfjobgen.runtime.errors import SetupError
from tfjobgen.shared.variable_placement import sharding

RUNTIME_JOBS = ["wide-deep.yaml"]


@pytest.mark.parametrize("job", RUNTIME_JOBS)
def test_every_generated_pod_env_is_a_valid_task(job):
    intents, _ = pipeline.load_intents([str(JOBS / job)])
    counts = {role: spec["replicas"] if "replicas" in spec else 1 for role, spec in intents[0].data["spec"]["roles"].items()}
    for role, count in counts.items():
        for index in (0, count - 1):
            task = settings.from_env(task_env(JOBS / job, role, index), cpus=2)
            assert (task.role, task.index) == (role, index)
            # Relative to the namespace; the evaluator serves nothing and is not in the cluster.
            assert task.address == ("" if role == "evaluator" else f"wide-deep-{role}-{index}.wide-deep:2222")
            assert task.control_address == "wide-deep-chief-0.wide-deep:2224"
            assert task.has_evaluator and (task.retries, task.failures) == (3, 0) and not task.last_attempt
            assert task.training.vocabulary_size == 5_000_000 and task.training.optimizer == "adagrad"
            assert task.training.model_dir == "gs://ml-checkpoints/wide-deep"  # as the job file says
            assert "evaluator" not in task.training_cluster


def test_generated_thread_counts_are_used_and_a_tf2_worker_never_gets_one_inter_op_thread():
    env = task_env(JOBS / "wide-deep.yaml", "worker", 3)
    task = settings.from_env(env, cpus=80)
    assert (task.intra_op, task.inter_op) == (4, 4)  # the worker's 4 CPUs, not the host's 80
    one = settings.from_env({**env, "TF_NUM_INTEROP_THREADS": "1"}, cpus=1)
    assert one.inter_op == 2 and "deadlocks" in one.notes[0]
    unset = {k: v for k, v in env.items() if not k.startswith("TF_NUM_")}
    assert (settings.from_env(unset, cpus=1).intra_op, settings.from_env(unset, cpus=1).inter_op) == (1, 2)
    tf1 = settings.from_env({**env, "TFJOBGEN_API": "tf1", "TF_NUM_INTEROP_THREADS": "1"}, cpus=1)
    assert tf1.inter_op == 1 and not tf1.notes  # graph mode is fine with one inter-op thread


def _env(**changes) -> dict:
    env = task_env(JOBS / "wide-deep.yaml", "ps", 1)
    env.update(changes)
    return {k: v for k, v in env.items() if v is not None}


@pytest.mark.parametrize("changes, message", [
    ({"TF_CONFIG": None}, "TF_CONFIG is not set"),
    ({"TF_CONFIG": "{not json"}, "TF_CONFIG is not valid JSON"),
    ({"TF_CONFIG": '{"cluster":{"ps":["a:1"],"worker":["b:1"],"chief":["c:1"]},"task":{"type":"ps","index":3}}'},
     "task.index 3 is out of range: the cluster has 1 ps task(s)"),
    ({"TF_CONFIG": '{"cluster":{"ps":["a:1"],"worker":["b:1"],"master":["c:1"]},"task":{"type":"ps","index":0}}'},
     "role(s) master"),
    ({"TF_CONFIG": '{"cluster":{"ps":["a:1"],"chief":["c:1"]},"task":{"type":"ps","index":0}}'},
     "no worker task"),
    ({"TFJOBGEN_TRAINING": None}, "TFJOBGEN_TRAINING is not set"),
    ({"TFJOBGEN_TRAINING": '{"optimizer":"adamw"}'}, "TFJOBGEN_TRAINING optimizer: 'adamw' is not one of"),
    ({"TFJOBGEN_CONTROL_ADDRESS": "chief-without-port"}, "is not a host:port address"),
    ({"TF_NUM_INTRAOP_THREADS": "lots"}, "TF_NUM_INTRAOP_THREADS='lots' is not a positive whole number"),
    ({"TFJOBGEN_PROTOCOL": "rdma"}, "TFJOBGEN_PROTOCOL='rdma' is not one of"),
])
def test_a_bad_environment_is_one_line_naming_the_variable(changes, message):
    with pytest.raises(SetupError) as caught:
        settings.from_env(_env(**changes), cpus=2)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_training_defaults_come_from_the_schema():
    env = _env(TFJOBGEN_TRAINING=json.dumps({"steps": 7}))
    training = settings.from_env(env, cpus=2).training
    assert training.steps == 7
    assert (training.batch_size, training.partitioner, training.min_shard_bytes) == (256, "auto", 262144)
    assert training.hidden_units == (64, 32) and training.data_format == "synthetic"


def test_tf1_without_a_chief_makes_worker_0_the_chief():
    config = {"cluster": {"ps": ["p:1"], "worker": ["w0:1", "w1:1"]}, "task": {"type": "worker", "index": 0}}
    env = _env(TF_CONFIG=json.dumps(config), TFJOBGEN_API="tf1")
    task = settings.from_env(env, cpus=2)
    assert task.is_chief and task.peers == ["ps:0", "worker:1"]
    assert not settings.from_env({**env, "TF_CONFIG": env["TF_CONFIG"].replace('"index": 0', '"index": 1')},
                                 cpus=2).is_chief


# ---- sharding: the partitioner both APIs call, and the balance measure

class _Dtype:
    size = 4


@pytest.mark.parametrize("mode, shape, num_ps, expected", [
    ("auto", (100_000, 16), 4, [4, 1]),  # 6.4 MB: split across all PS
    ("auto", (100_000, 1), 4, [4, 1]),  # 400 KB >= 256 KiB: split too (balance on 4 PS needs it)
    ("auto", (136, 64), 4, [1, 1]),  # a 35 KB kernel stays whole
    ("fixed", (64,), 4, [4]),  # fixed splits even a bias
    ("fixed", (3, 2), 4, [3, 1]),  # never more shards than rows
    ("auto", (100_000, 16), 1, [1, 1]),
])
def test_partitions(mode, shape, num_ps, expected):
    assert sharding.partitioner(mode, num_ps, 262144)(shape, _Dtype()) == expected


def test_none_means_no_partitioner_and_placement_measures_the_hot_ps():
    assert sharding.partitioner("none", 4, 262144) is None
    placement = sharding.placement([("/job:ps/replica:0/task:0/device:CPU:0", 900), ("/job:ps/task:1", 100),
                                    ("/job:chief/replica:0/task:0/device:CPU:0", 5000)], 2)
    assert placement.bytes_per_ps == (900, 100) and placement.max_over_mean == pytest.approx(1.8)
    assert sharding.placement([], 2).max_over_mean == 1.0


def test_events_round_trip_and_other_lines_are_ignored():
    text = events.line(events.ERROR, message='ps:1 (127.0.0.1:5) did not come up: "quoted" = yes', step=3)
    assert events.parse(text) == ("error", {"message": 'ps:1 (127.0.0.1:5) did not come up: "quoted" = yes',
                                            "step": "3"})
    assert events.parse("W0000 00:00 tfjobgen: event=up") is None
    assert events.parse(events.line(events.PLACEMENT, bytes_per_ps=[1, 2]))[1]["bytes_per_ps"] == "1,2"


def test_hdfs_paths_get_the_hadoop_clients_classpath(tmp_path):
    """The runtime asks `$HADOOP_HDFS_HOME/bin/hadoop classpath --glob`, as an argument list, once.

    There is no Hadoop client or HDFS on this machine, so a stand-in `hadoop` script answers
    with a classpath; what is tested is tfjobgen's side: when it asks, with what, and its errors.
    """
    import dataclasses
    import stat

    from tfjobgen.runtime import hadoop
    from tfjobgen.runtime.errors import SetupError

    bin_dir = tmp_path / "hadoop" / "bin"
    bin_dir.mkdir(parents=True)
    script = bin_dir / "hadoop"
    script.write_text('#!/bin/sh\n[ "$1 $2" = "classpath --glob" ] || exit 9\necho "/opt/h/a.jar:/opt/h/b.jar"\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    task = settings.from_env(_env(), cpus=2)
    hdfs_task = dataclasses.replace(task, training=dataclasses.replace(task.training,
                                                                       model_dir="hdfs://nn:8020/models/x"))
    env = {"HADOOP_HDFS_HOME": str(tmp_path / "hadoop"), "PATH": "/usr/bin:/bin"}
    assert hadoop.set_classpath(task, dict(env)) is False, "no hdfs:// path: nothing to do"
    assert hadoop.set_classpath(hdfs_task, env) is True and env["CLASSPATH"] == "/opt/h/a.jar:/opt/h/b.jar"
    assert hadoop.set_classpath(hdfs_task, env) is False, "an existing CLASSPATH is kept"
    script.write_text("#!/bin/sh\necho 'JAVA_HOME is not set' >&2\nexit 1\n")
    with pytest.raises(SetupError, match="classpath --glob failed .exit 1.: JAVA_HOME is not set"):
        hadoop.set_classpath(hdfs_task, {"HADOOP_HDFS_HOME": str(tmp_path / "hadoop")})
    with pytest.raises(SetupError, match="check spec.hadoop.home"):
        hadoop.set_classpath(hdfs_task, {"HADOOP_HDFS_HOME": str(tmp_path / "nowhere")})
