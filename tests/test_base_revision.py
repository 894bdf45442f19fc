"""The gate on a living corpus: a team's repository, made here with git, whose documents
change on a branch. Plain pytest passes a docs-only change without re-baselining, gates a
docs-and-splitter change against the baseline's commit, and `--chunkeval-base main` gates
the branch's code against main's on the branch's documents.

The current side runs in this process (pytester); the base side is a child process, as it
always is. The repository and its baselines are made once for the module (recorded by a
session in this process) and copied for each test, with the cache the recording filled.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from chunkeval import cli, strategies
from chunkeval.cli.init import EXAMPLE_SPLITTER
from chunkeval.errors import EXIT_NOT_COMPARED, BaselineError
from chunkeval.gate import base

from helpers import NO_LANGSMITH, corpus_pages, import_what_inner_runs_import

import_what_inner_runs_import()
pytest_plugins = ["pytester"]

PYPROJECT = '''\
[tool.chunkeval]
corpus = "docs"
query_sets = ["section-titles"]
splitters = ["team:split"]
reference = []
retrievers = ["bm25"]
k = 1
invariant_examples = 0
'''


GATE = ("-p", "no:cacheprovider", "-p", "no:randomly", *NO_LANGSMITH, "-rf",
        "-W", "ignore::pytest.PytestAssertRewriteWarning")


def questions(docs: Path) -> list[str]:
    """A question a section, its title's words swapped, answered by its first paragraph."""
    lines = []
    for page in sorted(docs.glob("*.html")):
        text = page.read_text(encoding="utf-8")
        for i, (a, b, para) in enumerate(re.findall(r"<h[23]>(\w+) (\w+)</h[23]>\n<p>(.{80})",
                                                    text)):
            lines.append(json.dumps({"id": f"{page.stem}-{i}", "query": f"{b} {a.lower()}",
                                     "doc": page.name, "answer": para}) + "\n")
    return lines


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def write_team(root: Path, size: int) -> None:
    """The splitter `chunkeval init --example-splitter` writes, packing blocks up to SIZE."""
    (root / "team.py").write_text(EXAMPLE_SPLITTER.replace("SIZE = 800", f"SIZE = {size}"),
                                  encoding="utf-8")
    sys.modules.pop("team", None)


# what a gate run must not take from the suite's own environment
NOT_PASSED = ("CI", "PYTEST_ADDOPTS", "GITHUB_STEP_SUMMARY")


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """main: 40 pages, their questions, the team's splitter (size 800), and its baselines,
    recorded once for the module in `made/repo` (`pytest --update-baselines` there), with
    the cache that run filled in `made/cache`: each test gets its own copy of both
    (`repo`)."""
    made = tmp_path_factory.mktemp("team")
    root = made / "repo"
    docs = root / "docs"
    docs.mkdir(parents=True)
    for name, text in corpus_pages().items():
        (docs / name).write_text(text, encoding="utf-8")
    (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    write_team(root, 800)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "team@example.org")
    git(root, "config", "user.name", "team")
    git(root, "add", ".")
    git(root, "commit", "-qm", "docs and splitter")
    # a session of its own in this process, as pytester's inner runs are: what it imported
    # (the team's module) is dropped after it, and the registries are the session's own
    with pytest.MonkeyPatch.context() as monkeypatch, redirect_stdout(io.StringIO()) as out:
        monkeypatch.chdir(root)
        monkeypatch.setenv("CHUNKEVAL_CACHE", str(made / "cache"))
        monkeypatch.setattr(sys, "dont_write_bytecode", True)
        for name in NOT_PASSED:
            monkeypatch.delenv(name, raising=False)
        imported = set(sys.modules)
        try:
            status = pytest.main([*GATE, "--update-baselines", "--basetemp",
                                  str(made / "basetemp")])
        finally:
            for name in set(sys.modules) - imported:
                del sys.modules[name]
    assert status == 0, out.getvalue()
    git(root, "add", "baselines")
    git(root, "commit", "-qm", "baselines")
    return made


@pytest.fixture
def repo(made: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
         tmp_path_factory: pytest.TempPathFactory) -> pytest.Pytester:
    """A copy of `made`'s repository as the pytester's folder, and of its cache as this
    test's own."""
    cache = tmp_path_factory.mktemp("cache")
    shutil.copytree(made / "cache", cache, dirs_exist_ok=True)
    shutil.copytree(made / "repo", pytester.path, dirs_exist_ok=True)
    monkeypatch.setenv("CHUNKEVAL_CACHE", str(cache))
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")  # team.py is rewritten within a second
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    for name in NOT_PASSED:
        monkeypatch.delenv(name, raising=False)
    sys.modules.pop("team", None)
    registered = set(strategies.names())
    yield pytester
    for name in set(strategies.names()) - registered:
        strategies.unregister(name)


def gate(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    sys.modules.pop("team", None)
    return pytester.runpytest_inprocess(*GATE, *args)


def edit_docs(root: Path) -> None:
    """On a branch: a sentence added to one page, a page added, a page removed."""
    git(root, "checkout", "-qb", "docs-week")
    page = root / "docs" / "page03.html"
    page.write_text(page.read_text(encoding="utf-8").replace(
        "</body>", "<p>One more sentence about nothing in particular.</p>\n</body>"),
        encoding="utf-8")
    (root / "docs" / "page40.html").write_text(corpus_pages(41, seed=9)["page40.html"],
                                               encoding="utf-8")
    (root / "docs" / "page39.html").unlink()
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a week of docs")


def test_a_docs_change_passes_and_a_splitter_change_with_it_is_gated_against_the_base(
        repo, capsys, monkeypatch):
    root = repo.path
    recorded = json.loads((root / "baselines" / "docs.json").read_text(encoding="utf-8"))
    main = git(root, "rev-parse", "main")
    assert recorded["commit"] == git(root, "rev-parse", "main~1")  # where it was measured
    assert len(recorded["documents"]) == 40
    edit_docs(root)

    summary = root / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    docs_only = gate(repo)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY")
    out = docs_only.stdout.str()
    assert docs_only.ret == 0, out
    text = summary.read_text(encoding="utf-8")  # the job summary says so too
    assert text.startswith("## chunkeval: no regression: the corpus changed, the chunking did "
                           "not\n\nAgainst baseline baselines/docs.json, on this branch's 40 "
                           "documents and "), text
    assert re.search(r"^corpus changed in 3 of 41 documents \(1 edited, 1 added, 1 removed\); "
                     r"chunking unchanged on the other 38; re-baseline when convenient\.\n\n"
                     r"\| strategy .*\n.*\n\| split \| bm25 \| section-titles \| recall_at_k \| "
                     r"[\d.]+ \| [\d.]+ \|$", text, re.M), text
    assert re.search(r"^corpus changed in 3 of 41 documents \(1 edited, 1 added, 1 removed\); "
                     r"chunking unchanged on the other 38; re-baseline when convenient; numbers "
                     r"now, as information:\n  split bm25 section-titles: recall_at_k [\d.]+ "
                     r"\(recorded [\d.]+\), budget_recall [\d.]+ \(recorded [\d.]+\)$", out,
                     re.M), out

    write_team(root, 266)  # the splitter's size cut to a third, with the same edits
    worse = gate(repo)
    out = worse.stdout.str()
    assert worse.ret == 1, out
    # the commit the baseline file was committed in: the code that made it
    assert (f"strategy 'split', retriever 'bm25', query set 'section-titles' regressed against the "
            f"baseline's commit {main[:7]}") in out
    assert re.search(rf"^against the baseline's commit {main[:7]}, on this "
                     r"branch's 40 documents and \d+ questions$", out, re.M), out

    against_main = gate(repo, "--chunkeval-base", "main")
    out = against_main.stdout.str()
    assert against_main.ret == 1, out
    assert f"strategy 'split', retriever 'bm25', query set 'section-titles' regressed against " \
           f"main at {main[:7]}" in out
    assert re.search(rf"^against main at {main[:7]}, on this branch's 40 documents", out, re.M)
    sys.modules.pop("team", None)
    assert cli.main(["compare", "--base", "main"]) == 1  # the same gate, from the command line
    said = capsys.readouterr().out
    assert re.search(rf"^against main at {main[:7]}, on this branch's 40 documents", said, re.M)
    assert re.search(r"^split +bm25 +section-titles .* regressed \(recall_at_k(, \w+)*\)$", said, re.M)

    write_team(root, 780)  # a harmless change
    harmless = gate(repo, "--chunkeval-base", "main")
    assert harmless.ret == 0, harmless.stdout.str()
    sys.modules.pop("team", None)
    capsys.readouterr()
    assert cli.main(["compare", "--base", "main"]) == 0
    said = capsys.readouterr().out  # compare lists the ok rows too: it has no -v to ask
    assert re.search(r"^split +bm25 +section-titles .* ok$", said, re.M), said
    assert "-v lists them" not in said


def test_questions_on_one_side_only_are_counted_not_compared(repo):
    root = repo.path
    lines = questions(root / "docs")
    (root / "questions.jsonl").write_text("".join(lines), encoding="utf-8")
    (root / "pyproject.toml").write_text(PYPROJECT.replace('"section-titles"',
                                                           '"questions.jsonl"'),
                                         encoding="utf-8")
    assert gate(repo, "--update-baselines").ret == 0
    extra = json.loads(lines[0]) | {"id": "extra"}
    (root / "questions.jsonl").write_text("".join(lines[2:]) + json.dumps(extra) + "\n",
                                          encoding="utf-8")
    result = gate(repo)
    out = result.stdout.str()
    assert result.ret == 0, out
    assert (f"split bm25 questions: compared on the {len(lines) - 2} questions both sides have "
            "(1 only now, 2 only on the other side)") in out


def test_a_new_splitter_is_reported_new_and_an_old_one_failing_names_the_revision(repo):
    root = repo.path
    text = (root / "pyproject.toml").read_text(encoding="utf-8")
    (root / "pyproject.toml").write_text(text.replace('reference = []',
                                                      'reference = ["fixed-400"]'),
                                         encoding="utf-8")
    result = gate(repo, "--chunkeval-base", "main")
    out = result.stdout.str()
    assert result.ret == 0, out
    assert re.search(r"^new since main at \w{7} \(not gated\): fixed-400$", out, re.M), out
    git(root, "commit", "-qam", "fixed-400 as a reference")
    # chunkeval's own strategy on both sides: compared, with this side's one result (-v: the
    # ok rows listed)
    result = gate(repo, "--chunkeval-base", "HEAD", "-v")
    out = result.stdout.str()
    assert result.ret == 0 and "new since" not in out, out
    assert re.search(r"^fixed-400 +bm25 +section-titles .* \+0\.0 \[\+0\.0, \+0\.0\] .* ok$",
                     out, re.M), out
    (root / "pyproject.toml").write_text(text, encoding="utf-8")  # and gone again
    result = gate(repo, "--chunkeval-base", "HEAD")
    out = result.stdout.str()
    assert result.ret == 0, out
    assert re.search(r"^removed since HEAD at \w{7}: fixed-400$", out, re.M), out

    (root / "team.py").write_text("def split(doc):\n    raise ValueError('broken')\n")
    git(root, "commit", "-qam", "broken splitter")
    write_team(root, 800)
    result = gate(repo, "--chunkeval-base", "HEAD")
    out = result.stdout.str()
    assert result.ret == EXIT_NOT_COMPARED, out
    assert re.search(r"at HEAD at \w{7} it failed, so there is nothing to compare with: "
                     r"strategy 'split' failed on page\d\d\.html: split\(\) raised ValueError",
                     out), out


def test_a_strategy_new_since_the_baseline_on_changed_docs_is_said_to_have_no_entry(repo):
    # the docs changed and a strategy was added (as `sweep --adopt` does): the new one has no
    # entry to compare with, which is what is said, not that the corpus changed
    root = repo.path
    edit_docs(root)
    text = (root / "pyproject.toml").read_text(encoding="utf-8")
    (root / "pyproject.toml").write_text(text.replace('reference = []',
                                                      'reference = ["fixed-400"]'),
                                         encoding="utf-8")
    result = gate(repo)
    out = result.stdout.str()
    assert result.ret == EXIT_NOT_COMPARED, out
    assert "no baseline entry for strategy 'fixed-400', retriever 'bm25', query set " \
           "'section-titles'" in out, out
    assert "--chunkeval-base REV`, which reports a new strategy as new" in out, out
    assert "the corpus changed" not in out.split("short test summary")[-1], out


def test_base_revision_errors_are_one_line(repo, tmp_path, capsys):
    with pytest.raises(BaselineError, match=r"not a git repository"):
        base.resolve(tmp_path, "main")
    with pytest.raises(BaselineError, match=r"base revision 'nope': unknown in .*; a shallow"):
        base.resolve(repo.path, "nope")
    git(repo.path, "checkout", "-qb", "feature")
    git(repo.path, "commit", "-q", "--allow-empty", "-m", "on a branch")
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", "--branch", "feature",
        f"file://{repo.path}", str(shallow))
    with pytest.raises(BaselineError) as e:
        base.resolve(shallow, "main")
    assert str(e.value) == (
        f"base revision 'main': unknown in {shallow} (a shallow clone); a shallow CI checkout "
        "needs the base fetched: `fetch-depth: 0` on actions/checkout in GitHub Actions, or "
        "`git fetch origin main`")
    usage = gate(repo, "--chunkeval-base", "no-such-branch")
    assert usage.ret == pytest.ExitCode.USAGE_ERROR
    assert "chunkeval: base revision 'no-such-branch': unknown in" in usage.stderr.str()
    # the revision's configuration names a module it does not have; this side's is fine
    (repo.path / "pyproject.toml").write_text(PYPROJECT.replace("team:split", "gone:split"),
                                              encoding="utf-8")
    git(repo.path, "commit", "-qam", "names a module that is not there")
    (repo.path / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    missing = gate(repo, "--chunkeval-base", "HEAD")
    out = missing.stdout.str()
    assert missing.ret == EXIT_NOT_COMPARED, out
    said = [x for x in out.splitlines() if x.startswith("chunkeval: base revision HEAD")]
    assert len(said) == 2 and said[0] == said[1], out  # the recall and the cut-rate item
    assert said[0].endswith(": pyproject.toml [tool.chunkeval] splitters: splitter "
                            "'gone:split': cannot import 'gone' (No module named 'gone')")
    sys.modules.pop("team", None)
    capsys.readouterr()  # what the pytest runs above wrote
    assert cli.main(["compare", "--base", "HEAD"]) == EXIT_NOT_COMPARED
    assert capsys.readouterr().err.startswith("chunkeval: not compared: base revision HEAD at ")


def test_a_shallow_clone_does_not_name_its_oldest_commit_as_the_baselines(repo, tmp_path):
    # the clone's only commit seems to add baselines/docs.json: it is not the commit that
    # made them, and taking it would gate a branch's splitter against itself
    root = repo.path
    git(root, "checkout", "-qb", "feature")
    write_team(root, 266)
    git(root, "commit", "-qam", "a third of the size")
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", "--branch", "feature", f"file://{root}",
        str(shallow))
    assert base.committed_with(root / "baselines" / "docs.json") == git(
        root, "rev-parse", "main")
    assert base.committed_with(shallow / "baselines" / "docs.json") is None


def test_a_corpus_and_chunking_change_without_the_baselines_commit_exits_6_saying_what_to_run(
        repo, monkeypatch):
    root = repo.path
    edit_docs(root)
    path = root / "baselines" / "docs.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["commit"] = "0" * 40  # a commit this repository does not have
    path.write_text(json.dumps(data), encoding="utf-8")  # and the file is not as committed
    write_team(root, 266)
    summary = root / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = gate(repo)
    out = result.stdout.str()
    assert result.ret == EXIT_NOT_COMPARED, out
    assert ("baselines/docs.json: the corpus changed in 3 of 41 documents and strategy 'split' "
            "now chunks the unchanged ones differently, so the recorded numbers are not "
            "comparable, and its commit 0000000 is not in this repository: gate against the "
            "base branch with `pytest --chunkeval-base REV` (e.g. origin/main)") in out
    main = git(root, "rev-parse", "main")[:7]
    against = gate(repo, "--chunkeval-base", "main")
    assert against.ret == 1
    text = summary.read_text(encoding="utf-8")
    assert re.search(rf"^## chunkeval: 1 of 1 cases regressed\n\nAgainst main at {main}, on "
                     r"this branch's 40 documents and \d+ questions\.$", text, re.M), text


WORDS = '''\
import zlib

import numpy as np


def words(texts):
    """Bag of words hashed into 256 dimensions."""
    out = np.zeros((len(texts), 256), dtype=np.float32)
    for i, text in enumerate(texts):
        for w in text.lower().split():
            out[i, zlib.crc32(w.encode()) % 256] += 1.0
    return out


words.version = "{version}"
'''


def test_a_retriever_of_the_team_with_a_new_version_is_gated_against_the_base_not_refused(repo):
    root = repo.path
    (root / "words.py").write_text(WORDS.format(version="1"), encoding="utf-8")
    (root / "pyproject.toml").write_text(PYPROJECT.replace(
        'retrievers = ["bm25"]', 'retrievers = ["words:words"]'), encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the team's retriever")
    (root / "words.py").write_text(WORDS.format(version="2"), encoding="utf-8")
    sys.modules.pop("words", None)
    # without the result cache, whose entries are keyed by what a retriever computes
    result = gate(repo, "--chunkeval-base", "HEAD", "--chunkeval-no-result-cache", "-v")
    out = result.stdout.str()
    assert result.ret == 0, out
    assert re.search(r"^split +words +section-titles .* \+0\.0 \[\+0\.0, \+0\.0\] .* ok$", out,
                     re.M), out
