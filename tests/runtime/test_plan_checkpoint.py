"""`tfjobgen plan --checkpoint`: variables read from a real TensorFlow checkpoint, slots beside their variable."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import run_tfjobgen
from runtime_support import need_tensorflow

WRITE_TF1_CHECKPOINT = """
import sys
import tensorflow as tf
tf.compat.v1.disable_eager_execution()
step = tf.compat.v1.train.get_or_create_global_step()
embedding = tf.compat.v1.get_variable("embedding", [1000, 8])
dense = tf.compat.v1.get_variable("dense", [8, 4])
loss = tf.reduce_sum(tf.matmul(tf.nn.embedding_lookup(embedding, [1, 2]), dense))
train = tf.compat.v1.train.AdagradOptimizer(0.1).minimize(loss, global_step=step)
with tf.compat.v1.Session() as session:
    session.run(tf.compat.v1.global_variables_initializer())
    session.run(train)
    tf.compat.v1.train.Saver().save(session, sys.argv[1])
"""

JOB = """\
apiVersion: tfjobgen.dev/v1alpha1
kind: TrainingJob
metadata: {name: own, namespace: ml-training}
spec:
  image: registry.example.com/ml/own:1.0
  command: [python, /app/train.py]
  api: tf1
  roles:
    ps: {replicas: 2, cpu: 4, memory: 8Gi}
    worker: {replicas: 4, cpu: 4, memory: 8Gi}
"""


def test_a_tf1_checkpoint_gives_each_variable_its_adagrad_slot(tmp_path):
    need_tensorflow()
    prefix = tmp_path / "model" / "model.ckpt"
    written = subprocess.run([sys.executable, "-c", WRITE_TF1_CHECKPOINT, str(prefix)], capture_output=True,
                             text=True, timeout=120)
    assert written.returncode == 0, written.stderr
    job = tmp_path / "job.yaml"
    job.write_text(JOB)
    proc = run_tfjobgen("plan", str(job), "--checkpoint", str(tmp_path / "model"), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    # By name: dense, embedding, global_step, round-robin on 2 PS (partitioner none); each Adagrad slot
    # (dense/Adagrad, embedding/Adagrad) beside its variable.
    assert data["ps_bytes"] == [8 * 4 * 4 * 2 + 8, 1000 * 8 * 4 * 2]
    assert any("creation order" in note for note in data["notes"])


WRITE_SAVED_MODEL = """
import sys
import tensorflow as tf
module = tf.Module()
module.table = tf.Variable(tf.zeros([500, 4]), name="table")
module.bias = tf.Variable(tf.zeros([4]), name="bias")
tf.saved_model.save(module, sys.argv[1])
"""


def test_a_saved_model_folder_is_read_through_its_variables(tmp_path):
    need_tensorflow()
    folder = tmp_path / "saved"
    written = subprocess.run([sys.executable, "-c", WRITE_SAVED_MODEL, str(folder)], capture_output=True, text=True,
                             timeout=120)
    assert written.returncode == 0, written.stderr
    job = tmp_path / "job.yaml"
    job.write_text(JOB)
    proc = run_tfjobgen("plan", str(job), "--checkpoint", str(folder), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    # Object-based names, by name: bias (16 bytes) on ps:0, table (8,000 bytes) on ps:1; no slots saved.
    assert json.loads(proc.stdout)["ps_bytes"] == [4 * 4, 500 * 4 * 4]
