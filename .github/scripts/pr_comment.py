#!/usr/bin/env python3
"""Post the `tfjobgen diff` report as one pull-request comment, and update that comment on later pushes.

    python .github/scripts/pr_comment.py REPORT.md

It finds its own comment again by the report's first line, the hidden marker `<!-- tfjobgen-diff -->`
(tfjobgen.gitops.markdown.MARKER), among the comments of a bot (the workflow's GITHUB_TOKEN posts as
github-actions[bot]), and updates it in place; without one it creates it. GitHub's REST API, three
endpoints (list, create, update issue comments), at GITHUB_API_URL with GITHUB_TOKEN; the pull
request's number from the event (GITHUB_EVENT_PATH), the repository from GITHUB_REPOSITORY.

A script rather than actions/github-script: no Node on the runner, the same code on GitHub, under act
(tests/act, against a loopback stand-in of those endpoints) and in a test of its own. Standard library
only. Errors are one line and exit 1.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request

MARKER = "<!-- tfjobgen-diff -->"
PER_PAGE = 100


class Failed(Exception):
    pass


def _request(method: str, url: str, token: str, body: dict | None = None) -> tuple[object, dict]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={
        "Accept": "application/vnd.github+json", "Authorization": f"Bearer {token}",
        "X-GitHub-Api-Version": "2022-11-28", "User-Agent": "tfjobgen-pr-comment",
        **({"Content-Type": "application/json"} if data is not None else {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response), dict(response.headers)
    except urllib.error.HTTPError as err:
        raise Failed(f"{method} {url}: HTTP {err.code}: {err.read(300).decode(errors='replace')}") from None
    except urllib.error.URLError as err:
        raise Failed(f"{method} {url}: {err.reason}") from None


def _ours(comment: dict) -> bool:
    return (comment.get("user") or {}).get("type") == "Bot" and MARKER in (comment.get("body") or "")


def post(api: str, repository: str, number: int, token: str, body: str) -> str:
    """Create or update the one comment; returns what was done, as a line for the log."""
    issue = f"{api}/repos/{repository}/issues"
    page = 1
    while True:  # every page: a busy pull request has more than a hundred comments
        comments, _ = _request("GET", f"{issue}/{number}/comments?per_page={PER_PAGE}&page={page}", token)
        if not isinstance(comments, list):
            raise Failed(f"GET {issue}/{number}/comments: expected a list of comments")
        previous = next((c for c in comments if _ours(c)), None)
        if previous or len(comments) < PER_PAGE:
            break
        page += 1
    if previous:
        done, _ = _request("PATCH", f"{issue}/comments/{previous['id']}", token, {"body": body})
        return f"updated comment {done['id']} on #{number}"
    done, _ = _request("POST", f"{issue}/{number}/comments", token, {"body": body})
    return f"created comment {done['id']} on #{number}"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: pr_comment.py REPORT.md", file=sys.stderr)
        return 2
    try:
        try:
            with open(argv[0], encoding="utf-8") as handle:
                body = handle.read()
        except OSError as err:
            raise Failed(f"{argv[0]}: {err.strerror}") from None
        if MARKER not in body:
            raise Failed(f"{argv[0]}: no {MARKER} marker: not a tfjobgen diff report")
        missing = [name for name in ("GITHUB_API_URL", "GITHUB_REPOSITORY", "GITHUB_TOKEN", "GITHUB_EVENT_PATH")
                   if not os.environ.get(name)]
        if missing:
            raise Failed(f"{', '.join(missing)} not set (the workflow passes them)")
        with open(os.environ["GITHUB_EVENT_PATH"], encoding="utf-8") as handle:
            number = (json.load(handle).get("pull_request") or {}).get("number")
        if not isinstance(number, int):
            raise Failed(f"{os.environ['GITHUB_EVENT_PATH']}: pull_request.number: missing (not a pull_request event)")
        print(post(os.environ["GITHUB_API_URL"].rstrip("/"), os.environ["GITHUB_REPOSITORY"], number,
                   os.environ["GITHUB_TOKEN"], body))
        return 0
    except Failed as err:
        print(f"pr_comment: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
