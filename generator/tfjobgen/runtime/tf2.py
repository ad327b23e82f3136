"""api tf2: the chief drives ParameterServerStrategy with a ClusterCoordinator; the evaluator follows.

The chief, in order (run_chief):
1. waits until every PS and worker registered on the control channel
   (startupTimeoutSeconds; the error names the tasks that never came up);
2. connects to the cluster and creates the model under the strategy, variables
   split by the intent's partitioner, each optimizer slot beside its variable;
3. restores the latest checkpoint of modelDir, step counter included;
4. schedules steps on the workers in chunks that end at log and checkpoint
   boundaries; after each chunk it logs the rate and the loss, and saves every
   checkpointEverySteps;
5. writes the final checkpoint and placement.json, then tells every task that
   training is over.
A lost PS ends the chief with exit 1: Kubernetes restarts both, and the new
chief resumes from the last checkpoint (a lost worker is the coordinator's
business: it reruns the step elsewhere).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

import tensorflow as tf

from ..shared.variable_placement import sharding
from . import control, data, events, modeldir, optimizers, wide_deep
from .ending import Ending
from .errors import EXIT_OK, TaskFailed
from .settings import Task, Training
from .watchdog import Watchdog

LINGER = 10.0  # seconds the chief keeps answering DONE to tasks that are reconnecting
EVAL_BATCHES = 20  # held-out batches the evaluator scores each checkpoint on
_LOSS_SAMPLES = 8  # losses fetched from the workers per chunk (each fetch is a round trip)
_KEEP_ALIVE: list = []  # see run_chief's end


@dataclass
class _Variables:
    model: wide_deep.WideDeep
    optimizer: optimizers.Optimizer
    step: tf.Variable  # the global step, on a PS

    def all(self) -> list:
        return list(self.model.variables) + self.optimizer.slot_variables() + [self.step]


def run_chief(task: Task, report: events.Reporter, server: control.ChiefServer, started: float,
              ending: Ending) -> int:
    """`server` is the control server, already listening since `started` (time.monotonic())."""
    training = task.training
    files = [] if training.data_format == "synthetic" else data.check_paths(training.data_paths)
    if modeldir.finished(training.model_dir, task.job, training.steps):
        return modeldir.already_finished(training.model_dir, report, server)
    missing = server.wait_until_up(task.peers, training.startup_timeout - (time.monotonic() - started))
    if missing:
        raise TaskFailed(f"{task.describe(missing)} did not come up within {training.startup_timeout} s "
                         f"(startupTimeoutSeconds): {'it' if len(missing) == 1 else 'they'} never registered "
                         "with the chief")

    def not_connected() -> str:
        gone = server.missing(task.peers)
        return f"not connected to the chief: {task.describe(gone)}" if gone else ""

    watchdog = Watchdog(ending.watchdog_expired)
    watchdog.arm("connecting to the cluster and creating the variables",
                 max(training.startup_timeout - (time.monotonic() - started), 30.0), not_connected)
    strategy = tf.distribute.experimental.ParameterServerStrategy(
        tf.distribute.cluster_resolver.SimpleClusterResolver(
            tf.train.ClusterSpec(task.training_cluster), task_type="chief", task_id=0, rpc_layer="grpc"),
        variable_partitioner=sharding.partitioner(training.partitioner, task.num_ps, training.min_shard_bytes))
    coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)
    variables = _create_variables(strategy, training)
    placement = sharding.placement(((v.device, v.shape.num_elements() * v.dtype.size) for v in variables.all()),
                                   task.num_ps)
    report(events.PLACEMENT, partitioner=training.partitioner, bytes_per_ps=placement.bytes_per_ps,
           max_over_mean=round(placement.max_over_mean, 3))

    checkpoint = tf.train.Checkpoint(model=variables.model, optimizer=variables.optimizer, step=variables.step)
    manager = tf.train.CheckpointManager(checkpoint, training.model_dir, max_to_keep=3)
    options = modeldir.checkpoint_options(training.model_dir)
    if manager.latest_checkpoint:
        checkpoint.restore(manager.latest_checkpoint, options=options).assert_existing_objects_matched()
        report(events.RESUME, step=int(variables.step.numpy()), path=manager.latest_checkpoint)
    report(events.UP, seconds=round(time.monotonic() - started, 1))

    def dataset_fn():
        if training.data_format == "synthetic":
            return data.synthetic(training.batch_size, training.vocabulary_size)
        return data.from_files(training.data_format, files, training.batch_size, training.vocabulary_size)

    iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))
    train_step = _train_step(strategy, variables)

    def save(step: int) -> None:
        report(events.CHECKPOINT, step=step, path=manager.save(checkpoint_number=step, options=options))

    def arm(first: int, last: int) -> None:
        watchdog.arm(f"steps {first}-{last}", training.startup_timeout, not_connected)

    try:
        summary = _train(coordinator, train_step, iterator, variables.step, training, report, save, arm)
    except _Stopped as stopped:
        raise TaskFailed(f"training stopped after step {stopped.step}: {_short(stopped.error)}; a restarted chief "
                         f"resumes from {manager.latest_checkpoint or 'the start (no checkpoint yet)'}") from None
    watchdog.disarm()

    modeldir.write_placement(training.model_dir, training.partitioner, task.cluster["ps"], placement)
    modeldir.write_finished(training.model_dir, task.job, summary["step"])
    report(events.FINISHED, **summary)
    # TensorFlow deletes a tf.function's remote copies when the function is freed; the tasks are gone
    # once they hear DONE, so keep it all alive until the process ends (main exits without cleanup).
    _KEEP_ALIVE.extend([train_step, iterator, coordinator, strategy])
    unacknowledged = server.finish(LINGER)
    if unacknowledged:
        report(events.NOTICE, message=f"no goodbye from {', '.join(unacknowledged)} within {LINGER:.0f} s; "
                                      "it ends on its own when it finds the chief gone")
    return EXIT_OK


def _create_variables(strategy, training: Training) -> _Variables:
    """The model, its optimizer's slots and the global step, on the PS, as the strategy places them."""
    with strategy.scope():
        model = wide_deep.WideDeep(training.vocabulary_size, training.embedding_dim, training.hidden_units,
                                   wide_deep.tf2_variable)
        step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
        optimizer = optimizers.Optimizer(training.optimizer, training.learning_rate)

        def new_slot(variable, name, initial):
            with strategy.extended.colocate_vars_with(variable):  # the slot lives beside its variable
                return tf.Variable(lambda: tf.fill(variable.shape, initial), shape=variable.shape,
                                   dtype=variable.dtype, trainable=False,
                                   name=f"{variable.name.split(':')[0]}/{name}")

        optimizer.build(model.trainable_variables, new_slot)
    return _Variables(model, optimizer, step)


def replica_step(model, optimizer: optimizers.Optimizer, step: tf.Variable):
    """The step each replica runs on a batch: the loss, the sparse-aware update, step + 1; returns the loss."""

    def run(features, labels):
        with tf.GradientTape() as tape:
            loss = wide_deep.loss_of(model, features, labels)
        trainable = model.trainable_variables
        optimizer.apply(zip(tape.gradient(loss, trainable), trainable), step)
        step.assign_add(1)
        return loss

    return run


def _train_step(strategy, variables: _Variables):
    """One step on a worker: a batch from its dataset, then the replica step."""
    step_on = replica_step(variables.model, variables.optimizer, variables.step)

    @tf.function
    def train_step(iterator):
        features, labels = next(iterator)
        return strategy.run(step_on, args=(features, labels))

    return train_step


class _Stopped(Exception):
    def __init__(self, step: int, error: tf.errors.OpError):
        super().__init__(str(error))
        self.step, self.error = step, error


def next_boundary(step: int, training: Training) -> int:
    """The next step at which to log or checkpoint, at most the last step."""
    marks = [(step // every + 1) * every for every in (training.log_every, training.checkpoint_every)]
    return min(marks + [training.steps])


def _train(coordinator, train_step, iterator, step: tf.Variable, training: Training, report, save, arm) -> dict:
    """Schedule chunks of steps until `steps`; what the `finished` event reports."""
    done = first_step = int(step.numpy())
    started, loss, first_loss = time.monotonic(), float("nan"), None
    while done < training.steps:
        target = next_boundary(done, training)
        arm(done, target)
        count, chunk_started = target - done, time.monotonic()
        try:
            results = [coordinator.schedule(train_step, args=(iterator,)) for _ in range(count)]
            coordinator.join()
            losses = [float(r.fetch()) for r in results[-_LOSS_SAMPLES:]]
            is_first = first_loss is None
            if is_first:
                first_loss = float(results[0].fetch())  # computed before this run had trained anything
            before, done = done, int(step.numpy())  # a step rerun after a lost worker may add one or two
        except tf.errors.OpError as err:  # a lost PS: its variables are gone
            raise _Stopped(done, err) from None
        seconds = time.monotonic() - chunk_started
        loss = sum(losses) / len(losses)
        report(events.STEP, step=done, steps=training.steps, loss=round(loss, 5),
               steps_per_sec=round(count / seconds, 2), examples_per_sec=round(count * training.batch_size / seconds),
               first_loss=round(first_loss, 5) if is_first else None)
        if done // training.checkpoint_every > before // training.checkpoint_every or done >= training.steps:
            save(done)
    seconds = time.monotonic() - started
    rate = (done - first_step) / seconds if seconds > 0 else 0.0
    return {"step": done, "loss": round(loss, 5), "first_loss": round(first_loss, 5) if first_loss else None,
            "seconds": round(seconds, 1), "steps_per_sec": round(rate, 2),
            "examples_per_sec": round(rate * training.batch_size)}


def _short(err: tf.errors.OpError) -> str:
    """One line for TensorFlow's many-line errors: the task it could not reach, else its first real line."""
    text = err.message or ""
    task = re.search(r"/job:(\w+)/replica:\d+/task:(\d+)", text)
    if isinstance(err, tf.errors.UnavailableError) and task:
        return f"{task.group(1)}:{task.group(2)} is unreachable ({type(err).__name__})"
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().endswith(":")]
    return f"{type(err).__name__}: {(lines[0] if lines else text.strip())[:200]}"


def run_evaluator(task: Task, report: events.Reporter, ending: Ending) -> int:
    """Score every new checkpoint of modelDir on the same held-out batches, until the chief says done.

    It needs to see the chief's modelDir: a shared filesystem (hdfs://, gs://, a
    volume), or one machine under run-local. Within a pod's own /tmp it finds none.
    """
    training = task.training
    link = ending.link()
    link.start_in_background()
    files = [] if training.data_format == "synthetic" else data.check_paths(training.data_paths)
    model = wide_deep.WideDeep(training.vocabulary_size, training.embedding_dim, training.hidden_units,
                               wide_deep.tf2_variable)
    step = tf.Variable(0, dtype=tf.int64, trainable=False)
    checkpoint = tf.train.Checkpoint(model=model, step=step)
    batches = list(data.evaluation_batches(training.data_format, files, training.batch_size,
                                           training.vocabulary_size, EVAL_BATCHES))
    evaluate = tf.function(lambda features, labels: wide_deep.loss_of(model, features, labels))
    report(events.UP, model_dir=training.model_dir)

    def score(path: str) -> tuple[int, float]:
        checkpoint.restore(path).expect_partial()
        return int(step.numpy()), sum(float(evaluate(f, y)) for f, y in batches) / len(batches)

    return modeldir.evaluate_checkpoints(training.model_dir, link, report, score)
