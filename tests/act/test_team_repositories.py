"""A team's pull requests under nektos/act: a job for one cluster only, and the first one of a repository
`tfjobgen init` wrote (act_support.py says how act runs here).

3. A pull request that adds a job for one cluster only: the jobs pipeline passes, and the other cluster's
   build, rendered/ and comment section are untouched.
4. The repository `tfjobgen init` writes: its first pull request passes its own pipeline, with tfjobgen
   installed from the wheel of this checkout (requirements.txt pins it, PIP_FIND_LINKS serves it).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from act_support import act_repo, run_pr  # noqa: F401 - act_repo is a fixture
from conftest import REPO, uses

from tfjobgen.harness.act import ActRepo

ONE_CLUSTER_JOB = """\
apiVersion: tfjobgen.dev/v1alpha1
kind: TrainingJob
metadata:
  name: prod-only
  namespace: ml-training
spec:
  image: registry.example.com/ml/tfjobgen-runtime:0.1.0
  clusters: [prod-96c]
  roles:
    ps: {replicas: 2, cpu: 4, memory: 8Gi}
    worker: {replicas: 4, cpu: 4, memory: 8Gi}
    chief: {cpu: 1, memory: 2Gi}
"""


def _list_job(repo: Path, name: str) -> None:
    listing = repo / "jobs" / "kustomization.yaml"
    listing.write_text(listing.read_text().rstrip("\n") + f"\n- {name}\n")


def test_a_pr_adding_a_job_for_one_cluster_leaves_the_other_untouched(act_repo):
    act_repo.branch("prod-only")
    (act_repo.path / "jobs" / "prod-only.yaml").write_text(ONE_CLUSTER_JOB)
    _list_job(act_repo.path, "prod-only.yaml")
    act_repo.hydrate()
    act_repo.commit("a job for prod-96c only")
    assert act_repo.git("diff", "--stat", "main", "--", "rendered/seed-80c") == ""
    assert "rendered/prod-96c/ml-training/prod-only.yaml" in act_repo.git("diff", "--name-only", "main")

    run = run_pr(act_repo, "main", "prod-only", number=3)
    assert run.exit == 0, run.log[-6000:]
    [comment] = run.comments
    sections = dict(part.split("`", 1) for part in comment["body"].split("### Cluster `")[1:])
    assert set(sections) == {"prod-96c", "seed-80c"}, comment["body"][:3000]
    assert "ml-training/prod-only" in sections["prod-96c"]
    assert "prod-only" not in sections["seed-80c"], sections["seed-80c"][:3000]


@uses("slow")
def _wheel(folder: Path) -> Path:
    """This checkout's wheel (make dist's recipe, offline, without its twine check)."""
    env = {**os.environ, "SOURCE_DATE_EPOCH": "315532800"}
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", str(folder), str(REPO)],
                   check=True, capture_output=True, env=env, timeout=600)
    return folder


@uses("git", "slow")
def test_the_first_pr_of_a_repository_init_wrote_passes_its_pipeline(tmp_path):
    team = tmp_path / "team"
    subprocess.run([sys.executable, "-m", "tfjobgen", "init", str(team), "--cluster", "prod-64c:64:512Gi:2",
                    "--cluster", "staging-16c:16:64Gi", "--namespace", "ranking", "--registry",
                    "harbor.corp.example/ml", "--monitoring-namespace", "observability"], check=True,
                   capture_output=True, timeout=120)
    subprocess.run(["git", "-C", str(team), "init", "--quiet"], check=True)
    wheels = _wheel(tmp_path / "wheels")
    repo = ActRepo.create(tmp_path / "act", source=team)
    try:
        repo.branch("first-job")
        example = (repo.path / "jobs" / "example.yaml").read_text()
        (repo.path / "jobs" / "ctr.yaml").write_text(example.replace("name: example", "name: ctr"))
        _list_job(repo.path, "ctr.yaml")
        repo.hydrate()
        repo.commit("ctr, the team's first job")
        run = run_pr(repo, "main", "first-job", workflow="jobs.yml", job_env={"PIP_FIND_LINKS": str(wheels)})
        assert run.exit == 0, run.log[-8000:]
        [comment] = run.comments
        assert "ranking/ctr" in comment["body"], comment["body"][:3000]
        assert "Successfully installed" in run.log and "tfjobgen-" in run.log  # the pinned package, not a copy
        print(f"init's first pull request under act: {run.seconds:.1f} s")  # docs/benchmarks.md quotes it
    finally:
        repo.close()
