"""run-local's planning, without TensorFlow: the scale-down, the rewritten env, and the one-line refusals."""

from __future__ import annotations

import json
import os
import sys

import pytest
from conftest import JOBS, run_tfjobgen
from runtime_support import JOBS as TEST_JOBS
from runtime_support import run_local

from tfjobgen import backends
from tfjobgen.expand import pipeline
from tfjobgen.local import run, shape, tasks
from tfjobgen.local.machine import Machine
from tfjobgen.local.shape import LocalError

TWO_CORES = Machine((0, 1), 23 << 30)
GIB = 1 << 30


def _request(path) -> tasks.JobRequest:
    intents, _ = pipeline.load_intents([str(path)])
    expansion = pipeline.expand(intents, pipeline.load_profile(None))
    assert expansion.ok
    return tasks.describe(backends.decode(expansion.objects[0]))


def _build(path, tmp_path, counts=None, **overrides):
    request = _request(path)
    counts = counts or shape.choose(request.counts, TWO_CORES, shape.model_bytes(request.training)).counts
    ports = list(range(30000, 30000 + tasks.ports_needed(request, counts)))
    local, notices, files = tasks.build(request, counts, ports, str(tmp_path), tasks.Overrides(**overrides), (0, 1))
    run.write_files(files)
    return request, local, notices


def test_the_readme_job_is_scaled_down_to_two_ps_two_workers_and_the_chief_with_a_notice():
    request = _request(JOBS / "wide-deep.yaml")
    assert request.counts == {"chief": 1, "evaluator": 1, "ps": 4, "worker": 32}
    chosen = shape.choose(request.counts, TWO_CORES, shape.model_bytes(request.training))
    assert chosen.counts == {"chief": 1, "ps": 2, "worker": 2}
    assert "scaled down to 2 PS + 2 workers + chief from the job's 4 PS + 32 workers + chief + evaluator" \
        in chosen.notices[0]
    assert "--scale-workers" in chosen.notices[0] and "--with-evaluator" in chosen.notices[1]
    wider = shape.choose(request.counts, Machine(tuple(range(16)), 64 * GIB), 0, with_evaluator=True)
    assert wider.counts == {"chief": 1, "evaluator": 1, "ps": 4, "worker": 28}


def test_more_than_the_machine_holds_is_refused_with_a_suggestion():
    asked = {"chief": 1, "ps": 4, "worker": 32}
    with pytest.raises(LocalError, match=r"holds at most 8: use --scale-workers 5"):
        shape.choose(asked, TWO_CORES, 0, scale_workers=30)
    with pytest.raises(LocalError, match="the job has 4 ps task"):
        shape.choose(asked, TWO_CORES, 0, scale_ps=5)
    with pytest.raises(LocalError, match="lower training.model.vocabularySize"):
        shape.choose(asked, Machine((0, 1), 4 * GIB), 3 * GIB)
    assert shape.choose({"chief": 1, "ps": 1, "worker": 2}, TWO_CORES, 0).scaled is False


def test_every_address_moves_to_127_0_0_1_and_every_pod_agrees_on_the_cluster(tmp_path):
    request, local, notices = _build(JOBS / "wide-deep.yaml", tmp_path, steps=50)
    assert sorted(t.name for t in local) == ["chief:0", "ps:0", "ps:1", "worker:0", "worker:1"]
    clusters = {t.env["TFJOBGEN_CLUSTER"] for t in local}
    assert len(clusters) == 1
    cluster = json.loads(clusters.pop())
    assert cluster == {"chief": ["127.0.0.1:30000"], "ps": ["127.0.0.1:30001", "127.0.0.1:30002"],
                       "worker": ["127.0.0.1:30003", "127.0.0.1:30004"]}
    for task in local:
        config = json.loads(task.env["TF_CONFIG"])
        assert config["cluster"] == cluster and config["task"] == {"index": task.index, "type": task.role}
        assert task.address == cluster[task.role][task.index]
        assert task.env["TFJOBGEN_CONTROL_ADDRESS"] == "127.0.0.1:30005"
        assert not any("svc.cluster.local" in value for value in task.env.values())
        training = json.loads(task.env["TFJOBGEN_TRAINING"])
        assert training["steps"] == 50 and training["modelDir"] == os.path.join(str(tmp_path), "model")
        assert task.command == [sys.executable, "-m", "tfjobgen.runtime"]
        assert task.cpus is None  # 26 CPUs asked, 2 here: not pinned ...
        assert int(task.env["TF_NUM_INTRAOP_THREADS"]) <= 2  # ... so pools are capped at this machine's 2
        if task.role == "worker":
            assert task.env["TF_NUM_INTEROP_THREADS"] == "2"
    assert any("not pinned" in n for n in notices)


def test_the_star_server_endpoint_map_is_rewritten_with_the_tf_addresses_on_its_left(tmp_path):
    job = tmp_path / "star.yaml"
    job.write_text((TEST_JOBS / "tf2-small.yaml").read_text().replace(
        "  training:", "  protocol: star_server\n  api: tf1\n  training:"))
    request, local, notices = _build(job, tmp_path, protocol="grpc")
    endpoint_dir = {t.env["TF_SEASTAR_ENDPOINT_MAP_PATH"] for t in local}.pop()
    lines = (tmp_path / "starserver" / ".endpoint_map").read_text().splitlines()
    assert endpoint_dir == str(tmp_path / "starserver")
    assert sorted(line.split("=")[0] for line in lines) == sorted(t.address for t in local)
    assert all(line.split("=")[1].startswith("127.0.0.1:") for line in lines)
    assert {t.env["TFJOBGEN_PROTOCOL"] for t in local} == {"grpc"}  # the local fallback
    with pytest.raises(LocalError, match="has no line for"):
        tasks.rewrite_endpoint_map(lines[0] + "\n", {t.address: t.address for t in local[:2]}, [1, 2])


def test_tasks_that_fit_get_exclusive_cpus_like_the_cpu_manager_gives():
    request = _request(TEST_JOBS / "tf2-small.yaml")
    counts = {"chief": 1, "ps": 2, "worker": 2}
    assert tasks.pin(request, counts, tuple(range(8))) == {
        "chief:0": (0,), "ps:0": (1,), "ps:1": (2,), "worker:0": (3,), "worker:1": (4,)}
    assert tasks.pin(request, counts, (0, 1)) is None


# ---- the command line, where nothing needs TensorFlow

def test_unusable_input_is_one_line_and_starts_nothing(tmp_path):
    missing = run_tfjobgen("run-local", "jobs/nope.yaml")
    assert missing.returncode == 2 and missing.stderr.strip() == "tfjobgen run-local: no such file: jobs/nope.yaml"
    too_many = run_tfjobgen("run-local", "jobs/wide-deep.yaml", "--scale-workers", "20")
    assert too_many.returncode == 2 and "use --scale-workers 5" in too_many.stderr
    no_chief = run_tfjobgen("run-local", "jobs/wide-deep.yaml", "--without", "chief:0")
    assert no_chief.returncode == 2 and "needs its chief" in no_chief.stderr
    unknown = run_tfjobgen("run-local", "jobs/wide-deep.yaml", "--kill", "worker:9@10")
    assert unknown.returncode == 2 and "worker:9 is not among the tasks that run here" in unknown.stderr
    job = tmp_path / "csv.yaml"
    job.write_text((TEST_JOBS / "tf2-small.yaml").read_text().replace(
        "    partitioner: auto", "    data: {format: csv, paths: [/no/such/train-*.csv]}"))
    no_data = run_tfjobgen("run-local", str(job))
    assert no_data.returncode == 2
    # The job's own warnings (its evaluator cannot read a pod-local modelDir) may come first.
    assert no_data.stderr.strip().splitlines()[-1] == (
        "tfjobgen run-local: training.data.paths[0] '/no/such/train-*.csv' matches no file here")


def test_a_data_path_this_tensorflow_cannot_read_stops_run_local_at_once_naming_the_package(tmp_path):
    """Before, the tasks started and the chief failed after TensorFlow's import, saying only that this TensorFlow
    has no s3:// filesystem. Now nothing starts, and the line says what adds it."""
    job = tmp_path / "s3.yaml"
    job.write_text((TEST_JOBS / "tf2-small.yaml").read_text().replace(
        "    partitioner: auto", "    data: {format: tfrecord, paths: [s3://bucket/clicks/*.tfrecord]}"))
    refused = run_tfjobgen("run-local", str(job))
    assert refused.returncode == 2, refused.stderr
    last = refused.stderr.strip().splitlines()[-1]
    assert last.startswith("tfjobgen run-local: training.data.paths[0] 's3://bucket/clicks/*.tfrecord': "
                           "TensorFlow 2.21.0 has no s3:// filesystem: tensorflow-io adds it"), last
    assert sys.executable in last and "the job's image needs it too" in last, last
    # validate said so first, as a warning at the path's line
    assert "warning: spec.training.data.paths[0]" in refused.stderr and "tensorflow-io" in refused.stderr


def test_a_task_that_crashes_at_start_is_named_in_one_line_and_everything_is_stopped(tmp_path):
    run = run_local(TEST_JOBS / "custom-crash.yaml", tmp_path)
    assert run.returncode == 1, run.output
    fail = [line for line in run.output.splitlines() if line.startswith("FAIL: ")]
    assert len(fail) == 1, run.output
    assert "exited with code 1 before it came up and failed for good (exit code 1 is permanent): boom: " \
           "/models/config.json not found" in fail[0], run.output
    assert run.report["tasks"]["ps:0"]["state"] in ("stopped", "failed")
    assert run.leftovers == [] and run.seconds < 20


def test_a_job_with_volumes_is_told_that_run_local_mounts_none_and_which_paths_it_reads_here(tmp_path):
    """Before, run-local said nothing: the program failed on a missing /models/config.json with no hint that in a
    cluster /models is a claim. Now a notice names every mount of the job's own, its source and its roles."""
    job = tmp_path / "crash-on-volumes.yaml"
    job.write_text((TEST_JOBS / "custom-crash.yaml").read_text().replace("  roles:\n", """\
  volumes:
    - {name: models, persistentVolumeClaim: {claimName: model-config}}
    - {name: creds, secret: {secretName: reader}}
  volumeMounts:
    - {name: models, mountPath: /models, readOnly: true}
  roles:
""").replace("    worker: {replicas: 1, cpu: 1, memory: 1Gi}", """\
    worker:
      replicas: 1
      cpu: 1
      memory: 1Gi
      volumeMounts: [{name: creds, mountPath: /etc/creds}]"""))
    run = run_local(job, tmp_path)
    assert run.returncode == 1, run.output  # the program fails as before: /models is not there
    notice = next((line for line in run.output.splitlines() if "mounts volumes" in line), "")
    assert notice == ("run-local: the job mounts volumes (/etc/creds from secret reader (worker), /models from "
                      "claim model-config (every role)); run-local makes none: each task reads and writes those "
                      "paths on this machine, as they are here"), run.output
    assert run.leftovers == []


def test_run_local_and_the_generator_never_import_tensorflow():
    import subprocess

    code = ("import sys, tfjobgen.cli, tfjobgen.local.run, tfjobgen.local.supervisor, tfjobgen.runtime.main; "
            "tfjobgen.cli._parser(); print('tensorflow' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(TEST_JOBS.parents[2] / "generator")})
    assert proc.stdout.strip() == "False", proc.stderr
