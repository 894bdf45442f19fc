"""What every index answers, and the batched top-k ranking they share.

`search(queries, k)` returns an int64 array [len(queries), k] of chunk ids in rank order,
padded with -1 when there are fewer than k chunks. Scores are rounded to a fixed number of
significant bits before they are ranked (`rounded`), and equal scores rank the lower chunk id
(the earlier chunk) first, so a ranking is a pure function of the texts and the queries, the
same on any CPU.
"""

from __future__ import annotations

from typing import Protocol, Sequence

import numpy as np

# A batch of dense scores holds at most this many floats, whatever the corpus size; top_k
# works on fewer at a time, as its temporaries are several times the size of its rows.
_BATCH_CELLS = 1 << 23
_TOP_CELLS = 1 << 21
_MAX_BATCH = 256
# Deep enough for a reciprocal-rank fusion of the parts (hybrid.py).
RRF_DEPTH = 100


class Index(Protocol):
    """The retriever contract's index: `search` ranks chunk ids per query, -1 padded."""

    def __len__(self) -> int: ...

    def search(self, queries: Sequence[str], k: int) -> np.ndarray: ...


# Significant bits a score keeps before ranking, by its type. A score's last bits are the
# rounding error of the sums it was made of, and those sums run in an order that depends on
# the CPU's vector width and the BLAS kernel: LSA's cosines (float64) vary by at most 5e-16
# between two BLAS kernels, a 512-dimensional float32 cosine by up to 5e-7. 30 bits
# (relative 9.3e-10, about 9 significant digits) are a million times coarser than the first,
# and two parts' reciprocal-rank sums that differ at depth 100 differ by more; 16 bits (relative
# 1.5e-5, about 5 digits) are 30 times coarser than the second, and a float32 sum of a few
# hundred terms is not exact to more. A difference below this is rounding, not retrieval:
# such chunks tie, and the earlier chunk ranks first. A score near the edge of a step can
# still land on either side on another CPU, but rarely (docs/reproducibility.md).
SCORE_BITS = {np.dtype(np.float64): 30, np.dtype(np.float32): 16}


def rounded(scores: np.ndarray) -> np.ndarray:
    """`scores` rounded to SCORE_BITS[dtype] significant bits (a new array). Exact: the mantissa
    is scaled by a power of two, rounded to an integer and scaled back (no logarithm, whose
    last bit may itself differ between CPUs). Monotone, so a ranking can only gain ties."""
    bits = SCORE_BITS.get(scores.dtype)
    if bits is None:  # integers, or a type of its own: ranked as they are
        return scores
    mantissa, exponent = np.frexp(scores)
    mantissa *= 1 << bits
    np.round(mantissa, out=mantissa)
    return np.ldexp(mantissa, exponent - bits, out=mantissa)


def batches(n_queries: int, n_chunks: int):
    size = max(1, min(_MAX_BATCH, _BATCH_CELLS // max(n_chunks, 1)))
    for lo in range(0, n_queries, size):
        yield lo, min(lo + size, n_queries)


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Row-wise ids of the k highest scores (rounded: `rounded`), best first, lower id
    first among equals."""
    n_rows, n = scores.shape
    step = max(1, _TOP_CELLS // max(n, 1))
    if n_rows > step:  # each row on its own: the same ids, a few rows at a time
        return np.concatenate([top_k(scores[lo:lo + step], k) for lo in range(0, n_rows, step)])
    out = np.full((n_rows, k), -1, dtype=np.int64)
    take = min(k, n)
    if take == 0 or n_rows == 0:
        return out
    scores = rounded(scores)
    if take < n:
        part = np.argpartition(-scores, take - 1, axis=1)[:, :take]
        kth = scores[np.arange(n_rows)[:, None], part].min(axis=1)[:, None]
        # argpartition picks arbitrarily among scores equal to the k-th; take the lowest ids
        above = scores > kth
        tied = scores == kth
        need = take - above.sum(axis=1, keepdims=True)
        chosen = above | (tied & (np.cumsum(tied, axis=1, dtype=np.int32) <= need))
        cand = np.nonzero(chosen)[1].reshape(n_rows, take)
    else:
        cand = np.broadcast_to(np.arange(n), (n_rows, n))
    # Each row's candidates come in id order, so a stable sort of the row by score puts
    # equal scores' lower ids first: one sort of k per row, not a lexsort of them all.
    ranked = np.argsort(-scores[np.arange(n_rows)[:, None], cand], axis=1, kind="stable")
    out[:, :take] = np.take_along_axis(cand, ranked, axis=1)
    return out


def check_k(k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")


class Batched:
    """Scores queries in batches, so memory stays bounded at any corpus size; subclasses
    give `n` (the chunk count) and `_score_batch(queries) -> [batch, n] scores`."""

    n: int

    def _score_batch(self, queries: Sequence[str]) -> np.ndarray:
        raise NotImplementedError

    def scores(self, queries: Sequence[str]) -> np.ndarray:
        """Dense [len(queries), len(self)] scores."""
        return np.vstack([self._score_batch(queries[lo:hi])
                          for lo, hi in batches(len(queries), self.n)]
                         or [np.zeros((0, self.n), dtype=np.float32)])

    def search(self, queries: Sequence[str], k: int) -> np.ndarray:
        """Ranks at least RRF_DEPTH deep and keeps the last ranking: a hybrid over this
        index, asked for the same queries next, reuses it instead of scoring them again.
        (A shallower ranking is a prefix of a deeper one: the order is total.)"""
        check_k(k)
        queries = list(queries)
        last = getattr(self, "_last", None)
        if last is None or last[0] != queries or last[1].shape[1] < k:
            depth = max(k, RRF_DEPTH)
            ranked = np.full((len(queries), depth), -1, dtype=np.int64)
            for lo, hi in batches(len(queries), self.n):
                ranked[lo:hi] = top_k(self._score_batch(queries[lo:hi]), depth)
            self._last = last = (queries, ranked)
        return last[1][:, :k].copy()


class EmptyIndex:
    """No chunks: every query gets an all -1 ranking."""

    def __len__(self) -> int:
        return 0

    def search(self, queries: Sequence[str], k: int) -> np.ndarray:
        check_k(k)
        return np.full((len(queries), k), -1, dtype=np.int64)
