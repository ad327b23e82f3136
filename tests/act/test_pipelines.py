"""The two workflows, run for real under nektos/act on this machine (act_support.py says how).

1. A pull request that adds a job for one cluster only: the jobs pipeline passes, with the placement preview
   (the cluster programs restored from the cache stand-in), and posts one comment, in which the other
   cluster's section is untouched, as its rendered/ is; a second push changing that job updates the comment
   in place. (One pull request for both, each act run costs half a minute.)
2. A pull request that breaks a job: the comment carries the file:line and the field (a row of its Problems
   table; the step's log has `file:line: field: message`), and the run fails.
3. test.yml's fast job passes on a repository holding another team's data (tests/fixtures/other-team).
"""

from __future__ import annotations

import re

from act_support import act_repo, list_job, run_pr, seed_programs_cache  # noqa: F401 - act_repo is a fixture
from conftest import OTHER_TEAM, OTHER_TEAM_JOBS, sample_repo

from tfjobgen.harness.act import ActRepo

MARKER = "<!-- tfjobgen-diff -->"
JOB = "jobs/wide-deep.yaml"


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


def _sections(body: str) -> dict[str, str]:
    """The comment's section of each cluster, by name."""
    return dict(part.split("`", 1) for part in body.split("### Cluster `")[1:])


def test_a_pr_for_one_cluster_gets_one_comment_updated_in_place_and_leaves_the_other_untouched(act_repo):  # noqa: F811
    seed_programs_cache(act_repo)  # what a run on main saved: the placement preview runs
    act_repo.branch("prod-only")
    (act_repo.path / "jobs" / "prod-only.yaml").write_text(ONE_CLUSTER_JOB)
    list_job(act_repo.path, "prod-only.yaml")
    act_repo.hydrate()
    act_repo.commit("a job for prod-96c only")
    assert act_repo.git("diff", "--stat", "main", "--", "rendered/seed-80c") == ""
    assert "rendered/prod-96c/ml-training/prod-only.yaml" in act_repo.git("diff", "--name-only", "main")

    first = run_pr(act_repo, "main", "prod-only")
    assert first.exit == 0, first.log[-6000:]
    assert len(first.comments) == 1, first.log[-3000:]
    comment = first.comments[0]
    assert comment["body"].startswith(MARKER) and comment["user"]["type"] == "Bot"
    sections = _sections(comment["body"])
    assert set(sections) == {"prod-96c", "seed-80c"}, comment["body"][:3000]
    assert "ml-training/prod-only" in sections["prod-96c"]
    assert "prod-only" not in sections["seed-80c"], sections["seed-80c"][:3000]
    assert "on the real kube-scheduler" in comment["body"], "the placement preview ran (programs cached)"
    assert "Placement not previewed" not in comment["body"]
    assert "created comment" in first.log

    job = act_repo.path / "jobs" / "prod-only.yaml"  # the second push: 4 workers to 11
    job.write_text(job.read_text().replace("worker: {replicas: 4,", "worker: {replicas: 11,"))
    act_repo.hydrate()
    act_repo.commit("prod-only: 11 workers")
    assert act_repo.git("diff", "--stat", "main", "--", "rendered/seed-80c") == ""
    second = run_pr(act_repo, "main", "prod-only")
    assert second.exit == 0, second.log[-6000:]
    assert [c["id"] for c in second.comments] == [comment["id"]], "updated in place, not posted again"
    body = second.comments[0]["body"]
    row = "| added | `ml-training/prod-only` | 2 x 4 CPU/8Gi | {} x 4 CPU/8Gi |"  # the job's row: its workers
    assert row.format(4) in sections["prod-96c"] and row.format(11) not in comment["body"], sections["prod-96c"][:3000]
    assert row.format(11) in _sections(body)["prod-96c"], body[:3000]
    assert "prod-only" not in _sections(body)["seed-80c"]
    writes = [(method, path) for method, path in act_repo.api.requests if method != "GET"]
    assert [method for method, _ in writes] == ["POST", "PATCH"], writes
    assert writes[1][1].endswith(f"/issues/comments/{comment['id']}")


def test_a_pr_breaking_a_job_fails_with_file_line_field_in_the_comment(act_repo):  # noqa: F811
    act_repo.branch("typo")
    job = act_repo.path / JOB
    job.write_text(job.read_text().replace("qos: cpuset", "qos: cpu-set"))
    act_repo.commit("wide-deep: a typo")

    run = run_pr(act_repo, "main", "typo", number=7)
    assert run.exit != 0, run.log[-6000:]
    assert len(run.comments) == 1, run.log[-3000:]
    body = run.comments[0]["body"]
    # the comment's Problems table: file:line, then the field, in a row of their own
    row = r"\| error \| `jobs/wide-deep\.yaml:\d+` \| `spec\.qos` \| \"cpu-set\" is not allowed"
    assert re.search(row, body), body[:3000]
    assert re.search(r"jobs/wide-deep\.yaml:\d+: spec\.qos: ", run.log), "the step's log: file:line: field: message"
    assert "Placement not previewed" in body, "no programs in this test's cache: the comment says so"
    assert "Fail when the diff found errors" in run.log


def test_the_fast_job_of_test_yml_passes_on_another_teams_repository(tmp_path):
    """The tool's tests read fixtures of their own (tests/fixtures/sample-repo), never the repository's data, so a
    team that replaces jobs/, bases/, overlays/ and argocd/base/ with its own needs no fork of them: here the fast
    job runs on a copy holding tests/fixtures/other-team's data in their place."""
    repo = ActRepo.create(tmp_path / "act", prepare=lambda path: sample_repo(path, data=OTHER_TEAM))
    try:
        assert {p.stem for p in (repo.path / "jobs").glob("*.yaml")} - {"kustomization"} == OTHER_TEAM_JOBS
        repo.branch("tool-change")
        init = repo.path / "generator" / "tfjobgen" / "__init__.py"
        init.write_text(init.read_text() + "\n")
        repo.commit("a change to the tool")

        run = run_pr(repo, "main", "tool-change", workflow="test.yml", job="fast")
        assert run.exit == 0, run.log[-8000:]
        passed = re.search(r"(\d+) passed", run.log)
        assert passed and int(passed.group(1)) > 500, run.log[-3000:]  # the whole fast tier, not next to nothing
    finally:
        repo.close()
