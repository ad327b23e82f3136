"""The tool stands apart from the team's data: another team's repository passes the jobs pipeline's checks.

A platform team adopts tfjobgen by replacing the repository's jobs/, bases/, overlays/ and argocd/base/ with its own
and hydrating rendered/ from them. Here that team is tests/fixtures/other-team: 64-core servers (2 reserved), its own
registry and monitoring namespace, clusters prod-64c and staging-16c, four jobs in namespace ranking. In a copy of this
checkout with that team's data in place of the repository's own, the jobs pipeline's checks pass (what
`make repo-checks` runs: validate, build every overlay, hydrate --check).

That the tool's fast tier passes there too (its tests read their own fixtures, tests/fixtures/sample-repo, never the
repository's data, so a team needs no fork of the tests) is shown where a team would see it: test.yml's fast job,
run under act on such a copy (tests/act/test_pipelines.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CRD_DIR, DATA_PARTS, OTHER_TEAM, OTHER_TEAM_JOBS, REPO, kubectl, need, sample_repo, uses

TEAM_CLUSTERS = ("prod-64c", "staging-16c")


@uses("git")
def checkout_files() -> list[str]:
    """The checkout's files as a clone would have them, plus new ones not yet committed (not the ignored: .venv)."""
    proc = subprocess.run([need("git", shutil.which("git")), "-C", str(REPO), "ls-files", "-z", "--cached", "--others",
                           "--exclude-standard"], capture_output=True, check=True, timeout=60)
    return sorted({n for n in proc.stdout.decode().split("\0") if n and (REPO / n).is_file()})


@pytest.fixture(scope="module")
def swapped(tmp_path_factory) -> Path:
    """A copy of this checkout with the other team's data in place of the repository's own (no rendered/ yet)."""
    copy = tmp_path_factory.mktemp("other-team") / "repo"
    for name in checkout_files():
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, copy / name, follow_symlinks=False)
    sample_repo(copy, data=OTHER_TEAM)  # removes every data part (rendered/ too), then copies the team's
    jobs = {p.stem for p in (copy / "jobs").glob("*.yaml")} - {"kustomization"}
    assert jobs == OTHER_TEAM_JOBS, "the copy's jobs/ must be the other team's only"
    assert not (copy / "rendered").exists() and all((copy / part).exists() for part in DATA_PARTS if part != "rendered")
    return copy


def _env(copy: Path) -> dict[str, str]:
    """The copy's own generator, and no trace of the pytest session running this test (its worker, its test, its
    temporary folder: a session's own goes under the machine's, and one nested in ours makes socket paths too long)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    # The folders beside the checkout (../shared) the tests read, found from the checkout, not from the copy.
    shared = {"TFJOBGEN_CRD_DIR": str(CRD_DIR),
              "TFJOBGEN_WILD_DIR": env.get("TFJOBGEN_WILD_DIR") or str(REPO.parent / "shared" / "tfjobs-wild")}
    return {**env, **shared, "PYTHONPATH": str(copy / "generator"),
            "TMPDIR": os.environ["TFJOBGEN_TESTS_MACHINE_TEMP"],  # set by conftest for every session
            "KUSTOMIZE_PLUGIN_HOME": str(copy / "plugins"),
            "PATH": str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")}


@uses("kubectl", "slow")
def run_in(copy: Path, *command: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(command), cwd=copy, env=_env(copy), capture_output=True, text=True, timeout=300)


def test_the_jobs_pipelines_checks_pass_on_another_teams_repository(swapped):
    """validate (each job against the profile of every cluster it runs on), every overlay built, hydrate, then
    hydrate --check: ctr-daily, too big for staging-16c, goes to prod-64c only and breaks nothing on staging."""
    tfjobgen = [sys.executable, "-m", "tfjobgen"]
    validated = run_in(swapped, *tfjobgen, "validate", "jobs/")
    assert validated.returncode == 0 and " 0 error(s)" in validated.stderr, validated.stderr
    for cluster in TEAM_CLUSTERS:
        built = run_in(swapped, kubectl(), "kustomize", "--enable-alpha-plugins", f"overlays/{cluster}")
        assert built.returncode == 0, (cluster, built.stderr)
        assert "harbor.corp.example/ml/" in built.stdout and "namespace: ranking" in built.stdout, cluster

    hydrated = run_in(swapped, *tfjobgen, "hydrate")
    assert hydrated.returncode == 0, hydrated.stderr
    written = sorted(p.relative_to(swapped / "rendered").as_posix() for p in (swapped / "rendered").rglob("*.yaml"))
    assert written == sorted(f"{cluster}/ranking/{job}.yaml" for cluster in TEAM_CLUSTERS for job in OTHER_TEAM_JOBS
                             if job != "ctr-daily" or cluster == "prod-64c")
    prod = (swapped / "rendered" / "prod-64c" / "ranking" / "ctr-daily.yaml").read_text()
    assert "kind: PodMonitor" in prod and "kubernetes.io/metadata.name: observability" in prod, \
        "prod-64c's profile turns monitoring on, scraped from the team's own namespace"
    checked = run_in(swapped, *tfjobgen, "hydrate", "--check")
    assert checked.returncode == 0, checked.stderr
