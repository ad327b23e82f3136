"""The runtime's TensorFlow pieces in one process: optimizers, the model, file input.

These import TensorFlow into the test process (about 3 s, once) and build no cluster.
"""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow", reason="install the runtime extra: pip install -e '.[runtime]'")

from tfjobgen.runtime import data, optimizers, tf2, wide_deep  # noqa: E402
from tfjobgen.runtime.errors import SetupError  # noqa: E402


def _slot(variable, name, initial):
    return tf.Variable(tf.fill(variable.shape, initial), trainable=False, name=f"{variable.name.split(':')[0]}/{name}")


def _table_and_optimizer(kind):
    table = tf.Variable(tf.ones([6, 2]), name="table")
    optimizer = optimizers.Optimizer(kind, 0.1)
    optimizer.build([table], _slot)
    return table, optimizer


def _sparse(rows, value=1.0):
    return tf.IndexedSlices(tf.fill([len(rows), 2], value), tf.constant(rows, tf.int64), tf.constant([6, 2]))


@pytest.mark.parametrize("kind", ["adagrad", "ftrl", "lazy_adam", "sgd"])
def test_sparse_optimizers_touch_only_the_rows_of_the_batch_and_sum_repeated_ids(kind):
    table, optimizer = _table_and_optimizer(kind)
    optimizer.apply([(_sparse([1, 3, 3]), table)], tf.constant(0, tf.int64))
    changed = tf.reduce_any(table != 1.0, axis=1).numpy().tolist()
    assert changed == [False, True, False, True, False, False]
    if kind == "sgd":  # row 3 appeared twice: its gradients add up
        assert table.numpy()[3, 0] == pytest.approx(1.0 - 0.2) and table.numpy()[1, 0] == pytest.approx(0.9)


def test_dense_adam_keeps_moving_rows_the_batch_did_not_touch_and_lazy_adam_does_not():
    moved = {}
    for kind in ("adam", "lazy_adam"):
        table, optimizer = _table_and_optimizer(kind)
        optimizer.apply([(_sparse([2]), table)], tf.constant(0, tf.int64))
        after_first = table.numpy()[2].copy()
        optimizer.apply([(_sparse([4]), table)], tf.constant(1, tf.int64))  # row 2 not in this batch
        moved[kind] = bool((table.numpy()[2] != after_first).any())
    assert moved == {"adam": True, "lazy_adam": False}


@pytest.mark.parametrize("kind", optimizers.KINDS)
def test_every_optimizer_lowers_the_loss_of_the_reference_model(kind):
    tf.random.set_seed(7)
    model = wide_deep.WideDeep(2000, 8, (16,), wide_deep.tf2_variable)
    optimizer = optimizers.Optimizer(kind, 0.05)
    optimizer.build(model.trainable_variables, _slot)
    step = tf.Variable(0, dtype=tf.int64)
    batches = list(data.evaluation_batches("synthetic", [], 256, 2000, 4))

    train = tf.function(tf2.replica_step(model, optimizer, step))  # the runtime's own step, not a copy

    def mean_loss() -> float:
        return sum(float(wide_deep.loss_of(model, f, y)) for f, y in batches) / len(batches)

    before = mean_loss()
    for _ in range(20):
        for features, labels in batches:
            train(features, labels)
    assert mean_loss() < before - 0.03, (kind, before, mean_loss())


@pytest.mark.parametrize("data_format", ["tfrecord", "csv"])
def test_sample_files_read_back_as_batches_with_ids_inside_the_vocabulary(tmp_path, data_format):
    path = str(tmp_path / f"train.{data_format}")
    data.write_sample(path, data_format, examples=600, vocabulary=1000)
    files = data.check_paths((str(tmp_path / "train.*"),))
    features, labels = next(iter(data.from_files(data_format, files, 128, vocabulary=100)))
    assert features["ids"].shape == (128, data.FIELDS) and features["dense"].shape == (128, data.DENSE)
    assert int(tf.reduce_max(features["ids"])) < 100  # ids wrap around a smaller vocabulary
    assert set(labels.numpy().tolist()) <= {0.0, 1.0}
    assert len(list(data.evaluation_batches(data_format, files, 128, 100, 20))) == 5  # 600 examples, no repeat


def test_a_pattern_that_matches_nothing_is_named(tmp_path):
    with pytest.raises(SetupError, match=r"training.data.paths\[1\] '.*/none-\*.csv' matches no file"):
        data.check_paths((str(tmp_path), str(tmp_path / "none-*.csv")))
    with pytest.raises(SetupError, match="has no hdfs:// filesystem: tensorflow-io adds it .* and this image lacks it"):
        data.check_paths(("hdfs://namenode:8020/data/train-*.tfrecord",))
