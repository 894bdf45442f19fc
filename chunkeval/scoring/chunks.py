"""Chunk statistics: how the chunking itself looks (cut tables and code blocks, overlap,
lengths), before any retrieval."""

from __future__ import annotations

import bisect
from collections import defaultdict
from typing import Iterable, Sequence

import numpy as np

from ..model import Block, Chunk, Document
from ..outside import Length
from ..results import ChunkStats, CutRate, Overlap

SHORT_CHUNK = 30
CUT_KINDS = ("table", "pre")


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
