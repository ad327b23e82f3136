"""A team's own parameter-server training program: Keras `model.fit` under ParameterServerStrategy.

This needs tf_keras (Keras 2) with TF_USE_LEGACY_KERAS=1: TensorFlow 2.21 ships Keras 3, whose `fit` does
not run under ParameterServerStrategy (docs/own-code.md has the measured error). The image therefore holds
`tensorflow==2.21.0` and `tf-keras==2.21.0` (tf-keras requires the `tensorflow` distribution: with
`tensorflow-cpu` alone pip installs `tensorflow` beside it), and the job sets TF_USE_LEGACY_KERAS=1 in spec.env
so that `tf.keras` is tf_keras.

One file for every task; TF_CONFIG, which tfjobgen writes into every pod, says which task this is:
PS and workers start a TensorFlow server and serve until they are ended (SIGTERM); the chief builds the model
under the strategy's scope (its variables live on the PS), fits it, saves its weights and exits 0.

    TF_USE_LEGACY_KERAS=1 python train.py --steps 200 --model-dir /tmp/model
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import sys

VOCABULARY, DIM, FIELDS, BATCH = 2_000, 8, 4, 256


def threads() -> tuple[int, int]:
    """The thread pools tfjobgen sized to the pod's CPU limit; a running server only takes them from its
    ConfigProto."""
    return int(os.environ.get("TF_NUM_INTRAOP_THREADS", "0")), int(os.environ.get("TF_NUM_INTEROP_THREADS", "0"))


def serve(tf, cluster, role: str, index: int) -> None:
    """PS and workers: a TensorFlow server at this task's TF_CONFIG address, until the process is ended."""
    intra, inter = threads()
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=intra, inter_op_parallelism_threads=inter)
    server = tf.distribute.Server(cluster, job_name=role, task_index=index, protocol="grpc", config=config,
                                  start=True)
    print(f"{role}:{index} serving at {cluster.task_address(role, index)}", flush=True)
    server.join()


def dataset(tf, input_context=None):
    """Endless batches of synthetic clicks from a fixed hidden rule (id i pushes the odds by sin(i))."""
    def batch(seed):
        ids = tf.random.stateless_uniform([BATCH, FIELDS], seed=tf.stack([seed, 1]), maxval=VOCABULARY,
                                          dtype=tf.int64)
        logit = tf.reduce_sum(tf.sin(tf.cast(ids, tf.float32)), axis=1)
        draw = tf.random.stateless_uniform([BATCH], seed=tf.stack([seed, 2]))
        return ids, tf.cast(draw < tf.sigmoid(logit), tf.float32)
    return tf.data.Dataset.random().map(batch).prefetch(2)


def coordinate(tf, cluster, steps: int, model_dir: str) -> None:
    """The chief: the model's variables on the PS (the embedding split across them), then model.fit."""
    keras = tf.keras  # tf_keras when TF_USE_LEGACY_KERAS=1; Keras 3 otherwise, which stops below
    package = keras.__name__.split(".")[0]  # tf_keras, or keras (Keras 3)
    print(f"keras {importlib.metadata.version(package.replace('_', '-'))} ({keras.__name__})", flush=True)
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(cluster, task_type="chief", task_id=0,
                                                                    rpc_layer="grpc")
    num_ps = len(cluster.job_tasks("ps"))
    strategy = tf.distribute.experimental.ParameterServerStrategy(
        resolver, variable_partitioner=tf.distribute.experimental.partitioners.MinSizePartitioner(
            min_shard_bytes=16 << 10, max_shards=num_ps))
    with strategy.scope():
        model = keras.Sequential([
            keras.Input(shape=(FIELDS,), dtype="int64"),
            keras.layers.Embedding(VOCABULARY, DIM),
            keras.layers.Flatten(),
            keras.layers.Dense(1),
        ])
        model.compile(optimizer=keras.optimizers.Adagrad(0.5),
                      loss=keras.losses.BinaryCrossentropy(from_logits=True), steps_per_execution=10)
    # Each worker makes its own dataset: DatasetCreator is how tf_keras's fit takes a function of one. Keras 3
    # has no keras.utils.experimental; it gets the dataset itself, to show what its fit says.
    per_worker = keras.utils.experimental.DatasetCreator(lambda context: dataset(tf, context)) \
        if hasattr(keras.utils, "experimental") else dataset(tf)
    history = model.fit(per_worker, epochs=2, steps_per_epoch=steps // 2, verbose=2)
    first, last = history.history["loss"][0], history.history["loss"][-1]
    print(f"trained {steps} steps: epoch loss {first:.4f} -> {last:.4f}", flush=True)
    path = os.path.join(model_dir, "weights")
    model.save_weights(path, options=tf.train.CheckpointOptions(experimental_io_device="/job:chief/task:0"))
    print(f"weights {path}", flush=True)
    if last >= first:
        sys.exit(f"the loss did not fall ({first:.4f} -> {last:.4f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--model-dir", default="/tmp/model")
    args = parser.parse_args()
    task = json.loads(os.environ["TF_CONFIG"])  # written by tfjobgen; the kubelet expands it per pod
    role, index = task["task"]["type"], int(task["task"]["index"])
    if role == "evaluator":
        sys.exit("this program has no evaluator: leave spec.roles.evaluator out")
    import tensorflow as tf

    cluster = tf.train.ClusterSpec(task["cluster"])
    if role in ("ps", "worker"):
        serve(tf, cluster, role, index)
    else:
        coordinate(tf, cluster, args.steps, args.model_dir)


if __name__ == "__main__":
    main()
