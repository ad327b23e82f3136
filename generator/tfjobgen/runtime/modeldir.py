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

import tensorflow as tf

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
