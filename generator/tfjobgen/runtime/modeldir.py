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

from . import events
from .errors import EXIT_OK

CHIEF_CPU = "/job:chief/replica:0/task:0/device:CPU:0"
PLACEMENT_FILE = "placement.json"


def shared(model_dir: str) -> bool:
    """True for a URL (hdfs://, gs://, s3://): every task sees the same files."""
    return "://" in model_dir


def checkpoint_options(model_dir: str) -> tf.train.CheckpointOptions:
    """tf2: every PS writes its shard on a shared filesystem; otherwise the chief writes them all."""
    if shared(model_dir):
        return tf.train.CheckpointOptions()
    return tf.train.CheckpointOptions(experimental_io_device=CHIEF_CPU)


def write_placement(model_dir: str, partitioner: str, ps: tuple[str, ...], placement) -> None:
    """<modelDir>/placement.json: the bytes per PS the job ended with."""
    tf.io.gfile.makedirs(model_dir)
    with tf.io.gfile.GFile(os.path.join(model_dir, PLACEMENT_FILE), "w") as out:
        out.write(json.dumps({"partitioner": partitioner, "ps": list(ps), **placement.as_dict()},
                             indent=2, sort_keys=True) + "\n")


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
