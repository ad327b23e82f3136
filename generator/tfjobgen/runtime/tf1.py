"""api tf1: between-graph replication, as TF 1.x (and DeepRec's StarServer) users run it.

Every worker (the chief is the worker that initialises and checkpoints) builds
the same graph under `replica_device_setter`: variables go to the PS, the
computation stays on the worker. The intent's partitioner splits big variables
(`variable_scope(partitioner=...)`) into one shard per PS, and the round-robin
placement puts each shard on its own PS. Each worker trains in its own
MonitoredSession until the global step reaches `steps`.

Two traps handled here:
- a worker that starts before the chief has initialised the variables waits
  SessionManager's recovery_wait_secs, 30 s by default; here 1 s;
- the PS never end on their own: the chief (or worker 0 without a chief) runs
  the control server, waits until the workers said FINISHED, then says DONE.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import tensorflow as tf

from ..shared import contract
from ..shared.variable_placement import sharding
from . import control, data, events, modeldir, optimizers, servers, wide_deep
from .ending import Ending, absence_limit
from .errors import EXIT_OK, TaskFailed
from .settings import Task
from .tf2 import EVAL_BATCHES, LINGER
from .watchdog import Watchdog

_MODEL_SCOPE = "model"


class _QuickSessionCreator(tf.compat.v1.train.SessionCreator):
    """A non-chief worker's session: polls every second for the chief's initialisation (not 30 s)."""

    def __init__(self, scaffold, master: str, config, max_wait_secs: float):
        self.scaffold, self.master, self.config, self.max_wait_secs = scaffold, master, config, max_wait_secs

    def create_session(self):
        self.scaffold.finalize()
        manager = tf.compat.v1.train.SessionManager(
            local_init_op=self.scaffold.local_init_op, ready_op=self.scaffold.ready_op,
            ready_for_local_init_op=self.scaffold.ready_for_local_init_op, recovery_wait_secs=1)
        return manager.wait_for_session(self.master, config=self.config, max_wait_secs=self.max_wait_secs)


class _Progress(tf.compat.v1.train.SessionRunHook):
    """The chief's log: global steps per second, its own loss, and the watchdog fed on every step."""

    def __init__(self, report, training, global_step, loss, on_step):
        self.report, self.training, self.global_step, self.loss = report, training, global_step, loss
        self.on_step = on_step
        self.losses: list[float] = []
        self.first_loss: float | None = None
        self.logged = False

    def after_create_session(self, session, coord):
        # Called again whenever MonitoredSession recreates a session after a lost PS: a step above 0
        # here means variables came back from a checkpoint.
        self.last_step = int(session.run(self.global_step))
        self.last_time = time.monotonic()
        self.next_log = (self.last_step // self.training.log_every + 1) * self.training.log_every
        if self.last_step > 0:
            self.report(events.RESUME, step=self.last_step, path=tf.train.latest_checkpoint(self.training.model_dir))

    def end(self, session):
        self.final_step = int(session.run(self.global_step))

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs({"step": self.global_step, "loss": self.loss})

    def after_run(self, run_context, run_values):
        step, loss = int(run_values.results["step"]), float(run_values.results["loss"])
        self.losses.append(loss)
        if self.first_loss is None:
            self.first_loss = loss  # before this run trained anything
        self.on_step()
        if step >= self.next_log or step >= self.training.steps:
            now = time.monotonic()
            rate = (step - self.last_step) / max(now - self.last_time, 1e-9)
            self.report(events.STEP, step=step, steps=self.training.steps,
                        loss=round(sum(self.losses) / len(self.losses), 5), steps_per_sec=round(rate, 2),
                        examples_per_sec=round(rate * self.training.batch_size),
                        first_loss=round(self.first_loss, 5) if not self.logged else None)
            self.logged = True
            self.last_step, self.last_time, self.losses = step, now, []
            self.next_log = (step // self.training.log_every + 1) * self.training.log_every


class _CheckpointReport(tf.compat.v1.train.CheckpointSaverListener):
    def __init__(self, report, model_dir):
        self.report, self.model_dir = report, model_dir

    def after_save(self, session, global_step_value):
        self.report(events.CHECKPOINT, step=int(global_step_value), path=tf.train.latest_checkpoint(self.model_dir))


def _graph(task: Task, files: list[str], device_fn=None):
    """The model, its loss on the next batch, and the global step, built in the default graph."""
    training = task.training
    with tf.compat.v1.device(device_fn):
        global_step = tf.compat.v1.train.get_or_create_global_step()
        partitions = sharding.partitioner(training.partitioner, task.num_ps, training.min_shard_bytes)
        with tf.compat.v1.variable_scope(_MODEL_SCOPE, partitioner=partitions):
            model = wide_deep.WideDeep(training.vocabulary_size, training.embedding_dim, training.hidden_units,
                                       wide_deep.tf1_variable)
    return model, global_step


def _placement(num_ps: int) -> sharding.Placement:
    """Bytes per PS of every global variable (slots are colocated, so they carry their variable's device)."""
    return sharding.placement(((v.device, v.shape.num_elements() * v.dtype.size)
                               for v in tf.compat.v1.global_variables()), num_ps)


def run_trainer(task: Task, report: events.Reporter, control_server: control.ChiefServer | None,
                started: float, ending: Ending) -> int:
    """A tf1 worker; the chief is the worker with is_chief (the chief task, or worker 0 without one),
    which gets the control server, already listening since `started` (time.monotonic())."""
    if task.is_chief:
        return _run_chief(task, report, control_server, started, ending)
    return _run_worker(task, report, control_server, started, ending)


def _run_chief(task: Task, report: events.Reporter, control_server: control.ChiefServer, started: float,
               ending: Ending) -> int:
    """The chief: waits for every task, initialises (or restores) the variables, logs progress and writes
    checkpoints while every worker trains, then ends the job."""
    training = task.training
    files, server = _start(task, report)
    if modeldir.finished(training.model_dir, task.job, training.steps):
        return modeldir.already_finished(training.model_dir, report, control_server)
    missing = control_server.wait_until_up(task.peers, training.startup_timeout - (time.monotonic() - started))
    if missing:
        raise TaskFailed(f"{task.describe(missing)} did not come up within {training.startup_timeout} s "
                         "(startupTimeoutSeconds): never registered with the chief")
    trainer = _Trainer.build(task, files)
    watchdog = Watchdog(ending.watchdog_expired)
    explain = _not_connected(task, control_server)
    placement = _placement(task.num_ps)
    report(events.PLACEMENT, partitioner=training.partitioner, bytes_per_ps=placement.bytes_per_ps,
           max_over_mean=round(placement.max_over_mean, 3))
    progress = _Progress(report, training, trainer.global_step, trainer.loss,
                         lambda: watchdog.arm("a training step", training.startup_timeout, explain))
    hooks = [
        tf.compat.v1.train.StopAtStepHook(last_step=training.steps),
        progress,
        tf.compat.v1.train.CheckpointSaverHook(training.model_dir, save_steps=training.checkpoint_every,
                                               saver=trainer.saver,
                                               listeners=[_CheckpointReport(report, training.model_dir)]),
    ]
    creator = tf.compat.v1.train.ChiefSessionCreator(
        scaffold=tf.compat.v1.train.Scaffold(saver=trainer.saver), master=server.target,
        config=servers.session_config(task), checkpoint_dir=training.model_dir)
    run = _train(task, report, trainer, creator, hooks, watchdog, explain, started)

    workers = [name for name in task.peers if name.startswith("worker:")]
    still_training = control_server.wait_until_finished(workers, training.startup_timeout)
    if still_training:
        report(events.NOTICE, message=f"{', '.join(still_training)} still training after "
                                      f"{training.startup_timeout} s; ending the job anyway")
    final_step = getattr(progress, "final_step", int(run.last_step) if run.first_step is not None else 0)
    ran = run.first_step is not None and run.seconds > 0
    rate = (final_step - int(run.first_step)) / run.seconds if ran else 0.0
    modeldir.write_placement(training.model_dir, training.partitioner, task.cluster["ps"], placement)
    modeldir.write_finished(training.model_dir, task.job, final_step)
    report(events.FINISHED, step=final_step, loss=round(float(run.last_loss), 5),
           seconds=round(run.seconds, 1), steps_per_sec=round(rate, 2),
           examples_per_sec=round(rate * training.batch_size))
    control_server.finish(LINGER)
    return EXIT_OK


def _run_worker(task: Task, report: events.Reporter, control_server: control.ChiefServer | None, started: float,
                ending: Ending) -> int:
    """A worker other than the chief: trains until the global step reaches `steps`, then tells the chief."""
    training = task.training
    files, server = _start(task, report)
    link = ending.link()
    link.start_in_background()
    trainer = _Trainer.build(task, files)
    watchdog = Watchdog(ending.watchdog_expired)
    explain = _not_connected(task, control_server)
    hooks = [tf.compat.v1.train.StopAtStepHook(last_step=training.steps)]
    creator = _QuickSessionCreator(tf.compat.v1.train.Scaffold(saver=trainer.saver), server.target,
                                   servers.session_config(task),
                                   max_wait_secs=absence_limit(task))
    run = _train(task, report, trainer, creator, hooks, watchdog, explain, started,
                 after_step=lambda: watchdog.arm("a training step", training.startup_timeout, explain))
    link.finished.set()
    link.told_finished.wait(2 * control.HEARTBEAT + 1)
    report(events.FINISHED, steps_run=run.steps_run, loss=round(float(run.last_loss), 5),
           seconds=round(run.seconds, 1))
    return EXIT_OK


def _start(task: Task, report: events.Reporter) -> tuple[list[str], tf.distribute.Server]:
    """The data files (checked before anything starts) and this task's TF server, serving."""
    training = task.training
    files = [] if training.data_format == "synthetic" else data.check_paths(training.data_paths)
    tf.compat.v1.disable_eager_execution()
    server = servers.start(task)
    report(events.NOTICE, message=f"TF server serving at {task.address} (threads {task.intra_op}/{task.inter_op}, "
                                  f"protocol {task.protocol})")
    return files, server


def _not_connected(task: Task, control_server: control.ChiefServer | None) -> Callable[[], str]:
    """What the watchdog says when it fires: the tasks no longer connected to the chief, if this task knows."""
    if control_server is None:
        return lambda: ""

    def explain() -> str:
        gone = control_server.missing(task.peers)
        return f"not connected to the chief: {task.describe(gone)}" if gone else ""
    return explain


@dataclass
class _Trainer:
    """The training graph every trainer builds, the chief's and the workers' alike."""

    model: wide_deep.WideDeep
    global_step: tf.Variable
    loss: tf.Tensor
    train_op: tf.Tensor  # one step: the update, then global_step + 1
    saver: tf.compat.v1.train.Saver

    @classmethod
    def build(cls, task: Task, files: list[str]) -> _Trainer:
        training = task.training
        # Round-robin over the PS: a partitioned variable's N shards land on N different PS.
        device_fn = tf.compat.v1.train.replica_device_setter(
            cluster=tf.train.ClusterSpec(task.training_cluster), worker_device=f"/job:{task.role}/task:{task.index}")
        model, global_step = _graph(task, files, device_fn)
        with tf.compat.v1.device(device_fn):
            if training.data_format == "synthetic":
                dataset = data.synthetic(training.batch_size, training.vocabulary_size)
            else:
                dataset = data.from_files(training.data_format, files, training.batch_size, training.vocabulary_size)
            features, labels = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
            loss = wide_deep.loss_of(model, features, labels)
            variables = tf.compat.v1.trainable_variables()
            optimizer = optimizers.Optimizer(training.optimizer, training.learning_rate)

            def new_slot(variable, name, initial):
                with tf.compat.v1.device(variable.device):  # the slot lives beside its variable, on its PS
                    return tf.compat.v1.get_variable(
                        f"{variable.op.name}/{name}", shape=variable.shape, dtype=variable.dtype, trainable=False,
                        initializer=tf.compat.v1.constant_initializer(initial))
            optimizer.build(variables, new_slot)
            updates = optimizer.apply(zip(tf.compat.v1.gradients(loss, variables), variables), global_step)
            with tf.control_dependencies(updates):
                train_op = global_step.assign_add(1)
            # Sharded saving makes each PS write its own variables: right for a shared filesystem,
            # wrong for the chief's own disk (see modeldir.py). Built here, under the worker's device.
            saver = tf.compat.v1.train.Saver(sharded=contract.is_shared_storage(training.model_dir), max_to_keep=3)
        return cls(model, global_step, loss, train_op, saver)


@dataclass
class _Run:
    steps_run: int
    first_step: int | None  # the global step after this task's first step; None when it ran none
    last_step: int | None
    last_loss: float
    seconds: float


def _train(task: Task, report: events.Reporter, trainer: _Trainer, creator, hooks: list, watchdog: Watchdog,
           explain: Callable[[], str], started: float, after_step: Callable[[], None] = lambda: None) -> _Run:
    """Train in a MonitoredSession until a hook stops it (the global step reached `steps`)."""
    training = task.training
    watchdog.arm("creating the session (reaching the PS)",
                 max(training.startup_timeout - (time.monotonic() - started), 30.0), explain)
    train_started, steps_run, last_loss = time.monotonic(), 0, float("nan")
    first = step = None
    with tf.compat.v1.train.MonitoredSession(session_creator=creator, hooks=hooks) as session:
        report(events.UP, address=task.address, seconds=round(time.monotonic() - started, 1))
        while not session.should_stop():
            _, last_loss, step = session.run([trainer.train_op, trainer.loss, trainer.global_step])
            first = step if first is None else first
            steps_run += 1
            after_step()
    watchdog.disarm()
    return _Run(steps_run, first, step, last_loss, time.monotonic() - train_started)


def run_evaluator(task: Task, report: events.Reporter, ending: Ending) -> int:
    """Score every new checkpoint on the same held-out batches until the chief says done."""
    training = task.training
    tf.compat.v1.disable_eager_execution()
    link = ending.link()
    link.start_in_background()
    report(events.UP, model_dir=training.model_dir)
    files = [] if training.data_format == "synthetic" else data.check_paths(training.data_paths)
    model, global_step = _graph(task, files)
    batches = data.evaluation_batches(training.data_format, files, training.batch_size, training.vocabulary_size,
                                      EVAL_BATCHES)
    iterator = tf.compat.v1.data.make_initializable_iterator(batches)
    features, labels = iterator.get_next()
    loss = wide_deep.loss_of(model, features, labels)
    saver = tf.compat.v1.train.Saver(var_list=tf.compat.v1.global_variables())
    with tf.compat.v1.Session() as session:
        def score(path: str) -> tuple[int, float]:
            saver.restore(session, path)
            session.run(iterator.initializer)
            losses = []
            try:
                while True:
                    losses.append(session.run(loss))
            except tf.errors.OutOfRangeError:
                pass
            return int(session.run(global_step)), sum(losses) / len(losses)

        return modeldir.evaluate_checkpoints(training.model_dir, link, report, score)
