"""chunkeval export: each case's ranking and graded gold, read back by ranx (where it is
installed) and by a few lines of TREC reading, give chunkeval's MRR@k."""

from __future__ import annotations

import json
import sys

import pytest

from chunkeval.cli import main
from chunkeval.export import relevance
from chunkeval.session import read_results
from helpers import run_on_pages_with_spans


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A run on 24 generated pages (text gold and positional gold) and its corpus dump."""
    root = tmp_path_factory.mktemp("export")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CHUNKEVAL_CACHE", str(root / "cache"))
        docs, spans, _ = run_on_pages_with_spans(root, "fixed-200,structure-400")
        sets = ["--corpus", str(docs), "--queries", "section-titles", "--queries", str(spans)]
        assert main(["corpus", "info", *sets, "--dump", str(root / "corpus.jsonl")]) == 0
        yield root


def export(root, fmt: str):
    out = root / fmt
    assert main(["export", "--format", fmt, str(root / "out"),
                 "--dump", str(root / "corpus.jsonl"), "--out", str(out)]) == 0
    return out


def test_relevance_is_graded_and_any_gold_counts():
    assert [relevance(s) for s in (0.0, 1e-6, 0.16, 0.17, 0.5, 0.83, 0.84, 1.0)] == \
        [0, 1, 1, 1, 2, 2, 3, 3]


def test_trec_files_give_chunkeval_mrr(run):
    out = export(run, "trec")
    results = read_results(run / "out")
    k = results.settings.k
    assert len(results.results) == 8
    for r in results.results:
        folder = out / r.query_set / r.strategy
        rel = {}
        for line in (folder / "qrels.trec").read_text(encoding="utf-8").splitlines():
            qid, zero, doc, grade = line.split()
            assert zero == "0" and grade in "0123"
            rel[qid, doc] = int(grade)
        ranked: dict[str, list[tuple[int, float, str]]] = {}
        for line in (folder / f"{r.retriever}.trec").read_text(encoding="utf-8").splitlines():
            qid, q0, doc, rank, score, tag = line.split()
            assert q0 == "Q0" and tag == f"{r.strategy}.{r.retriever}"
            ranked.setdefault(qid, []).append((int(rank), float(score), doc))
        rr = []
        for q in r.per_query:
            rows = sorted(ranked[q.id], key=lambda x: -x[1])  # by score, as trec_eval does
            assert [x[0] for x in rows] == list(range(1, len(rows) + 1)) and len(rows) <= k
            assert [x[2] for x in rows] == [f"{d}:{a}:{b}" for d, a, b, _ in q.retrieved[:k]]
            first = next((i for i, x in enumerate(rows, 1) if rel[q.id, x[2]] >= 1), None)
            rr.append(1 / first if first else 0.0)
            assert rr[-1] == pytest.approx(q.rr)
        assert sum(rr) / len(rr) == pytest.approx(r.metrics["mrr_at_k"].value)


def test_ranx_reads_the_files_and_gets_chunkeval_mrr(run, monkeypatch):
    # ranx's functions, compiled by numba on first use, take half a minute of CPU on a fresh
    # machine for files of a few dozen queries: run as the Python they are written in (numba
    # decides at import), they read these in milliseconds and compute the same numbers.
    monkeypatch.setenv("NUMBA_DISABLE_JIT", "1")
    if "numba" in sys.modules:
        monkeypatch.setattr(sys.modules["numba"].config, "DISABLE_JIT", 1)
    ranx = pytest.importorskip("ranx")
    results = read_results(run / "out")
    positional = next(n for n in results.query_sets if n != "section-titles")
    cases = [("fixed-200", "bm25", "section-titles"), ("structure-400", "lsa", "section-titles"),
             ("structure-400", "bm25", positional)]
    seen = []
    for fmt, ext in (("ranx", "json"), ("trec", "trec")):
        out = export(run, fmt)
        for strategy, retriever, query_set in cases:
            folder = out / query_set / strategy
            qrels = ranx.Qrels.from_file(str(folder / f"qrels.{ext}"))
            ranking = ranx.Run.from_file(str(folder / f"{retriever}.{ext}"))
            mrr = ranx.evaluate(qrels, ranking, f"mrr@{results.settings.k}")
            row = results.row(query_set, strategy, retriever)
            assert mrr == pytest.approx(row.metrics["mrr_at_k"].value, abs=1e-12)
            seen.append(mrr)
    assert min(seen) < 1  # not every first chunk holds gold: the ranks matter


def test_a_dump_of_other_query_sets_is_refused(run, tmp_path, capsys):
    lines = (run / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    kept = [x for x in lines if json.loads(x).get("set") != "section-titles"]
    (tmp_path / "other.jsonl").write_text("\n".join(kept) + "\n", encoding="utf-8")
    assert main(["export", "--format", "trec", str(run / "out"), "--dump",
                 str(tmp_path / "other.jsonl"), "--out", str(tmp_path / "x")]) == 2
    assert "has no query set 'section-titles'" in capsys.readouterr().err
