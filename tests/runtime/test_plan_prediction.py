"""`tfjobgen plan` against real TensorFlow: predicted bytes per PS within 2% of what run-local measures.

Two model shapes, each under the partitioners none, fixed and auto, on 3 PS:
one on tf2 (ParameterServerStrategy, lazy_adam: two slots), one on tf1
(replica_device_setter, ftrl: two slots, an odd vocabulary so shards differ
by a row). Six real runs of 10-20 s each, one after another.
"""

from __future__ import annotations

import json

import pytest
from conftest import run_tfjobgen
from runtime_support import need_tensorflow, run_local

SHAPES = {
    "tf2": "  roles:\n    ps: {replicas: 3, cpu: 1, memory: 2Gi}\n    worker: {replicas: 1, cpu: 1, memory: 2Gi}\n"
           "    chief: {cpu: 1, memory: 2Gi}\n  training:\n    steps: 20\n    optimizer: lazy_adam\n"
           "    partitioner: PARTITIONER\n    model: {vocabularySize: 50000, embeddingDim: 12, hiddenUnits: [48]}\n",
    "tf1": "  api: tf1\n  roles:\n    ps: {replicas: 3, cpu: 1, memory: 2Gi}\n    worker: {replicas: 1, cpu: 1, "
           "memory: 2Gi}\n  training:\n    steps: 20\n    optimizer: ftrl\n    partitioner: PARTITIONER\n"
           "    minShardBytes: 65536\n    model: {vocabularySize: 30001, embeddingDim: 8, hiddenUnits: [32, 16, 8]}\n",
}
HEAD = ("apiVersion: tfjobgen.dev/v1alpha1\nkind: TrainingJob\nmetadata: {name: plan-check, namespace: ml-test}\n"
        "spec:\n  image: registry.example.com/ml/tfjobgen-runtime:0.1.0\n")


@pytest.mark.parametrize("partitioner", ["none", "fixed", "auto"])
@pytest.mark.parametrize("api", ["tf2", "tf1"])
def test_predicted_bytes_per_ps_match_what_tensorflow_places(tmp_path, api, partitioner):
    need_tensorflow()
    job = tmp_path / "job.yaml"
    job.write_text(HEAD + SHAPES[api].replace("PARTITIONER", partitioner))
    planned = run_tfjobgen("plan", str(job), "--format", "json")
    assert planned.returncode == 0, planned.stderr
    predicted = json.loads(planned.stdout)["ps_bytes"]

    run = run_local(job, tmp_path, "--scale-ps", "3", "--scale-workers", "1")
    assert run.returncode == 0 and run.leftovers == [], run.output
    measured = run.report["bytes_per_ps"]
    assert len(measured) == len(predicted) == 3
    for ps, (p, m) in enumerate(zip(predicted, measured)):
        assert abs(p - m) <= 0.02 * m, f"ps:{ps}: predicted {p:,}, TensorFlow placed {m:,} ({api}, {partitioner})"


def test_the_runtimes_model_creates_exactly_the_layouts_variables_in_its_order():
    need_tensorflow()
    from tfjobgen.runtime import wide_deep
    from tfjobgen.shared.variable_placement import reference_model

    made = []
    wide_deep.WideDeep(1000, 4, (6, 5), lambda name, shape, initializer: made.append((name, tuple(shape))))
    assert made == [(v.name, v.shape) for v in reference_model.model_variables(1000, 4, (6, 5))]
