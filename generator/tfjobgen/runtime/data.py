"""Training examples for the reference model: synthetic, or read from TFRecord / CSV files.

An example is what a click log gives a CTR model:

    ids    FIELDS categorical ids, all from one vocabulary (user, item, ...), int64
    dense  DENSE numeric features, float32
    label  0 or 1, float32

Synthetic examples follow a fixed hidden rule (each id and each dense feature
pushes the click odds up or down), so the loss has something to fall towards.
Ids are skewed like real traffic: a few ids are frequent, most are rare.

Files: TFRecord files of tf.train.Example with features `ids` (int64 x FIELDS),
`dense` (float x DENSE) and `label` (float x 1); or CSV files with a header and
the columns label, dense_0..dense_7, id_0..id_7. Paths may be globs and may use
any filesystem TensorFlow has (hdfs:// needs a TensorFlow build or plug-in that
provides it, with the Hadoop environment set). Ids outside the vocabulary wrap
around it (id % vocabularySize), as a hashed feature column would.
"""

from __future__ import annotations

import math

import tensorflow as tf

from ..shared import filesystems
from ..shared.variable_placement.reference_model import DENSE, FIELDS, ID_SKEW
from .errors import SetupError

_DENSE_WEIGHTS = [(-1.0 + 2.0 * i / (DENSE - 1)) for i in range(DENSE)]
EVAL_SEED = 20240601  # held-out synthetic examples: the same for every evaluation
CSV_COLUMNS = ["label"] + [f"dense_{i}" for i in range(DENSE)] + [f"id_{i}" for i in range(FIELDS)]


def _id_weight(ids: tf.Tensor) -> tf.Tensor:
    """The hidden rule's weight of an id: a fixed pseudo-random number in [-1, 1]."""
    return tf.cast(tf.sin(tf.cast(ids, tf.float64) * 12.9898), tf.float32)


def synthetic_batch(seed: tf.Tensor, batch_size: int, vocabulary: int) -> tuple[dict, tf.Tensor]:
    """One batch drawn from `seed` (an int64 scalar): the same seed gives the same batch."""
    seed = tf.cast(seed, tf.int64)
    u = tf.random.stateless_uniform([batch_size, FIELDS], seed=tf.stack([seed, 1]), dtype=tf.float64)
    ids = tf.minimum(tf.cast(tf.floor(vocabulary * tf.pow(u, ID_SKEW)), tf.int64), vocabulary - 1)
    dense = tf.random.stateless_normal([batch_size, DENSE], seed=tf.stack([seed, 2]))
    logit = tf.reduce_sum(_id_weight(ids), axis=1) + tf.linalg.matvec(dense, tf.constant(_DENSE_WEIGHTS))
    draw = tf.random.stateless_uniform([batch_size], seed=tf.stack([seed, 3]))
    labels = tf.cast(draw < tf.sigmoid(logit), tf.float32)
    return {"ids": ids, "dense": dense}, labels


def synthetic(batch_size: int, vocabulary: int, seed: int | None = None) -> tf.data.Dataset:
    """Endless batches. seed None: every worker draws its own stream."""
    return (tf.data.Dataset.random(seed=seed)
            .map(lambda s: synthetic_batch(s, batch_size, vocabulary))
            .prefetch(2))


def check_paths(paths: tuple[str, ...]) -> list[str]:
    """Every file the patterns match, or SetupError naming the pattern that matches nothing."""
    if not paths:
        raise SetupError("training.data.paths is empty: list the tfrecord or csv files (globs allowed)")
    found = []
    for i, pattern in enumerate(paths):
        try:
            matches = tf.io.gfile.glob(pattern)
        except tf.errors.UnimplementedError:
            matches = _glob_with_plugin(pattern)
        except tf.errors.OpError as err:
            raise SetupError(f"training.data.paths[{i}] {pattern!r}: {err.message}") from None
        if not matches:
            raise SetupError(f"training.data.paths[{i}] {pattern!r} matches no file")
        found += matches
    return sorted(found)


def _glob_with_plugin(pattern: str) -> list[str]:
    """A scheme core TensorFlow lacks (hdfs://, s3://): try tensorflow-io, which registers them."""
    scheme = filesystems.scheme(pattern)
    try:
        import tensorflow_io  # noqa: F401  (importing it registers its filesystems)
    except ImportError:
        hadoop = (": for hdfs:// also set CLASSPATH (hadoop classpath --glob), HADOOP_HDFS_HOME, JAVA_HOME and "
                  "LD_LIBRARY_PATH (libjvm, libhdfs)") if scheme in ("hdfs", "viewfs") else ""
        raise SetupError(f"{pattern!r}: {filesystems.missing(scheme, tf.__version__)}, and this image lacks it"
                         f"{hadoop}") from None
    try:
        return tf.io.gfile.glob(pattern)
    except tf.errors.OpError as err:
        raise SetupError(f"{pattern!r}: {err.message}") from None


def _parse_tfrecords(serialized: tf.Tensor, vocabulary: int) -> tuple[dict, tf.Tensor]:
    parsed = tf.io.parse_example(serialized, {
        "ids": tf.io.FixedLenFeature([FIELDS], tf.int64),
        "dense": tf.io.FixedLenFeature([DENSE], tf.float32),
        "label": tf.io.FixedLenFeature([1], tf.float32),
    })
    return {"ids": parsed["ids"] % vocabulary, "dense": parsed["dense"]}, tf.squeeze(parsed["label"], 1)


def _from_csv_columns(vocabulary: int):
    def convert(*columns):
        dense = tf.stack(columns[1:1 + DENSE], axis=1)
        ids = tf.stack(columns[1 + DENSE:], axis=1) % vocabulary
        return {"ids": ids, "dense": dense}, columns[0]
    return convert


def from_files(data_format: str, files: list[str], batch_size: int, vocabulary: int,
               repeat: bool = True, shuffle: bool = True) -> tf.data.Dataset:
    """Batches read from `files`, shuffled (each worker in its own order) and repeated."""
    names = tf.data.Dataset.from_tensor_slices(files)
    if shuffle:
        names = names.shuffle(len(files))
    if data_format == "tfrecord":
        records = names.interleave(tf.data.TFRecordDataset, cycle_length=min(4, len(files)))
    elif data_format == "csv":
        defaults = [tf.constant(0.0)] * (1 + DENSE) + [tf.constant(0, tf.int64)] * FIELDS
        records = names.interleave(
            lambda name: tf.data.experimental.CsvDataset(name, defaults, header=True),
            cycle_length=min(4, len(files)))
    else:
        raise SetupError(f"unknown data format {data_format!r}")
    if shuffle:
        records = records.shuffle(10 * batch_size)
    if repeat:
        records = records.repeat()
    batches = records.batch(batch_size, drop_remainder=repeat)
    if data_format == "tfrecord":
        batches = batches.map(lambda s: _parse_tfrecords(s, vocabulary))
    else:
        batches = batches.map(_from_csv_columns(vocabulary))
    return batches.prefetch(2)


def evaluation_batches(data_format: str, files: list[str], batch_size: int, vocabulary: int,
                       count: int) -> tf.data.Dataset:
    """The same `count` batches every time: held-out synthetic ones, or the files' first ones."""
    if data_format == "synthetic":
        seeds = tf.data.Dataset.range(EVAL_SEED, EVAL_SEED + count)
        return seeds.map(lambda s: synthetic_batch(s, batch_size, vocabulary))
    return from_files(data_format, files, batch_size, vocabulary, repeat=False, shuffle=False).take(count)


def write_sample(path: str, data_format: str, examples: int, vocabulary: int, seed: int = 7) -> None:
    """Write `examples` synthetic examples as a TFRecord or CSV file (for trying file input)."""
    rows = _sample_rows(examples, vocabulary, seed)
    if data_format == "csv":
        with tf.io.gfile.GFile(path, "w") as out:
            out.write(",".join(CSV_COLUMNS) + "\n")
            for ids, dense, label in rows:
                out.write(",".join([f"{label:g}"] + [f"{x:.6g}" for x in dense] + [str(x) for x in ids]) + "\n")
        return
    with tf.io.TFRecordWriter(path) as out:
        for ids, dense, label in rows:
            out.write(tf.train.Example(features=tf.train.Features(feature={
                "ids": tf.train.Feature(int64_list=tf.train.Int64List(value=ids)),
                "dense": tf.train.Feature(float_list=tf.train.FloatList(value=dense)),
                "label": tf.train.Feature(float_list=tf.train.FloatList(value=[label])),
            })).SerializeToString())


def _sample_rows(examples: int, vocabulary: int, seed: int):
    """(ids, dense, label) of each example, drawn in batches from the synthetic rule."""
    batch = 1024
    for number in range(math.ceil(examples / batch)):
        size = min(batch, examples - number * batch)
        features, labels = synthetic_batch(tf.constant(seed * 100003 + number, tf.int64), size, vocabulary)
        ids, dense, labels = features["ids"].numpy(), features["dense"].numpy(), labels.numpy()
        for i in range(size):
            yield ids[i], dense[i], float(labels[i])
