"""TensorBoard summaries of the chief's progress, written to the model directory (spec.training.modelDir).

Like the metrics (metrics.py), they follow the task's events: each `step` event becomes one TensorBoard
event with the scalars `loss`, `steps_per_sec` and `examples_per_sec` at that global step. The file is
a TFRecord file of `Event` protos, TensorBoard's own event-file format, written with TensorFlow's
TFRecordWriter (so any filesystem TensorFlow reads works: gs://, s3://, hdfs://) and TensorFlow's own
protos: the `tensorboard` package is not needed to write them, only to read them (spec.tensorboard).
A chief that restarts starts a new file; TensorBoard reads every file of the directory.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Callable

from . import events

SCALARS = ("loss", "steps_per_sec", "examples_per_sec")


class Summaries:
    """Opened at the first step, when TensorFlow is loaded (and, for hdfs://, its CLASSPATH set)."""

    def __init__(self, model_dir: str, on_error: Callable[[str], None]):
        self.model_dir, self.on_error = model_dir, on_error
        self.path = ""
        self._writer = None
        self._failed = False

    def _open(self) -> None:
        import tensorflow as tf
        from tensorflow.core.util import event_pb2

        tf.io.gfile.makedirs(self.model_dir)
        name = f"events.out.tfevents.{time.time():.0f}.{socket.gethostname()}.{os.getpid()}.tfjobgen"
        self.path = f"{self.model_dir.rstrip('/')}/{name}"
        self._writer = tf.io.TFRecordWriter(self.path)
        self._write(event_pb2.Event(wall_time=time.time(), file_version="brain.Event:2"))

    def _write(self, event) -> None:
        self._writer.write(event.SerializeToString())
        self._writer.flush()

    def observe(self, event: str, fields: dict) -> None:
        if event != events.STEP or self._failed:
            return
        try:
            self._step(fields)
        except Exception as err:  # noqa: BLE001 - summaries are for people: training goes on without them
            self._failed = True
            self.on_error(f"TensorBoard summaries stopped: {type(err).__name__}: {str(err).splitlines()[0][:200]}")

    def _step(self, fields: dict) -> None:
        from tensorflow.core.framework import summary_pb2
        from tensorflow.core.util import event_pb2

        if self._writer is None:
            self._open()

        values = [summary_pb2.Summary.Value(tag=tag, simple_value=float(fields[tag]))
                  for tag in SCALARS if fields.get(tag) is not None]
        self._write(event_pb2.Event(wall_time=time.time(), step=int(fields["step"]),
                                    summary=summary_pb2.Summary(value=values)))
