"""The sample check of a retriever from outside that declares a cache key.

A declared key (identity.declared_key) is the team's word that its retriever computes what
it computed when its vectors and results were kept. Each session holds it to that word on a
sample of the session's own texts before anything kept is used: some of the query set's
queries, the longest chunks and the chunks holding the rarest terms (SAMPLE texts at most),
each a window that moves every day, so that other texts are checked over time. An embedding
retriever embeds the sample, and its vectors must be those its embedding cache holds; a
`build` one (or a hybrid, or an embedding one whose sampled vectors were pruned) searches
with the sampled queries, and their rows must be those of the kept result. A difference
discards what is kept under the key (identity.discard), said in one line.
"""

from __future__ import annotations

import heapq
import re
import time
from collections import Counter
from itertools import chain
from typing import TYPE_CHECKING, Callable, Sequence

if TYPE_CHECKING:
    import numpy as np

QUERIES = 12
LONGEST = 10
RAREST = 10
SAMPLE = QUERIES + LONGEST + RAREST
POOL = 4  # a window moves over POOL times as many candidates as it takes
CANDIDATES = 500  # the chunks the rarest terms are looked for in, a window too
# L2-normalised vectors of one text computed twice: a model's last bits move with threads
# and batching, a changed model moves them by far more
TOLERANCE = 1e-4
_TERM = re.compile(r"\w+")


def turn() -> int:
    """Which window is checked: the day (UTC), so every day checks other texts."""
    return int(time.time() // 86400)


def window(items: Sequence, n: int, at: int) -> list:
    """`n` consecutive items (wrapping round) starting at window number `at`."""
    if len(items) <= n:
        return list(items)
    start = (at * n) % len(items)
    return [items[(start + i) % len(items)] for i in range(n)]


def queries(count: int, at: int) -> list[int]:
    """The positions of the sampled queries of a set of `count`."""
    return sorted(window(range(count), QUERIES, at))


def chunks(texts: Sequence[str], at: int) -> list[str]:
    """The sampled chunk texts: the longest, and those holding the rarest terms among a
    window of CANDIDATES chunks (a term's rarity is the number of those chunks it is in; a
    chunk's, that of its rarest term), so that the cost does not grow with the corpus."""
    unique = sorted(set(texts))
    longest = window(heapq.nsmallest(POOL * LONGEST, unique, key=lambda t: (-len(t), t)),
                     LONGEST, at)
    candidates = [t for t in window(unique, CANDIDATES, at) if t not in longest]
    terms = [set(_TERM.findall(t.lower())) for t in candidates]
    df = Counter(chain.from_iterable(terms))
    rarity = {t: min(map(df.__getitem__, found)) for t, found in zip(candidates, terms) if found}
    rarest = heapq.nsmallest(POOL * RAREST, rarity, key=lambda t: (rarity[t], t))
    return longest + window(rarest, RAREST, at)


def vectors_differ(embed: Callable[[list[str]], np.ndarray], batch_size: int,
                   kept: dict[str, np.ndarray]) -> int:
    """How many of the `kept` vectors (by text) `embed` no longer computes."""
    import numpy as np

    from .retrieval.embedding import _check, _normalised
    texts = list(kept)
    step = max(1, batch_size)
    now = _normalised(np.concatenate([_check(embed(texts[lo:lo + step]), len(texts[lo:lo + step]))
                                      for lo in range(0, len(texts), step)]))
    old = _normalised(np.stack([kept[t] for t in texts]))
    if now.shape != old.shape:
        return len(texts)
    return int((np.abs(now - old).max(axis=1) > TOLERANCE).sum())


def said(name: str, what: str) -> str:
    """The one line a mismatch is said in."""
    return (f"retriever {name!r} no longer computes the {what} kept under its cache_key: its "
            "cached vectors and results are discarded and computed anew (change cache_key "
            "when what it reads changes)")
