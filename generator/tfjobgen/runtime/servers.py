"""TensorFlow servers of PS and workers, sized by the generated thread counts, and how they end.

A TF server serves until its process ends; it has no clean stop. A PS (and a
tf2 worker, which only runs what the chief sends) therefore starts its server,
registers with the chief over the control channel, and exits 0 when the chief
says the training is over (control.py explains why Jobs need that).
"""

from __future__ import annotations

import tensorflow as tf

from . import events
from .ending import Ending
from .errors import EXIT_OK, SetupError
from .settings import Task


def session_config(task: Task) -> tf.compat.v1.ConfigProto:
    """Thread pools from the generated counts: passed to the server, since tf.config.threading
    set_* calls do not reach a server that is already running (measured)."""
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=task.intra_op,
                                      inter_op_parallelism_threads=task.inter_op)
    if task.api == "tf1" and task.role != "ps":
        # Between-graph replication: a worker talks to the PS and itself, never waits for the others.
        config.device_filters.extend(["/job:ps", f"/job:{task.role}/task:{task.index}"])
    return config


def start(task: Task) -> tf.distribute.Server:
    """This task's TF server, serving at its TF_CONFIG address."""
    try:
        return tf.distribute.Server(tf.train.ClusterSpec(task.training_cluster), job_name=task.role,
                                    task_index=task.index, protocol=task.protocol, config=session_config(task),
                                    start=True)
    except (tf.errors.OpError, ValueError) as err:
        text = getattr(err, "message", str(err))
        if "Could not start gRPC server" in text or "Address already in use" in text:
            raise SetupError(f"could not start the TF server at {task.address}: the port is in use") from None
        if task.protocol != "grpc":
            raise SetupError(f"protocol {task.protocol} is not available in this TensorFlow ({tf.__version__}): "
                             "it needs DeepRec; use protocol grpc") from None
        raise SetupError(f"could not start the TF server at {task.address}: {text.splitlines()[0]}") from None


def serve_until_done(task: Task, report: events.Reporter, ending: Ending) -> int:
    """PS and tf2 workers: start the server, then wait for the chief's DONE (or ABORT)."""
    start(task)
    report(events.UP, address=task.address, threads=f"{task.intra_op}/{task.inter_op}", protocol=task.protocol)
    ending.link().run()  # raises when the chief stays away for too long, or stops the training
    report(events.NOTICE, message="the chief says training is over")
    return EXIT_OK
