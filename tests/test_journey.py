"""A team adopts chunkeval in its own repository, as the README's "Use it in your repository"
tells it to: its own HTML documents, one `[tool.chunkeval]` section, a splitter module at the
root, and no test files. Every step is a fresh process in that folder, with no path setting,
using the chunkeval this suite runs on."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import chunkeval
from helpers import NO_LANGSMITH, corpus_pages, project_toml

PARAPACK = '''\
"""The team's splitter: whole blocks packed into chunks of at most SIZE characters."""
from chunkeval.model import Chunk

SIZE = {size}
PIECE = {piece}  # when set, every chunk is cut into pieces this long


def parapack(doc):
    chunks = _packed(doc)
    if not PIECE:
        return chunks
    return [Chunk(doc.id, s, min(s + PIECE, c.end), doc.text[s:min(s + PIECE, c.end)])
            for c in chunks for s in range(c.start, c.end, PIECE)]


def _packed(doc):
    chunks, start, end = [], None, None
    for b in doc.blocks:
        if start is not None and b.end - start > SIZE:
            chunks.append(Chunk(doc.id, start, end, doc.text[start:end]))
            start = None
        if start is None:
            start = b.start
        end = b.end
    if start is not None:
        chunks.append(Chunk(doc.id, start, end, doc.text[start:end]))
    return chunks
'''

PYPROJECT = project_toml("team-docs", splitters=["parapack:parapack"], retrievers=["bm25"])


@pytest.fixture
def team(tmp_path: Path) -> Path:
    root = tmp_path / "team"
    (root / "docs").mkdir(parents=True)
    for name, text in corpus_pages().items():
        (root / "docs" / name).write_text(text, encoding="utf-8")
    (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    write_parapack(root, 400)
    return root


def write_parapack(root: Path, size: int, piece: int = 0) -> None:
    (root / "parapack.py").write_text(PARAPACK.format(size=size, piece=piece), encoding="utf-8")


def sh(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "CI")}
    env["CHUNKEVAL_CACHE"] = str(root.parent / "cache")
    # the chunkeval this suite runs on, not whichever one is installed; the project's own
    # modules still import from its folder with no path setting
    env["PYTHONPATH"] = str(Path(chunkeval.__file__).resolve().parent.parent)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # parapack.py is rewritten within a second
    return subprocess.run([sys.executable, "-m", *args], cwd=root, env=env, text=True,
                          capture_output=True, timeout=600)


def pytest_in(root: Path, *args: str) -> subprocess.CompletedProcess:
    return sh(root, "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", *NO_LANGSMITH, "-rf",
              *args)


def collected(out: str) -> set[str]:
    return set(re.findall(r"pyproject\.toml::(\S+)", out))


def test_the_journey_of_a_team_adopting_chunkeval(team: Path):
    info = sh(team, "chunkeval", "corpus", "info")
    assert info.returncode == 0, info.stderr
    fingerprint = re.search(r"corpus (\w+)\)", info.stdout).group(1)
    assert re.search(r"^corpus\s+docs \(40 documents", info.stdout, re.M), info.stdout

    first = pytest_in(team, "--update-baselines", "-v")
    assert first.returncode == 0, first.stdout + first.stderr
    items = collected(first.stdout)
    strategies = ("parapack", "fixed-400", "structure-400")
    assert {f"test_recall[{s}-bm25-section-titles]" for s in strategies} <= items
    # the splitter's invariants; the built-in ones' are chunkeval's own tests
    assert {i for i in items if i.startswith("test_invariants")} == {"test_invariants[parapack]"}
    assert "test_cut_rate[structure-400-section-titles]" in items
    assert len(items) == 5, items  # no other built-in strategy is gated here
    assert f"corpus docs (fingerprint {fingerprint})" in first.stdout
    assert json.loads((team / "baselines" / "docs.json").read_text())["corpus"]["name"] == "docs"

    again = pytest_in(team)
    assert again.returncode == 0, again.stdout
    assert "5 passed" in again.stdout

    write_parapack(team, 400, piece=60)  # the same name, chunks cut into 60-char pieces
    worse = pytest_in(team)
    assert worse.returncode == 1
    assert re.search(r"^FAILED pyproject\.toml::test_recall\[parapack-bm25-section-titles\]",
                     worse.stdout, re.M), worse.stdout
    assert re.search(r"strategy 'parapack', retriever 'bm25', query set 'section-titles' "
                     r"regressed on corpus 'docs' \(\w+\):\n\s+recall_at_k: [0-9.]+% vs baseline "
                     r"[0-9.]+% \(diff -[0-9.]+ points", worse.stdout), worse.stdout
    assert "consider `pytest --update-baselines`" not in worse.stdout  # never for a regression
    listed = re.findall(r"^  '.*' \(gold page\d+\.html\): [0-9.]+ -> [0-9.]+ \(-[0-9.]+\)$",
                        worse.stdout, re.M)
    assert "the 5 queries that lost most" in worse.stdout and len(listed) == 5, worse.stdout

    write_parapack(team, 410)  # a few boundaries move: harmless
    harmless = pytest_in(team)
    assert harmless.returncode == 0, harmless.stdout

    run = sh(team, "chunkeval", "run", "--out", "results", "--jobs", "1")
    assert run.returncode == 0, run.stderr
    assert f"corpus docs (fingerprint {fingerprint}" in run.stdout
    results = json.loads((team / "results" / "results.json").read_text(encoding="utf-8"))
    assert results["corpus"]["name"] == "docs"
    assert set(results["strategies"]) == set(strategies)

    compare = sh(team, "chunkeval", "compare", "parapack", "fixed-400")
    assert compare.returncode == 0, compare.stderr
    assert f"corpus docs (fingerprint {fingerprint}" in compare.stdout


def test_problems_in_a_query_file_show_in_the_summary_and_strict_fails(team: Path):
    page = corpus_pages()["page00.html"]
    answer = re.search(r"</h2>\n<p>(.{60})", page).group(1)
    good = {"id": "a", "query": "the first section of page 0", "doc": "page00.html",
            "answer": answer}
    lines = [json.dumps(good), "not json", json.dumps({"id": "b", "query": "x"}),
             json.dumps({**good, "id": "c", "doc": "missing.html"})]
    (team / "questions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    text = (team / "pyproject.toml").read_text(encoding="utf-8")
    (team / "pyproject.toml").write_text(
        text.replace('query_sets = ["section-titles"]',
                     'query_sets = ["section-titles", "questions.jsonl"]'), encoding="utf-8")
    result = pytest_in(team, "--update-baselines", "-k", "recall and parapack")
    assert result.returncode == 0, result.stdout
    problems = re.findall(r"^problem: .*questions\.jsonl:(\d+): .*$", result.stdout, re.M)
    assert problems == ["2", "3", "4"], result.stdout
    strict = pytest_in(team, "--update-baselines", "-k", "recall and parapack",
                       "--chunkeval-strict")
    assert strict.returncode == 1, strict.stdout
    assert "strict: 3 problem(s) in the input change what is measured" in strict.stdout


def test_a_project_with_testpaths_still_gets_the_items(team: Path):
    (team / "tests").mkdir()
    (team / "tests" / "test_unit.py").write_text("def test_one():\n    pass\n")
    text = (team / "pyproject.toml").read_text(encoding="utf-8")
    (team / "pyproject.toml").write_text(
        text + '\n[tool.pytest.ini_options]\ntestpaths = ["tests"]\n', encoding="utf-8")
    result = pytest_in(team, "--collect-only", "-q")
    assert "tests/test_unit.py::test_one" in result.stdout
    assert "pyproject.toml::test_recall[parapack-bm25-section-titles]" in result.stdout
    # naming a test file runs that file only
    only = pytest_in(team, "--collect-only", "-q", "tests/test_unit.py")
    assert "pyproject.toml::" not in only.stdout
    # the mode of --update-baselines is optional: a path after it stays a path
    update = pytest_in(team, "--update-baselines", "tests/test_unit.py")
    assert update.returncode == 0, update.stdout + update.stderr
    assert "1 passed" in update.stdout
    bad = pytest_in(team, "--update-baselines=sometimes")
    assert bad.returncode == 4 and "not a mode (all, failing, replace)" in bad.stderr


def test_init_names_the_sets_it_writes_and_its_experiment_fails_the_gate(tmp_path: Path):
    root = tmp_path / "site"
    (root / "docs").mkdir(parents=True)
    for name, text in corpus_pages().items():
        (root / "docs" / name).write_text(text, encoding="utf-8")
    (root / "pyproject.toml").write_text('[project]\nname = "site"\n', encoding="utf-8")
    init = sh(root, "chunkeval", "init", "--example-splitter")
    assert init.returncode == 0, init.stderr
    said = re.search(r"^query set section-titles: 120 queries; gates: catches a drop of \d+ "
                     r"points", init.stdout, re.M)
    assert said, init.stdout
    text = (root / "pyproject.toml").read_text(encoding="utf-8")
    assert '\nquery_sets = ["section-titles"]\n' in text and said.group(0)[10:] in text
    size = re.search(r"set SIZE = (\d+) in chunking\.py and run `pytest`", init.stdout)
    assert size, init.stdout
    first = pytest_in(root, "--update-baselines")
    assert first.returncode == 0, first.stdout + first.stderr
    splitter = root / "chunking.py"
    splitter.write_text(re.sub(r"^SIZE = \d+", f"SIZE = {size.group(1)}",
                               splitter.read_text(encoding="utf-8"), flags=re.M),
                        encoding="utf-8")
    tried = pytest_in(root)
    assert tried.returncode == 1, tried.stdout
    assert re.search(r"^FAILED pyproject\.toml::test_recall\[split-bm25-section-titles\]",
                     tried.stdout, re.M), tried.stdout


def test_the_example_splitter_cuts_long_prose_and_keeps_tables_whole(tmp_path: Path):
    from chunkeval.cli.init import EXAMPLE_SPLITTER
    from chunkeval.corpus.html import parse_html

    namespace: dict = {}
    exec(compile(EXAMPLE_SPLITTER, "chunking.py", "exec"), namespace)
    namespace["SIZE"] = 100
    rows = "".join(f"<tr><td>row {i}</td><td>{'cell text ' * 5}</td></tr>" for i in range(6))
    doc, _ = parse_html(("<html><body><h1>T</h1><p>" + "word " * 100 + "</p><table>" + rows
                         + "</table></body></html>").encode(), "p.html")
    chunks = namespace["split"](doc)
    table = next(b for b in doc.blocks if b.kind == "table")
    assert table.end - table.start > 100
    assert any(c.start == table.start and c.end == table.end for c in chunks)
    prose = [c for c in chunks if c.end <= table.start]
    assert len(prose) >= 4 and max(c.end - c.start for c in prose) <= 100
