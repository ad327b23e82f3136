"""The tool's own sample repository, tests/fixtures/sample-repo: the seeds' example jobs on two clusters.

Tests, benchmarks, demos and docs generators measure on it, never on the repository's jobs/ and
overlays/, which are a team's to replace (docs/gitops.md, "Adopting tfjobgen in your repository").
The tool's own parts (generator/, plugins/, schemas/) stay where they are, at REPO.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "tests" / "fixtures" / "sample-repo"
JOBS = SAMPLE / "jobs"
OVERLAYS = SAMPLE / "overlays"
