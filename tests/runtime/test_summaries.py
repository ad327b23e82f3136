"""The chief's TensorBoard summaries (runtime/summaries.py), read back with TensorFlow's own reader."""

from __future__ import annotations

import pytest

from tfjobgen.runtime import events
from tfjobgen.runtime.summaries import Summaries

tf = pytest.importorskip("tensorflow")


def test_step_events_become_tensorboard_scalars_at_their_global_step(tmp_path):
    notices = []
    summaries = Summaries(str(tmp_path / "model"), notices.append)
    summaries.observe(events.UP, {})
    summaries.observe(events.STEP, {"step": 100, "loss": 0.7, "steps_per_sec": 20.5, "examples_per_sec": 10496})
    summaries.observe(events.STEP, {"step": 200, "loss": 0.6, "steps_per_sec": 21.0, "examples_per_sec": 10752})
    (path,) = tf.io.gfile.glob(str(tmp_path / "model" / "events.out.tfevents.*"))
    found = list(tf.compat.v1.train.summary_iterator(path))
    assert found[0].file_version == "brain.Event:2"
    scalars = {(e.step, v.tag): round(v.simple_value, 3) for e in found[1:] for v in e.summary.value}
    assert scalars == {(100, "loss"): 0.7, (100, "steps_per_sec"): 20.5, (100, "examples_per_sec"): 10496,
                       (200, "loss"): 0.6, (200, "steps_per_sec"): 21.0, (200, "examples_per_sec"): 10752}
    assert notices == []


def test_a_directory_it_cannot_write_stops_the_summaries_with_one_notice_not_the_training(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    notices = []
    summaries = Summaries(str(blocker / "model"), notices.append)
    for step in (100, 200):
        summaries.observe(events.STEP, {"step": step, "loss": 0.5})
    assert len(notices) == 1 and notices[0].startswith("TensorBoard summaries stopped")
