"""The pull-request workflow and the pre-commit hooks, checked by running the tools.

The workflows go through check-jsonschema's GitHub workflow schema and every `run:` step through
shellcheck (as bash, the shell GitHub's ubuntu runners use). The pre-commit hooks run through
pre-commit itself, in a throwaway git repository, on a good and on a bad job file.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import CRD_DIR, REPO, need, uses
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


def _fetch_crds():
    spec = importlib.util.spec_from_file_location("fetch_crds", REPO / ".github" / "scripts" / "fetch_crds.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_crd_the_workflows_fetch_is_of_the_release_versions_yaml_names():
    """One source of versions: the CRDs both workflows fetch (.github/scripts/fetch_crds.py, the only place a
    workflow names a CRD) are those of the releases cluster-tools/versions.yaml builds, and the Argo CD the
    plugin sidecar takes its kustomize from is its release too."""
    versions = yaml.safe_load((REPO / "cluster-tools" / "versions.yaml").read_text())
    fetch_crds = _fetch_crds()
    urls = dict(fetch_crds.urls())
    for family, name, path in fetch_crds.CRDS:
        version = fetch_crds.NOT_IN_VERSIONS.get(family) or versions[family]["version"]
        assert f"/{version}/" in urls[name], (name, urls[name], version)
        assert family in versions or family in fetch_crds.NOT_IN_VERSIONS, family
    assert set(fetch_crds.NOT_IN_VERSIONS).isdisjoint(versions), "a family of versions.yaml is pinned in the script"
    tests_read = {p.name for p in CRD_DIR.glob("*.yaml")} if CRD_DIR.is_dir() else set(urls)
    assert tests_read <= set(urls), f"CRDs the tests read that the workflows do not fetch: {tests_read - set(urls)}"
    for workflow in WORKFLOWS:
        assert "raw.githubusercontent.com" not in workflow.read_text(), f"{workflow.name} fetches a file itself"
    dockerfile = (REPO / "argocd" / "plugin" / "Dockerfile").read_text()
    assert set(re.findall(r"argoproj/argocd:(v[\d.]+)", dockerfile)) == {versions["argocd"]["version"]}


def test_the_jobs_pipeline_never_runs_the_test_suite():
    """gitops.yml runs on every job pull request: tfjobgen and a few checks, never pytest or make test."""
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "gitops.yml").read_text())
    scripts = [step["run"] for job in workflow["jobs"].values() for step in job["steps"] if "run" in step]
    assert scripts and not [s for s in scripts if re.search(r"pytest|make +test|\.ci/run|make +venv", s)], scripts
    pipeline = " ".join(scripts)
    for command in ("tfjobgen validate jobs/", "tfjobgen hydrate --check", "tfjobgen diff", "check_output.py",
                    "pr_comment.py"):
        assert command in pipeline, f"gitops.yml does not run {command}"


def test_the_placement_programs_come_from_a_cache_keyed_on_versions_yaml():
    from tfjobgen.artifacts import programs

    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "gitops.yml").read_text())
    caches = [step["with"] for job in workflow["jobs"].values() for step in job["steps"]
              if step.get("uses", "").startswith("actions/cache/")]
    assert caches and all("hashFiles('cluster-tools/versions.yaml')" in c["key"] for c in caches), caches
    default = Path("~") / programs.cache_root().relative_to(Path.home()) if "TFJOBGEN_TOOLS_CACHE" not in os.environ \
        else Path("~/.cache/tfjobgen/cluster-tools")
    assert {c["path"] for c in caches} == {str(default)}, "the folder tfjobgen looks for its programs in"
    saved = [job for job in workflow["jobs"].values()
             if any(s.get("uses", "").startswith("actions/cache/save") for s in job["steps"])]
    assert [job.get("if") for job in saved] == ["github.event_name == 'push'"], "only a run on main builds the cache"


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_every_job_has_a_timeout_and_setup_go_the_newest_go_directive(workflow):
    newest = max((REPO / "cluster-tools").glob("*/go.mod"), key=lambda p: tuple(
        int(n) for n in re.search(r"^go (\S+)", p.read_text(), re.MULTILINE).group(1).split(".")))
    for name, job in yaml.safe_load(workflow.read_text())["jobs"].items():
        assert 0 < job.get("timeout-minutes", 0) <= 90, f"{workflow.name}: job {name} has no timeout within CI's 90"
        for step in job["steps"]:
            if step.get("uses", "").startswith("actions/setup-go@"):
                assert step["with"]["go-version-file"] == str(newest.relative_to(REPO)), (name, newest)


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
                   "tfjobgen validate jobs/ (schema, each cluster it runs on, unique names, listed in jobs/kustomization.yaml)"}


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
