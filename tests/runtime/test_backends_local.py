"""run-local plays the JobSet and TFJob controllers too, and real TensorFlow trains what they would run.

The pods come from each backend's `decode` (JobSet's child Jobs; the TFJob operator's
pods with the TF_CONFIG it writes), so these runs check that the runtime gets what it
needs from each: the cluster, its task, the control address, StarServer's endpoint map.
"""

from __future__ import annotations

import pytest
from runtime_support import JOBS, need_tensorflow, passed, run_local


@pytest.fixture(autouse=True)
def _tensorflow():
    need_tensorflow()


def test_a_jobset_job_without_a_chief_trains_tf1_between_graph(tmp_path):
    job = tmp_path / "jobset.yaml"
    job.write_text("""\
apiVersion: tfjobgen.dev/v1alpha1
kind: TrainingJob
metadata: {name: tf1-jobset, namespace: ml-test}
spec:
  image: registry.example.com/ml/tfjobgen-runtime:0.1.0
  backend: jobset
  protocol: star_server
  roles:
    ps: {replicas: 2, cpu: 1, memory: 2Gi}
    worker: {replicas: 2, cpu: 1, memory: 2Gi}
  training:
    steps: 150
    model: {vocabularySize: 50000}
""")
    run = run_local(job, tmp_path)
    report = passed(run)
    assert report["tasks_run"] == {"ps": 2, "worker": 2}  # worker 0 (tf1-jobset-worker-0-0) is the chief
    assert "endpoint map is still rewritten and checked" in run.output
    assert int(report["final"]["step"]) >= 145


def test_a_tfjob_trains_on_the_operators_tf_config_and_a_killed_worker_gets_a_new_pod(tmp_path):
    job = tmp_path / "tfjob.yaml"
    job.write_text((JOBS / "tf2-small.yaml").read_text().replace("spec:\n", "spec:\n  backend: tfjob\n", 1))
    run = run_local(job, tmp_path, "--steps", "200", "--kill", "worker:0@100")
    # worker 0's new pod starts 10 s later: when the chief has finished by then, the TFJob has succeeded and
    # the operator deletes it (cleanPodPolicy Running), as run-local now does.
    report = passed(run, may_be_stopped=frozenset({"worker:0"}))
    # kill -9 exits 137: restartPolicy ExitCode treats 128 and above as retryable, so a new pod, not a failed job
    assert report["tasks"]["worker:0"]["restarts"] == 1
    assert int(report["final"]["step"]) >= 200
