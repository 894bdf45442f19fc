"""Positional gold.

A query given as `spans` says where its gold is. A gold character is then covered only by a
retrieved chunk of the gold document whose [start, end) holds it: another copy of the same
words elsewhere in the document (a repeated table row, a boilerplate sentence) is not the
answer. Characters are counted without whitespace, as the shingle rule ignores it. A chunk
whose text is not its range's slice (a repeated table header, a converter's output) cannot
be placed: it covers the gold characters of the gold shingles its text holds (the shingle
rule, at their positions), and is counted in `fallback`.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Sequence

import numpy as np

from ..errors import ConfigError
from ..model import Chunk, QuerySet
from ..outside import Length
from ..results import COVERAGE_RULES, DEFAULTS
from .scores import CHROMA_METRICS, Scores, _taken_within
from .shingling import _code_points, _whitespace, shingles

COVERAGE = DEFAULTS.coverage


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
