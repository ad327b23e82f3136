"""A team's first pull request under nektos/act, in a repository `tfjobgen init` wrote (act_support.py says how
act runs here). A job for one cluster only is test_pipelines.py's first pull request.

4. The repository `tfjobgen init` writes: its first pull request passes its own pipeline, with tfjobgen
   installed from the wheel of this checkout (requirements.txt pins it, PIP_FIND_LINKS serves it).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from act_support import list_job, run_pr
from conftest import REPO, uses

from tfjobgen.harness.act import ActRepo


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
        list_job(repo.path, "ctr.yaml")
        repo.hydrate()
        repo.commit("ctr, the team's first job")
        # keep_python=False: the wheel's version stays 0.1.0 while its content changes, so a kept environment
        # would find it installed and never install this checkout's
        run = run_pr(repo, "main", "first-job", workflow="jobs.yml", job_env={"PIP_FIND_LINKS": str(wheels)},
                     keep_python=False)
        assert run.exit == 0, run.log[-8000:]
        [comment] = run.comments
        assert "ranking/ctr" in comment["body"], comment["body"][:3000]
        assert "Successfully installed" in run.log and "tfjobgen-" in run.log  # the pinned package, not a copy
        print(f"init's first pull request under act: {run.seconds:.1f} s")  # docs/benchmarks.md quotes it
    finally:
        repo.close()
