"""The pull-request workflow and the pre-commit hooks, checked by running the tools.

The workflows go through check-jsonschema's GitHub workflow schema and every `run:` step through
shellcheck (as bash, the shell GitHub's ubuntu runners use). The pre-commit hooks run through
pre-commit itself, in a throwaway git repository, on a good and on a bad job file.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import REPO, need, uses
from gitops_support import PYTHON_BIN, commit_all, copy_repo

from tfjobgen.gitops import tree

WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.y*ml"))
PRE_COMMIT = REPO / ".pre-commit-config.yaml"


def tool(name: str) -> str:
    return need(name, shutil.which(name, path=PYTHON_BIN) or shutil.which(name),
                "it is in the test extra: pip install -e '.[test]'")


def test_workflows_match_the_github_workflow_schema():
    assert WORKFLOWS, "no workflow in .github/workflows"
    proc = subprocess.run([tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows",
                           *map(str, WORKFLOWS)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_every_shell_step_of_the_workflows_passes_shellcheck(workflow, tmp_path):
    steps = [(job, step) for job, spec in yaml.safe_load(workflow.read_text())["jobs"].items()
             for step in spec["steps"] if "run" in step]
    assert steps, f"{workflow.name} has no shell step"
    for number, (job, step) in enumerate(steps):
        # ${{ ... }} is filled in by GitHub before bash sees the script: stand in a plain word for it.
        script = re.sub(r"\$\{\{[^}]*\}\}", "GITHUB_EXPRESSION", step["run"])
        path = tmp_path / f"{job}-{number}.sh"
        path.write_text("#!/bin/bash\nset -eo pipefail\n" + script)  # GitHub runs `bash -e -o pipefail {0}`
        proc = subprocess.run([tool("shellcheck"), "--severity=warning", str(path)], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, f"{workflow.name}, job {job}, step {step.get('name', number)}:\n{proc.stdout}"


def test_every_pin_of_a_controller_release_is_the_one_the_local_cluster_runs():
    """One source of versions: the CRDs the workflows fetch, and the Argo CD the plugin sidecar takes its
    kustomize from, are the releases cluster-tools/versions.yaml builds and the tests validate against
    (conftest.crd_dir)."""
    versions = yaml.safe_load((REPO / "cluster-tools" / "versions.yaml").read_text())
    families = {"argocd": "argocd", "argo-cd": "argocd", "ARGOCD_REF": "argocd", "training-operator":
                "training-operator", "TRAINING_OPERATOR_REF": "training-operator", "jobset": "jobset",
                "JOBSET_REF": "jobset"}
    pin = re.compile(r"\b(argo-cd|argocd|training-operator|jobset|ARGOCD_REF|TRAINING_OPERATOR_REF|JOBSET_REF)"
                     r"(?:/|:|: )(v\d+\.\d+\.\d+)\b")
    files = sorted((REPO / ".github" / "workflows").glob("*.yml")) + [REPO / "argocd" / "plugin" / "Dockerfile"]
    found = [(path.relative_to(REPO), name, version) for path in files
             for name, version in pin.findall(path.read_text())]
    assert {families[name] for _, name, _ in found} == {"argocd", "training-operator", "jobset"}, found
    drift = [f"{path}: {name} {version}, versions.yaml {versions[families[name]]['version']}"
             for path, name, version in found if version != versions[families[name]]["version"]]
    assert not drift, "pins that differ from cluster-tools/versions.yaml:\n" + "\n".join(drift)


def test_the_gitops_workflow_runs_on_every_change_a_build_reads():
    """A pull request touching anything `tfjobgen diff` builds from must get the diff comment."""
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "gitops.yml").read_text())
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as True
    for event in ("pull_request", "push"):
        for name in tree.BUILD_INPUTS:
            assert any(re.fullmatch(p.replace("**", ".*").replace("*", "[^/]*"), name + ("/x" if "." not in name
                                                                                        else ""))
                       for p in triggers[event]["paths"]), f"{event} does not run for changes to {name}"
    checkout = next(s for s in workflow["jobs"]["gitops"]["steps"] if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == 0, "tfjobgen diff reads the base branch from git"


@uses("git")
def _pre_commit(repo: Path, *files: str, path: str) -> subprocess.CompletedProcess:
    """`pre-commit run --files ...` as a developer runs it, with its cache inside the test's folder."""
    env = {"PATH": path, "HOME": str(repo.parent), "PRE_COMMIT_HOME": str(repo.parent / "pre-commit-cache"),
           "PYTHONPATH": str(REPO / "generator"), "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "LANG": "C.UTF-8"}
    return subprocess.run([tool("pre-commit"), "run", "--color", "never", "--files", *files], cwd=repo,
                          capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture
def repo(tmp_path):
    """A small copy of the repository with its hooks, committed, and the repository's .venv beside it."""
    repo = copy_repo(tmp_path / "repo")
    shutil.copy(PRE_COMMIT, repo)
    shutil.copy(REPO / "pyproject.toml", repo)
    (repo / ".venv").symlink_to(Path(PYTHON_BIN).parent)  # what `make venv` leaves; the hooks prefer it
    commit_all(repo, "base")
    return repo


def test_pre_commit_passes_a_good_job_file_with_nothing_but_the_venv(repo):
    """No tfjobgen or check-jsonschema on PATH: the hooks find them in the repository's .venv."""
    proc = _pre_commit(repo, "jobs/wide-deep.yaml", "jobs/kustomization.yaml", path="/usr/bin:/bin")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ran = {line.split("...")[0].strip() for line in proc.stdout.splitlines() if line.endswith("Passed")}
    assert ran == {"job files match schemas/trainingjob.schema.json",
                   "tfjobgen validate jobs/ (schema, cluster fit, unique names, listed in jobs/kustomization.yaml)"}


def test_pre_commit_stops_a_bad_job_file_at_its_line(repo):
    job = repo / "jobs" / "wide-deep.yaml"
    job.write_text(job.read_text().replace("qos: cpuset", "qos: cpu-set"))
    proc = _pre_commit(repo, "jobs/wide-deep.yaml", path=f"{PYTHON_BIN}:/usr/bin:/bin")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.count("Failed") == 2, "both the schema hook and tfjobgen validate refuse it"
    assert "jobs/wide-deep.yaml:13: spec.qos: \"cpu-set\" is not allowed; did you mean 'cpuset'?" in proc.stdout


def test_pre_commit_checks_a_changed_workflow(repo):
    (repo / ".github" / "workflows").mkdir(parents=True)
    bad = repo / ".github" / "workflows" / "ci.yml"
    bad.write_text("on: push\njobs:\n  test:\n    runs-on: ubuntu-24.04\n    step:\n    - run: make test\n")
    proc = _pre_commit(repo, ".github/workflows/ci.yml", path=f"{PYTHON_BIN}:/usr/bin:/bin")
    assert proc.returncode == 1 and "GitHub workflows match their schema" in proc.stdout, proc.stdout
