"""Storage a job's paths name: a filesystem the job's image cannot read is said at validate, not in the pods.

TensorFlow 2.21 reads plain paths, file://, ram:// and gs:// by itself; s3://, hdfs://, viewfs://, az:// need
tensorflow-io (shared/filesystems.py, the one list). tfjobgen's runtime image holds TensorFlow alone, so a
job on it whose spec.training data, modelDir or TensorBoard logDir is such a URL gets a warning at that line,
naming the package; without it the path passed validate, plan and render and the task failed at start.

A team's own image (any other repository, or a job with spec.command) is trusted and gets no line: tfjobgen
cannot look inside an image, and a warning that no change to the job could clear would stand in every
validate and pull-request comment of the job for its whole life, teaching people to skip warnings. If that
image lacks the package, the task fails at start naming it (runtime/data.py), as run-local shows before any
cluster does. A warning and not an error: the image may be tfjobgen's runtime rebuilt with tensorflow-io
under the same name.
"""

from __future__ import annotations

from ..inputs.problems import WARNING, Problem
from ..inputs.trainingjob import TrainingJob
from ..shared import contract, filesystems


def runs_runtime_image(job: TrainingJob) -> bool:
    """tfjobgen's own image: the repository's last path component is tfjobgen-runtime, whatever the registry."""
    repository = job.image.partition("@")[0]
    name = repository.rpartition("/")[2].partition(":")[0]
    return name == contract.RUNTIME_IMAGE


def paths(job: TrainingJob) -> list[tuple[str, str]]:
    """(field, path) of every path the runtime reads or writes: data, modelDir, TensorBoard's logDir."""
    training = job.training or {}
    found = [(f"spec.training.data.paths[{i}]", path)
             for i, path in enumerate((training.get("data") or {}).get("paths") or [])]
    if training.get("modelDir"):
        found.append(("spec.training.modelDir", training["modelDir"]))
    if job.tensorboard_log_dir:
        found.append(("spec.tensorboard.logDir", job.tensorboard_log_dir))
    return found


def check(job: TrainingJob) -> list[Problem]:
    if not job.uses_runtime or not runs_runtime_image(job):
        return []
    problems = []
    for field, path in paths(job):
        scheme = filesystems.scheme(path)
        if filesystems.built_in(scheme):
            continue
        problems.append(Problem(
            f"{path!r}: the image {contract.RUNTIME_IMAGE} holds TensorFlow alone, and "
            f"{filesystems.missing(scheme, filesystems.TENSORFLOW_RELEASE)}: the task would fail at start. Use "
            f"an image of your own that adds it (spec.image; tfjobgen trusts it), or a path TensorFlow reads "
            f"({', '.join(s + '://' for s in filesystems.BUILT_IN)}, a mounted volume)", field, severity=WARNING))
    return problems
