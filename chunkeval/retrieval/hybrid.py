"""Hybrid retrieval: reciprocal rank fusion of registered retrievers' rankings."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .ranking import RRF_DEPTH, Index, batches, check_k, top_k

RRF_CONSTANT = 60


class HybridIndex:
    """Reciprocal rank fusion: a chunk scores sum 1 / (60 + rank) over the parts' rankings
    (rank from 1, the top `depth` of each), so no score scale dominates. Built from
    existing indexes over the same chunks, so an evaluator reuses them."""

    def __init__(self, *parts: Index, constant: int = RRF_CONSTANT, depth: int = RRF_DEPTH):
        if len(parts) < 2 or len({len(p) for p in parts}) != 1:
            raise ValueError(f"hybrid needs two or more indexes over the same chunks: "
                             f"{', '.join(str(len(p)) for p in parts)} chunks")
        self.parts, self.constant, self.depth = parts, constant, depth

    def __len__(self) -> int:
        return len(self.parts[0])

    def search(self, queries: Sequence[str], k: int) -> np.ndarray:
        check_k(k)
        depth = max(self.depth, k)
        runs = [p.search(queries, depth) for p in self.parts]
        share = 1.0 / (self.constant + np.arange(1, depth + 1))
        n = len(self)
        out = np.full((len(queries), k), -1, dtype=np.int64)
        for lo, hi in batches(len(queries), n):
            # column n takes the -1 padding; a chunk is in a run once, so no id repeats
            # within one += (the sums run over the parts in order, as a bincount would)
            fused = np.zeros((hi - lo, n + 1))
            rows = np.arange(hi - lo)[:, None]
            for run in runs:
                fused[rows, run[lo:hi]] += share
            fused = fused[:, :n]
            best = top_k(fused, k)
            # a chunk in no run has no score: pad with -1 rather than rank it
            best[fused[rows, np.maximum(best, 0)] == 0] = -1
            out[lo:hi] = best
        return out
