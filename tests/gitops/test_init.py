"""`tfjobgen init DIR`: a team's new jobs repository passes its own checks as written, or nothing is written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, kubectl

from tfjobgen import cli

TEAM = ["--cluster", "prod-64c:64:512Gi:2", "--cluster", "staging-16c:16:64Gi", "--namespace", "ranking",
        "--registry", "harbor.corp.example/ml", "--monitoring-namespace", "observability", "--kubernetes", "1.34"]


def run(*args: str, capsys, cwd: Path | None = None) -> tuple[int, str]:
    old = os.getcwd()
    try:
        if cwd:
            os.chdir(cwd)
        code = cli.main(list(args))
    finally:
        os.chdir(old)
    out = capsys.readouterr()
    return code, out.err + out.out


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def team(tmp_path, capsys) -> Path:
    code, output = run("init", str(tmp_path / "jobs-repo"), *TEAM, capsys=capsys)
    assert code == 0, output
    return tmp_path / "jobs-repo"


def test_the_new_repository_passes_its_own_checks(team, capsys):
    code, output = run("validate", "jobs/", capsys=capsys, cwd=team)
    assert code == 0 and "0 error(s), 0 warning(s)" in output, output
    code, output = run("hydrate", "--check", capsys=capsys, cwd=team)
    assert code == 0, output
    rendered = sorted(p for p in files_of(team) if p.startswith("rendered/"))
    assert rendered == ["rendered/README.md", "rendered/prod-64c/ranking/example.yaml",
                        "rendered/staging-16c/ranking/example.yaml"]
    example = (team / "rendered" / "prod-64c" / "ranking" / "example.yaml").read_text()
    assert "image: harbor.corp.example/ml/tfjobgen-runtime:" in example  # the registry, written once
    assert "kind: PodMonitor" in example and "kubernetes.io/metadata.name: observability" in example
    assert not (team / "generator").exists()  # tfjobgen comes pinned, not copied
    assert "tfjobgen==" in (team / "requirements.txt").read_text()


def test_each_cluster_gets_its_servers_and_the_team(team):
    profile = (team / "overlays" / "staging-16c" / "cluster-profile.yaml").read_text()
    assert "node: {cpu: 16, reservedCpus: 1, memory: 64Gi}" in profile
    assert "namespaces: [ranking]" in profile and 'kubernetesVersion: "1.34"' in profile
    project = (team / "argocd" / "base" / "project.yaml").read_text()
    assert "- {name: prod-64c, namespace: ranking}\n  - {name: staging-16c, namespace: ranking}" in project


def test_the_kustomize_plugin_expands_the_team_overlays(team):
    """What Argo CD's plugin and `kubectl kustomize` do: the exec plugin runs the tfjobgen on PATH."""
    env = {**os.environ, "KUSTOMIZE_PLUGIN_HOME": str(team / "plugins"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": str(REPO / "generator")}
    assert os.access(team / "plugins/tfjobgen.dev/v1alpha1/clusterprofile/ClusterProfile", os.X_OK)
    proc = subprocess.run([kubectl(), "kustomize", "--enable-alpha-plugins", "overlays/prod-64c"], cwd=team,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "kind: TrainingJob" not in proc.stdout and "name: example-ps" in proc.stdout


def test_init_is_deterministic(tmp_path, capsys):
    for name in ("a", "b"):
        assert run("init", str(tmp_path / name), *TEAM, capsys=capsys)[0] == 0
    assert files_of(tmp_path / "a") == files_of(tmp_path / "b")


def test_init_refuses_a_folder_that_is_not_empty(tmp_path, capsys):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    code, output = run("init", str(tmp_path / "taken"), *TEAM, capsys=capsys)
    assert code == 1
    assert output.strip().splitlines() == [f"tfjobgen init: {tmp_path / 'taken'} is not empty: init writes a new "
                                           "repository into an empty or new folder (choose another, or remove what "
                                           "is there)"]
    assert files_of(tmp_path / "taken") == {"notes.txt": b"mine"}


@pytest.mark.parametrize("flags, says", [
    (["--cluster", "prod:64"], "--cluster 'prod:64': expected NAME:CPU:MEMORY[:RESERVED]"),
    (["--cluster", "Prod:64:512Gi"], "the name 'Prod' must be a DNS-1123 label"),
    (["--cluster", "prod:64:lots"], "memory 'lots' must be a Kubernetes quantity"),
    (["--cluster", "prod:64:512Gi:64"], "RESERVED '64' must be a whole number of cores from 1 to 63"),
    (["--cluster", "a:8:8Gi", "--cluster", "a:8:8Gi"], "two clusters share a name"),
    (["--cluster", "a:8:8Gi", "--namespace", "Ranking"], "--namespace 'Ranking' must be a DNS-1123 label"),
    (["--cluster", "a:8:8Gi", "--monitoring-namespace", "ranking"], "is the team's own namespace"),
    (["--cluster", "a:8:8Gi", "--kubernetes", "1.29"], "--kubernetes '1.29': a minor release from 1.30 on"),
    (["--namespace", "ranking"], "--cluster is missing (and there is no terminal to ask in)"),
])
def test_a_wrong_answer_is_one_line_and_writes_nothing(tmp_path, capsys, monkeypatch, flags, says):
    monkeypatch.setattr(sys, "stdin", open(os.devnull))
    if "--namespace" not in flags:
        flags = [*flags, "--namespace", "ranking"]
    code, output = run("init", str(tmp_path / "new"), *flags, capsys=capsys)
    assert code == 1
    [line] = output.strip().splitlines()
    assert line.startswith("tfjobgen init: ") and says in line, line
    assert list(tmp_path.iterdir()) == []


def test_a_folder_that_cannot_be_written_leaves_nothing_behind(tmp_path, capsys):
    if os.geteuid() == 0:
        # root writes anywhere: a file where the parent folder must be is refused for everyone
        (tmp_path / "file").write_text("")
        target = tmp_path / "file" / "repo"
    else:
        (tmp_path / "locked").mkdir(mode=0o500)
        target = tmp_path / "locked" / "repo"
    code, output = run("init", str(target), *TEAM, capsys=capsys)
    assert code == 1 and output.startswith("tfjobgen init: "), output
    assert sorted(p.name for p in tmp_path.rglob("*")) in (["file"], ["locked"])


def test_the_team_pipeline_runs_what_this_repositorys_jobs_pipeline_runs(team):
    """The same tfjobgen commands and scripts, in the same order, but the placement preview's programs cache
    (built from tfjobgen's own repository) and the install (a pinned package, not this checkout)."""
    import re

    import yaml

    def commands(workflow: Path, job: str) -> list[str]:
        steps = yaml.safe_load(workflow.read_text())["jobs"][job]["steps"]
        found = []
        for step in steps:
            found += re.findall(r"tfjobgen \w+|\.github/scripts/\w+\.py", step.get("run", ""))
        return found

    ours = commands(REPO / ".github" / "workflows" / "gitops.yml", "gitops")
    theirs = commands(team / ".github" / "workflows" / "jobs.yml", "jobs")
    assert theirs == ours and "tfjobgen diff" in ours and ".github/scripts/check_output.py" in ours
    for script in re.findall(r"\.github/scripts/\w+\.py", " ".join(theirs)):
        assert (team / script).read_bytes() == (REPO / script).read_bytes()
