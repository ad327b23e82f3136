"""Real TensorFlow clusters on this machine, through `tfjobgen run-local`: trains, balanced, recoverable.

Each test starts five or six TensorFlow processes (10-25 s on 2 cores); they run
one after another. The harness (runtime_support.run_local) gives every run a
hard deadline and kills anything of it that survives; each test asserts that
nothing did.
"""

from __future__ import annotations

import pytest
from runtime_support import JOBS, need_tensorflow, passed, run_local

from tfjobgen.kit.owned import free_ports


@pytest.fixture(autouse=True)
def _tensorflow():
    need_tensorflow()


def test_a_rendered_job_trains_with_the_embedding_sharded_evenly_over_both_ps(tmp_path):
    report = passed(run_local(JOBS / "tf2-small.yaml", tmp_path))
    assert report["tasks_run"] == {"chief": 1, "ps": 2, "worker": 2}  # the evaluator is left out on 2 cores
    assert int(report["final"]["step"]) >= 300
    assert float(report["final"]["loss"]) < report["first_loss"] - 0.05  # it learned something
    per_ps = report["bytes_per_ps"]
    assert len(per_ps) == 2 and min(per_ps) > 0.45 * sum(per_ps)  # the 6.4 MB embedding is on both
    assert report["max_over_mean"] <= 1.10


def test_a_killed_worker_gets_a_new_pod_and_training_completes(tmp_path):
    report = passed(run_local(JOBS / "tf2-small.yaml", tmp_path, "--kill", "worker:0@100", "--with-evaluator"))
    assert report["tasks"]["worker:0"]["restarts"] == 1 and report["tasks"]["worker:0"]["failures"] == 1
    assert report["tasks"]["chief:0"]["restarts"] == 0
    fault = report["faults"][0]
    assert fault["task"] == "worker:0"
    # The Job controller waits 10 s before the new pod; training may even finish before it is back.
    back_after = fault.get("back_after", float("inf"))
    assert back_after > 10, "the Job controller waits 10 s before the new pod"
    # Order, not seconds (this machine may be busy): training went on before worker:0 was back.
    assert fault["next_step_after"] < back_after, "the other worker carried on meanwhile"
    assert int(report["final"]["step"]) >= 300  # a rerun step may push it one or two past
    assert report["resumes"] == []
    assert report["evaluations"], "the evaluator scored no checkpoint"


def test_an_evicted_worker_is_replaced_without_counting_even_with_no_retries_left(tmp_path):
    report = passed(run_local(JOBS / "tf2-small.yaml", tmp_path, "--evict", "worker:1@100", "--restarts", "0"))
    worker = report["tasks"]["worker:1"]
    assert (worker["restarts"], worker["failures"], worker["disruptions"]) == (1, 0, 1)
    assert report["faults"][0]["kind"] == "evicted"


def test_a_killed_ps_fails_the_chief_and_the_new_chief_resumes_from_the_checkpoint(tmp_path):
    report = passed(run_local(JOBS / "tf2-small.yaml", tmp_path, "--kill", "ps:1@150"))
    # The resumed chief may meet a worker whose gRPC channel to the new ps:1 is still in its reconnect
    # backoff (UnavailableError within a second of every task being up): it fails once more, and the next
    # chief resumes from the same checkpoint (1 run in 3 to 5 here). Both are the designed recovery.
    chief_restarts = report["tasks"]["chief:0"]["restarts"]
    assert report["tasks"]["ps:1"]["restarts"] == 1 and chief_restarts in (1, 2), report["tasks"]
    assert [int(r["step"]) for r in report["resumes"]] == [100] * chief_restarts  # checkpointEverySteps 100
    steps = report["steps"]
    before = [s for s in steps if s["chief_run"] == 1]
    after = [s for s in steps if s["chief_run"] == chief_restarts + 1]
    assert before[-1]["step"] >= 150 and after[0]["step"] == 150  # the steps after ckpt-100 are redone
    assert abs(after[0]["loss"] - before[-1]["loss"]) < 0.05  # the loss goes on where it was
    assert int(report["final"]["step"]) >= 300
    assert report["faults"][0]["resumed_from"] == 100 and "next_step_after" in report["faults"][0], "it trained on"


def test_the_chief_failing_for_good_ends_every_task_within_a_minute(tmp_path):
    """The chief's last attempt (--restarts 0) fails on its startup deadline: it names the missing task,
    tells every other task to stop, and each exits 4 (permanent) so every Job fails at once."""
    # 30 s: long enough for the tasks that do start (importing TensorFlow takes 5-6 s when five
    # processes start at once on 2 idle cores, far more on busy ones), so that the deadline names
    # only the one that never does.
    run = run_local(JOBS / "tf2-small.yaml", tmp_path, "--without", "ps:1", "--startup-timeout", "30",
                    "--restarts", "0")
    assert run.returncode == 1 and run.leftovers == []
    fail = [line for line in run.output.splitlines() if line.startswith("FAIL: ")]
    assert len(fail) == 1, run.output
    assert "chief:0 exited with code 1 (training failed; a new pod may do better) before it came up and failed " \
           "for good (no retry left of 0): ps:1 (127.0.0.1:" in fail[0], run.output
    assert "did not come up within 30 s" in fail[0] and "ps:0" not in fail[0].split("every task")[0]
    assert run.report["failed_for_good"]["task"] == "chief:0"
    others = {name: task for name, task in run.report["tasks"].items() if name != "chief:0"}
    codes = {name: task["exit_code"] for name, task in others.items()}
    # Each task told to stop exits 4. Once one worker has, the worker Job has failed for good and its
    # controller deletes the Job's other pod, so the second worker may be ended by SIGTERM first.
    assert codes["ps:0"] == 4 and 4 in (codes["worker:0"], codes["worker:1"]), codes
    assert {codes["worker:0"], codes["worker:1"]} <= {4, 143, -15}, codes  # 143: SIGTERM, taken by the runtime (termination.py)
    assert run.report["ended_after"] is not None and run.report["ended_after"] < 60, run.output
    assert "exceeded its" not in run.output, "the startup deadline ended the run, not the test's backstop"


def test_tf1_between_graph_with_star_server_falls_back_to_grpc_and_reads_csv_files(tmp_path):
    import subprocess
    import sys

    data = tmp_path / "train.csv"
    subprocess.run([sys.executable, "-m", "tfjobgen.runtime", "sample-data", "--format", "csv", "--examples", "3000",
                    "--vocabulary", "5000", str(data)], check=True, capture_output=True)
    job = tmp_path / "tf1.yaml"
    job.write_text(f"""\
apiVersion: tfjobgen.dev/v1alpha1
kind: TrainingJob
metadata: {{name: tf1-csv, namespace: ml-test}}
spec:
  image: registry.example.com/ml/tfjobgen-runtime:0.1.0
  protocol: star_server
  roles:
    ps: {{replicas: 2, cpu: 1, memory: 2Gi}}
    worker: {{replicas: 2, cpu: 1, memory: 2Gi}}
    evaluator: {{cpu: 1, memory: 2Gi}}
  training:
    steps: 200
    model: {{vocabularySize: 50000}}
    data: {{format: csv, paths: ["{data}"]}}
""")
    run = run_local(job, tmp_path, "--with-evaluator")
    report = passed(run)
    assert "running with grpc instead (the StarServer endpoint map is still rewritten and checked)" in run.output
    assert report["tasks_run"] == {"evaluator": 1, "ps": 2, "worker": 2}  # worker 0 is the chief
    assert int(report["final"]["step"]) >= 195  # tf1 workers stop on the global step they last saw
    assert report["max_over_mean"] <= 1.10
    assert report["evaluations"], "the tf1 evaluator scored no checkpoint"


def test_a_taken_port_is_one_line_from_the_task(tmp_path):
    import json
    import socket
    import subprocess
    import sys

    from runtime_support import task_env

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    env = task_env(JOBS / "tf2-small.yaml", "ps", 0)
    cluster = {"chief": [f"127.0.0.1:{free_ports(1)[0]}"], "ps": [f"127.0.0.1:{port}"],
               "worker": [f"127.0.0.1:{free_ports(1)[0]}"]}
    env.update(TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "ps", "index": 0}}),
               TFJOBGEN_CONTROL_ADDRESS=f"127.0.0.1:{free_ports(1)[0]}", HOME=str(tmp_path))
    try:
        proc = subprocess.run([sys.executable, "-m", "tfjobgen.runtime"], env=env, capture_output=True, text=True,
                              timeout=60)
    finally:
        taken.close()
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f'message="could not start the TF server at 127.0.0.1:{port}: the port is in use"' in proc.stdout


def test_a_fault_whose_step_never_comes_fails_the_run(tmp_path):
    """A run that was asked to kill a task and never did has not shown its recovery: it must not PASS."""
    run = run_local(JOBS / "tf2-small.yaml", tmp_path, "--steps", "20", "--kill", "worker:0@1000")
    assert run.returncode == 1 and not run.leftovers, run.output
    assert "FAIL: " in run.output and "never injected (worker:0@1000)" in run.output
    assert run.report["faults"] == []
