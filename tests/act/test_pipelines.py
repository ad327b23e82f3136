"""The two workflows, run for real under nektos/act on this machine (act_support.py says how).

1. A pull request that changes one job: the jobs pipeline passes, with the placement preview (the cluster
   programs restored from the cache stand-in), and posts one comment; a second push updates that comment
   in place.
2. A pull request that breaks a job: the comment carries the file:line and the field (a row of its Problems
   table; the step's log has `file:line: field: message`), and the run fails.
3. test.yml's fast job passes.
"""

from __future__ import annotations

import re

from act_support import act_repo, run_pr, seed_programs_cache  # noqa: F401 - act_repo is a fixture

MARKER = "<!-- tfjobgen-diff -->"
JOB = "jobs/wide-deep.yaml"


def _workers(repo, count: int) -> None:
    job = repo.path / JOB
    text = job.read_text()
    changed = re.sub(r"worker: \{replicas: \d+,", f"worker: {{replicas: {count},", text, count=1)
    assert changed != text, f"{JOB} has no worker line to change"
    job.write_text(changed)


def test_a_pr_changing_one_job_gets_one_comment_updated_in_place(act_repo):
    seed_programs_cache(act_repo)  # what a run on main saved: the placement preview runs
    act_repo.branch("fewer-workers")
    _workers(act_repo, 16)
    act_repo.hydrate()
    act_repo.commit("wide-deep: 16 workers")

    first = run_pr(act_repo, "main", "fewer-workers")
    assert first.exit == 0, first.log[-6000:]
    assert len(first.comments) == 1, first.log[-3000:]
    comment = first.comments[0]
    assert comment["body"].startswith(MARKER) and comment["user"]["type"] == "Bot"
    assert "ml-training/wide-deep" in comment["body"]
    assert "on the real kube-scheduler" in comment["body"], "the placement preview ran (programs cached)"
    assert "Placement not previewed" not in comment["body"]
    assert "created comment" in first.log

    _workers(act_repo, 24)  # the second push
    act_repo.hydrate()
    act_repo.commit("wide-deep: 24 workers")
    second = run_pr(act_repo, "main", "fewer-workers")
    assert second.exit == 0, second.log[-6000:]
    assert [c["id"] for c in second.comments] == [comment["id"]], "updated in place, not posted again"
    assert second.comments[0]["body"] != comment["body"] and "24" in second.comments[0]["body"]
    writes = [(method, path) for method, path in act_repo.api.requests if method != "GET"]
    assert [method for method, _ in writes] == ["POST", "PATCH"], writes
    assert writes[1][1].endswith(f"/issues/comments/{comment['id']}")


def test_a_pr_breaking_a_job_fails_with_file_line_field_in_the_comment(act_repo):
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


def test_the_fast_job_of_test_yml_passes(act_repo):
    act_repo.branch("tool-change")
    (act_repo.path / "generator" / "tfjobgen" / "__init__.py").write_text(
        (act_repo.path / "generator" / "tfjobgen" / "__init__.py").read_text() + "\n")
    act_repo.commit("a change to the tool")

    run = run_pr(act_repo, "main", "tool-change", workflow="test.yml", job="fast")
    assert run.exit == 0, run.log[-8000:]
    assert re.search(r"\d+ passed", run.log), run.log[-3000:]
