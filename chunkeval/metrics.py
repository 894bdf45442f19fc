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

Pages (a corpus with pages, PDF): a chunk's pages are those of the blocks its range
overlaps (Document.pages_of); a query's gold pages are those of its gold (Query.pages).
  page hit@k: a top-k chunk of the gold document is on a gold page (queries with gold pages).
  pages in budget: how many pages (document, page) the chunks within the budget come from,
  what a reader is sent to when checking the answer.

A gold text shorter than the shingle size is one shingle; it counts as found when it occurs
inside a chunk's whitespace-free text (matching it against the chunk's 8-character shingles
would find it only in a chunk of exactly that text). For longer gold texts the two rules agree.

A query may have several gold texts (JSONL `answers`, or `spans` into the document text, which
become the texts they slice): its gold is the union of their shingles, so coverage is the
share of all excerpts together that the chunks hold.

Two implementations, one set of numbers. `score(..., exact_sets=True)` is the reference: the
definitions above as Python sets of shingle strings. The default path gives the same numbers
(equal within 1e-9, checked per query on the default corpus by tests/test_scoring.py) and
exists because the set unions were a large part of a whole run. Each corpus view's shingles
get integer ids once; a query's gold shingles and each retrieved chunk's (once per chunk)
become sorted ids, coverage becomes "which gold ids are among a retrieved chunk's ids" (one
pass of array work for all queries of a ranking), and the top k's shingle count a union of
ids. Shingles the view lacks (rewritten text, a document outside the view) stay strings.

Lengths (the context budget, the budget curve, chunk-length statistics) are characters by
default; `outside.length_function("module:attr")` names another measure (a tokenizer's count).

The defaults of k, the budget, the shingle size and the rest are those of results.Settings.
"""

from __future__ import annotations

import bisect
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Iterable, Sequence

import numpy as np

from .errors import ConfigError, UnknownName
from .model import Block, Chunk, Document, QuerySet, whitespace
from .outside import Length
from .results import (COVERAGE_RULES, DEFAULTS, METRICS, ChunkStats, CutRate, Overlap, PerQuery,
                      Stat)
from .stats import mean_se

K, BUDGET, BUDGETS = DEFAULTS.k, DEFAULTS.budget, DEFAULTS.budgets
COMPLETE_AT, SHINGLE, LENGTH = DEFAULTS.complete_at, DEFAULTS.shingle, DEFAULTS.length
COVERAGE = DEFAULTS.coverage
# Chroma's chunking evaluation's metrics (its base_evaluation.py), on positional gold only.
CHROMA_METRICS = ("chroma_recall", "chroma_precision", "chroma_iou", "precision_omega")
PAGE_METRICS = ("page_hit_at_k", "budget_pages")
SHORT_CHUNK = 30
# Shingles looked up at once when scoring a ranking, and shingles a view's vocabulary takes
# in at once: they bound the memory of those steps.
PAIR_BLOCK = 1 << 18
UNION_BATCH = 1 << 23
CUT_KINDS = ("table", "pre")

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
    best: np.ndarray  # rank (from 0) of the top-k chunk that added the most gold; -1: none
    # per query, the chunks of the top k and of the budget: (doc_id, start, end, len(text))
    retrieved: list[list[tuple[str, int, int, int]]]
    settings: dict = field(default_factory=dict)
    # Positional gold (spans): which queries were scored by position, Chroma's four metrics
    # for them (NaN for the others), and how many retrieved gold-document chunks could not
    # be placed (not their span's slice) and were scored by the shingle rule instead.
    positional: np.ndarray | None = None
    chroma: dict[str, np.ndarray] = field(default_factory=dict)
    fallback: int = 0
    # A view with pages: page hit@k (NaN for a query without gold pages) and pages in budget.
    page_hit: np.ndarray | None = None
    budget_pages: np.ndarray | None = None

    @classmethod
    def blank(cls, query_ids: list[str], budgets: Sequence[int], settings: dict) -> "Scores":
        """All zero, for a scoring path to fill in query by query."""
        n = len(query_ids)
        return cls(query_ids=query_ids, coverage=np.zeros(n), budget_coverage=np.zeros(n),
                   curve={b: np.zeros(n) for b in budgets}, doc_hit=np.zeros(n, dtype=bool),
                   complete=np.zeros(n, dtype=bool), precision=np.zeros(n), iou=np.zeros(n),
                   rr=np.zeros(n), ndcg=np.zeros(n), best=np.full(n, -1, dtype=np.int64),
                   retrieved=[], settings=settings)

    def __len__(self) -> int:
        return len(self.query_ids)

    def values(self, metric: str) -> np.ndarray:
        """The per-query values behind a summary metric (for paired comparisons)."""
        arrays = {"recall_at_k": self.coverage, "budget_recall": self.budget_coverage,
                  "complete_rate": self.complete, "doc_hit_at_k": self.doc_hit,
                  "precision": self.precision, "iou": self.iou,
                  "mrr_at_k": self.rr, "ndcg_at_k": self.ndcg}
        if metric not in arrays:
            raise UnknownName("metric", metric, arrays)
        return arrays[metric].astype(np.float64)

    def summary(self) -> dict[str, Stat]:
        out = {m.name: Stat(*mean_se(self.values(m.name))) for m in METRICS
               if m.name not in CHROMA_METRICS + PAGE_METRICS}
        if self.positional is not None and self.positional.any():
            out |= {name: Stat(*mean_se(self.chroma[name][self.positional]))
                    for name in CHROMA_METRICS}
        if self.budget_pages is not None:
            paged = ~np.isnan(self.page_hit)
            if paged.any():
                out["page_hit_at_k"] = Stat(*mean_se(self.page_hit[paged]))
            out["budget_pages"] = Stat(*mean_se(self.budget_pages))
        return out

    def curve_summary(self) -> dict[int, Stat]:
        return {b: Stat(*mean_se(arr)) for b, arr in self.curve.items()}

    def per_query(self) -> list[PerQuery]:
        """The rows of results.json's per_query: enough to recompute every mean."""
        return [PerQuery(qid, round(float(c), 6), round(float(bc), 6), bool(hit),
                         round(float(rr), 6), round(float(nd), 6), [list(r) for r in ret],
                         int(b) if b >= 0 else None)
                for qid, c, bc, hit, rr, nd, ret, b in zip(
                    self.query_ids, self.coverage, self.budget_coverage, self.doc_hit,
                    self.rr, self.ndcg, self.retrieved, self.best)]


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
          length: Length = len, chunk_index: dict | None = None,
          exact_sets: bool = False, coverage: str = COVERAGE) -> Scores:
    """Score a ranking: `ranking[i]` holds indices into `handed` for query i, best first,
    -1 padded, deep enough to fill the largest budget (a shorter ranking just fills less).

    `chunk_index` may carry what the fast path derives from `handed`, from an earlier call
    on the same chunks (another retriever's ranking), so that it is computed once.
    `exact_sets` scores with Python sets of shingles, the reference the fast path must
    equal; `chunk_shingles` does for it what `chunk_index` does for the fast path.
    `coverage` ("auto", "positional" or "text"; see coverage_rule) says how a query with
    `spans` is scored: by position unless "text"."""
    queries = query_set.queries
    ranking = np.asarray(ranking)
    if ranking.ndim != 2 or ranking.shape[0] != len(queries):
        raise ValueError(f"ranking must have one row per query ({len(queries)}), "
                         f"got shape {ranking.shape}")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if ranking.size and not np.issubdtype(ranking.dtype, np.integer):
        raise ValueError(f"ranking must hold integer chunk ids, got {ranking.dtype}")
    ranking = ranking.astype(np.int64, copy=False)  # an empty one may come as floats
    if ranking.size and ranking.max() >= len(handed):
        raise ValueError(f"ranking refers to chunk {ranking.max()} of {len(handed)}")
    if shingle < 1:
        raise ValueError(f"shingle size must be at least 1, got {shingle}")
    if chunk_shingles is None:
        chunk_shingles = {}  # a chunk recurs across queries
    out = Scores.blank([q.id for q in queries], budgets, settings={
        "k": k, "budget": budget, "budgets": list(budgets), "complete_at": complete_at,
        "shingle": shingle})
    args = dict(k=k, budget=budget, budgets=budgets, shingle=shingle, length=length)
    if exact_sets:
        _score_sets(out, query_set, handed, ranking,
                    shingles_of=_shingle_lookup(handed, shingle, chunk_shingles), **args)
    else:
        _score_fast(out, query_set, handed, ranking, chunk_index=chunk_index, **args)
    placed = [qi for qi, q in enumerate(queries) if q.spans] if coverage != "text" else []
    if placed:
        _score_positional(out, query_set, handed, ranking, placed, **args)
    if getattr(query_set.view, "paged", False):
        _score_pages(out, query_set, handed, ranking, k=k, budget=budget, length=length)
    out.complete = out.coverage >= complete_at
    return out


def _score_pages(out: Scores, query_set: QuerySet, handed: Sequence[Chunk], ranking: np.ndarray,
                 *, k: int, budget: int, length: Length) -> None:
    """page hit@k and pages in budget (see the module notes) of a view with pages."""
    docs = {d.id: d for d in query_set.view.documents}
    n = len(query_set.queries)
    out.page_hit = np.full(n, np.nan)
    out.budget_pages = np.zeros(n)
    pages: dict[int, tuple[int, ...]] = {}
    lengths: dict[int, int] = {}

    def pages_of(i: int) -> tuple[int, ...]:
        if i not in pages:
            c = handed[i]
            doc = docs.get(c.doc_id)
            pages[i] = doc.pages_of(c.start, c.end) if doc is not None else ()
        return pages[i]

    def length_of(i: int) -> int:
        if i not in lengths:
            lengths[i] = length(handed[i].text)
        return lengths[i]

    for qi, q in enumerate(query_set.queries):
        row = [int(i) for i in ranking[qi] if i >= 0]
        taken = _taken_within((length_of(i) for i in row), budget)  # stops at the budget
        out.budget_pages[qi] = len({(handed[i].doc_id, p) for i in row[:taken]
                                    for p in pages_of(i)})
        if q.pages:
            gold = set(q.pages)
            out.page_hit[qi] = any(handed[i].doc_id == q.doc_id and gold.intersection(pages_of(i))
                                   for i in row[:k])


def _shingle_lookup(handed: Sequence[Chunk], shingle: int,
                    cache: dict[int, frozenset[str]]) -> Callable[[int], frozenset[str]]:
    """A handed chunk's shingles by its index, each computed once into `cache`."""
    def shingles_of(i: int) -> frozenset[str]:
        if i not in cache:
            cache[i] = shingles(handed[i].text, shingle)
        return cache[i]
    return shingles_of


def _score_sets(out: Scores, query_set: QuerySet, handed: Sequence[Chunk],
                ranking: np.ndarray, *, k: int, budget: int, budgets: Sequence[int],
                shingle: int, length: Length, shingles_of: Callable[[int], frozenset[str]]
                ) -> None:
    """The reference: every chunk's shingles as a set of strings."""
    queries = query_set.queries
    lengths = [length(c.text) for c in handed]
    coverage, budget_cov, curve, doc_hit = (out.coverage, out.budget_coverage, out.curve,
                                            out.doc_hit)
    precision, iou, rr, ndcg, retrieved = out.precision, out.iou, out.rr, out.ndcg, out.retrieved
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
        prefix, gains = [0.0], []
        for j, i in enumerate(row[:depth], 1):
            if handed[i].doc_id == q.doc_id and gold:
                found |= _gold_in(gold, handed[i].text, shingle, shingles_of(i))
            prefix.append(len(found) / len(gold) if gold else 0.0)
            if j <= len(top) and prefix[j] > prefix[j - 1]:
                ndcg[qi] += (prefix[j] - prefix[j - 1]) / np.log2(j + 1)
                if not rr[qi]:
                    rr[qi] = 1.0 / j
                if out.best[qi] < 0 or prefix[j] - prefix[j - 1] > gains[out.best[qi]]:
                    out.best[qi] = j - 1
            gains.append(prefix[j] - prefix[j - 1])
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


# -- positional gold ---------------------------------------------------------------------------
# A query given as `spans` says where its gold is. A gold character is then covered only by a
# retrieved chunk of the gold document whose [start, end) holds it: another copy of the same
# words elsewhere in the document (a repeated table row, a boilerplate sentence) is not the
# answer. Characters are counted without whitespace, as the shingle rule ignores it. A chunk
# whose text is not its range's slice (a repeated table header, a converter's output) cannot
# be placed: it covers the gold characters of the gold shingles its text holds (the shingle
# rule, at their positions), and is counted in `fallback`.

def coverage_rule(query_set: QuerySet, setting: str = COVERAGE) -> str:
    """How a set is scored under the `coverage` setting: "text", "positional" (every query
    has spans) or "mixed". "positional" for a set with a query without spans is an error."""
    if setting not in COVERAGE_RULES:
        raise ConfigError(f"coverage {setting!r}: one of {', '.join(COVERAGE_RULES)}")
    with_spans = sum(bool(q.spans) for q in query_set.queries)
    if setting == "text" or not with_spans:
        if setting == "positional" and query_set.queries:
            raise ConfigError(f"coverage = \"positional\": query set {query_set.name!r} has no "
                              "positional gold (give `spans`, or `start` and `end`)")
        return "text"
    if with_spans == len(query_set.queries):
        return "positional"
    if setting == "positional":
        raise ConfigError(f"coverage = \"positional\": {len(query_set.queries) - with_spans} "
                          f"queries of {query_set.name!r} have no positional gold")
    return "mixed"


def _merge(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for a, b in sorted(r for r in ranges if r[1] > r[0]):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _within(ranges: list[tuple[int, int]], a: int, b: int) -> list[tuple[int, int]]:
    """The parts of the merged `ranges` inside [a, b)."""
    return [(max(x, a), min(y, b)) for x, y in ranges if x < b and y > a]


def _placed_shingles(text: str, spans: list[tuple[int, int]], chunk_text: str,
                     shingle: int) -> list[tuple[int, int]]:
    """The gold ranges a chunk that cannot be placed covers: those of each gold shingle (of a
    span's whitespace-free text) that its text holds; a span shorter than a shingle, when
    its text occurs in the chunk's."""
    held = shingles(chunk_text, shingle)
    bare_chunk = "".join(chunk_text.split())
    out = []
    for s, e in spans:
        at = [p for p in range(s, e) if not text[p].isspace()]
        bare = "".join(text[p] for p in at)
        if len(bare) <= shingle:
            if bare and bare in bare_chunk:
                out.append((at[0], at[-1] + 1))
            continue
        out += [(at[i], at[i + shingle - 1] + 1) for i in range(len(bare) - shingle + 1)
                if bare[i:i + shingle] in held]
    return _merge(out)


def _score_positional(out: Scores, query_set: QuerySet, handed: Sequence[Chunk],
                      ranking: np.ndarray, which: list[int], *, k: int, budget: int,
                      budgets: Sequence[int], shingle: int, length: Length) -> None:
    """Rescore the queries `which` (those with spans) by position, and add Chroma's metrics."""
    n = len(query_set.queries)
    out.positional = np.zeros(n, dtype=bool)
    out.positional[which] = True
    out.chroma = {name: np.full(n, np.nan) for name in CHROMA_METRICS}
    view = query_set.view
    texts = {d.id: d.text for d in getattr(view, "documents", ())}
    nonspace: dict[str, np.ndarray] = {}

    def count(doc_id: str, ranges: Iterable[tuple[int, int]]) -> int:
        """Non-whitespace characters in the ranges of a document of the view."""
        if doc_id not in nonspace:
            kept = ~np.isin(_code_points(texts[doc_id]), _whitespace())
            nonspace[doc_id] = np.concatenate([[0], np.cumsum(kept)])
        offsets = nonspace[doc_id]
        return int(sum(offsets[b] - offsets[a] for a, b in ranges))

    def placed(c: Chunk) -> bool:
        text = texts.get(c.doc_id)
        return text is not None and 0 <= c.start <= c.end <= len(text) \
            and text[c.start:c.end] == c.text

    lengths = [length(c.text) for c in handed]
    by_doc: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for c in handed:
        by_doc[c.doc_id].append((c.start, c.end))
    for qi in which:
        q = query_set.queries[qi]
        row = [int(i) for i in ranking[qi] if i >= 0]
        top = row[:k]
        row_lengths = [lengths[i] for i in row]
        taken = {b: _taken_within(row_lengths, b) for b in {budget, *budgets}}
        depth = max([len(top), *taken.values()])
        text = texts.get(q.doc_id, "")
        gold = _merge(q.spans)
        total = count(q.doc_id, gold) if q.doc_id in texts else 0
        covered: list[tuple[int, int]] = []
        covered_top: list[tuple[int, int]] = []
        prefix = [0.0]
        out.ndcg[qi] = out.rr[qi] = 0.0
        out.best[qi] = -1
        for j, i in enumerate(row[:depth], 1):
            c = handed[i]
            if c.doc_id == q.doc_id and total:
                if placed(c):
                    covered = _merge(covered + _within(gold, c.start, c.end))
                else:
                    out.fallback += 1
                    covered = _merge(covered + _placed_shingles(text, gold, c.text, shingle))
            prefix.append(count(q.doc_id, covered) / total if total else 0.0)
            if j <= len(top) and prefix[j] > prefix[j - 1]:
                out.ndcg[qi] += (prefix[j] - prefix[j - 1]) / np.log2(j + 1)
                if not out.rr[qi]:
                    out.rr[qi] = 1.0 / j
                b = out.best[qi]
                if b < 0 or prefix[j] - prefix[j - 1] > prefix[b + 1] - prefix[b]:
                    out.best[qi] = j - 1
            if j == len(top):
                covered_top = list(covered)
        out.coverage[qi] = prefix[len(top)]
        out.budget_coverage[qi] = prefix[taken[budget]]
        for b in budgets:
            out.curve[b][qi] = prefix[taken[b]]
        # chunkeval's own precision and IoU, by position: the top k's distinct characters
        spread: dict[str, list[tuple[int, int]]] = defaultdict(list)
        unplaced = 0
        for i in top:
            c = handed[i]
            if placed(c):
                spread[c.doc_id].append((c.start, c.end))
            else:
                unplaced += len("".join(c.text.split()))
        seen = unplaced + sum(count(d, _merge(r)) for d, r in spread.items())
        hit = count(q.doc_id, covered_top) if total else 0
        out.precision[qi] = hit / seen if seen else 0.0
        out.iou[qi] = hit / (seen + total - hit) if seen + total else 0.0
        for name, value in zip(CHROMA_METRICS, chroma_metrics(
                q.spans, q.doc_id, [(handed[i].doc_id, handed[i].start, handed[i].end)
                                    for i in top], by_doc.get(q.doc_id, []))):
            out.chroma[name][qi] = value


def chroma_metrics(spans: Sequence[tuple[int, int]], doc_id: str,
                   top: Sequence[tuple[str, int, int]], doc_chunks: Sequence[tuple[int, int]]
                   ) -> tuple[float, float, float, float]:
    """Chroma's chunking evaluation's recall, precision, IoU and precision_omega of one
    query, as its base_evaluation.py defines them: characters (whitespace included) of the
    gold excerpts `spans` in document `doc_id`; `top` the retrieved chunks (document, start,
    end), best first; `doc_chunks` every chunk of the gold document (for precision_omega,
    the best IoU any retrieval of this chunking could reach).

    recall = |gold covered| / sum of the excerpts' lengths (an overlap of two excerpts counts
    twice); precision = |gold covered| / sum of the retrieved chunks' lengths (any document,
    overlaps counted twice); IoU = |gold covered| / (that sum + what the excerpts leave
    uncovered, excerpt by excerpt). A chunk touching an excerpt at an end counts as holding
    it for precision_omega, as in Chroma's range arithmetic."""
    refs = [(int(a), int(b)) for a, b in spans]
    mine = [(a, b) for d, a, b in top if d == doc_id]
    covered = _merge(x for a, b in mine for x in _within(refs and _merge(refs), a, b))
    numerator = sum(b - a for a, b in covered)
    chunks = _merge(mine)
    unused = sum(b - a - sum(y - x for x, y in _within(chunks, a, b)) for a, b in refs)
    recall_denominator = sum(b - a for a, b in refs)
    precision_denominator = sum(b - a for _, a, b in top)
    recall = numerator / recall_denominator if recall_denominator else 0.0
    precision = numerator / precision_denominator if precision_denominator else 0.0
    iou_denominator = precision_denominator + unused
    iou = numerator / iou_denominator if iou_denominator else 0.0
    # precision_omega: every chunk of the gold document that meets an excerpt, retrieved
    holding = [(a, b) for a, b in doc_chunks if any(max(a, x) <= min(b, y) for x, y in refs)]
    best = _merge(holding)
    reached = sum(y - x for a, b in _merge(refs) for x, y in _within(best, a, b))
    left = _merge(r for a, b in refs for r in _subtract((a, b), best))
    denominator = sum(b - a for a, b in _merge(best + left))
    omega = reached / denominator if reached and denominator else 0.0
    return recall, precision, iou, omega


def _subtract(span: tuple[int, int], merged: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """What of `span` the merged ranges leave."""
    a, b = span
    out, at = [], a
    for x, y in merged:
        if y <= at or x >= b:
            continue
        if x > at:
            out.append((at, x))
        at = max(at, y)
    if at < b:
        out.append((at, b))
    return out


# -- the fast path ----------------------------------------------------------------------------
# Shingles become integer ids, one vocabulary per corpus view: a chunk's shingles are the ids
# of the windows of its whitespace-free text, and "gold shingle g is in the chunk" becomes "g's
# id is among the chunk's". Only the vocabulary is kept, not where each shingle occurs, so
# that what a view costs in memory is a small multiple of its distinct shingles. A shingle
# the view never holds (in rewritten text, a chunk shorter than a shingle, a document outside
# the view) stays a string.

@lru_cache(maxsize=1)
def _whitespace() -> np.ndarray:
    """The code points str.split() removes."""
    return np.array(whitespace(), dtype=np.uint32)


def _code_points(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _windows(bare: np.ndarray, n: int) -> np.ndarray:
    """The shingles of a whitespace-free text's codes, as rows (none when fewer than n)."""
    if len(bare) < n:
        return np.zeros((0, n), dtype=bare.dtype)
    return np.lib.stride_tricks.sliding_window_view(bare, n)


def _hash(windows: np.ndarray) -> np.ndarray:
    h = np.zeros(len(windows), dtype=np.uint64)
    for column in windows.T:  # polynomial, modulo 2**64
        h = h * np.uint64(1_000_003) + column
    return h


def _as_keys(windows: np.ndarray) -> np.ndarray:
    """Rows of codes as one comparable value each (for unique and searchsorted)."""
    windows = np.ascontiguousarray(windows)
    return windows.view(np.dtype((np.void, windows.shape[1] * windows.itemsize))).ravel()


def _distinct(ids: np.ndarray) -> np.ndarray:
    """Sorted distinct values (np.unique's hash table is several times slower than a sort)."""
    ids = np.sort(ids)
    if len(ids) < 2:
        return ids
    keep = np.empty(len(ids), dtype=bool)
    keep[0] = True
    keep[1:] = ids[1:] != ids[:-1]  # not np.not_equal(out=): it has no loop for the keys
    return ids[keep]


def _union(parts: Iterable[np.ndarray], dtype) -> np.ndarray:
    """The sorted distinct values of all parts, merged a batch at a time: memory holds the
    result and one batch, not every value of a large corpus at once."""
    out, batch, held = np.zeros(0, dtype), [], 0
    for part in parts:
        batch.append(part)
        held += len(part)
        if held >= UNION_BATCH:
            out, batch, held = _distinct(np.concatenate([out, *batch])), [], 0
    return _distinct(np.concatenate([out, *batch]))


def _search(sorted_values: np.ndarray, values: np.ndarray) -> np.ndarray:
    """np.searchsorted, with the values searched in order: in a large array, searches in
    random order are mostly cache misses (several times slower)."""
    order = np.argsort(values)
    at = np.empty(len(values), dtype=np.int64)
    at[order] = np.searchsorted(sorted_values, values[order])
    return at


class _ViewIndex:
    """One corpus view's shingle vocabulary for one shingle size: the sorted distinct
    shingles of its documents, whitespace removed; a shingle's id is its place there."""

    def __init__(self, view, n: int):
        self.n = n
        documents = getattr(view, "documents", ())  # a bare QuerySet may come without one
        self.number = {d.id: i for i, d in enumerate(documents)}
        bare = ["".join(d.text.split()) for d in documents]
        # Characters become codes in the view's alphabet, of 16 bits when it has fewer than
        # 65,535 (any real corpus): a shingle is then 16 bytes, not 32. A character the view
        # lacks gets a code no shingle of the view has.
        seen = np.zeros(sys.maxunicode + 1, dtype=bool)
        for b in bare:
            seen[_code_points(b)] = True
        alphabet = np.flatnonzero(seen)
        self.code = np.full(len(seen), len(alphabet),
                            dtype=np.uint16 if len(alphabet) < 65535 else np.uint32)
        self.code[alphabet] = np.arange(len(alphabet))
        key = np.dtype((np.void, n * self.code.itemsize))
        # Ids by a 64-bit hash of each shingle (sorting and searching plain integers is
        # fast); kept only when no two different shingles share a hash, so ids stay exact.
        self.hash = _union((_hash(self.rows(b)) for b in bare), np.uint64)
        self.vocab = np.zeros(len(self.hash), dtype=key)  # each hash's shingle
        have = np.zeros(len(self.hash), dtype=bool)
        for b in bare:
            rows = self.rows(b)
            ids, keys = _search(self.hash, _hash(rows)), _as_keys(rows)
            new = ~have[ids]
            self.vocab[ids[new]] = keys[new]
            have[ids] = True
            if not (self.vocab[ids] == keys).all():  # two shingles share a hash
                self.hash = None
                self.vocab = _union((_as_keys(self.rows(b)) for b in bare), key)
                break

    def rows(self, bare: str) -> np.ndarray:
        """The shingles of a whitespace-free text, as rows of n codes."""
        return _windows(self.code[_code_points(bare)], self.n)

    def lookup(self, windows: np.ndarray) -> np.ndarray:
        """Vocabulary ids of shingles (rows of n codes), -1 for those the view lacks."""
        if not len(windows) or not len(self.vocab):
            return np.full(len(windows), -1, dtype=np.int64)
        keys = _as_keys(windows)
        if self.hash is None:
            at = np.minimum(np.searchsorted(self.vocab, keys), len(self.vocab) - 1)
            return np.where(self.vocab[at] == keys, at, -1)
        hashes = _hash(windows)
        at = np.minimum(_search(self.hash, hashes), len(self.hash) - 1)
        return np.where((self.hash[at] == hashes) & (self.vocab[at] == keys), at, -1)

    def lookup_strings(self, strings: Sequence[str]) -> np.ndarray:
        """lookup() of shingle strings, each of length n."""
        return self.lookup(self.code[_code_points("".join(strings))].reshape(-1, self.n))


def _cached(owner, key, build):
    """A value kept on `owner` (a view or a query set) for as long as it lives."""
    store = getattr(owner, "__dict__", None)
    if store is None:
        return build()
    cache = store.setdefault("_chunkeval_scoring", {})
    if key not in cache:
        cache[key] = build()
    return cache[key]


@dataclass
class _Gold:
    """One query's gold shingles."""

    strings: tuple[str, ...]
    ids: np.ndarray  # sorted vocabulary ids of the gold shingles the view holds
    id_at: np.ndarray  # ... and which gold shingle each one is (index into strings)
    unknown: frozenset[str]  # the gold shingles it does not hold (short ones among them)
    short: tuple[str, ...]  # those shorter than the shingle size


def _gold_of(index: _ViewIndex, q) -> _Gold:
    n = index.n
    strings = tuple(sorted(gold_shingles(q.golds, n)))
    full = [s for s in strings if len(s) == n]
    full_at = np.array([i for i, s in enumerate(strings) if len(s) == n], dtype=np.int64)
    ids = index.lookup_strings(full)
    known = ids >= 0
    short = tuple(s for s in strings if len(s) < n)
    unknown = frozenset(s for s, ok in zip(full, known) if not ok) | frozenset(short)
    order = np.argsort(ids[known], kind="stable")  # distinct strings have distinct ids
    return _Gold(strings, ids[known][order], full_at[known][order], unknown, short)


def _concat(arrays: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(arrays) if arrays else np.zeros(0, np.int64)


class _Handed:
    """What the fast path needs of one strategy's handed chunks on one view."""

    def __init__(self, index: _ViewIndex, view, handed: Sequence[Chunk]):
        self.view = view
        self.number = dict(index.number)  # documents outside the view get numbers too
        self.doc = np.array([self.number.setdefault(c.doc_id, len(self.number))
                             for c in handed], dtype=np.int64)
        # a chunk's distinct shingles: (sorted ids, strings the view lacks); kept, as a chunk
        # recurs in the top k of many queries and retrievers
        self.shingles: dict[int, tuple[np.ndarray, frozenset[str]]] = {}

    def fill(self, index: _ViewIndex, handed: Sequence[Chunk], chunks: Iterable[int]) -> None:
        """Work out the shingles of the chunks not seen yet, many at once: chunk by chunk,
        numpy's calls cost more than their work."""
        todo = [i for i in dict.fromkeys(chunks) if i not in self.shingles]
        n, v = index.n, max(len(index.vocab), 1)
        bares = ["".join(handed[i].text.split()) for i in todo]
        sizes = [max(len(b) - n + 1, 0) for b in bares]
        for lo, hi in _blocks(sizes, PAIR_BLOCK):
            bare = bares[lo:hi]
            starts = np.cumsum([0] + [len(b) for b in bare[:-1]])
            at, owner = _ranges(starts, np.array(sizes[lo:hi], dtype=np.int64))
            ids = index.lookup(index.rows("".join(bare))[at])
            known = ids >= 0
            key = _distinct(owner[known] * v + ids[known])
            split = np.searchsorted(key, np.arange(1, hi - lo) * v)
            unknown: dict[int, set[str]] = {}
            for p, o in zip(at[~known].tolist(), owner[~known].tolist()):
                unknown.setdefault(o, set()).add(bare[o][p - starts[o]:p - starts[o] + n])
            for o, part in enumerate(np.split((key % v).astype(np.int32), split)):
                if 0 < len(bare[o]) < n:  # one short shingle, which no id stands for
                    unknown[o] = {bare[o]}
                self.shingles[todo[lo + o]] = (part, frozenset(unknown.get(o, ())))


class _GoldTable:
    """A query set's golds, flat, so that one ranking's queries are scored together. Gold
    shingle gi of query q has the global number offset[q] + gi."""

    def __init__(self, index: _ViewIndex, golds: Sequence[_Gold]):
        self.size = np.array([len(g.strings) for g in golds], dtype=np.int64)
        self.offset = np.concatenate([[0], np.cumsum(self.size)]).astype(np.int64)
        self.query = np.repeat(np.arange(len(golds)), self.size)  # global number -> query
        # Every query's known gold ids (ids[start[q]:start[q] + count[q]], sorted) and their
        # global numbers. Sized by the golds: where they occur in their documents is not kept,
        # as a long page holding many queries made that grow with queries x page length.
        self.vocab = max(len(index.vocab), 1)
        self.count = np.array([len(g.ids) for g in golds], dtype=np.int64)
        self.start = np.cumsum(self.count) - self.count
        self.ids = _concat([g.ids for g in golds])
        self.number = np.repeat(self.offset[:-1], self.count) + _concat([g.id_at for g in golds])
        self._position: dict[int, dict[str, int]] = {}

    def position(self, qi: int, gold: _Gold) -> dict[str, int]:
        """Gold shingle string -> global number, for query qi (strings the ids miss)."""
        if qi not in self._position:
            base = int(self.offset[qi])
            self._position[qi] = {s: base + gi for gi, s in enumerate(gold.strings)}
        return self._position[qi]


def prepare(query_set: QuerySet, shingle: int = SHINGLE
            ) -> tuple[_ViewIndex, list[_Gold], _GoldTable]:
    """The fast path's per-view and per-query-set tables, built on first use and kept on
    those objects (so shared by every strategy and retriever scored on them; called before
    forking workers, so that they inherit the tables instead of each building its own)."""
    view = query_set.view
    index = _cached(view, ("view", shingle), lambda: _ViewIndex(view, shingle))
    golds = _cached(query_set, ("gold", shingle),
                    lambda: [_gold_of(index, q) for q in query_set.queries])
    table = _cached(query_set, ("table", shingle), lambda: _GoldTable(index, golds))
    return index, golds, table


def _compact(ranking: np.ndarray) -> np.ndarray:
    """Each row's chunk ids first, in their order, then the -1 padding."""
    valid = ranking >= 0
    if (valid[:, 1:] <= valid[:, :-1]).all():
        return ranking
    return np.take_along_axis(ranking, np.argsort(~valid, axis=1, kind="stable"), axis=1)


def _ranges(starts: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All of range(starts[i], starts[i] + counts[i]), concatenated, and each one's i."""
    owner = np.repeat(np.arange(len(counts)), counts)
    return np.arange(len(owner)) + np.repeat(starts - np.cumsum(counts) + counts, counts), owner


def _blocks(sizes: list[int], limit: int):
    """(lo, hi) ranges of consecutive items whose sizes add up to at most `limit` (or of
    one item larger than that)."""
    lo, held = 0, 0
    for i, size in enumerate(sizes):
        if i > lo and held + size > limit:
            yield lo, i
            lo, held = i, 0
        held += size
    if lo < len(sizes):
        yield lo, len(sizes)


def _score_fast(out: Scores, query_set: QuerySet, handed: Sequence[Chunk],
                ranking: np.ndarray, *, k: int, budget: int, budgets: Sequence[int],
                shingle: int, length: Length, chunk_index: dict | None) -> None:
    """Every query of the ranking at once, as arrays of (query, rank) pairs; only shingles
    that ids do not stand for are looked at one by one."""
    queries = query_set.queries
    if not handed:  # no chunks, so nothing retrieved: every score stays 0
        out.retrieved.extend([] for _ in queries)
        return
    view = query_set.view
    index, golds, table = prepare(query_set, shingle)
    if chunk_index is None:
        chunk_index = {}
    prep = chunk_index.get(shingle)
    if prep is None or prep.view is not view:
        prep = chunk_index[shingle] = _Handed(index, view, handed)
    lengths = [length(c.text) for c in handed]
    n_queries, width = ranking.shape
    ranking = _compact(ranking)
    valid = ranking >= 0
    n_valid = valid.sum(axis=1)
    chunk = np.where(valid, ranking, 0)  # safe to index with; `valid` says which are real
    rows = np.arange(n_queries)
    cols = np.arange(width)

    # the first chunk always counts, then chunks while the running total fits
    total = np.cumsum(np.where(valid, np.asarray(lengths, dtype=np.float64)[chunk], 0.0), axis=1)
    taken = {}
    for b in sorted({budget, *budgets}):
        within = np.count_nonzero(valid & (total <= b), axis=1)
        taken[b] = np.where(n_valid > 0, np.maximum(within, 1), 0)
    n_top = np.minimum(k, n_valid)
    depth = np.maximum.reduce([n_top, *taken.values()])
    gold_doc = np.array([prep.number.get(q.doc_id, -1) for q in queries], dtype=np.int64)
    in_gold = (cols < depth[:, None]) & (prep.doc[chunk] == gold_doc[:, None])

    # the rank (from 1) at which each gold shingle is first found; width + 1: never
    first = np.full(int(table.offset[-1]), width + 1, dtype=np.int64)
    pq, pj = np.nonzero(in_gold)
    pc = chunk[pq, pj].tolist()
    prep.fill(index, handed, pc + chunk[cols < n_top[:, None]].tolist())
    parts = [prep.shingles[c] for c in pc]
    # Each pair's gold ids looked up among its chunk's, all pairs at once under keys pair x
    # vocabulary + id (sorted as they come); a block of pairs at a time, as a few large
    # chunks in the top k of many queries would make an array of queries x chunk length.
    for lo, hi in _blocks([len(ids) for ids, _ in parts], PAIR_BLOCK):
        held = np.concatenate([ids for ids, _ in parts[lo:hi]])
        if not len(held):
            continue
        held = held + np.repeat(np.arange(lo, hi), [len(ids) for ids, _ in parts[lo:hi]]
                                ) * table.vocab
        at, pair = _ranges(table.start[pq[lo:hi]], table.count[pq[lo:hi]])
        sought = table.ids[at] + (pair + lo) * table.vocab
        hit = held[np.minimum(np.searchsorted(held, sought), len(held) - 1)] == sought
        np.minimum.at(first, table.number[at[hit]], pj[lo + pair[hit]] + 1)
    # What ids cannot say: gold shingles the view lacks, among a chunk's own strings, and a
    # short gold, found as a substring of a chunk's whitespace-free text.
    for p in [p for p, qi in enumerate(pq.tolist())
              if golds[qi].short or (golds[qi].unknown and parts[p][1])]:
        qi, j, gold = int(pq[p]), int(pj[p]), golds[pq[p]]
        strings = gold.unknown & parts[p][1]
        if gold.short:
            bare = "".join(handed[pc[p]].text.split())
            strings |= {s for s in gold.short if s in bare}
        for s in strings:
            g = table.position(qi, gold)[s]
            first[g] = min(first[g], j + 1)
    found = np.cumsum(np.bincount(table.query * (width + 2) + first,
                                  minlength=n_queries * (width + 2)
                                  ).reshape(n_queries, width + 2), axis=1)
    size = table.size
    prefix = np.where(size[:, None] > 0, found / np.maximum(size, 1)[:, None], 0.0)

    ndcg, rr, best = out.ndcg, out.rr, out.best
    most = np.zeros(n_queries)
    for j in range(1, min(k, width) + 1):  # rank by rank, as the definition adds them up
        gain = prefix[:, j] - prefix[:, j - 1]
        on = (j <= n_top) & (gain > 0)
        ndcg[on] += gain[on] / np.log2(j + 1)
        rr[on & (rr == 0)] = 1.0 / j
        more = on & (gain > most)
        best[more], most[more] = j - 1, gain[more]
    out.coverage[:] = prefix[rows, n_top]
    out.budget_coverage[:] = prefix[rows, taken[budget]]
    for b in budgets:
        out.curve[b][:] = prefix[rows, taken[b]]
    in_top = cols < n_top[:, None]
    out.doc_hit[:] = (in_gold & in_top).any(axis=1)

    # Precision and IoU need the distinct shingles of the top k, from any document: ids,
    # and strings the view lacks. Their union without sorting: each id's slot takes the
    # position of one of its occurrences, so the positions that kept their slot count the
    # distinct ids. Slots need no clearing between queries: an id among this query's was just
    # overwritten, and one not among them matches no position, wherever its old slot points.
    # (Query by query: the top k of large chunks hold tens of thousands of ids each.)
    slot = np.zeros(len(index.vocab), dtype=np.int32)
    seen = np.zeros(n_queries, dtype=np.int64)
    common = np.zeros(n_queries, dtype=np.int64)
    ranked = ranking.tolist()
    for qi, top in enumerate(ranked):
        parts, unknown = [], set()
        for i in top[:n_top[qi]]:
            ids, extra = prep.shingles[i]
            parts.append(ids)
            unknown |= extra
        ids = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        at = np.arange(len(ids), dtype=np.int32)
        slot[ids] = at
        seen[qi] = np.count_nonzero(slot[ids] == at) + len(unknown)
        if len(ids):
            gold_ids = golds[qi].ids
            where = np.minimum(slot[gold_ids], len(ids) - 1)  # an old slot may lie beyond
            common[qi] = np.count_nonzero(ids[where] == gold_ids)
        if unknown:
            common[qi] += len(golds[qi].unknown.intersection(unknown))
    found_top = found[rows, n_top]
    some = seen > 0
    out.precision[some] = found_top[some] / seen[some]
    out.iou[some] = found_top[some] / (seen + size - common)[some]

    used = np.maximum(n_top, taken[budget])  # the curve's larger budgets are not listed
    listed = [(c.doc_id, c.start, c.end, n) for c, n in zip(handed, lengths)]
    out.retrieved.extend([listed[i] for i in row[:u]]
                         for row, u in zip(ranked, used.tolist()))


def cut_rate(documents: Iterable[Document], chunks: Sequence[Chunk]) -> CutRate:
    """Share of table and pre blocks with a chunk boundary (a chunk's start or end)
    strictly inside them. For parent-child, pass the handed (parent) chunks.
    The value is 0.0 when there are no such blocks (see `blocks`)."""
    blocks = cut = 0
    for _, _, inside in _cut_blocks(documents, chunks):
        blocks += 1
        cut += bool(inside)
    return CutRate(cut / blocks if blocks else 0.0, blocks, cut)


def cut_blocks(documents: Iterable[Document], chunks: Sequence[Chunk]
               ) -> list[tuple[Document, Block, list[int]]]:
    """The table and pre blocks cut_rate counts as cut, each with the chunk boundaries
    inside it (for a failure message that names them)."""
    return [found for found in _cut_blocks(documents, chunks) if found[2]]


def _cut_blocks(documents, chunks):
    bounds: dict[str, list[int]] = defaultdict(list)
    for c in chunks:
        if c.end > c.start:  # an output mapped to no span (empty) cuts nothing
            bounds[c.doc_id] += (c.start, c.end)
    for doc_id in bounds:
        bounds[doc_id].sort()
    for doc in documents:
        points = bounds.get(doc.id, [])
        for block in doc.blocks:
            if block.kind not in CUT_KINDS:
                continue
            first = bisect.bisect_right(points, block.start)
            last = bisect.bisect_left(points, block.end)
            yield doc, block, sorted(set(points[first:last]))


def overlap_stats(chunks: Iterable[Chunk]) -> Overlap:
    """Realized overlap between neighbouring chunks of one document, in (start, end)
    order: max(0, prev.end - next.start) at each boundary."""
    by_doc: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for c in chunks:
        by_doc[c.doc_id].append((c.start, c.end))
    overlaps = []
    for spans in by_doc.values():
        spans.sort()
        overlaps += [max(0, prev[1] - nxt[0]) for prev, nxt in zip(spans, spans[1:])]
    return Overlap(len(overlaps), sum(1 for o in overlaps if o == 0),
                   float(np.mean(overlaps)) if overlaps else 0.0, max(overlaps, default=0))


def chunk_stats(chunks: Sequence[Chunk], length: Length = len,
                hash: str | None = None) -> ChunkStats:
    lengths = [length(c.text) for c in chunks]
    return ChunkStats(len(lengths), float(np.mean(lengths)) if lengths else 0.0,
                      max(lengths, default=0), sum(1 for n in lengths if n < SHORT_CHUNK),
                      overlap_stats(chunks), hash)
