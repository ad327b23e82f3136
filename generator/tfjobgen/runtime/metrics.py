"""Prometheus metrics of one task, served on the pod's `metrics` port (TFJOBGEN_METRICS_PORT).

The metrics follow the task's own events (events.py): `Metrics.observe` sees
every event the task reports, so the log line and the metric can never tell
different stories. Which task serves what:

    every task       tfjobgen_startup_seconds              from process start until the task was up
    the chief        tfjobgen_steps_total, tfjobgen_examples_total, tfjobgen_loss,
                     tfjobgen_step_duration_seconds, tfjobgen_last_checkpoint_timestamp_seconds
    each PS          tfjobgen_ps_variable_bytes             variables and optimizer slots it holds

The chief is the task that drives the global step (tf2's chief; tf1's chief
or worker 0), so its counters are the job's. A PS cannot list the variables
a chief created on it, so it counts what the runtime's own model places there,
with the same placement rules `tfjobgen plan` uses (shared/variable_placement/round_robin.py);
the chief's `placement` event reports the measured bytes, and docs/runtime.md
shows they agree.

Labels: `training_job`, `role`, `index`. Not `job`: Prometheus gives every
scraped series a `job` label of its own (the scrape job), and a metric label of
that name would be renamed to exported_job.

prometheus-client is imported here only, and only by tasks that serve metrics.
"""

from __future__ import annotations

import time

from ..shared.variable_placement import round_robin
from . import events
from .settings import Task

LABELS = ("training_job", "role", "index")
# Step times from a fast local CPU step (a few ms) to a slow large-batch one (a minute).
STEP_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
# The metric names and what they mean; docs/observability.md lists them, tests query each.
NAMES = {
    "tfjobgen_startup_seconds": "Seconds from the task's start until it was up (waiting for the PS and the chief).",
    "tfjobgen_steps_total": "Training steps the job completed (global step increments seen by the chief).",
    "tfjobgen_examples_total": "Examples trained on: steps times the batch size.",
    "tfjobgen_loss": "The training loss at the last reported step.",
    "tfjobgen_step_duration_seconds": "Mean seconds per step over each reporting interval (logEverySteps).",
    "tfjobgen_last_checkpoint_timestamp_seconds": "Unix time of the last checkpoint written (0: none yet).",
    "tfjobgen_ps_variable_bytes": "Bytes of variables and optimizer slots this PS holds.",
}


def ps_bytes(task: Task) -> int:
    """What the runtime's model puts on this PS: values and slots, by the placement rules `tfjobgen plan` uses."""
    t = task.training
    found = round_robin.reference_variables(task.api, t.optimizer, t.batch_size, t.vocabulary_size,
                                            t.embedding_dim, t.hidden_units)
    return round_robin.layout(found, task.num_ps, t.partitioner, t.min_shard_bytes).bytes_per_ps[task.index]


class Metrics:
    """One task's metrics and the HTTP server that serves them."""

    def __init__(self, task: Task, started: float):
        import prometheus_client as prom

        self.task, self.started = task, started
        self.registry = prom.CollectorRegistry()
        labels = (task.job, task.role, str(task.index))

        def make(kind, name: str, **options):
            return kind(name, NAMES[name], LABELS, registry=self.registry, **options).labels(*labels)

        # The process's CPU seconds and memory (process_* metrics): on a cluster cAdvisor measures the
        # container as well; locally these are the only per-task resource figures.
        prom.ProcessCollector(registry=self.registry)
        self.startup = make(prom.Gauge, "tfjobgen_startup_seconds")
        self.startup.set(float("nan"))  # not up yet
        self.steps = self.examples = self.loss = self.step_time = self.checkpoint = None
        if task.is_chief:
            # A counter named ..._total keeps one _total suffix in the exposition (the client strips and re-adds it).
            self.steps = make(prom.Counter, "tfjobgen_steps_total")
            self.examples = make(prom.Counter, "tfjobgen_examples_total")
            self.loss = make(prom.Gauge, "tfjobgen_loss")
            self.loss.set(float("nan"))  # no loss before the first step (0 would read as a perfect model)
            self.step_time = make(prom.Histogram, "tfjobgen_step_duration_seconds", buckets=STEP_BUCKETS)
            self.checkpoint = make(prom.Gauge, "tfjobgen_last_checkpoint_timestamp_seconds")
        if task.role == "ps":
            make(prom.Gauge, "tfjobgen_ps_variable_bytes").set(ps_bytes(task))
        self.last_step: int | None = None
        self.last_time = started
        self._prom = prom

    def serve(self, address: str = "0.0.0.0"):
        """Serve on every interface of the pod (the NetworkPolicy admits only the monitoring namespace), or
        on `address` alone; the HTTP server (its shutdown() stops it)."""
        server, _ = self._prom.start_http_server(self.task.metrics_port, addr=address, registry=self.registry)
        return server

    def observe(self, event: str, fields: dict) -> None:
        now = time.monotonic()
        if event == events.UP:
            self.startup.set(round(now - self.started, 3))
            self.last_time = now  # step times count from here, not from the start
        elif event == events.RESUME and self.steps is not None:
            self.last_step = int(fields["step"])
        elif event == events.STEP and self.steps is not None:
            step = int(fields["step"])
            done = step - (self.last_step or 0)
            if done > 0:
                self.steps.inc(done)
                self.examples.inc(done * self.task.training.batch_size)
                self.step_time.observe((now - self.last_time) / done)
            if fields.get("loss") is not None:
                self.loss.set(float(fields["loss"]))
            self.last_step, self.last_time = step, now
        elif event == events.CHECKPOINT and self.checkpoint is not None:
            self.checkpoint.set(time.time())


def names_for(role: str, chief: bool) -> tuple[str, ...]:
    """The metric names a task of `role` serves (the tests and the docs read this)."""
    found = ["tfjobgen_startup_seconds"]
    if chief:
        found += ["tfjobgen_steps_total", "tfjobgen_examples_total", "tfjobgen_loss",
                  "tfjobgen_step_duration_seconds", "tfjobgen_last_checkpoint_timestamp_seconds"]
    if role == "ps":
        found.append("tfjobgen_ps_variable_bytes")
    return tuple(found)
