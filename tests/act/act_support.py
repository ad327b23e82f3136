"""The act tier's helpers: tfjobgen.harness.act (how a workflow runs under nektos/act here), with the
tests' markers and skips.

    act_repo          fixture: a copy of this repository on `main`, with its GitHub API stand-in
    run_pr(repo, base, head, ...) -> ActRun(exit, comments, log, seconds)
    list_job(path, name)  adds a job file to jobs/kustomization.yaml

For the routing and `tfjobgen init` cases: make a branch on `act_repo` (`branch`, edit, `hydrate`, `commit`),
then `run_pr`. Without act (or the placement programs) the test skips, and fails under
TFJOBGEN_REQUIRE_TOOLS=1, with the line naming the make target.
"""

from __future__ import annotations

import pytest
from conftest import CRD_DIR, need, sample_repo, uses

from tfjobgen.artifacts import programs
from tfjobgen.harness import act
from tfjobgen.harness.act import ACTIONS, STAND_INS, ActRepo, ActRun, remote_actions  # noqa: F401 - for the tests


def act_binary() -> str:
    try:
        return act.act_binary()
    except programs.ToolsMissing as missing:
        return need("act", None, str(missing))


@uses("act", "git")
def run_pr(repo: ActRepo, base: str, head: str, **options) -> ActRun:
    act_binary()
    return act.run_pr(repo, base, head, crd_mirror=CRD_DIR, **options)


@uses("git")
def seed_programs_cache(repo: ActRepo) -> str:
    try:
        return repo.seed_programs_cache()
    except programs.ToolsMissing as missing:
        return need("the placement preview's programs", None, str(missing))


def list_job(repo, name: str) -> None:
    """`name` added to the jobs/kustomization.yaml of the repository at `repo`."""
    listing = repo / "jobs" / "kustomization.yaml"
    listing.write_text(listing.read_text().rstrip("\n") + f"\n- {name}\n")


@uses("git", "slow")
def _create(folder) -> ActRepo:
    return ActRepo.create(folder, prepare=sample_repo)  # the tool's sample, never the repository's own jobs


@pytest.fixture
def act_repo(tmp_path):
    """A git repository copied from this one, on `main`, with its GitHub API stand-in; closed after the test.
    Import it into a test module (`from act_support import act_repo`)."""
    repo = _create(tmp_path / "act")
    try:
        yield repo
    finally:
        repo.close()
