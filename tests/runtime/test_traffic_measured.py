"""`tfjobgen plan`'s traffic per PS against the bytes run-local's connections carry: within 10%.

The plan's second prediction (the first, bytes held per PS, is test_plan_prediction.py's): bytes
per worker step between each PS and the workers. The job is the reference model at its default
size on tf2, 2 PS, one worker and the chief, partitioners none and auto, 150 steps, while
tfjobgen/local/wire.py reads the kernel's byte counters of every connection between two tasks.
A run's bytes between worker and PS over its steps: what it moves between them once (connecting,
the step function) is tens of kB (wide-deep-none's flows_once in benchmarks/runtime/results/
traffic.json: 0.2-25 kB per pair), under 0.5% of these runs. benchmarks/runtime/traffic.py
subtracts it, from two runs of each example job (docs/plan.md, "The traffic model against the wire").
"""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import need, run_tfjobgen
from runtime_support import need_tensorflow, passed, run_local

JOB = ("apiVersion: tfjobgen.dev/v1alpha1\nkind: TrainingJob\nmetadata: {name: traffic-check, namespace: ml-test}\n"
       "spec:\n  image: registry.example.com/ml/tfjobgen-runtime:0.1.0\n  roles:\n"
       "    ps: {replicas: 2, cpu: 1, memory: 2Gi}\n    worker: {replicas: 1, cpu: 1, memory: 2Gi}\n"
       "    chief: {cpu: 1, memory: 2Gi}\n  training:\n    partitioner: PARTITIONER\n"
       "    checkpointEverySteps: 1000\n")
STEPS = 150
GOAL = 0.10


@pytest.mark.parametrize("partitioner", ["none", "auto"])
def test_predicted_traffic_per_ps_is_within_ten_percent_of_the_bytes_on_the_wire(tmp_path, partitioner):
    need_tensorflow()
    need("ss", shutil.which("ss"), "iproute2's ss reads the kernel's byte counters of each connection")
    job = tmp_path / "job.yaml"
    job.write_text(JOB.replace("PARTITIONER", partitioner))
    planned = run_tfjobgen("plan", str(job), "--format", "json")
    assert planned.returncode == 0, planned.stderr
    predicted = json.loads(planned.stdout)["traffic"]["per_worker_step_bytes"]

    run = run_local(job, tmp_path, "--steps", str(STEPS), "--scale-ps", "2", "--scale-workers", "1",
                    count_bytes=True)
    steps = int(passed(run)["final"]["step"])

    def per_step(sender: str, receiver: str) -> float:
        return run.wire.get((sender, receiver), 0) / steps

    for index, expected in enumerate(predicted):
        ps = f"ps:{index}"
        measured = per_step(ps, "worker:0") + per_step("worker:0", ps)
        assert measured > 0 and abs(expected - measured) <= GOAL * measured, \
            f"{ps} ({partitioner}): plan predicts {expected:,.0f} bytes per step, the wire carried {measured:,.0f}"
    # Nothing else moves per step but the chief's scheduling of it: no PS talks to another PS.
    assert not [pair for pair in run.wire if pair[0].startswith("ps:") and pair[1].startswith("ps:")]
