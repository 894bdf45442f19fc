"""Metrics (SPEC section 3): how much of a query's gold text the retrieved chunks contain.

Text is compared as sets of 8-character shingles after removing all whitespace, so the
score does not depend on offsets: chunks whose text a splitter rewrote (a heading prefix,
LangChain output) are scored as well as exact slices. Only chunks from the gold document
count towards the gold: the same sentence elsewhere in the corpus is not the answer.

Precision and IoU (not in the seed; Chroma's chunking report measures them) use the same
shingles. Their numerator is the coverage numerator, gold shingles found in top-k chunks from
the gold document; `retrieved` is the shingle set of all top-k chunks, from any document:
  precision = |gold found| / |retrieved|,   iou = |gold found| / |retrieved ∪ gold|.
So a chunk from another document costs precision like any off-topic text.

Rank metrics (reported, gated only when configured): a chunk is relevant when it comes from
the gold document and holds at least one gold shingle.
  MRR@k: 1 / rank of the first relevant chunk in the top k (0 when none is).
  nDCG@k, graded by coverage: the gain at rank j is the coverage chunk j adds to the chunks
  above it; DCG = sum gain_j / log2(j + 1). The ideal ranking holds the whole gold text in
  its first chunk (DCG 1), so nDCG@k <= coverage and equals it only when the first chunk
  already holds everything the top k holds. Gains need only the retrieved chunks, so both
  recompute from results.json.

A gold text shorter than the shingle size is one shingle; it counts as found when it occurs
inside a chunk's whitespace-free text (matching it against the chunk's 8-character shingles
would find it only in a chunk of exactly that text). For longer gold texts the two rules agree.

A query may have several gold texts (JSONL `answers`, or `spans` into the document text, which
become the texts they slice): its gold is the union of their shingles, so coverage is the
share of all excerpts together that the chunks hold.

Lengths (the context budget, the budget curve, chunk-length statistics) are characters by
default; `length_function("module:attr")` names another measure, such as a tokenizer's count.
"""

from __future__ import annotations

import bisect
import importlib
import os
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Iterable, Sequence

import numpy as np

from .model import Chunk, Document, QuerySet
from .stats import mean_se

K = 5
BUDGET = 2000
BUDGETS = (500, 1000, 1500, 2000, 3000, 4000)
COMPLETE_AT = 0.95
SHINGLE = 8
SHORT_CHUNK = 30
CUT_KINDS = ("table", "pre")
LENGTH = "chars"

Length = Callable[[str], int]


@lru_cache(maxsize=8)
def length_function(spec: str = LENGTH) -> Length:
    """The length measure a spec names: "chars" (len), or "module:attr", a callable
    text -> int importable from the current directory (a tokenizer's count, say).
    ValueError says what is wrong with the spec."""
    if spec == "chars":
        return len
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"length {spec!r}: expected 'chars' or 'module:attribute'")
    if os.getcwd() not in sys.path:  # as a user's project module is found by python -m
        sys.path.insert(0, os.getcwd())
    try:
        obj = importlib.import_module(module_name)
    except ImportError as e:
        raise ValueError(f"length {spec!r}: cannot import {module_name!r} ({e})") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"length {spec!r}: {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ValueError(f"length {spec!r}: {attr!r} is not callable")

    def length(text: str) -> int:
        n = obj(text)
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"length {spec!r} returned {n!r} for a text of {len(text)} "
                             "characters; it must return an int >= 0")
        return n
    return length


def shingles(text: str, n: int = SHINGLE) -> frozenset[str]:
    """The n-character shingles of `text` with all whitespace removed; a non-empty text
    shorter than n is one shingle, an empty one has none."""
    if n < 1:
        raise ValueError(f"shingle size must be at least 1, got {n}")
    s = "".join(text.split())
    if len(s) <= n:
        return frozenset((s,)) if s else frozenset()
    return frozenset({s[i:i + n] for i in range(len(s) - n + 1)})


# Gold texts recur across every strategy x retriever scored in one run.
_gold_shingles = lru_cache(maxsize=16384)(shingles)


def gold_shingles(golds: Sequence[str], shingle: int = SHINGLE) -> frozenset[str]:
    """The union of the shingles of a query's gold texts."""
    if len(golds) == 1:
        return _gold_shingles(golds[0], shingle)
    return frozenset().union(*(_gold_shingles(g, shingle) for g in golds))


@lru_cache(maxsize=16384)
def _short(gold: frozenset[str], shingle: int) -> tuple[str, ...]:
    return tuple(g for g in gold if len(g) < shingle)


def _gold_in(gold: frozenset[str], text: str, shingle: int,
             text_shingles: frozenset[str] | None = None) -> frozenset[str]:
    """The gold shingles found in one chunk's text (whose shingles the caller may have).
    A short gold text's single shingle is found as a substring (see the module notes)."""
    found = gold & (shingles(text, shingle) if text_shingles is None else text_shingles)
    short = [g for g in _short(gold, shingle) if g not in found]
    if short:
        bare = "".join(text.split())
        found |= {g for g in short if g in bare}
    return found


def coverage_of(gold_text: str | Sequence[str], texts: Iterable[str],
                shingle: int = SHINGLE) -> float:
    """Share of the gold text's (or texts') shingles found in `texts` (each text shingled
    on its own, as chunks are). 0 for a gold text without shingles."""
    golds = (gold_text,) if isinstance(gold_text, str) else tuple(gold_text)
    gold = gold_shingles(golds, shingle)
    if not gold:
        return 0.0
    found: set[str] = set()
    for t in texts:
        found |= _gold_in(gold, t, shingle)
    return len(found) / len(gold)


@dataclass
class Scores:
    """Per-query results of one ranking; arrays hold one value per query, in query order."""

    query_ids: list[str]
    coverage: np.ndarray  # top k, gold document only
    budget_coverage: np.ndarray  # chunks within the character budget
    curve: dict[int, np.ndarray]  # budget -> budget coverage
    doc_hit: np.ndarray  # bool: the gold document is in the top k
    complete: np.ndarray  # bool: coverage >= complete_at
    precision: np.ndarray
    iou: np.ndarray
    rr: np.ndarray  # reciprocal rank of the first relevant chunk in the top k
    ndcg: np.ndarray  # coverage-graded nDCG@k
    # per query, the chunks of the top k and of the budget: (doc_id, start, end, len(text))
    retrieved: list[list[tuple[str, int, int, int]]]
    settings: dict = field(default_factory=dict)

    METRICS = ("recall_at_k", "budget_recall", "complete_rate", "doc_hit_at_k",
               "precision", "iou", "mrr_at_k", "ndcg_at_k")

    def __len__(self) -> int:
        return len(self.query_ids)

    def values(self, metric: str) -> np.ndarray:
        """The per-query values behind a summary metric (for paired comparisons)."""
        arrays = {"recall_at_k": self.coverage, "budget_recall": self.budget_coverage,
                  "complete_rate": self.complete, "doc_hit_at_k": self.doc_hit,
                  "precision": self.precision, "iou": self.iou,
                  "mrr_at_k": self.rr, "ndcg_at_k": self.ndcg}
        if metric not in arrays:
            raise ValueError(f"unknown metric {metric!r}; known: {', '.join(arrays)}")
        return arrays[metric].astype(np.float64)

    def summary(self) -> dict:
        out = {}
        for name in self.METRICS:
            value, se = mean_se(self.values(name))
            out[name] = {"value": value, "se": se}
        return out

    def curve_summary(self) -> dict[int, dict]:
        out = {}
        for b, arr in self.curve.items():
            value, se = mean_se(arr)
            out[b] = {"value": value, "se": se}
        return out

    def per_query(self) -> list[dict]:
        """The rows of results.json's per_query: enough to recompute every mean."""
        return [{"id": qid, "coverage": round(float(c), 6), "budget_coverage": round(float(bc), 6),
                 "doc_hit": bool(hit), "rr": round(float(rr), 6), "ndcg": round(float(nd), 6),
                 "retrieved": [list(r) for r in ret]}
                for qid, c, bc, hit, rr, nd, ret in zip(
                    self.query_ids, self.coverage, self.budget_coverage, self.doc_hit,
                    self.rr, self.ndcg, self.retrieved)]


def _taken_within(lengths: Sequence[int], budget: int) -> int:
    """How many chunks from the top fit in `budget` characters; the first always counts."""
    total, n = 0, 0
    for length in lengths:
        if n and total + length > budget:
            break
        total += length
        n += 1
    return n


def score(query_set: QuerySet, handed: Sequence[Chunk], ranking: np.ndarray, *,
          k: int = K, budget: int = BUDGET, budgets: Sequence[int] = BUDGETS,
          complete_at: float = COMPLETE_AT, shingle: int = SHINGLE,
          chunk_shingles: dict[int, frozenset[str]] | None = None,
          length: Length = len) -> Scores:
    """Score a ranking: `ranking[i]` holds indices into `handed` for query i, best first,
    -1 padded, deep enough to fill the largest budget (a shorter ranking just fills less).

    `chunk_shingles` may carry the shingles of `handed` from an earlier call on the same
    chunks (another retriever's ranking), so they are computed once."""
    queries = query_set.queries
    ranking = np.asarray(ranking)
    if ranking.ndim != 2 or ranking.shape[0] != len(queries):
        raise ValueError(f"ranking must have one row per query ({len(queries)}), "
                         f"got shape {ranking.shape}")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if ranking.size and ranking.max() >= len(handed):
        raise ValueError(f"ranking refers to chunk {ranking.max()} of {len(handed)}")
    lengths = [length(c.text) for c in handed]
    if chunk_shingles is None:
        chunk_shingles = {}  # a chunk recurs across queries

    def shingles_of(i: int) -> frozenset[str]:
        if i not in chunk_shingles:
            chunk_shingles[i] = shingles(handed[i].text, shingle)
        return chunk_shingles[i]

    n = len(queries)
    coverage, budget_cov = np.zeros(n), np.zeros(n)
    curve = {b: np.zeros(n) for b in budgets}
    doc_hit = np.zeros(n, dtype=bool)
    precision, iou = np.zeros(n), np.zeros(n)
    rr, ndcg = np.zeros(n), np.zeros(n)
    retrieved = []
    for qi, q in enumerate(queries):
        row = [int(i) for i in ranking[qi] if i >= 0]
        top = row[:k]
        row_lengths = [lengths[i] for i in row]
        taken = {b: _taken_within(row_lengths, b) for b in {budget, *budgets}}
        depth = max([len(top), *taken.values()])
        gold = gold_shingles(q.golds, shingle)
        # coverage after the first j chunks, for every prefix a metric needs
        found: set[str] = set()
        found_top: set[str] = set()
        prefix = [0.0]
        for j, i in enumerate(row[:depth], 1):
            if handed[i].doc_id == q.doc_id and gold:
                found |= _gold_in(gold, handed[i].text, shingle, shingles_of(i))
            prefix.append(len(found) / len(gold) if gold else 0.0)
            if j <= len(top) and prefix[j] > prefix[j - 1]:
                ndcg[qi] += (prefix[j] - prefix[j - 1]) / np.log2(j + 1)
                if not rr[qi]:
                    rr[qi] = 1.0 / j
            if j == len(top):
                found_top = set(found)
        coverage[qi] = prefix[len(top)]
        budget_cov[qi] = prefix[taken[budget]]
        for b in budgets:
            curve[b][qi] = prefix[taken[b]]
        doc_hit[qi] = any(handed[i].doc_id == q.doc_id for i in top)
        seen = frozenset().union(*(shingles_of(i) for i in top))
        if seen:
            precision[qi] = len(found_top) / len(seen)
            iou[qi] = len(found_top) / len(seen | gold)
        used = max(len(top), taken[budget])  # the curve's larger budgets are not listed
        retrieved.append([(handed[i].doc_id, handed[i].start, handed[i].end, lengths[i])
                          for i in row[:used]])
    return Scores(
        query_ids=[q.id for q in queries], coverage=coverage, budget_coverage=budget_cov,
        curve=curve, doc_hit=doc_hit, complete=coverage >= complete_at,
        precision=precision, iou=iou, rr=rr, ndcg=ndcg, retrieved=retrieved,
        settings={"k": k, "budget": budget, "budgets": list(budgets),
                  "complete_at": complete_at, "shingle": shingle})


def cut_rate(documents: Iterable[Document], chunks: Sequence[Chunk]) -> dict:
    """Share of table and pre blocks with a chunk boundary (a chunk's start or end)
    strictly inside them. For parent-child, pass the handed (parent) chunks.
    "value" is 0.0 when there are no such blocks (see "blocks")."""
    bounds: dict[str, list[int]] = defaultdict(list)
    for c in chunks:
        if c.end > c.start:  # an output mapped to no span (empty) cuts nothing
            bounds[c.doc_id] += (c.start, c.end)
    for doc_id in bounds:
        bounds[doc_id].sort()
    blocks = cut = 0
    for doc in documents:
        points = bounds.get(doc.id, [])
        for block in doc.blocks:
            if block.kind not in CUT_KINDS:
                continue
            blocks += 1
            first_after_start = bisect.bisect_right(points, block.start)
            if first_after_start < len(points) and points[first_after_start] < block.end:
                cut += 1
    return {"value": cut / blocks if blocks else 0.0, "blocks": blocks, "cut": cut}


def overlap_stats(chunks: Iterable[Chunk]) -> dict:
    """Realized overlap between neighbouring chunks of one document, in (start, end)
    order: max(0, prev.end - next.start) at each boundary."""
    by_doc: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for c in chunks:
        by_doc[c.doc_id].append((c.start, c.end))
    overlaps = []
    for spans in by_doc.values():
        spans.sort()
        overlaps += [max(0, prev[1] - nxt[0]) for prev, nxt in zip(spans, spans[1:])]
    return {"boundaries": len(overlaps), "zero": sum(1 for o in overlaps if o == 0),
            "mean": float(np.mean(overlaps)) if overlaps else 0.0,
            "max": max(overlaps, default=0)}


def chunk_stats(chunks: Sequence[Chunk], length: Length = len) -> dict:
    lengths = [length(c.text) for c in chunks]
    return {"count": len(lengths),
            "mean_len": float(np.mean(lengths)) if lengths else 0.0,
            "max_len": max(lengths, default=0),
            "under_30": sum(1 for n in lengths if n < SHORT_CHUNK),
            "overlap": overlap_stats(chunks)}
