"""runtime/metrics.py without TensorFlow: what the task's events become (the real scrape is test_prometheus.py)."""

from __future__ import annotations

import pytest

from tfjobgen.runtime import events, metrics, settings
from tfjobgen.runtime.settings import Task

prometheus_client = pytest.importorskip("prometheus_client", reason="the runtime extra brings prometheus-client")


def _task(role: str, index: int = 0, api: str = "tf2") -> Task:
    cluster = {"chief": ("c:1",), "ps": ("p0:1", "p1:1"), "worker": ("w:1",)}
    training = settings.training_from_json("{}")
    return Task(job="small", api=api, protocol="grpc", role=role, index=index, cluster=cluster,
                control_address="c:2", intra_op=1, inter_op=2, training=training, metrics_port=0)


def _value(found: metrics.Metrics, name: str) -> float | None:
    return found.registry.get_sample_value(name, {"training_job": "small", "role": found.task.role,
                                                  "index": str(found.task.index)})


def test_the_chief_counts_steps_from_its_resume_point_and_examples_by_the_batch():
    found = metrics.Metrics(_task("chief"), started=0.0)
    for event, fields in ((events.RESUME, {"step": 100}), (events.UP, {}), (events.STEP, {"step": 150, "loss": 0.5}),
                          (events.STEP, {"step": 200, "loss": 0.4}), (events.CHECKPOINT, {"step": 200})):
        found.observe(event, fields)
    assert _value(found, "tfjobgen_steps_total") == 100  # 150 and 200 after a resume at 100
    assert _value(found, "tfjobgen_examples_total") == 100 * found.task.training.batch_size
    assert _value(found, "tfjobgen_loss") == 0.4
    assert _value(found, "tfjobgen_step_duration_seconds_count") == 2  # one observation per report
    assert _value(found, "tfjobgen_last_checkpoint_timestamp_seconds") > 0
    assert _value(found, "tfjobgen_startup_seconds") > 0


def test_each_ps_serves_the_bytes_the_planner_places_on_it_and_no_training_metrics():
    served = [metrics.Metrics(_task("ps", i), started=0.0) for i in (0, 1)]
    per_ps = [_value(m, "tfjobgen_ps_variable_bytes") for m in served]
    assert per_ps == [metrics.ps_bytes(m.task) for m in served] and all(b > 0 for b in per_ps)
    assert _value(served[0], "tfjobgen_steps_total") is None
    assert metrics.names_for("ps", chief=False) == ("tfjobgen_startup_seconds", "tfjobgen_ps_variable_bytes")



def test_status_reads_the_step_pace_and_ps_bytes_the_runtime_serves():
    """tfjobgen status parses the exposition prometheus-client writes (no client library of its own)."""
    from tfjobgen.status import metrics as status_metrics
    from tfjobgen.status.read import Scrape

    chief, ps = metrics.Metrics(_task("chief"), started=0.0), [metrics.Metrics(_task("ps", i), started=0.0)
                                                               for i in (0, 1)]
    for event, fields in ((events.UP, {}), (events.STEP, {"step": 50, "loss": 0.6}), (events.STEP, {"step": 90})):
        chief.observe(event, fields)
    served = {"chief:0": chief, "ps:0": ps[0], "ps:1": ps[1]}
    scrapes = {task: Scrape(task, text=prometheus_client.generate_latest(m.registry).decode())
               for task, m in served.items()}
    scrapes["worker:0"] = Scrape("w", error="HTTP 503: no answer")
    found = status_metrics.summarize(scrapes, "chief:0")
    count = _value(chief, "tfjobgen_step_duration_seconds_count")
    assert found.step == 90 and found.loss == 0.6 and count == 2
    assert found.steps_per_second == count / _value(chief, "tfjobgen_step_duration_seconds_sum")
    assert found.ps_bytes == {"ps:0": metrics.ps_bytes(ps[0].task), "ps:1": metrics.ps_bytes(ps[1].task)}
    assert found.unreachable == {"worker:0": "HTTP 503: no answer"}
    fresh = status_metrics.summarize({"chief:0": Scrape("c", text=prometheus_client.generate_latest(
        metrics.Metrics(_task("chief"), started=0.0).registry).decode())}, "chief:0")
    assert fresh.step == 0 and fresh.loss is None and fresh.steps_per_second is None  # NaN loss: none yet
