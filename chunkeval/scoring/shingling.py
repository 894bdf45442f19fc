"""The shingle rule: text is compared as sets of n-character shingles after removing all
whitespace; a gold text shorter than a shingle is found as a substring (see the package notes)."""

from __future__ import annotations

from functools import lru_cache
from typing import Iterable, Sequence

import numpy as np

from ..model import whitespace
from ..results import DEFAULTS

SHINGLE = DEFAULTS.shingle


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


@lru_cache(maxsize=1)
def _whitespace() -> np.ndarray:
    """The code points str.split() removes."""
    return np.array(whitespace(), dtype=np.uint32)


def _code_points(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)

