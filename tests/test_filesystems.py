"""Paths of a filesystem the job's image lacks: a warning at validate, naming the package that adds it.

TensorFlow 2.21 itself reads file://, ram:// and gs:// (`tf.io.gfile.get_registered_schemes()`, measured:
docs/own-code.md); s3://, hdfs://, viewfs:// and az:// need tensorflow-io, which tfjobgen's runtime image does
not hold. Before, such a path passed validate, plan and render without a word and failed in the pods.
"""

from __future__ import annotations

import pytest
from conftest import problems_of

from tfjobgen.inputs.problems import WARNING
from tfjobgen.shared import filesystems

RUNTIME_JOB = """\
apiVersion: tfjobgen.dev/v1alpha1
kind: TrainingJob
metadata: {name: clicks, namespace: ml}
spec:
  image: registry.example.com/ml/tfjobgen-runtime:0.1.0
  roles:
    ps: {replicas: 1, cpu: 1, memory: 1Gi}
    worker: {replicas: 1, cpu: 1, memory: 1Gi}
    chief: {cpu: 1, memory: 1Gi}
  training:
    modelDir: MODEL
    data:
      format: tfrecord
      paths: [/data/a.tfrecord, DATA]
"""


def _job(data: str = "/data/b.tfrecord", model: str = "/tmp/model", image: str = "") -> str:
    text = RUNTIME_JOB.replace("DATA", data).replace("MODEL", model)
    return text.replace("registry.example.com/ml/tfjobgen-runtime:0.1.0", image) if image else text


def _filesystem_problems(text: str, tmp_path) -> list:
    return [p for p in problems_of(text, tmp_path) if "filesystem" in p.message]


@pytest.mark.parametrize("scheme", ["s3", "hdfs", "viewfs", "az"])
def test_a_data_path_the_runtime_image_cannot_read_is_a_warning_naming_the_package(tmp_path, scheme):
    [problem] = _filesystem_problems(_job(data=f"{scheme}://bucket/clicks/*.tfrecord"), tmp_path)
    assert problem.severity == WARNING and problem.field == "spec.training.data.paths[1]"
    assert problem.line == 14 and problem.file.endswith("job.yaml")
    assert f"{scheme}://" in problem.message and "tensorflow-io" in problem.message
    assert "tfjobgen-runtime" in problem.message and "TensorFlow 2.21" in problem.message
    assert problem.format().startswith(f"{tmp_path}/job.yaml:14: warning: spec.training.data.paths[1]: ")


def test_a_model_dir_the_runtime_image_cannot_write_is_a_warning_at_its_line(tmp_path):
    [problem] = _filesystem_problems(_job(model="s3://bucket/models/clicks"), tmp_path)
    assert (problem.severity, problem.field, problem.line) == (WARNING, "spec.training.modelDir", 11)


@pytest.mark.parametrize("path", ["gs://bucket/clicks/*.tfrecord", "/data/c.tfrecord", "file:///data/c.tfrecord",
                                  "ram://clicks/c.tfrecord", "relative/c.tfrecord"])
def test_what_tensorflow_reads_by_itself_passes_quietly(tmp_path, path):
    assert _filesystem_problems(_job(data=path, model=path.rpartition("/")[0] or "/tmp/m"), tmp_path) == []


def test_a_scheme_nothing_provides_is_named_as_unknown(tmp_path):
    [problem] = _filesystem_problems(_job(data="ftp://host/clicks.tfrecord"), tmp_path)
    assert "ftp://" in problem.message and "neither TensorFlow 2.21 nor tensorflow-io" in problem.message


def test_a_team_image_is_trusted_to_hold_the_filesystem_it_reads(tmp_path):
    """tfjobgen cannot look inside an image: one of the team's own may well hold tensorflow-io, and a warning it
    could never clear would sit in every validate and pull-request comment of the job."""
    text = _job(data="s3://bucket/clicks/*.tfrecord", model="hdfs://nn/models/clicks",
                image="registry.example.com/ml/ctr-with-tfio:2.21")
    assert _filesystem_problems(text, tmp_path) == []


def test_a_program_of_its_own_is_not_checked_for_the_runtime_s_paths(tmp_path):
    """With spec.command, spec.training is not read at all (a warning of its own says so)."""
    text = _job(data="s3://bucket/clicks/*.tfrecord").replace(
        "  roles:", "  command: [python, /app/train.py]\n  roles:")
    problems = problems_of(text, tmp_path)
    assert not [p for p in problems if "filesystem" in p.message]
    assert [p for p in problems if p.field == "spec.training" and p.severity == WARNING]


def test_tensorboard_log_dir_on_the_runtime_image_is_checked_too(tmp_path):
    text = _job() + "  tensorboard:\n    logDir: s3://bucket/logs/clicks\n"
    [problem] = _filesystem_problems(text, tmp_path)
    assert (problem.field, problem.line) == ("spec.tensorboard.logDir", 16)


def test_the_runtime_and_validate_name_the_same_package():
    assert filesystems.BUILT_IN == ("file", "ram", "gs")
    assert filesystems.package("s3") == "tensorflow-io"
    assert filesystems.package("gs") is None and filesystems.package("file") is None
    assert "tensorflow-io" in filesystems.missing("s3", "2.21.0")
