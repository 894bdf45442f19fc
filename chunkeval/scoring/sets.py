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
    common: dict[tuple[int, int], frozenset[str]] = {}  # for _seen
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
        seen, outside = _seen(top, gold, shingles_of, common)
        if seen:
            precision[qi] = len(found_top) / seen
            iou[qi] = len(found_top) / (seen + outside)
        used = max(len(top), taken[budget])  # the curve's larger budgets are not listed
        retrieved.append([(handed[i].doc_id, handed[i].start, handed[i].end, lengths[i])
                          for i in row[:used]])


LONG = 20_000  # shingles in the top chunks together, from which _seen counts without a union


def _seen(top: list[int], gold: frozenset[str], shingles_of: Callable[[int], frozenset[str]],
          common: dict[tuple[int, int], frozenset[str]]) -> tuple[int, int]:
    """How many shingles the top chunks hold between them, and how many gold shingles are
    in none of them (|seen | gold| - |seen|).

    Only the sizes are asked for. Short chunks' sets are united: the largest copied whole
    (no rehashing), the others added to the copy. Long chunks (whole sections) make the
    union the main cost, so it is not built: each chunk adds its shingles less those the
    chunks above it hold, which is the union of its intersections with each of them, small
    sets taken once per pair of chunks (`common`, by their indices) however many queries
    return both."""
    sets = [shingles_of(i) for i in top]
    if sum(map(len, sets)) < LONG:
        sets.sort(key=len, reverse=True)
        seen = set(sets[0]) if sets else set()
        seen.update(*sets[1:])
        return len(seen), len(gold - seen)
    size = 0
    top = list(dict.fromkeys(top))  # a chunk ranked twice counts once
    for j, i in enumerate(top):
        size += len(shingles_of(i))
        held = []
        for h in top[:j]:
            pair = (h, i) if h < i else (i, h)
            if pair not in common:
                common[pair] = shingles_of(i) & shingles_of(h)
            if common[pair]:
                held.append(common[pair])
        if held:
            size -= len(held[0]) if len(held) == 1 else len(frozenset().union(*held))
    return size, len(gold) - len(frozenset().union(*(gold & s for s in sets)))
