"""The reference scoring path: the definitions of the package notes as Python sets of shingle
strings. The fast path must give its numbers (tests/test_scoring.py)."""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..model import Chunk, QuerySet
from ..outside import Length
from .scores import Scores, _taken_within
from .shingling import _gold_in, gold_shingles, shingles


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
        # Only the union's size is asked for, and long chunks make it the main cost: the
        # largest set is copied whole (no rehashing) and the others added to the copy, and
        # |seen | gold| is |seen| plus the gold shingles outside it, not a second union.
        tops = sorted((shingles_of(i) for i in top), key=len, reverse=True)
        seen = set(tops[0]) if tops else set()
        seen.update(*tops[1:])
        if seen:
            precision[qi] = len(found_top) / len(seen)
            iou[qi] = len(found_top) / (len(seen) + len(gold - seen))
        used = max(len(top), taken[budget])  # the curve's larger budgets are not listed
        retrieved.append([(handed[i].doc_id, handed[i].start, handed[i].end, lengths[i])
                          for i in row[:used]])
