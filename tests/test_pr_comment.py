"""The GitHub Action's comment script, against a local server that implements the three
comment endpoints it calls (list, create, update), as GitHub's REST API answers them."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import threading
from contextlib import redirect_stderr
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import chunkeval
from chunkeval import pr_comment
from chunkeval.errors import EXIT_NOT_COMPARED
from chunkeval.pr_comment import MARKER

REPO = "team/docs"


class FakeGitHub(ThreadingHTTPServer):
    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        # someone else's comment is there first: it must be left alone
        self.comments = [{"id": 7, "body": "looks good to me", "user": {"login": "alice"}}]
        self.calls: list[tuple[str, str]] = []
        self.refuse = False  # answer every call with 403, as for a token that may not write

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class Handler(BaseHTTPRequestHandler):
    server: FakeGitHub

    def log_message(self, *args):  # keep the test's output clean
        pass

    def _reply(self, status: int, data) -> None:
        body = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _handle(self, method: str) -> None:
        self.server.calls.append((method, self.path))
        if self.server.refuse:
            return self._reply(403, {"message": "Resource not accessible by integration"})
        if self.headers.get("Authorization") != "Bearer t0ken":
            return self._reply(401, {"message": "Bad credentials"})
        length = int(self.headers.get("Content-Length") or 0)
        data = json.loads(self.rfile.read(length)) if length else None
        path = self.path.split("?")[0]
        if method == "GET" and path == f"/repos/{REPO}/issues/12/comments":
            page = int(re.search(r"[?&]page=(\d+)", self.path).group(1))
            return self._reply(200, self.server.comments[(page - 1) * 100:page * 100])
        if method == "POST" and path == f"/repos/{REPO}/issues/12/comments":
            comment = {"id": 100 + len(self.server.comments), "body": data["body"]}
            self.server.comments.append(comment)
            return self._reply(201, comment)
        found = re.fullmatch(rf"/repos/{REPO}/issues/comments/(\d+)", path)
        if method == "PATCH" and found:
            comment = next(c for c in self.server.comments if c["id"] == int(found[1]))
            comment["body"] = data["body"]
            return self._reply(200, comment)
        self._reply(404, {"message": "Not Found"})

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def do_PATCH(self):
        self._handle("PATCH")


@pytest.fixture
def github():
    server = FakeGitHub()
    # shutdown() waits for the server's next poll: the default half second, in every test
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01},
                              daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def event(tmp_path: Path, head: str = REPO) -> Path:
    path = tmp_path / "event.json"
    path.write_text(json.dumps({"pull_request": {
        "number": 12, "head": {"repo": {"full_name": head}},
        "base": {"repo": {"full_name": REPO}, "sha": "abc123"}}}), encoding="utf-8")
    return path


def comment(github: FakeGitHub, tmp_path: Path, verdict: str, code: int, *,
            head: str = REPO, base: str = "main",
            process: bool = False) -> subprocess.CompletedProcess:
    """The script on `verdict` with the Action's environment: its exit code and stderr. It
    runs in this process (its `main`), or with `process` as the Action runs it, `python -m
    chunkeval.pr_comment`."""
    verdict_file = tmp_path / "verdict.md"
    verdict_file.write_text(verdict, encoding="utf-8")
    env = {"GITHUB_API_URL": github.url, "GITHUB_REPOSITORY": REPO, "GITHUB_TOKEN": "t0ken",
           "GITHUB_EVENT_PATH": str(event(tmp_path, head))}
    args = ["--verdict", str(verdict_file), "--exit-code", str(code), "--base", base]
    if process:
        env["PYTHONPATH"] = str(Path(chunkeval.__file__).resolve().parent.parent)
        return subprocess.run([sys.executable, "-m", "chunkeval.pr_comment", *args],
                              env=os.environ | env, capture_output=True, text=True, timeout=60)
    with pytest.MonkeyPatch.context() as monkeypatch, redirect_stderr(io.StringIO()) as err:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        status = pr_comment.main(args)
    return subprocess.CompletedProcess(args, status, "", err.getvalue())


def ours(github: FakeGitHub) -> list[dict]:
    return [c for c in github.comments if MARKER in c["body"]]


def test_one_comment_is_created_then_updated_on_the_next_push(github, tmp_path):
    first = comment(github, tmp_path, "| strategy | verdict |\n|---|---|\n| a | regressed |\n", 1)
    assert first.returncode == 1, first.stderr
    assert "created comment" in first.stderr
    assert len(ours(github)) == 1 and "regression: the gate failed" in ours(github)[0]["body"]
    second = comment(github, tmp_path, "everything within bounds\n", 0)
    assert second.returncode == 0, second.stderr
    assert "updated comment" in second.stderr
    assert len(ours(github)) == 1 and len(github.comments) == 2  # alice's and ours
    body = ours(github)[0]["body"]
    assert "no regression" in body and "everything within bounds" in body
    assert "regressed" not in body
    assert github.comments[0]["body"] == "looks good to me"
    assert [m for m, _ in github.calls] == ["GET", "POST", "GET", "PATCH"]


def test_a_pull_request_from_a_fork_gets_no_comment_and_one_line(github, tmp_path):
    result = comment(github, tmp_path, "verdict\n", 1, head="someone/docs")
    assert result.returncode == 1
    assert github.calls == [] and len(github.comments) == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "may not write" in lines[0]


def test_a_refused_request_is_one_line_and_the_gate_decides_the_exit(github, tmp_path):
    github.refuse = True
    result = comment(github, tmp_path, "verdict\n", 0)
    assert result.returncode == 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "HTTP 403" in lines[0] and "no comment" in lines[0]


@pytest.mark.parametrize("code, said", [(0, "no regression"), (1, "regression"),
                                        (EXIT_NOT_COMPARED, "no comparison could be made"),
                                        (4, "could not run")])
def test_the_exit_code_is_passed_through(github, tmp_path, code, said):
    result = comment(github, tmp_path, "verdict\n", code, process=True)
    assert result.returncode == code
    assert said in ours(github)[0]["body"]


def test_the_body_is_escaped_and_cannot_forge_the_marker(github, tmp_path):
    verdict = f"{MARKER}\nqueries as written: \\<b\\>\n"
    result = comment(github, tmp_path, verdict, 0, base="<img src=x onerror=alert(1)>")
    assert result.returncode == 0, result.stderr
    body = ours(github)[0]["body"]
    assert body.count(MARKER) == 1 and body.startswith(MARKER)
    assert not re.search(r"(?<!\\)<img", body) and "\\<img src=x onerror=alert(1)>" in body
    # an empty verdict (pytest stopped before writing one) still comments, saying so
    empty = comment(github, tmp_path, "\n", EXIT_NOT_COMPARED)
    assert empty.returncode == EXIT_NOT_COMPARED
    assert "No verdict was written" in ours(github)[0]["body"]


def test_the_comment_is_found_past_the_first_page_of_comments(github, tmp_path):
    github.comments += [{"id": 1000 + i, "body": f"comment {i}"} for i in range(150)]
    github.comments.append({"id": 5000, "body": f"{MARKER}\nan earlier verdict"})
    result = comment(github, tmp_path, "verdict now\n", 0)
    assert result.returncode == 0 and "updated comment 5000" in result.stderr
    assert len(ours(github)) == 1 and "verdict now" in ours(github)[0]["body"]
