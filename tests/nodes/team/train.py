"""A team's own training program, with nothing of tfjobgen in it: the node tier runs it in the team fixture image
(tfjobgen-team-fixture: Debian, python3, tensorflow-cpu) under tfjobgen's entrypoint.

    python3 /opt/team/train.py [--steps N] [--fail-with CODE]

It reads TF_CONFIG as any TensorFlow program does. The PS and workers start their TF server and serve until
they are stopped (they never end on their own: the entrypoint stops them when the chief's program has ended).
The chief runs a ParameterServerStrategy custom loop through a ClusterCoordinator: a linear model on synthetic
data, `--steps` steps, then exits 0. `--fail-with CODE`: the chief exits CODE once the cluster is up (a
permanent failure of the team's program, for the node tier).
"""

import argparse
import json
import os
import sys
import time

import tensorflow as tf


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--fail-with", type=int, default=0)
    args = parser.parse_args()
    config = json.loads(os.environ["TF_CONFIG"])
    role, index = config["task"]["type"], config["task"]["index"]
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if role in ("ps", "worker"):
        server = tf.distribute.Server(resolver.cluster_spec(), job_name=role, task_index=index, protocol="grpc",
                                      start=True)
        print(f"team: {role}:{index} serving", flush=True)
        server.join()  # until the entrypoint stops it
        return 0
    strategy = tf.distribute.experimental.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)
    if args.fail_with:
        print(f"team: chief failing with {args.fail_with}", flush=True)
        return args.fail_with
    with strategy.scope():
        weights = tf.Variable(tf.zeros([8, 1]), name="weights")
        bias = tf.Variable(0.0, name="bias")
        optimizer = tf.keras.optimizers.SGD(0.1)
    truth = tf.constant([[float(i) - 3.5] for i in range(8)])

    def dataset_fn(_):
        features = tf.random.stateless_normal([4096, 8], seed=[1, 2])
        return tf.data.Dataset.from_tensor_slices((features, tf.matmul(features, truth) + 0.5)).repeat().batch(32)

    @tf.function
    def per_worker_dataset():
        return strategy.distribute_datasets_from_function(dataset_fn)

    iterator = iter(coordinator.create_per_worker_dataset(per_worker_dataset))

    @tf.function
    def step(iterator):
        def replica(features, labels):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(tf.matmul(features, weights) + bias - labels))
            optimizer.apply_gradients(zip(tape.gradient(loss, [weights, bias]), [weights, bias]))
            return loss
        features, labels = next(iterator)
        return strategy.run(replica, args=(features, labels))

    print(f"team: training {args.steps} steps", flush=True)
    started = time.monotonic()
    loss = None
    for _ in range(args.steps):
        loss = coordinator.schedule(step, args=(iterator,))
    coordinator.join()
    print(f"team: trained {args.steps} steps in {time.monotonic() - started:.1f} s, "
          f"loss {float(loss.fetch()):.4f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
