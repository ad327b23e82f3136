"""`tfjobgen diff BASE_REF`: the semantic diff the pull-request workflow posts as one comment.

Each test makes its own git repository under tmp_path (a small copy of this
repository), commits a base, changes the working tree and runs the command as
CI does. Nothing touches this repository's git state.
"""

from __future__ import annotations

import os
import re

import pytest
import yaml
from conftest import need, uses
from gitops_support import commit_all, copy_repo, crd_dir, git, tfjobgen, write_job_list

from tfjobgen.cluster import control
from tfjobgen.artifacts import programs
from tfjobgen.gitops import diff, markdown


@pytest.fixture
def repo(tmp_path):
    repo = copy_repo(tmp_path / "repo")
    commit_all(repo, "base")
    return repo


def add_job(repo, name, namespace, like="scene2-case1.yaml"):
    data = yaml.safe_load((repo / "jobs" / like).read_text())
    data["metadata"].update(name=name, namespace=namespace)
    (repo / "jobs" / f"{name}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    write_job_list(repo)


def edit(path, old, new):
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new))


def section(report: str, cluster: str) -> str:
    start = report.index(f"### Cluster `{cluster}`")
    end = report.find("### Cluster", start + 1)
    return report[start:end if end > 0 else None]


def row(report: str, cluster: str, job: str) -> list[str]:
    for line in section(report, cluster).splitlines():
        if f"| `{job}` |" in line:
            return [c.strip() for c in line.strip().strip("|").split(" | ")]
    raise AssertionError(f"no row for {job} in {cluster}:\n{section(report, cluster)}")


def assert_tables_are_well_formed(report: str) -> None:
    """Every Markdown table row has as many cells as its header (no stray '|' from the data)."""
    width = None
    for line in report.splitlines():
        if not line.startswith("|"):
            width = None
            continue
        cells = len(re.split(r"(?<!\\)\|", line)) - 2
        width = width or cells
        assert cells == width, f"malformed table row: {line}"


def test_added_changed_and_removed_jobs_per_cluster(repo):
    add_job(repo, "ctr-small", "placement-experiments")
    edit(repo / "jobs" / "wide-deep.yaml", "worker: {replicas: 32,", "worker: {replicas: 40,")
    (repo / "jobs" / "scene2-case1.yaml").unlink()
    write_job_list(repo)
    proc = tfjobgen(repo, "diff", "main", "--crds", str(crd_dir()), "--no-place")  # prod-96c has PodMonitors
    assert proc.returncode == 0, proc.stderr
    report = proc.stdout
    assert report.startswith(markdown.MARKER + "\n")
    assert_tables_are_well_formed(report)
    assert "| seed-80c | 1 | 1 | 1 | 1 |" in report
    assert "| prod-96c | 1 | 0 | 1 | 2 |" in report, "prod-96c pins wide-deep to 48 workers: no change there"

    added = row(report, "seed-80c", "placement-experiments/ctr-small")
    assert added[0] == "added" and added[2] == "1 x 16 CPU/64Gi" and added[-1] == "starts"
    changed = row(report, "seed-80c", "ml-training/wide-deep")
    assert changed[0] == "changed"
    assert changed[2] == "4 x 8 CPU/32Gi", "PS unchanged"
    assert changed[3] == "32 x 4 CPU/8Gi → **40 x 4 CPU/8Gi**"
    assert changed[6:10] == ["spread", "cpuset", "grpc (tf2)", "7"]
    assert changed[-1] == "**restarts**: 4 Job(s) recreated"
    removed = row(report, "seed-80c", "placement-experiments/scene2-case1")
    assert removed[0] == "removed" and "pruned" in removed[-1]
    details = section(report, "seed-80c")
    assert "ConfigMap wide-deep-cluster: data.cluster.json" in details
    assert "spec.completions, spec.parallelism" in details
    assert "No problems found." in report


@pytest.mark.cluster  # diff places the jobs on local clusters (tfjobgen place)
def test_the_report_places_added_and_changed_jobs_on_the_real_scheduler(repo):
    need("the local cluster's programs", None if programs.missing(control.CORE_PROGRAMS) else "built",
         "make cluster-tools builds them")
    add_job(repo, "ctr-small", "placement-experiments")
    edit(repo / "jobs" / "wide-deep.yaml", "worker: {replicas: 32,", "worker: {replicas: 40,")
    write_job_list(repo)
    proc = tfjobgen(repo, "diff", "main", "--crds", str(crd_dir()))
    assert proc.returncode == 0, proc.stderr
    seed = proc.stdout.split("### Cluster `seed-80c`")[1]
    placement = seed.split("on the real kube-scheduler (<code>tfjobgen place</code>)</summary>")[1].split("</details>")[0]
    assert_tables_are_well_formed(placement)
    for order in (0, 1):  # two creation orders, every pod of both jobs placed, each layout intact
        # 4 PS, 40 workers (the change), the chief and the evaluator
        assert re.search(rf"\| {order} \| ml-training/wide-deep \| spread \| 46/46 \| 0 \| holds \|", placement), placement
        assert re.search(rf"\| {order} \| placement-experiments/ctr-small \| \w+ \| (\d+)/\1 \| 0 \| holds \|",
                         placement), placement


def test_without_the_cluster_programs_the_report_says_placement_was_not_checked(repo, tmp_path):
    edit(repo / "jobs" / "wide-deep.yaml", "worker: {replicas: 32,", "worker: {replicas: 40,")
    proc = tfjobgen(repo, "diff", "main", env={"TFJOBGEN_TOOLS_CACHE": str(tmp_path / "nothing-built")})
    assert proc.returncode == 0, proc.stderr
    assert ("_Placement not checked on a local cluster: its programs are not built here (etcd, kube-apiserver, "
            "kube-controller-manager, kube-scheduler, kwok; `make cluster-tools` builds them)._") in proc.stdout


def test_a_base_that_predates_the_project(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("an empty project\n")
    commit_all(repo, "before tfjobgen")
    copy_repo(repo)
    proc = tfjobgen(repo, "diff", "HEAD", "--no-place")
    assert proc.returncode == 0, proc.stderr
    assert "predates tfjobgen (no jobs/ or overlays/): every job is new" in proc.stdout
    assert "| seed-80c | 3 | 0 | 0 | 0 |" in proc.stdout


def test_an_invalid_job_fails_with_its_file_and_line_in_the_report(repo):
    edit(repo / "jobs" / "wide-deep.yaml", "memory: 32Gi}", "memory: 32 gigs}")
    proc = tfjobgen(repo, "diff", "main", "--no-place")
    assert proc.returncode == 1
    assert_tables_are_well_formed(proc.stdout)
    problem = next(line for line in proc.stdout.splitlines() if "32 gigs" in line)
    assert problem.startswith("| error | `jobs/wide-deep.yaml:15` | `spec.roles.ps.memory` |"), problem
    assert "does not build (see the problems above)" in proc.stdout
    assert "jobs/wide-deep.yaml:15: spec.roles.ps.memory" in proc.stderr


def test_namespace_moves_and_forbidden_namespaces_are_errors(repo):
    for profile in (repo / "overlays").glob("*/cluster-profile.yaml"):  # every cluster runs every namespace:
        profile.write_text(re.sub(r"(?m)^  namespaces: .*\n", "", profile.read_text()))  # only Argo CD refuses
    edit(repo / "jobs" / "scene2-case1.yaml", "namespace: placement-experiments", "namespace: ml-training")
    add_job(repo, "research-probe", "research")
    proc = tfjobgen(repo, "diff", "main", "--no-place")
    assert proc.returncode == 1, proc.stdout
    report = proc.stdout
    assert_tables_are_well_formed(report)
    assert "job 'scene2-case1' moves from namespace placement-experiments to ml-training" in report
    assert "namespace research is not a destination of AppProject tfjobgen on cluster 'seed-80c'" in report
    assert "`argocd/base/project.yaml`" in report


def test_two_jobs_with_one_name_are_an_error_even_in_different_namespaces(repo):
    (repo / "jobs" / "wide-deep-copy.yaml").write_text(  # the same name in another namespace
        (repo / "jobs" / "wide-deep.yaml").read_text().replace("namespace: ml-training",
                                                                "namespace: placement-experiments"))
    proc = tfjobgen(repo, "diff", "main", "--no-place")
    assert proc.returncode == 1, proc.stdout
    assert_tables_are_well_formed(proc.stdout)
    problem = "| error | `jobs/wide-deep.yaml:7` | `metadata.name` | job name 'wide-deep' is already used by " \
              "jobs/wide-deep-copy.yaml:7 (in namespace placement-experiments)"
    assert proc.stdout.count("job name 'wide-deep' is already used") == 1, "one rule, reported once"
    assert problem in proc.stdout
    assert proc.stderr.count("job name 'wide-deep' is already used") == 1


def test_diff_outside_the_repository_root_says_where_to_run_it(tmp_path):
    proc = tfjobgen(tmp_path, "diff", "main", "--no-place")
    assert proc.returncode == 2 and "run it from the repository root" in proc.stderr


@pytest.mark.parametrize("output,why", [("missing/report.md", "cannot write missing/report.md: no such folder missing"),
                                        ("jobs", "cannot write jobs: a folder of that name is in the way"),
                                        ("/dev/full", "cannot write /dev/full: no space left on the device")])
def test_a_report_that_cannot_be_written_says_where_and_why(repo, output, why):
    proc = tfjobgen(repo, "diff", "main", "--no-place", "-o", output)
    assert proc.returncode == 2 and f"tfjobgen diff: {why}" in proc.stderr, proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr


def test_a_file_size_limit_names_the_file_it_stopped_not_standard_output(repo, tmp_path):
    """Under RLIMIT_FSIZE (ulimit -f) diff's first write over the limit is its copy of the base revision's files,
    long before the report: the error names that file and the limit, and stdout, never written, is not blamed."""
    import resource
    import subprocess
    import sys

    from conftest import REPO
    from gitops_support import PYTHON_BIN

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))

    env = {**os.environ, "PYTHONPATH": str(REPO / "generator"), "PATH": PYTHON_BIN + os.pathsep + os.environ["PATH"]}
    proc = subprocess.run([sys.executable, "-m", "tfjobgen", "diff", "main", "--no-place", "-o",
                           str(tmp_path / "report.md")], capture_output=True, text=True, cwd=repo, env=env,
                          timeout=300, preexec_fn=limited)
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.splitlines()
    assert "standard output" not in line and line.startswith("tfjobgen diff: cannot write "), line
    assert "tfjobgen-base-" in line and "the base revision" in line and "file-size limit" in line, line
    assert "2048 bytes" in line and not (tmp_path / "report.md").exists()


def test_an_unknown_base_revision_says_how_to_fetch_it(repo):
    proc = tfjobgen(repo, "diff", "origin/main", "--no-place")
    assert proc.returncode == 2
    assert "unknown revision 'origin/main'" in proc.stderr and "fetch-depth: 0" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_base_is_read_from_git_without_touching_the_repository(repo):
    status, head = git(repo, "status", "--porcelain"), git(repo, "rev-parse", "HEAD")
    edit(repo / "jobs" / "wide-deep.yaml", "worker: {replicas: 32,", "worker: {replicas: 36,")
    assert tfjobgen(repo, "diff", "main", "--no-place").returncode == 0
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "worktree", "list").count("\n") == 0, "no worktree was added"
    assert git(repo, "status", "--porcelain") != status  # only the edit
    assert git(repo, "stash", "list") == ""


def test_the_report_folds_in_the_plan_of_each_added_or_changed_job(repo):
    add_job(repo, "ctr-small", "placement-experiments")
    job = yaml.safe_load((repo / "jobs" / "ctr-small.yaml").read_text())
    job["spec"]["roles"]["ps"]["replicas"] = 2
    job["spec"]["training"] = {"partitioner": "none"}
    (repo / "jobs" / "ctr-small.yaml").write_text(yaml.safe_dump(job, sort_keys=False))
    edit(repo / "jobs" / "scene2-case1.yaml", "ps: {replicas: 1,", "ps: {replicas: 2,")
    proc = tfjobgen(repo, "diff", "main", "--no-place")
    assert proc.returncode == 0, proc.stderr
    assert_tables_are_well_formed(proc.stdout)
    cluster = section(proc.stdout, "seed-80c")
    folded = cluster[cluster.index("<details><summary>Plans of the added and changed jobs in seed-80c"):]
    assert folded.index("</details>") > folded.index("#### Plan for `placement-experiments/scene2-case1`")
    assert "#### Plan for `placement-experiments/ctr-small`" in folded
    added = folded[folded.index("#### Plan for `placement-experiments/ctr-small`"):]
    assert "- `spec.training.partitioner`: ps:1 would hold 94%" in added  # one PS of two carries the embedding
    assert "wide-deep" not in folded  # unchanged jobs get no plan


def test_the_plan_of_a_patched_job_is_the_plan_of_the_job_the_cluster_gets(repo):
    """prod-96c patches wide-deep to 48 workers: its plan says 48, as the table above it does."""
    edit(repo / "jobs" / "wide-deep.yaml", "ps: {replicas: 4,", "ps: {replicas: 5,")
    proc = tfjobgen(repo, "diff", "main", "--no-place")
    assert proc.returncode == 0, proc.stderr
    for cluster, workers in (("prod-96c", 48), ("seed-80c", 32)):
        assert f"{workers} x 4 CPU/8Gi" in " ".join(row(proc.stdout, cluster, "ml-training/wide-deep"))
        folded = section(proc.stdout, cluster)
        plan = folded[folded.index("#### Plan for `ml-training/wide-deep`"):]
        assert f"| worker | {workers} |" in plan, (cluster, plan)


# ---- building only what a change can affect --------------------------------------------------------

def _affected(repo, tmp_path):
    """diff.affected_files for the working tree against main, with main extracted as the diff extracts it."""
    from tfjobgen.gitops import tree

    commit = git(repo, "rev-parse", "main")
    base = tmp_path / f"base-{len(list(tmp_path.glob('base-*')))}"
    base.mkdir()
    tree.extract_commit(repo, commit, base)
    return diff.affected_files(repo, base, commit)


@uses("kubectl")
def _reports(repo, monkeypatch) -> tuple[str, str]:
    """The report as `tfjobgen diff main` makes it, and the same report with every job built."""
    selective = markdown.to_markdown(diff.make_report(repo, "main", place=False))
    monkeypatch.setattr(diff, "affected_files", lambda *args: None)
    everything = markdown.to_markdown(diff.make_report(repo, "main", place=False))
    return selective, everything


def test_a_change_to_one_job_builds_that_job_and_reports_what_a_full_build_reports(repo, monkeypatch, tmp_path):
    edit(repo / "jobs" / "wide-deep.yaml", "worker: {replicas: 32,", "worker: {replicas: 40,")
    add_job(repo, "ctr-small", "placement-experiments")
    (repo / "jobs" / "scene2-case1.yaml").unlink()
    write_job_list(repo)
    assert _affected(repo, tmp_path) == {"jobs/wide-deep.yaml", "jobs/ctr-small.yaml", "jobs/scene2-case1.yaml"}
    selective, everything = _reports(repo, monkeypatch)
    assert selective == everything
    assert "| seed-80c | 1 | 1 | 1 | 1 |" in selective


def test_a_change_outside_the_job_files_builds_everything(repo, monkeypatch, tmp_path):
    edit(repo / "overlays" / "prod-96c" / "kustomization.yaml", "value: 48", "value: 40")
    assert _affected(repo, tmp_path) is None
    git(repo, "checkout", "--", "overlays")
    (repo / "jobs" / "kustomization.yaml").write_text((repo / "jobs" / "kustomization.yaml").read_text()
                                                      + "commonLabels: {owner: ml}\n")
    assert _affected(repo, tmp_path) is None, "a kustomization change beyond its resources"
    git(repo, "checkout", "--", "jobs")
    (repo / "README.md").write_text("docs only\n")
    assert _affected(repo, tmp_path) == frozenset(), "nothing a build reads"
    selective, everything = _reports(repo, monkeypatch)
    assert selective == everything and "| seed-80c | 0 | 0 | 0 | 3 |" in selective
