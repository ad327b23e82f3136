"""`tfjobgen summary` reads rendered objects; given a TrainingJob intent (the file one writes, not what it
renders to) it printed an empty table and exited 0. It says what the file is and how to render it, exit 1."""

from __future__ import annotations

from conftest import run_tfjobgen
from jobs import SMALL_JOB


def test_an_intent_is_refused_with_how_to_render_it(tmp_path):
    (tmp_path / "job.yaml").write_text(SMALL_JOB)
    proc = run_tfjobgen("summary", "job.yaml", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stdout == "", proc.stdout
    assert proc.stderr.splitlines() == [
        "job.yaml:1: TrainingJob ok is an intent, not rendered objects: summary describes what a job renders to; "
        "render it first: tfjobgen render job.yaml | tfjobgen summary (or kustomize build overlays/<cluster> "
        "| tfjobgen summary)"], proc.stderr


def test_rendered_objects_are_still_summarized(tmp_path):
    (tmp_path / "job.yaml").write_text(SMALL_JOB)
    rendered = run_tfjobgen("render", "job.yaml", cwd=tmp_path)
    assert rendered.returncode == 0, rendered.stderr
    proc = run_tfjobgen("summary", stdin=rendered.stdout, cwd=tmp_path)
    assert proc.returncode == 0 and "ml/ok" in proc.stdout, proc.stderr
