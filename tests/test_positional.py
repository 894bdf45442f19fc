"""Positional gold: a gold character counts only where the gold is, and Chroma's own metrics.

The Chroma figures are checked against an independent reading of its definitions (sets of
character positions), not against chunkeval's range arithmetic.
"""

import random

import numpy as np
import pytest

from chunkeval.errors import BaselineError, ConfigError
from chunkeval.gate.baselines import Baseline, Record
from chunkeval.scoring import CHROMA_METRICS, chroma_metrics, coverage_rule, score
from chunkeval.model import Chunk, Corpus, Document, Part, Query, QuerySet
from chunkeval.gate.entry import BaselineEntry
from helpers import a_result

ROW = "| operating profit | 1083 | 1063 | 1030 |\n"
TEXT = "Segment results of the year.\n" + ROW + "Other segments follow below.\n" + ROW \
    + "And the last table repeats it.\n" + ROW


def _doc() -> Document:
    return Document.from_parts("10k.md", "10-K", [Part("paragraph", TEXT)])


def _set(spans, coverage_doc="10k.md") -> QuerySet:
    text = "".join(TEXT[a:b] for a, b in spans)
    q = Query("q", "operating profit", coverage_doc, text, tuple(TEXT[a:b] for a, b in spans),
              tuple(spans))
    return QuerySet("bench", (q,), Corpus("c", (_doc(),)))


def _at(n: int) -> tuple[int, int]:
    """The n-th copy of the repeated row (0, 1, 2)."""
    start = -1
    for _ in range(n + 1):
        start = TEXT.index(ROW, start + 1)
    return start, start + len(ROW) - 1


def _chunk(a: int, b: int, text: str | None = None) -> Chunk:
    return Chunk("10k.md", a, b, TEXT[a:b] if text is None else text)


def test_a_copy_of_the_excerpt_elsewhere_is_not_the_answer():
    gold = _at(1)  # the second copy is the gold
    qs = _set([gold])
    first, second = _chunk(*_at(0)), _chunk(*_at(1))
    ranking = np.array([[0]])
    by_text = score(qs, [first], ranking, k=1, coverage="text")
    by_place = score(qs, [first], ranking, k=1)
    assert by_text.coverage[0] == pytest.approx(1.0)  # the seed's rule: same words anywhere
    assert by_place.coverage[0] == 0.0 and by_place.rr[0] == 0.0
    right = score(qs, [second], ranking, k=1)
    assert right.coverage[0] == pytest.approx(1.0) and right.rr[0] == 1.0
    half = _chunk(gold[0], gold[0] + 20)
    part = score(qs, [half], ranking, k=1).coverage[0]
    gold_chars = sum(not c.isspace() for c in TEXT[gold[0]:gold[1]])
    assert part == pytest.approx(sum(not c.isspace() for c in TEXT[gold[0]:gold[0] + 20])
                                 / gold_chars)
    assert right.fallback == 0 and set(right.chroma) == set(CHROMA_METRICS)


def test_a_chunk_that_cannot_be_placed_falls_back_to_the_shingle_rule_and_is_counted():
    gold = _at(1)
    qs = _set([gold])
    # a repeated table header in front: not the range's slice, so not placed
    rewritten = _chunk(*gold, text="| item | y1 | y2 | y3 |\n" + TEXT[gold[0]:gold[1]])
    s = score(qs, [rewritten], np.array([[0]]), k=1)
    assert s.coverage[0] == pytest.approx(1.0) and s.fallback == 1


def test_the_coverage_setting_chooses_and_refuses():
    spans, text = _set([_at(1)]), QuerySet("t", (Query("t", "q", "10k.md", ROW),),
                                          Corpus("c", (_doc(),)))
    assert coverage_rule(spans) == "positional" and coverage_rule(spans, "text") == "text"
    assert coverage_rule(text) == "text"
    mixed = QuerySet("m", spans.queries + text.queries, spans.view)
    assert coverage_rule(mixed) == "mixed"
    with pytest.raises(ConfigError, match="1 queries of 'm' have no positional gold"):
        coverage_rule(mixed, "positional")
    with pytest.raises(ConfigError, match="one of auto, positional, text"):
        coverage_rule(spans, "places")


def test_a_baseline_scored_by_another_rule_is_not_compared(tmp_path):
    corpus = {"name": "c", "fingerprint": "f"}
    entry = BaselineEntry.from_result(a_result([1.0]), 0.95)
    b = Baseline(tmp_path / "c.json")
    b.record(Record("s", "bm25", "bench", entry, corpus, {}, "q1", "positional"))
    b.check_comparable(corpus, {}, "bench", "q1", "positional")
    with pytest.raises(BaselineError, match="scored by the positional coverage rule, this run "
                                            "by the text rule"):
        b.check_comparable(corpus, {}, "bench", "q1", "text")


def _independent(spans, doc, top, doc_chunks):
    """Chroma's four definitions over sets of character positions."""
    refs = [set(range(a, b)) for a, b in spans]
    gold = set().union(*refs)
    mine = [set(range(a, b)) for d, a, b in top if d == doc]
    held = set().union(*mine) if mine else set()
    numerator = len(gold & held)
    recall = numerator / sum(len(r) for r in refs)
    lengths = sum(b - a for _, a, b in top)
    precision = numerator / lengths if lengths else 0.0
    unused = sum(len(r - held) for r in refs)
    iou = numerator / (lengths + unused) if lengths + unused else 0.0
    holding = [set(range(a, b)) for a, b in doc_chunks
               if any(max(a, x) <= min(b, y) for x, y in spans)]
    best = set().union(*holding) if holding else set()
    reach = len(gold & best)
    omega = reach / len(best | gold) if reach else 0.0
    return recall, precision, iou, omega


def test_chroma_metrics_equal_their_definitions_on_random_cases():
    rng = random.Random(5)
    for _ in range(400):
        n = rng.randint(50, 400)
        spans = []
        for _ in range(rng.randint(1, 3)):  # excerpts may overlap
            a = rng.randrange(n - 5)
            spans.append((a, min(n, a + rng.randint(1, 60))))
        cuts = sorted({0, n, *(rng.randrange(1, n) for _ in range(rng.randint(1, 12)))})
        doc_chunks = list(zip(cuts, cuts[1:]))
        if rng.random() < 0.3:  # overlapping windows
            doc_chunks += [(max(0, a - 10), min(n, b + 10)) for a, b in doc_chunks]
        top = [("d" if rng.random() < 0.8 else "other", *rng.choice(doc_chunks))
               for _ in range(rng.randint(0, 5))]
        got = chroma_metrics(spans, "d", top, doc_chunks)
        assert got == pytest.approx(_independent(spans, "d", top, doc_chunks), abs=1e-12)
