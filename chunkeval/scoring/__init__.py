"""Scoring (SPEC section 3): how much of a query's gold text the retrieved chunks contain.

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

`score` is the one entry point; its parts, each a module: the shingle rule (shingling), the
per-query arrays a scoring gives (scores), the reference path (sets), the fast path (fast),
positional gold and Chroma's metrics (positional), pages (pages), and the statistics of the
chunking itself, cut rate included (chunks). They import one another downwards only, never
this module.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..model import Chunk, QuerySet
from ..outside import Length
from ..results import DEFAULTS
from .chunks import chunk_stats, cut_blocks, cut_rate, overlap_stats
from .fast import _score_fast, prepare
from .pages import _score_pages
from .positional import _score_positional, chroma_metrics, coverage_rule
from .scores import CHROMA_METRICS, PAGE_METRICS, Scores
from .sets import _score_sets, _shingle_lookup
from .shingling import coverage_of, gold_shingles, shingles

__all__ = ["score", "Scores", "prepare", "coverage_of", "coverage_rule", "chroma_metrics",
           "CHROMA_METRICS", "PAGE_METRICS", "cut_rate", "cut_blocks", "chunk_stats",
           "overlap_stats", "shingles", "gold_shingles", "LENGTH"]

K, BUDGET, BUDGETS = DEFAULTS.k, DEFAULTS.budget, DEFAULTS.budgets
COMPLETE_AT, SHINGLE, LENGTH = DEFAULTS.complete_at, DEFAULTS.shingle, DEFAULTS.length
COVERAGE = DEFAULTS.coverage


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
    return out
