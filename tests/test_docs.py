"""Pages derived from code stay in step with it: regenerate them with the command each names."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO


def _regenerated(script: str, output: str, tmp_path, *args: str) -> tuple[str, str]:
    committed = (REPO / output).read_text()
    subprocess.run([sys.executable, str(REPO / script), *args], check=True, capture_output=True)
    fresh = (REPO / output).read_text()
    (REPO / output).write_text(committed)  # leave the working tree as it was
    return committed, fresh


def test_field_reference_matches_the_schemas(tmp_path):
    committed, fresh = _regenerated("docs/reference.py", "docs/reference.md", tmp_path)
    assert committed == fresh, "docs/reference.md is stale: run .venv/bin/python docs/reference.py"


def test_placement_picture_matches_the_generator(tmp_path):
    committed, fresh = _regenerated("docs/placement.py", "docs/placement.svg", tmp_path, "--picture")
    assert committed == fresh, "docs/placement.svg is stale: run .venv/bin/python docs/placement.py --picture"


def test_the_seed_scenes_table_in_plan_md_is_what_tfjobgen_plan_says():
    printed = subprocess.run([sys.executable, str(REPO / "docs/plan_scenes.py")], check=True, capture_output=True,
                             text=True).stdout
    assert printed.strip() in (REPO / "docs/plan.md").read_text(), \
        "docs/plan.md's scene table is stale: paste the output of .venv/bin/python docs/plan_scenes.py"
