"""A team's own parameter-server training program: ParameterServerStrategy with a ClusterCoordinator.

The API that runs under TensorFlow 2.21 with Keras 3 (docs/own-code.md says what else was measured). One
file for every task; TF_CONFIG, which tfjobgen writes into every pod, says which task this is:

    ps, worker   start a TensorFlow server and serve until the process is ended (SIGTERM). The chief sends
                 them all the work; they run no Python of their own.
    chief        the coordinator: creates the variables on the PS, schedules training steps on the workers,
                 saves a checkpoint, and exits 0. Its exit is the job's success.

A PS or worker never exits on its own: what ends it is outside the program (run-local stops them once the
chief exited 0; in a cluster, the job's activeDeadlineSeconds, or the entrypoint tfjobgen injects).

The model is plain TensorFlow: an embedding table split across the PS (the part a PS job exists for) and a
logistic layer, trained with Adagrad on synthetic clicks, so the loss falls. Nothing here needs Keras.

    python train.py --steps 200 --model-dir /tmp/model
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

VOCABULARY, DIM, FIELDS, BATCH = 2_000, 8, 4, 256


def threads() -> tuple[int, int]:
    """The thread pools tfjobgen sized to the pod's CPU limit; they must reach the server's ConfigProto, since
    tf.config.threading calls do not reach a server that is already running."""
    return int(os.environ.get("TF_NUM_INTRAOP_THREADS", "0")), int(os.environ.get("TF_NUM_INTEROP_THREADS", "0"))


def serve(tf, cluster, role: str, index: int) -> None:
    """PS and workers: a TensorFlow server at this task's TF_CONFIG address, until the process is ended."""
    intra, inter = threads()
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=intra, inter_op_parallelism_threads=inter)
    server = tf.distribute.Server(cluster, job_name=role, task_index=index, protocol="grpc", config=config,
                                  start=True)
    print(f"{role}:{index} serving at {cluster.task_address(role, index)}", flush=True)
    server.join()


def synthetic(tf, seed):
    """One batch of clicks from a fixed hidden rule: id i pushes the odds by sin(i)."""
    ids = tf.random.stateless_uniform([BATCH, FIELDS], seed=tf.stack([seed, 1]), maxval=VOCABULARY,
                                      dtype=tf.int64)
    logit = tf.reduce_sum(tf.sin(tf.cast(ids, tf.float32)), axis=1)
    draw = tf.random.stateless_uniform([BATCH], seed=tf.stack([seed, 2]))
    return ids, tf.cast(draw < tf.sigmoid(logit), tf.float32)


def coordinate(tf, cluster, steps: int, model_dir: str) -> None:
    """The chief: variables on the PS, steps scheduled on the workers, a checkpoint at the end."""
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(cluster, task_type="chief", task_id=0,
                                                                    rpc_layer="grpc")
    num_ps = len(cluster.job_tasks("ps"))
    strategy = tf.distribute.experimental.ParameterServerStrategy(
        resolver, variable_partitioner=tf.distribute.experimental.partitioners.MinSizePartitioner(
            min_shard_bytes=16 << 10, max_shards=num_ps))  # the table is split, the small ones stay whole
    coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)

    with strategy.scope():  # created here, the variables live on the PS; the table is split in num_ps shards
        table = tf.Variable(tf.random.uniform([VOCABULARY, DIM], -0.05, 0.05), name="embedding")
        weights = tf.Variable(tf.zeros([FIELDS * DIM, 1]), name="weights")
        bias = tf.Variable(0.0, name="bias")
        step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
        # Gradients are taken per shard (a ShardedVariable has none of its own); each slot of Adagrad is
        # created beside its variable, so a shard and its accumulator share a PS.
        trained = [shard for v in (table, weights, bias) for shard in getattr(v, "variables", [v])]
        accumulators = []
        for variable in trained:
            with strategy.extended.colocate_vars_with(variable):
                accumulators.append(tf.Variable(tf.fill(variable.shape, 0.1), trainable=False))

    def per_worker_dataset():
        return tf.data.Dataset.random().map(lambda seed: synthetic(tf, seed)).prefetch(2)

    iterator = iter(coordinator.create_per_worker_dataset(per_worker_dataset))

    def replica_step(ids, labels):
        with tf.GradientTape() as tape:
            rows = tf.nn.embedding_lookup(table, ids)  # [BATCH, FIELDS, DIM], gathered from the shards
            # each id's rows sum into the logit (the "wide" part), and a linear layer reads them all
            logits = tf.reduce_sum(rows, [1, 2]) + tf.squeeze(
                tf.matmul(tf.reshape(rows, [BATCH, FIELDS * DIM]), weights), 1) + bias
            loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits))
        for variable, acc, grad in zip(trained, accumulators, tape.gradient(loss, trained)):
            if isinstance(grad, tf.IndexedSlices):  # a shard of the table: only the rows this batch used
                acc.scatter_add(tf.IndexedSlices(tf.square(grad.values), grad.indices))
                variable.scatter_sub(tf.IndexedSlices(
                    0.5 * grad.values * tf.math.rsqrt(tf.gather(acc, grad.indices)), grad.indices))
            else:
                acc.assign_add(tf.square(grad))
                variable.assign_sub(0.5 * grad * tf.math.rsqrt(acc))
        step.assign_add(1)
        return loss

    @tf.function
    def train_step(iterator):
        ids, labels = next(iterator)
        return strategy.run(replica_step, args=(ids, labels))

    started = time.monotonic()
    results = [coordinator.schedule(train_step, args=(iterator,)) for _ in range(steps)]
    coordinator.join()
    losses = [float(r.fetch()) for r in results]
    first, last = sum(losses[:10]) / 10, sum(losses[-10:]) / 10
    print(f"trained {int(step.numpy())} steps in {time.monotonic() - started:.1f} s: "
          f"loss {first:.4f} -> {last:.4f}", flush=True)

    # The chief reads every variable and writes the files itself (experimental_io_device): a plain path is
    # only on the chief's disk. With a URL every task reaches (gs://, or s3:// with tensorflow-io), drop it.
    checkpoint = tf.train.Checkpoint(table=table, weights=weights, bias=bias, step=step)
    path = checkpoint.save(os.path.join(model_dir, "ckpt"),
                           options=tf.train.CheckpointOptions(experimental_io_device="/job:chief/task:0"))
    print(f"checkpoint {path}", flush=True)
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
    intra, inter = threads()
    if intra:  # before TensorFlow starts its own pools (the chief's; a server gets them in its ConfigProto)
        os.environ.setdefault("OMP_NUM_THREADS", str(intra))
    import tensorflow as tf

    if intra:
        tf.config.threading.set_intra_op_parallelism_threads(intra)
        tf.config.threading.set_inter_op_parallelism_threads(inter)
    cluster = tf.train.ClusterSpec(task["cluster"])
    if role in ("ps", "worker"):
        serve(tf, cluster, role, index)
    else:
        coordinate(tf, cluster, args.steps, args.model_dir)


if __name__ == "__main__":
    main()
