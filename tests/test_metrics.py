"""Metrics on hand-made cases with values worked out by hand."""

import math

import numpy as np
import pytest

from chunkeval.scoring import (Scores, chunk_stats, coverage_of, cut_rate, overlap_stats,
                               score, shingles)
from chunkeval.model import Chunk, Corpus, Document, Part, Query, QuerySet

GOLD = "0123456789ABCDEF"  # 16 chars: 9 shingles of 8
NINTH = 1 / 9


def chunk(doc, text, start=0):
    return Chunk(doc, start, start + len(text), text)


def run(handed, rows, answers=(GOLD,), doc="a", **kw) -> Scores:
    queries = tuple(Query(f"q{i}", "question?", doc, a) for i, a in enumerate(answers))
    width = max(len(r) for r in rows) + 2
    ranking = np.full((len(rows), width), -1, dtype=np.int64)
    for i, r in enumerate(rows):
        ranking[i, :len(r)] = r
    return score(QuerySet("t", queries, Corpus("t", ())), handed, ranking, **kw)


def test_shingles():
    assert shingles("abc def\nghij") == {"abcdefgh", "bcdefghi", "cdefghij"}
    assert shingles("ab c") == {"abc"}  # shorter than 8: one shingle
    assert shingles("12345678") == {"12345678"}
    assert shingles("") == frozenset() and shingles(" \n\u3000") == frozenset()
    assert shingles("abcd", n=2) == {"ab", "bc", "cd"}


def test_coverage_of():
    assert coverage_of(GOLD, ["01234 56789", "89AB\nCDEF"]) == pytest.approx(4 * NINTH)
    # each text is shingled on its own: shingles across the cut are not found
    assert coverage_of(GOLD, ["0123456789AB", "CDEF"]) == pytest.approx(5 * NINTH)
    assert coverage_of(" ".join(GOLD), [GOLD]) == 1.0  # whitespace ignored
    assert coverage_of("は い", ["ええ、はい。"]) == 1.0  # short gold found inside a chunk
    assert coverage_of("はい", ["いいえ"]) == 0.0
    assert coverage_of("", ["anything"]) == 0.0
    assert coverage_of(GOLD, []) == 0.0


def test_coverage_counts_only_the_gold_document():
    handed = [chunk("b", GOLD), chunk("a", "01234 56789"), chunk("a", "89ABCDEF"),
              chunk("b", "x" * 50)]
    s = run(handed, [[0, 1, 2, 3], [0, 3]], answers=(GOLD, GOLD))
    assert s.coverage[0] == pytest.approx(4 * NINTH)
    assert s.coverage[1] == 0.0  # the whole gold text, but in another document
    assert s.doc_hit.tolist() == [True, False]
    assert run(handed, [[0, 1, 2]], k=2).coverage[0] == pytest.approx(3 * NINTH)


def test_short_gold_text():
    s = run([chunk("a", "ええ、 はい。")], [[0]], answers=("はい",))
    assert s.coverage[0] == 1.0 and s.complete[0]


def test_budget_takes_from_the_top_and_always_the_first():
    handed = [chunk("a", "z" * 1492 + "01234567"),  # 1500 chars
              chunk("a", "y" * 492 + "12345678"),  # 500: running total 2000, still taken
              chunk("a", "89ABCDEF"),  # 2008 > 2000: not taken
              chunk("a", "w" * 2500 + "6789ABCD")]
    s = run(handed, [[0, 1, 2], [3, 2]], answers=(GOLD, GOLD))
    assert s.coverage.tolist() == pytest.approx([3 * NINTH, 2 * NINTH])
    assert s.budget_coverage.tolist() == pytest.approx([2 * NINTH, 1 * NINTH])
    expected_curve = {500: 1, 1000: 1, 1500: 1, 2000: 2, 3000: 3, 4000: 3}
    for b, found in expected_curve.items():
        assert s.curve[b][0] == pytest.approx(found * NINTH), b
    assert s.curve[4000][1] == pytest.approx(2 * NINTH)  # 2508 + 8 fits in 4,000
    assert s.retrieved[0] == [("a", 0, 1500, 1500), ("a", 0, 500, 500), ("a", 0, 8, 8)]
    assert run(handed, [[0, 1, 2]], k=1).retrieved[0] == s.retrieved[0][:2]  # budget set


def test_budget_stops_at_the_first_chunk_that_does_not_fit():
    handed = [chunk("a", "z" * 1492 + "01234567"), chunk("b", "q" * 600),
              chunk("a", "89ABCDEF")]
    s = run(handed, [[0, 1, 2]])
    assert s.budget_coverage[0] == pytest.approx(NINTH)  # the short third chunk is not taken
    assert s.coverage[0] == pytest.approx(2 * NINTH)


def test_curve_of_a_later_small_chunk():
    handed = [chunk("a", "w" * 2500 + "6789ABCD"), chunk("a", "89ABCDEF")]
    s = run(handed, [[0, 1]], budgets=(1000, 2516))
    assert s.curve[1000][0] == pytest.approx(NINTH)  # first chunk alone, over budget
    assert s.curve[2516][0] == pytest.approx(2 * NINTH)  # 2508 + 8 fits exactly


def test_doc_hit_only_in_top_k():
    handed = [chunk("b", f"other text {i}") for i in range(5)] + [chunk("a", GOLD)]
    s = run(handed, [[0, 1, 2, 3, 4, 5]])
    assert not s.doc_hit[0] and s.coverage[0] == 0.0
    assert s.budget_coverage[0] == 1.0  # all six fit in 2,000 chars
    assert len(s.retrieved[0]) == 6


def test_complete():
    handed = [chunk("a", GOLD), chunk("a", "0123456789ABCDE")]
    s = run(handed, [[0], [1]], answers=(GOLD, GOLD))
    assert s.coverage.tolist() == pytest.approx([1.0, 8 * NINTH])
    assert s.complete.tolist() == [True, False]
    assert run(handed, [[1]], complete_at=0.8).complete.tolist() == [True]


def test_precision_and_iou():
    handed = [chunk("a", "0123456789AB"),  # 5 gold shingles
              chunk("b", "qwertyuiopas"),  # 5 other shingles
              chunk("b", "3456789ABCDE")]  # 5 gold shingles, but another document
    s = run(handed, [[0, 1], [0, 2]], answers=(GOLD, GOLD))
    assert s.precision[0] == pytest.approx(5 / 10)
    assert s.iou[0] == pytest.approx(5 / 14)  # |retrieved ∪ gold| = 10 + 9 - 5
    # retrieved = 01234567..456789AB and 3456789A..789ABCDE: 8 distinct, all gold
    assert s.precision[1] == pytest.approx(5 / 8)
    assert s.iou[1] == pytest.approx(5 / 9)


def test_no_chunks_retrieved():
    s = run([chunk("a", GOLD)], [[]])
    assert s.coverage[0] == s.budget_coverage[0] == s.precision[0] == s.iou[0] == 0.0
    assert s.retrieved == [[]] and not s.doc_hit[0]


def test_summary_means_and_standard_errors():
    s = run([chunk("a", GOLD), chunk("b", "x")], [[0], [1]], answers=(GOLD, GOLD))
    summary = s.summary()
    assert set(summary) == {"recall_at_k", "budget_recall", "complete_rate", "doc_hit_at_k",
                            "precision", "iou", "mrr_at_k", "ndcg_at_k"}
    assert summary["recall_at_k"].to_json() == {"value": 0.5, "se": pytest.approx(0.5)}
    assert summary["doc_hit_at_k"].value == 0.5
    assert s.curve_summary()[2000].value == 0.5
    rows = s.per_query()
    assert rows[0].to_json() == {"id": "q0", "coverage": 1.0, "budget_coverage": 1.0, "doc_hit": True,
                       "rr": 1.0, "ndcg": 1.0, "retrieved": [["a", 0, 16, 16]], "best": 0}


def test_bad_rankings_are_refused():
    handed = [chunk("a", GOLD)]
    with pytest.raises(ValueError, match="one row per query"):
        score(QuerySet("t", (Query("q", "?", "a", GOLD),), Corpus("t", ())), handed,
              np.zeros((2, 5), dtype=np.int64))
    with pytest.raises(ValueError, match="chunk 3 of 1"):
        run(handed, [[3]])


def _doc():
    table = ("h1 | h2", "c1 | c2")
    return Document.from_parts("a", "A", [
        Part("paragraph", "P" * 20),
        Part("table", "\n".join(table), rows=table, header_rows=1),
        Part("pre", "line1\nline2\nline3"),
        Part("paragraph", "end text")])


def test_cut_rate():
    doc = _doc()
    _, table, pre, last = doc.blocks
    # a boundary at a block's edge does not cut it; one strictly inside does
    chunks = [Chunk("a", 0, table.end, ""), Chunk("a", table.end, pre.start + 3, ""),
              Chunk("a", pre.start + 3, last.end, ""),
              Chunk("b", table.start + 1, table.start + 2, "")]  # another document
    assert cut_rate([doc], chunks).to_json() == {"value": 0.5, "blocks": 2, "cut": 1}
    whole = [Chunk("a", 0, doc.blocks[0].end, ""), Chunk("a", table.start, last.end, "")]
    assert cut_rate([doc], whole).cut == 0
    assert cut_rate([doc], [Chunk("a", table.start + 1, pre.end - 1, "")]).cut == 2
    assert cut_rate([], chunks).to_json() == {"value": 0.0, "blocks": 0, "cut": 0}


def test_overlap_stats():
    chunks = [Chunk("a", 200, 300, ""), Chunk("a", 0, 100, ""), Chunk("a", 90, 200, ""),
              Chunk("b", 30, 80, ""), Chunk("b", 0, 50, "")]
    # a: (0,100) (90,200) (200,300) -> 10, 0; b: (0,50) (30,80) -> 20
    assert overlap_stats(chunks).to_json() == {"boundaries": 3, "zero": 1, "mean": 10.0,
                                               "max": 20}
    assert overlap_stats([]).to_json() == {"boundaries": 0, "zero": 0, "mean": 0.0, "max": 0}


def test_chunk_stats():
    chunks = [chunk("a", "x" * 10), chunk("a", "y" * 40, start=10), chunk("b", "z" * 29)]
    stats = chunk_stats(chunks).to_json()
    assert stats["count"] == 3 and stats["max_len"] == 40 and stats["under_30"] == 2
    assert math.isclose(stats["mean_len"], 79 / 3)
    assert stats["overlap"] == {"boundaries": 1, "zero": 1, "mean": 0.0, "max": 0}


def test_mrr_and_ndcg_graded_by_the_coverage_each_rank_adds():
    other = chunk("b", GOLD)  # the gold text, but in another document: no gain
    first_half = chunk("a", "0123456789AB")  # shingles 0..4: 5/9
    second_half = chunk("a", "56789ABCDEF", 5)  # shingles 5..8: 4/9
    handed = [other, first_half, second_half, chunk("a", GOLD)]
    s = run(handed, [[0, 1, 2], [3], [0], [2, 1]], answers=(GOLD,) * 4)
    assert s.rr.tolist() == pytest.approx([1 / 2, 1.0, 0.0, 1.0])
    assert s.ndcg[0] == pytest.approx(5 * NINTH / math.log2(3) + 4 * NINTH / math.log2(4))
    assert s.ndcg[1] == pytest.approx(1.0)  # the whole answer at rank 1 is the ideal
    assert s.ndcg[2] == 0.0
    # the better half second costs: its 5/9 are discounted
    assert s.ndcg[3] == pytest.approx(4 * NINTH + 5 * NINTH / math.log2(3))
    assert s.ndcg[3] < s.coverage[3] == pytest.approx(1.0)
    assert (s.ndcg <= s.coverage + 1e-12).all()
    # beyond k nothing counts
    deep = run(handed, [[0, 0, 0, 0, 0, 3]], k=5)  # the gold chunk at rank 6
    assert deep.rr[0] == deep.ndcg[0] == 0.0


def test_the_summary_follows_the_metric_table():
    from chunkeval.metrics import METRICS
    from chunkeval.scoring import CHROMA_METRICS

    plain = Scores.blank(["a", "b", "c"], (), {})
    assert list(plain.summary()) == [m.name for m in METRICS if m.over == "all"]
    # one query with spans, two with gold pages, on a view with pages: every metric
    full = Scores.blank(["a", "b", "c"], (), {})
    full.coverage[:] = [1.0, 0.5, 0.0]
    full.positional = np.array([True, False, False])
    full.chroma = {name: np.array([0.25, np.nan, np.nan]) for name in CHROMA_METRICS}
    full.page_hit = np.array([1.0, np.nan, 0.0])
    full.budget_pages = np.array([1.0, 2.0, 6.0])
    summary = full.summary()
    assert list(summary) == [m.name for m in METRICS]
    assert summary["recall_at_k"].value == pytest.approx(0.5)
    assert summary["chroma_recall"].value == pytest.approx(0.25)
    assert summary["page_hit_at_k"].value == pytest.approx(0.5)
    assert summary["budget_pages"].value == pytest.approx(3.0)
    # a metric is looked up by its table name only
    assert np.array_equal(full.values("recall_at_k"), full.coverage)
    with pytest.raises(LookupError):
        full.values("chroma_recall")
