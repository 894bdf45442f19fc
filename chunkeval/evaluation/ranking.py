"""A retriever's ranking, checked against the index contract, and parent-child's children
merged into their parents."""

from __future__ import annotations

import numpy as np

from ..errors import ContractError

# Deep enough that the 4,000-char end of the budget curve fills even with small chunks.
SEARCH_DEPTH = 64
# Parent-child searches children this many times deeper, so that after merging children
# into their parents there are still enough distinct parents.
CHILD_DEPTH_FACTOR = 8


def checked(ranked, queries: int, chunks: int, retriever: str) -> np.ndarray:
    """A retriever's ranking as the index contract promises it: integer chunk ids, a row a
    query, -1 padding; anything else is the retriever's fault, said as such."""
    ranked = np.asarray(ranked)
    ok = (ranked.ndim == 2 and ranked.shape[0] == queries
          and (ranked.size == 0 or (np.issubdtype(ranked.dtype, np.integer)
                                    and ranked.min() >= -1 and ranked.max() < chunks)))
    if not ok:
        raise ContractError(f"retriever {retriever!r}: search() returned {ranked.dtype} of "
                            f"shape {ranked.shape} for {queries} queries over {chunks} chunks; "
                            "expected integer chunk ids in [-1, chunks), a row a query")
    if ranked.size:
        found = ranked >= 0
        gap = (found[:, 1:] & ~found[:, :-1]).any(axis=1)  # an id after the -1 padding
        ordered = np.sort(ranked, axis=1)
        twice = ((ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)).any(axis=1)
        for bad, what in ((gap, "a chunk id after -1 padding"), (twice, "a chunk id twice")):
            if bad.any():
                raise ContractError(f"retriever {retriever!r}: search() returned {what} for "
                                    f"query {int(np.argmax(bad))}: a ranking lists each chunk "
                                    "once, best first, -1 only at its end")
    return ranked.astype(np.int64, copy=False)



def merge_into_parents(children: np.ndarray, parent_of: np.ndarray, depth: int) -> np.ndarray:
    """Child rank order, each parent once."""
    out = np.full((children.shape[0], depth), -1, dtype=np.int64)
    for qi, row in enumerate(children):
        seen: list[int] = []
        for c in row:
            if c < 0:
                break
            p = int(parent_of[c])
            if p not in seen:
                seen.append(p)
                if len(seen) == depth:
                    break
        out[qi, :len(seen)] = seen
    return out
