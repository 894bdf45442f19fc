"""Sets too small to gate: measured and shown, never gated as if they could catch a drop.

An outside project with the built section titles (72 queries of 24 generated pages) and a
file of 4 questions of its own: the 4-question set's items are skipped with the reason,
the summary and the report say it is not gated, and `compare` picks the larger set.
"""

import json
import sys

import pytest

from chunkeval.cli import main
from chunkeval.gate.power import MIN_DETECTABLE, set_power, smallest_drop
from helpers import INNER, NO_LANGSMITH, import_what_inner_runs_import

import_what_inner_runs_import()

pytest_plugins = ["pytester"]


def _questions(docs) -> list[dict]:
    from chunkeval.corpus import load_corpus
    corpus = load_corpus(str(docs))
    out = []
    for i, d in enumerate(corpus.documents[:4]):
        words = d.text.split()
        out.append({"id": f"q{i}", "query": " ".join(reversed(words[3:9])), "doc": d.id,
                    "answer": " ".join(words[10:30])})
    return out


@pytest.fixture
def project(docs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    lines = "\n".join(json.dumps(q) for q in _questions(docs)) + "\n"
    (tmp_path / "mine.jsonl").write_text(lines, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.chunkeval]\ncorpus = "docs"\nquery_sets = ["mine.jsonl", "section-titles"]\n'
        'reference = ["fixed-400", "fixed-200"]\nretrievers = ["bm25"]\n', encoding="utf-8")
    return tmp_path


def test_the_smallest_caught_drop_follows_size_and_spread():
    assert smallest_drop(4, 0.4, alpha=0.05) > 4 * smallest_drop(100, 0.4, alpha=0.05)
    assert smallest_drop(100, 0.2, alpha=0.05) == pytest.approx(
        smallest_drop(100, 0.4, alpha=0.05) / 2)
    # a spread measured on 4 queries cannot make them fit to gate
    assert not set_power("tiny", 4, alpha=0.05, sd=0.01).gates
    assert set_power("big", 700, alpha=0.05, family=40).gates
    needed = set_power("x", 10, alpha=0.05, family=8).queries_needed
    assert set_power("x", needed, alpha=0.05, family=8).smallest_drop <= MIN_DETECTABLE
    assert set_power("x", needed - 1, alpha=0.05, family=8).smallest_drop > MIN_DETECTABLE


def test_a_four_question_set_is_reported_not_gated(project, pytester, capsys, monkeypatch):
    args = ["-p", "no:cacheprovider", "-p", "no:randomly", *NO_LANGSMITH,
            str(project / "pyproject.toml")]
    assert pytester.runpytest_inprocess(*INNER, "--update-baselines", *args).ret == 0
    result = pytester.runpytest_inprocess(*INNER, *args, "-rs")
    assert result.ret == 0
    out = result.stdout.str()
    outcomes = result.parseoutcomes()
    assert outcomes["skipped"] == 2 and outcomes["passed"] >= 2  # 2 strategies x bm25
    result.stdout.fnmatch_lines([
        "not gated: query set 'mine' is too small to gate*",
        "SKIPPED *pyproject.toml:1: query set 'mine' is too small to gate: 4 queries catch "
        "only drops of*"])
    # the summary counts the cases of the set that gates; the set that does not is said apart
    table = out.split("not gated:")[0].split("chunkeval ===")[-1]
    assert "2 of 2 cases ok" in table and "mine" not in table

    monkeypatch.chdir(project)  # pytester has moved to its own folder
    capsys.readouterr()
    assert main(["corpus", "info"]) == 0
    info = capsys.readouterr().out
    assert "mine: 4 queries from 4 documents" in info
    assert "NOT GATED: query set 'mine' is too small" in info
    assert "section-titles: 72 queries" in info and "gates: catches a drop of" in info

    assert main(["queries", "info", "mine.jsonl"]) == 0
    assert "NOT GATED: query set 'mine' is too small" in capsys.readouterr().out
    assert main(["compare", "fixed-400", "fixed-200"]) == 0
    assert "query set section-titles (72 queries" in capsys.readouterr().out

    assert main(["run", "--out", "out"]) == 0
    capsys.readouterr()
    report = (project / "out" / "report.md").read_text(encoding="utf-8")
    assert report.index("## section-titles") < report.index("## mine")
    assert "## mine (4 queries) — not gated" in report
    assert main(["compare", "fixed-400", "fixed-200", "--results", "out"]) == 0
    assert "query set section-titles" in capsys.readouterr().out


def test_init_says_which_sets_cannot_gate(tmp_path, monkeypatch, capsys):
    from helpers import write_manuals
    write_manuals(tmp_path / "docs", parts=1)
    monkeypatch.chdir(tmp_path)
    assert main(["init"]) == 0
    out = capsys.readouterr().out
    said = "section-titles: 3 queries; measured and shown, does not gate: catches only drops"
    assert f"query set {said}" in out
    # the run uses the set anyway, so the file names it, saying the same as the terminal
    section = (tmp_path / "pyproject.toml").read_text(encoding="utf-8")
    assert '\nquery_sets = ["section-titles"]\n' in section and f"#   {said}" in section
    assert "no built-in query set can gate on these documents" in out


def test_the_baseline_spread_is_the_median_of_the_entries_spreads_without_numpy_ma():
    import subprocess

    code = ("import sys\nfrom chunkeval.gate.power import coverage_sd\n"
            "print(coverage_sd([[0, 1], [0, 0.5, 1], [1], [0.25, 0.75, 0.25, 0.75]]), "
            "'numpy.ma' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    import numpy as np

    spreads = [np.std([0, 1]), np.std([0, 0.5, 1]), np.std([0.25, 0.75, 0.25, 0.75])]
    assert out == [repr(float(np.median(spreads))), "False"]  # numpy.ma: no part of a gate
