"""The pull-request workflow and the pre-commit hooks.

The workflow files are validated with check-jsonschema's built-in GitHub schema;
the pre-commit hooks' commands are run, as pre-commit would run them, on a good
and a bad job file (the hooks' upstream repository cannot be cloned here, so
the test runs the same executables with the same arguments and file filters).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess

import pytest
import yaml

from conftest import REPO, need
from gitops_support import PYTHON_BIN, copy_repo
from tfjobgen.gitops import diff

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


def test_the_pull_request_workflow_does_what_the_issue_lists():
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "gitops.yml").read_text())
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as True
    for folder in ("jobs/**", "overlays/**", "bases/**", "schemas/**", "generator/**"):
        assert folder in triggers["pull_request"]["paths"]
    steps = workflow["jobs"]["gitops"]["steps"]
    script = "\n".join(str(s.get("run", "")) + str(s.get("with", {}).get("script", "")) for s in steps)
    for command in ("make venv", "check-jsonschema --schemafile schemas/trainingjob.schema.json",
                    "tfjobgen validate jobs/", "make build", "kubernetes-validate --strict",
                    "tfjobgen hydrate --check", 'tfjobgen diff "origin/${{ github.base_ref }}" --crds ../shared/crds',
                    "make test", "updateComment", "createComment"):
        assert command in script, f"the workflow does not run {command!r}"
    assert diff.MARKER in script, "the comment is found again by the marker tfjobgen diff writes"
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == 0, "tfjobgen diff reads the base branch from git"
    assert workflow["jobs"]["gitops"]["permissions"]["pull-requests"] == "write"
    for step in steps:
        if "uses" in step:
            assert re.search(r"@v\d+$", step["uses"]), f"pin {step['uses']} to a release"


def test_pre_commit_config_is_valid():
    proc = subprocess.run([tool("pre-commit"), "validate-config", str(PRE_COMMIT)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def hook_commands(files: list[str]) -> dict[str, list[str]]:
    """Each hook's command line for these staged files, as pre-commit builds it (entry + args + files)."""
    config = yaml.safe_load(PRE_COMMIT.read_text())
    upstream_entries = {"check-jsonschema": [tool("check-jsonschema")]}  # their .pre-commit-hooks.yaml
    commands = {}
    for repository in config["repos"]:
        for hook in repository["hooks"]:
            if hook["id"] not in ("check-jsonschema", "tfjobgen-validate"):
                continue
            matched = [f for f in files if re.search(hook.get("files", ""), f)
                       and not (hook.get("exclude") and re.search(hook["exclude"], f))]
            if not matched:
                continue
            entry = upstream_entries.get(hook["id"]) or shlex.split(hook["entry"])
            commands[hook["id"]] = entry + hook.get("args", []) + (matched if hook.get("pass_filenames", True)
                                                                   else [])
    return commands


@pytest.mark.parametrize("good", [True, False])
def test_pre_commit_hooks_on_a_good_and_a_bad_job_file(tmp_path, good):
    repo = copy_repo(tmp_path / "repo")
    shutil.copy(REPO / "pyproject.toml", repo)
    job = repo / "jobs" / "wide-deep.yaml"
    if not good:
        job.write_text(job.read_text().replace("qos: cpuset", "qos: cpu-set"))
    staged = ["jobs/wide-deep.yaml", "jobs/kustomization.yaml"]
    commands = hook_commands(staged)
    assert set(commands) == {"check-jsonschema", "tfjobgen-validate"}
    assert "jobs/kustomization.yaml" not in commands["check-jsonschema"], "kustomization.yaml is not a job"
    env = {"PATH": PYTHON_BIN + ":/usr/bin:/bin", "PYTHONPATH": str(REPO / "generator")}
    for hook, command in commands.items():
        proc = subprocess.run(command, cwd=repo, capture_output=True, text=True, env=env, timeout=120)
        output = proc.stdout + proc.stderr
        if good:
            assert proc.returncode == 0, f"{hook}: {output}"
        else:
            assert proc.returncode != 0, f"{hook} accepted a bad job file"
            assert "cpu-set" in output, f"{hook} should name the bad value: {output}"
            if hook == "tfjobgen-validate":
                assert "jobs/wide-deep.yaml:13: spec.qos:" in output


def test_tfjobgen_validate_hook_prefers_the_repository_venv():
    """The local hook's entry runs .venv/bin/tfjobgen when `make venv` made one, else tfjobgen on PATH."""
    hook = next(h for r in yaml.safe_load(PRE_COMMIT.read_text())["repos"] for h in r["hooks"]
                if h["id"] == "tfjobgen-validate")
    assert hook["pass_filenames"] is False, "validate sees all of jobs/ (duplicates, unlisted files)"
    assert hook["args"] == ["validate", "jobs/"]
    assert ".venv/bin/tfjobgen" in hook["entry"]
