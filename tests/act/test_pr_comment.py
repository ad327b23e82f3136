"""The jobs pipeline's comment step (.github/scripts/pr_comment.py) against the GitHub API stand-in, without act:
one comment, found again by its marker among other people's comments on any page, updated in place."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest
from conftest import REPO

from tfjobgen.harness.github_api import GitHubStandIn

SCRIPT = REPO / ".github" / "scripts" / "pr_comment.py"
_spec = importlib.util.spec_from_file_location("pr_comment", SCRIPT)
pr_comment = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pr_comment)


@pytest.fixture
def api():
    with GitHubStandIn() as standin:
        yield standin


def test_creates_then_updates_its_own_comment(api):
    assert pr_comment.post(api.url, "o/r", 5, "t", f"{pr_comment.MARKER}\nfirst") == "created comment 1001 on #5"
    assert pr_comment.post(api.url, "o/r", 5, "t", f"{pr_comment.MARKER}\nsecond") == "updated comment 1001 on #5"
    assert [c["body"] for c in api.comments_on("o/r", 5)] == [f"{pr_comment.MARKER}\nsecond"]
    assert api.comments_on("o/r", 6) == []


def test_finds_its_comment_past_the_first_page_and_leaves_people_s_quotes_alone(api):
    pr_comment.post(api.url, "o/r", 5, "t", f"{pr_comment.MARKER}\nours")
    ours = api.comments[0]
    quote = dict(ours, id=1, body=f"> {pr_comment.MARKER} quoted by a person", user={"login": "dev", "type": "User"})
    api.requests.clear()
    api.comments[:] = [quote] + [dict(quote, id=10 + n, body=f"comment {n}") for n in range(150)] + [ours]
    assert pr_comment.post(api.url, "o/r", 5, "t", f"{pr_comment.MARKER}\nnew") == f"updated comment {ours['id']} on #5"
    assert api.comments[0]["body"].startswith("> ") and api.comments[-1]["body"].endswith("new")
    assert [method for method, _ in api.requests] == ["GET", "GET", "PATCH"]  # two pages of 100, then the update


def test_an_unreachable_api_is_one_line_and_exit_1(tmp_path):
    report = tmp_path / "report.md"
    report.write_text(f"{pr_comment.MARKER}\nx\n")
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 3}}))
    with GitHubStandIn() as gone:
        url = gone.url  # closed when the block ends: nothing listens there
    env = {"GITHUB_API_URL": url, "GITHUB_REPOSITORY": "o/r", "GITHUB_TOKEN": "t", "GITHUB_EVENT_PATH": str(event),
           "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, str(SCRIPT), str(report)], capture_output=True, text=True, env=env,
                          timeout=60)
    assert proc.returncode == 1 and proc.stdout == "", proc
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(f"pr_comment: GET {url}/repos/o/r/issues/3/"), \
        proc.stderr


def test_no_token_is_refused_as_github_does(api):
    with pytest.raises(pr_comment.Failed, match="HTTP 401"):
        pr_comment._request("GET", f"{api.url}/repos/o/r/issues/1/comments", "")
