"""Jobs go to the clusters they are for (inputs/routing.py, gitops/clusters.py), on a team's repository of its own.

The repository here is written from scratch: a team with two clusters, `big` (64-core servers, namespaces
ranking and ml) and `staging` (16 cores, namespace ml only), and an AppProject that sends the same teams
there. It has no generator/ of its own, so `hydrate`, `build` and `validate` expand in-process (no
kustomize) and these tests stay fast; the tests that need git or kustomize say so.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from gitops_support import commit_all, git

from tfjobgen import cli

PROFILE = """\
apiVersion: tfjobgen.dev/v1alpha1
kind: ClusterProfile
metadata:
  name: {name}
spec:
  node: {{cpu: {cpu}, reservedCpus: 2, memory: 256Gi}}
  cpuManager: {{nodeSelector: {{kubernetes.io/os: linux}}}}
  namespaces: [{namespaces}]
"""
OVERLAY = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../../jobs
transformers:
- cluster-profile.yaml
"""
PROJECT = """\
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata:
  name: tfjobgen
  namespace: argocd
spec:
  sourceRepos: [https://git.example.com/team/jobs.git]
  destinations:
{destinations}
  clusterResourceWhitelist: []
"""
JOB = """\
apiVersion: tfjobgen.dev/v1alpha1
kind: TrainingJob
metadata:
  name: {name}
  namespace: {namespace}
spec:
  image: harbor.corp.example/ml/trainer:1.0
{extra}  roles:
    ps: {{replicas: 2, cpu: {ps_cpu}, memory: 16Gi}}
    worker: {{replicas: 4, cpu: 4, memory: 8Gi}}
    chief: {{cpu: 2, memory: 4Gi}}
"""
CLUSTERS = {"big": (64, "ranking, ml"), "staging": (16, "ml")}
DESTINATIONS = [("big", "ranking"), ("big", "ml"), ("staging", "ml")]


def write_job(repo: Path, name: str, namespace: str = "ranking", ps_cpu: int = 8, extra: str = "") -> Path:
    path = repo / "jobs" / f"{name}.yaml"
    path.write_text(JOB.format(name=name, namespace=namespace, ps_cpu=ps_cpu, extra=extra))
    files = sorted(p.name for p in (repo / "jobs").glob("*.yaml") if p.name != "kustomization.yaml")
    (repo / "jobs" / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
        + "".join(f"- {f}\n" for f in files))
    return path


def write_profile(repo: Path, name: str, namespaces: str, extra: str = "") -> None:
    folder = repo / "overlays" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kustomization.yaml").write_text(OVERLAY)
    text = PROFILE.format(name=name, cpu=CLUSTERS[name][0], namespaces=namespaces)
    if not namespaces:  # every namespace
        text = text.replace("  namespaces: []\n", "")
    (folder / "cluster-profile.yaml").write_text(text + extra)


def write_project(repo: Path, destinations=DESTINATIONS) -> None:
    (repo / "argocd" / "base").mkdir(parents=True, exist_ok=True)
    (repo / "argocd" / "base" / "project.yaml").write_text(PROJECT.format(destinations="".join(
        f"  - {{name: {cluster}, namespace: {namespace}}}\n" for cluster, namespace in destinations)))


@pytest.fixture
def repo(tmp_path, monkeypatch) -> Path:
    """The team's repository, with one ranking job and one ml job; the working directory is its root."""
    for name, (_, namespaces) in CLUSTERS.items():
        write_profile(tmp_path, name, namespaces)
    (tmp_path / "jobs").mkdir()
    write_job(tmp_path, "ctr", "ranking", ps_cpu=40)  # 40 CPUs: fits big, not staging's 14
    write_job(tmp_path, "small", "ml")
    write_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(*args: str, capsys) -> tuple[int, str]:
    """The CLI in this process: its exit code and what it printed on stderr and stdout."""
    code = cli.main(list(args))
    out = capsys.readouterr()
    return code, out.err + out.out


def rendered(repo: Path) -> list[str]:
    return sorted(p.relative_to(repo / "rendered").as_posix() for p in (repo / "rendered").rglob("*.yaml"))


def test_a_team_only_reaches_the_clusters_that_run_its_namespace(repo, capsys):
    code, output = run("validate", "jobs/", capsys=capsys)
    assert code == 0, output
    assert "(against the profile of each cluster it runs on: big, staging)" in output
    code, output = run("hydrate", capsys=capsys)
    assert code == 0, output
    assert rendered(repo) == ["big/ml/small.yaml", "big/ranking/ctr.yaml", "staging/ml/small.yaml"]


def test_a_job_too_big_for_a_cluster_it_runs_on_names_that_cluster(repo, capsys):
    write_job(repo, "small", "ml", ps_cpu=40)  # fits big (62 CPUs), not staging (14)
    code, output = run("validate", "jobs/", capsys=capsys)
    assert code == 1
    [line] = [line for line in output.splitlines() if "jobs/small.yaml" in line]
    assert line.startswith("jobs/small.yaml:9: spec.roles.ps: one ps (40 CPU, 16Gi) does not fit on a node")
    assert "in profile 'staging'" in line


def test_a_job_for_one_cluster_leaves_the_other_untouched(repo, capsys):
    assert run("hydrate", capsys=capsys)[0] == 0
    before = {p: (repo / "rendered" / p).read_bytes() for p in rendered(repo) if p.startswith("staging/")}
    write_job(repo, "only-big", "ml", extra="  clusters: [big]\n")
    code, output = run("hydrate", capsys=capsys)
    assert code == 0, output
    assert "big/ml/only-big.yaml" in rendered(repo)
    assert {p: (repo / "rendered" / p).read_bytes() for p in rendered(repo) if p.startswith("staging/")} == before


def test_a_cluster_no_overlay_has_is_refused_at_its_line(repo, capsys):
    path = write_job(repo, "typo", "ml", extra="  clusters: [big, stagin]\n")
    line = path.read_text().splitlines().index("  clusters: [big, stagin]") + 1
    code, output = run("validate", "jobs/", capsys=capsys)
    assert code == 1
    assert f"jobs/typo.yaml:{line}: spec.clusters[1]: no overlay runs a cluster named stagin" in output
    assert "the clusters are big, staging" in output


def test_a_job_no_cluster_runs_is_refused(repo, capsys):
    write_job(repo, "lost", "search")
    write_project(repo, DESTINATIONS)
    code, output = run("validate", "jobs/", capsys=capsys)
    assert code == 1
    assert "jobs/lost.yaml:5: metadata.namespace: job 'lost' runs on no cluster" in output


def test_a_job_naming_a_cluster_that_does_not_run_its_namespace_is_refused_by_every_command(repo, capsys):
    write_job(repo, "ranking-stage", "ranking", extra="  clusters: [staging]\n")
    for command in (["validate", "jobs/"], ["hydrate"], ["build", "overlays/staging"]):
        code, output = run(*command, capsys=capsys)
        assert code == 1, command
        assert "spec.clusters[0]: this job names cluster staging, but staging's ClusterProfile runs only " \
               "namespaces ml (spec.namespaces), not ranking" in output, command


def test_one_model_dir_on_two_clusters_is_refused_naming_both(repo, capsys):
    extra = "  training:\n    modelDir: gs://team/ckpt/small\n"
    write_job(repo, "small", "ml", extra=extra)
    code, output = run("hydrate", "--check", capsys=capsys)
    assert code == 1
    assert "spec.training.modelDir: job 'small' runs on big and staging with one modelDir (gs://team/ckpt/small)" \
        in output
    write_job(repo, "small", "ml", extra="  clusters: [staging]\n" + extra)  # one way out: one cluster
    write_project(repo, [("big", "ranking"), ("staging", "ml")])
    write_profile(repo, "big", "ranking")
    code, output = run("hydrate", capsys=capsys)
    assert code == 0, output
    assert rendered(repo) == ["big/ranking/ctr.yaml", "staging/ml/small.yaml"]


def test_the_last_job_of_a_team_on_a_cluster_gets_one_answer(repo, capsys):
    """hydrate, build (the plugin) and validate of all of jobs/ say the same thing, at the destination."""
    assert run("hydrate", capsys=capsys)[0] == 0
    (repo / "jobs" / "ctr.yaml").unlink()
    write_job(repo, "small", "ml")  # rewrites jobs/kustomization.yaml without ctr
    answers = []
    for command in (["hydrate"], ["build", "overlays/big", "--namespace", "ranking"], ["validate", "jobs/"]):
        code, output = run(*command, capsys=capsys)
        assert code == 1, command
        [line] = [line for line in output.splitlines() if "no job of namespace ranking" in line]
        answers.append(line)
    assert len(set(answers)) == 1, answers
    assert answers[0].startswith("argocd/base/project.yaml:9: spec.destinations[0]: no job of namespace ranking runs on "
                                 "cluster big")
    assert "remove that destination and ranking from overlays/big/cluster-profile.yaml's spec.namespaces" \
        in answers[0]
    assert "argocd app delete tfjobgen-big-ranking --cascade" in answers[0]


def test_a_cluster_left_without_jobs_is_refused_unless_its_profile_allows_it(repo, capsys):
    (repo / "jobs" / "small.yaml").unlink()
    write_job(repo, "ctr", "ranking", ps_cpu=40)
    write_project(repo, [("big", "ranking")])
    write_profile(repo, "big", "ranking")
    write_profile(repo, "staging", "ranking")  # runs the team, but not its one job (too big, named elsewhere)
    write_job(repo, "ctr", "ranking", ps_cpu=40, extra="  clusters: [big]\n")
    code, output = run("hydrate", capsys=capsys)
    assert code == 1
    assert "none of the 1 TrainingJob(s) of this build runs on cluster staging" in output
    assert "cluster staging runs namespace ranking, but AppProject tfjobgen (argocd/base/project.yaml) has no " \
        "destination {name: staging, namespace: ranking}" in output
    write_profile(repo, "staging", "ranking", extra="  allowNoJobs: true\n")
    write_project(repo, [("big", "ranking"), ("staging", "ranking")])
    code, output = run("hydrate", capsys=capsys)
    assert code == 1  # the destination (staging, ranking) would make an Application with nothing to sync
    assert "no job of namespace ranking runs on cluster staging, but the AppProject still sends" in output
    write_project(repo, [("big", "ranking")])
    write_profile(repo, "staging", "", extra="  allowNoJobs: true\n")  # not in Argo CD yet: runs nothing
    code, output = run("hydrate", capsys=capsys)
    assert code == 0, output
    assert rendered(repo) == ["big/ranking/ctr.yaml"]


def test_validate_without_overlays_says_it_used_the_embedded_profile(tmp_path, capsys):
    (tmp_path / "jobs").mkdir()
    write_job(tmp_path, "a", "ml")
    code, output = run("validate", str(tmp_path / "jobs"), capsys=capsys)
    assert code == 0, output
    assert "(against the embedded default profile)" in output


def test_diff_gives_the_same_answer_for_a_teams_last_job(repo, capsys):
    assert run("hydrate", capsys=capsys)[0] == 0
    commit_all(repo, "the team's jobs")
    (repo / "jobs" / "ctr.yaml").unlink()
    write_job(repo, "small", "ml")
    code, hydrate_output = run("hydrate", capsys=capsys)
    env = {**os.environ, "PYTHONPATH": str(REPO / "generator")}
    proc = subprocess.run([sys.executable, "-m", "tfjobgen", "diff", "main", "--no-place"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    [expected] = [line for line in hydrate_output.splitlines() if "no job of namespace ranking" in line]
    assert expected in proc.stderr.splitlines()
    assert git(repo, "status", "--porcelain") != ""  # the deletion is still there: diff changed nothing



def test_validate_says_what_the_appproject_would_refuse_to_sync_at_the_field_that_makes_it(repo, capsys):
    """`diff` asked the AppProject about every object of a build; `validate`, which expands each job for every
    cluster it runs on already, did not: a TensorBoard (a Deployment) where the project permits no Deployment."""
    kinds = "".join(f"  - {{group: '{group}', kind: {kind}}}\n" for group, kind in (
        ("", "ConfigMap"), ("", "Service"), ("batch", "Job"), ("networking.k8s.io", "NetworkPolicy")))
    project = repo / "argocd" / "base" / "project.yaml"
    project.write_text(project.read_text() + "  namespaceResourceWhitelist:\n" + kinds)
    path = write_job(repo, "board", "ranking", extra="  clusters: [big]\n  tensorboard: {enabled: true}\n"
                                                      "  training:\n    modelDir: gs://team/ckpt/board\n")
    line = path.read_text().splitlines().index("  tensorboard: {enabled: true}") + 1
    code, output = run("validate", "jobs/", capsys=capsys)
    assert code == 1, output
    [said] = [text for text in output.splitlines() if "Deployment" in text]
    assert said.startswith(f"jobs/board.yaml:{line}: spec.tensorboard: AppProject tfjobgen does not permit kind "
                           "Deployment (group 'apps')"), said
    assert "Argo CD would refuse to sync cluster big" in said and "ranking/board-tensorboard" in said
    assert run("validate", "jobs/board.yaml", capsys=capsys)[0] == 1, "one job's file: the same answer"
    project.write_text(project.read_text() + "  - {group: apps, kind: Deployment}\n")
    code, output = run("validate", "jobs/", capsys=capsys)
    assert code == 0 and "Deployment" not in output, output
