"""The model directory: where checkpoints are written from, and the placement file.

By default TensorFlow has every PS write its own variables' checkpoint shard.
That needs a filesystem all tasks share (hdfs://, gs://, a shared volume). A
plain path, such as the default /tmp/tfjobgen/model, is the chief pod's own
emptyDir: then the chief must do all the I/O, or each PS would write its shard
into its own pod and no restore could find it.
"""

from __future__ import annotations

import json
import os
from typing import Callable

import tensorflow as tf

from ..shared import contract
from . import events
from .errors import EXIT_OK

CHIEF_CPU = "/job:chief/replica:0/task:0/device:CPU:0"
PLACEMENT_FILE = "placement.json"
# Written by the chief once training reached its steps. A task whose new pod starts after the
# chief has gone finds it and exits 0 instead of waiting for a chief that will not come back.
FINISHED_FILE = "finished.json"
FINISHED_LINGER = 10.0  # seconds a chief with nothing to train keeps saying DONE to tasks that connect


def checkpoint_options(model_dir: str) -> tf.train.CheckpointOptions:
    """tf2: every PS writes its shard on a shared filesystem; otherwise the chief writes them all."""
    if contract.is_shared_storage(model_dir):
        return tf.train.CheckpointOptions()
    return tf.train.CheckpointOptions(experimental_io_device=CHIEF_CPU)


def write_placement(model_dir: str, partitioner: str, ps: tuple[str, ...], placement) -> None:
    """<modelDir>/placement.json: the bytes per PS the job ended with."""
    tf.io.gfile.makedirs(model_dir)
    with tf.io.gfile.GFile(os.path.join(model_dir, PLACEMENT_FILE), "w") as out:
        out.write(json.dumps({"partitioner": partitioner, "ps": list(ps), **placement.as_dict()},
                             indent=2, sort_keys=True) + "\n")


def write_finished(model_dir: str, job: str, step: int) -> None:
    tf.io.gfile.makedirs(model_dir)
    with tf.io.gfile.GFile(os.path.join(model_dir, FINISHED_FILE), "w") as out:
        out.write(json.dumps({"job": job, "step": step}, sort_keys=True) + "\n")


def finished(model_dir: str, job: str, steps: int) -> bool:
    """True when `model_dir` says this job's training reached `steps` (a rerun with more steps is not done)."""
    path = os.path.join(model_dir, FINISHED_FILE)
    try:
        if not tf.io.gfile.exists(path):
            return False
        with tf.io.gfile.GFile(path) as source:
            record = json.loads(source.read())
        return record.get("job") == job and int(record.get("step", 0)) >= steps
    except (tf.errors.OpError, ValueError, TypeError):
        return False


def already_finished(model_dir: str, report: events.Reporter, server) -> int:
    """A chief whose job finished before (a rerun, a new pod after it finished): tell the tasks, exit 0."""
    report(events.NOTICE, message=f"{os.path.join(model_dir, FINISHED_FILE)} says training reached its steps "
                                  "already: nothing to train; telling every task")
    server.finish(FINISHED_LINGER)
    return EXIT_OK


def evaluate_checkpoints(model_dir: str, link, report: events.Reporter,
                         score: Callable[[str], tuple[int, float]]) -> int:
    """The evaluator's loop, for tf1 and tf2 alike: score each new checkpoint until the chief says done.

    `score(path)` restores the checkpoint at `path` and returns (global step, loss). After
    DONE it looks once more: the last checkpoint is the one that matters.
    """
    scored = None
    while True:
        final = link.done.is_set()
        latest = tf.train.latest_checkpoint(model_dir)
        if latest and latest != scored:
            step, loss = score(latest)
            report(events.EVAL, step=step, loss=round(loss, 5), path=latest)
            scored = latest
        if final:
            if scored is None:
                report(events.NOTICE, message=f"no checkpoint in {model_dir} to evaluate")
            return EXIT_OK
        if link.failed:
            raise link.failed
        link.done.wait(2.0)
