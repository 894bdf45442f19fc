"""The GitHub Action's pull-request comment: one comment per pull request, found again by a
hidden marker and updated on every push, never a second.

    python -m chunkeval.pr_comment --verdict verdict.md --exit-code 1 [--base REV]

reads the pull request from $GITHUB_EVENT_PATH, talks to $GITHUB_API_URL as
$GITHUB_REPOSITORY with $GITHUB_TOKEN, and exits with the gate's exit code, so that the
step fails exactly when the gate did. Posting is a courtesy: a pull request from a fork
(whose token may not write), a missing token or a refused request is one line on stderr and
no comment, never another exit code. It imports the standard library and two small modules of
its own (the exit codes, the Markdown escaping), so the Action's last step costs next to nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path

from .errors import EXIT_NOT_COMPARED
from .markdown_text import md_text

MARKER = "<!-- chunkeval-gate -->"
# GitHub refuses a comment body longer than 65,536 characters.
MAX_BODY = 65_000
OUTCOMES = {0: "no regression", 1: "regression: the gate failed",
            EXIT_NOT_COMPARED: "no comparison could be made"}


def comment_body(verdict: str | None, exit_code: int, base: str | None) -> str:
    """The comment: the marker, one line with the outcome and the base, then the verdict
    (Markdown that chunkeval escaped already). The marker is taken out of the verdict, so
    that no other comment can ever look like this one."""
    outcome = OUTCOMES.get(exit_code, f"the gate could not run (pytest exit status {exit_code})")
    against = f" against `{md_text(base)}`" if base else ""
    head = f"{MARKER}\n**chunkeval**{against}: {outcome} (exit status {exit_code})\n\n"
    text = (verdict or "").replace(MARKER, "")
    if not text.strip():
        text = "No verdict was written; the job's log says why."
    if len(head) + len(text) > MAX_BODY:
        text = text[:MAX_BODY - len(head) - 80] + "\n\n… (cut here: the job summary has it all)"
    return head + text


class GitHub:
    """The three comment endpoints of GitHub's REST API this needs."""

    def __init__(self, api: str, repository: str, token: str):
        self.api, self.repository, self.token = api.rstrip("/"), repository, token

    def _call(self, method: str, path: str, body: dict | None = None):
        request = urllib.request.Request(
            f"{self.api}{path}", method=method,
            data=None if body is None else json.dumps(body).encode("utf-8"),
            headers={"Authorization": f"Bearer {self.token}",
                     "Accept": "application/vnd.github+json",
                     "X-GitHub-Api-Version": "2022-11-28",
                     "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as reply:
            return json.loads(reply.read().decode("utf-8") or "null")

    def comments(self, number: int) -> list[dict]:
        found, page = [], 1
        while True:
            batch = self._call("GET", f"/repos/{self.repository}/issues/{number}/comments"
                                      f"?per_page=100&page={page}")
            found += batch
            if len(batch) < 100:
                return found
            page += 1

    def create(self, number: int, body: str) -> dict:
        return self._call("POST", f"/repos/{self.repository}/issues/{number}/comments",
                          {"body": body})

    def update(self, comment_id: int, body: str) -> dict:
        return self._call("PATCH", f"/repos/{self.repository}/issues/comments/{comment_id}",
                          {"body": body})


def post(github: GitHub, number: int, body: str) -> str:
    """Update the comment holding the marker, or create it; what was done, in a word."""
    mine = [c for c in github.comments(number) if MARKER in (c.get("body") or "")]
    if mine:
        github.update(mine[0]["id"], body)
        return f"updated comment {mine[0]['id']}"
    return f"created comment {github.create(number, body)['id']}"


def pull_request(event_path: str | None) -> dict | None:
    if not event_path or not Path(event_path).is_file():
        return None
    event = json.loads(Path(event_path).read_text(encoding="utf-8"))
    return event.get("pull_request")


def from_a_fork(pr: dict) -> bool:
    head = ((pr.get("head") or {}).get("repo") or {}).get("full_name")
    base = ((pr.get("base") or {}).get("repo") or {}).get("full_name")
    return head != base


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chunkeval.pr_comment",
                                     description="post or update the one chunkeval comment on "
                                                 "the pull request, then exit with the gate's "
                                                 "exit code")
    parser.add_argument("--verdict", required=True, metavar="FILE",
                        help="the Markdown verdict pytest wrote (--chunkeval-markdown)")
    parser.add_argument("--exit-code", required=True, type=int, metavar="N",
                        help="pytest's exit status, passed through as this command's")
    parser.add_argument("--base", default=None, metavar="REV", help="the base compared with")
    args = parser.parse_args(argv)
    verdict_file = Path(args.verdict)
    verdict = verdict_file.read_text(encoding="utf-8") if verdict_file.is_file() else None
    pr = pull_request(os.environ.get("GITHUB_EVENT_PATH"))
    token = os.environ.get("GITHUB_TOKEN", "")
    if pr is None:
        print("chunkeval: not a pull request: no comment (the verdict is in the job summary)",
              file=sys.stderr)
    elif from_a_fork(pr) or not token:
        print("chunkeval: the token may not write to this pull request (a fork's, or none "
              "given): no comment; the verdict is in the job summary", file=sys.stderr)
    else:
        github = GitHub(os.environ.get("GITHUB_API_URL", "https://api.github.com"),
                        os.environ["GITHUB_REPOSITORY"], token)
        try:
            done = post(github, int(pr["number"]), comment_body(verdict, args.exit_code,
                                                                args.base))
            print(f"chunkeval: {done} on pull request #{pr['number']}", file=sys.stderr)
        except (urllib.error.URLError, OSError, ValueError, KeyError) as e:
            reason = f"HTTP {e.code}" if isinstance(e, urllib.error.HTTPError) else str(e)
            print(f"chunkeval: could not comment on pull request #{pr.get('number')} "
                  f"({reason}): no comment; the verdict is in the job summary",
                  file=sys.stderr)
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main())
