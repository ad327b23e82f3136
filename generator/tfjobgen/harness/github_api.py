"""A loopback stand-in for the three issue-comment endpoints of GitHub's REST API that the jobs pipeline's
comment step calls (.github/scripts/pr_comment.py), shaped as GitHub documents them
(https://docs.github.com/en/rest/issues/comments):

    GET   /repos/{owner}/{repo}/issues/{issue_number}/comments   200, a page of comments (per_page, page; Link)
    POST  /repos/{owner}/{repo}/issues/{issue_number}/comments   201, the comment ({"body": ...})
    PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}     200, the comment; 404 when there is none

Every request needs `Authorization: Bearer ...` (401 without). Comments made with a token are the
workflow's, so their user is github-actions[bot] of type Bot, as with GITHUB_TOKEN on GitHub. Bound to
127.0.0.1 on a free port, served by a thread of the test's own process (nothing to leave behind: `close()`
stops it). `requests` records (method, path) of each call, for tests that count them.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

BOT = {"login": "github-actions[bot]", "id": 41898282, "node_id": "MDM6Qm90NDE4OTgyODI=", "type": "Bot",
       "site_admin": False}
_LIST = re.compile(r"^/repos/([^/]+)/([^/]+)/issues/(\d+)/comments$")
_ONE = re.compile(r"^/repos/([^/]+)/([^/]+)/issues/comments/(\d+)$")
_TIME = "2026-01-01T00:00:{:02d}Z"


class GitHubStandIn:
    def __init__(self) -> None:
        self.comments: list[dict] = []  # in creation order, as GitHub lists them
        self.requests: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        # shutdown() waits for the loop's next poll: at the default half second, each close cost half a second
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                                        name="github-standin", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def comments_on(self, repository: str, number: int) -> list[dict]:
        with self._lock:
            return [dict(c) for c in self.comments
                    if c["issue_url"].endswith(f"/repos/{repository}/issues/{number}")]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _comment(self, owner: str, repo: str, number: str, body: str) -> dict:
        identifier = 1000 + len(self.comments) + 1
        base = f"{self.url}/repos/{owner}/{repo}"
        return {"id": identifier, "node_id": f"IC_{identifier}", "url": f"{base}/issues/comments/{identifier}",
                "html_url": f"https://github.com/{owner}/{repo}/pull/{number}#issuecomment-{identifier}",
                "issue_url": f"{base}/issues/{number}", "body": body, "user": dict(BOT),
                "created_at": _TIME.format(len(self.comments) % 60), "updated_at": _TIME.format(len(self.comments) % 60),
                "author_association": "NONE"}

    def _handler(self):
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # the test's output stays the test's
                pass

            def _send(self, status: int, payload, headers: dict | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def _error(self, status: int, message: str) -> None:
                self._send(status, {"message": message,
                                    "documentation_url": "https://docs.github.com/rest/issues/comments"})

            def _body(self) -> dict | None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    parsed = json.loads(self.rfile.read(length) or b"null")
                except ValueError:
                    return None
                return parsed if isinstance(parsed, dict) and isinstance(parsed.get("body"), str) else None

            def _handle(self, method: str) -> None:
                split = urlsplit(self.path)
                with standin._lock:
                    standin.requests.append((method, split.path))
                scheme, _, token = self.headers.get("Authorization", "").partition(" ")
                if scheme not in ("Bearer", "token") or not token.strip():
                    return self._error(401, "Requires authentication")
                listing, one = _LIST.match(split.path), _ONE.match(split.path)
                if method == "GET" and listing:
                    query = parse_qs(split.query)
                    per_page = min(int((query.get("per_page") or ["30"])[0]), 100)
                    page = max(int((query.get("page") or ["1"])[0]), 1)
                    owner, repo, number = listing.groups()
                    mine = standin.comments_on(f"{owner}/{repo}", int(number))
                    chunk = mine[(page - 1) * per_page: page * per_page]
                    links = {}
                    if page * per_page < len(mine):
                        links["Link"] = (f'<{standin.url}{split.path}?per_page={per_page}&page={page + 1}>; '
                                         'rel="next"')
                    return self._send(200, chunk, links)
                if method == "POST" and listing:
                    body = self._body()
                    if body is None:
                        return self._error(422, "Validation Failed: body is required")
                    with standin._lock:
                        comment = standin._comment(*listing.groups(), body["body"])
                        standin.comments.append(comment)
                    return self._send(201, comment, {"Location": comment["url"]})
                if method == "PATCH" and one:
                    body = self._body()
                    if body is None:
                        return self._error(422, "Validation Failed: body is required")
                    with standin._lock:
                        found = next((c for c in standin.comments if c["id"] == int(one.group(3))), None)
                        if found is not None:
                            found["body"] = body["body"]
                            found["updated_at"] = _TIME.format((len(standin.requests)) % 60)
                    return self._send(200, dict(found)) if found else self._error(404, "Not Found")
                return self._error(404, "Not Found")

            def do_GET(self) -> None:  # noqa: N802 - http.server's names
                self._handle("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._handle("POST")

            def do_PATCH(self) -> None:  # noqa: N802
                self._handle("PATCH")

        return Handler
