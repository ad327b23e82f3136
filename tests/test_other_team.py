"""The tool stands apart from the team's data: another team's repository passes the tool's fast tier and the jobs pipeline.

A platform team adopts tfjobgen by replacing the repository's jobs/, bases/, overlays/ and argocd/base/ with its own
and hydrating rendered/ from them. Here that team is tests/fixtures/other-team: 64-core servers (2 reserved), its own
registry and monitoring namespace, clusters prod-64c and staging-16c, four jobs in namespace ranking. In a copy of this
checkout with that team's data in place of the repository's own:

- the tool's fast tier passes: the tool's tests read their own fixtures (tests/fixtures/sample-repo), never the
  repository's data, so a team needs no fork of the tests;
- the jobs pipeline's checks pass (what `make repo-checks` runs: validate, build every overlay, hydrate --check).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CRD_DIR, DATA_PARTS, REPO, TESTS, kubectl, need, sample_repo, uses

OTHER_TEAM = TESTS / "fixtures" / "other-team"
TEAM_JOBS = {"ctr-daily", "dnn-rerank", "embedding-refresh", "two-tower"}
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
    assert jobs == TEAM_JOBS, "the copy's jobs/ must be the other team's only"
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


@uses("slow")  # a whole pytest session of its own: about 25 s in one process, 2 cores
def run_fast_tier(copy: Path) -> subprocess.CompletedProcess:
    """The whole fast tier, not the tests that look like they read the data: a test reaching jobs/ through a
    helper would be missed. In two processes (the hosted runner's cores): its hundreds of short tests split."""
    return subprocess.run([sys.executable, "-m", "pytest", "-m", "fast", "-q", "-p", "no:cacheprovider", "-n", "2"],
                          cwd=copy, env=_env(copy), capture_output=True, text=True, timeout=900)


@uses("kubectl", "slow")
def run_in(copy: Path, *command: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(command), cwd=copy, env=_env(copy), capture_output=True, text=True, timeout=300)


def test_the_tools_fast_tier_passes_on_another_teams_repository(swapped):
    proc = run_fast_tier(swapped)
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    assert proc.returncode == 0, f"the fast tier failed on the other team's repository ({summary}):\n" \
                                 f"{proc.stdout[-6000:]}\n{proc.stderr[-2000:]}"
    passed = re.search(r"(\d+) passed", summary)
    assert passed and int(passed.group(1)) > 100, f"the fast tier ran next to nothing: {summary}"


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
    assert written == sorted(f"{cluster}/ranking/{job}.yaml" for cluster in TEAM_CLUSTERS for job in TEAM_JOBS
                             if job != "ctr-daily" or cluster == "prod-64c")
    prod = (swapped / "rendered" / "prod-64c" / "ranking" / "ctr-daily.yaml").read_text()
    assert "kind: PodMonitor" in prod and "kubernetes.io/metadata.name: observability" in prod, \
        "prod-64c's profile turns monitoring on, scraped from the team's own namespace"
    checked = run_in(swapped, *tfjobgen, "hydrate", "--check")
    assert checked.returncode == 0, checked.stderr
