"""Statistics for comparing methods on the same queries (SPEC section 3).

Every metric is a mean over queries, reported with its standard error; two methods are
compared per query, by a paired bootstrap of the mean difference.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np

# The bootstrap's defaults, for every comparison that does not set its own (the gate's
# Tolerance does): the reports and the sweep say these numbers in their notes.
RESAMPLES = 2000
SEED = 0
CONFIDENCE = 0.95

def _values(values: Sequence[float], what: str = "values") -> np.ndarray:
    v = np.asarray(values, dtype=np.float64).ravel()
    if v.size == 0:
        raise ValueError(f"no {what}: a mean needs at least one")
    return v


def mean_se(values: Sequence[float]) -> tuple[float, float]:
    """The mean and its standard error (sample std / sqrt(n); 0 for a single value)."""
    v = _values(values)
    se = float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else 0.0
    return float(v.mean()), se


@dataclass(frozen=True, slots=True)
class Interval:
    """Mean of a - b with a bootstrap confidence interval."""

    diff: float
    low: float
    high: float
    confidence: float = CONFIDENCE

    @property
    def shows_difference(self) -> bool:
        """False when the interval contains 0: no difference shown."""
        return not (self.low <= 0.0 <= self.high)


@lru_cache(maxsize=2)
def _resample_indexes(seed: int, n: int, resamples: int) -> np.ndarray:
    """The index matrix of paired_bootstrap, drawn once per shape: a test session compares
    several metrics on the same queries (one size per query set), and drawing cost more than
    the resampling. The last two shapes stay in memory (16 MB each at 2,000 x 1,000)."""
    idx = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    idx.flags.writeable = False
    return idx


def _resampled(a: Sequence[float], b: Sequence[float], resamples: int, seed: int
               ) -> tuple[np.ndarray, np.ndarray | None]:
    """The paired differences a - b and the mean of each resample of them (None when every
    difference is 0: each resample's mean is then 0 too)."""
    x, y = _values(a, "values in a"), _values(b, "values in b")
    if x.shape != y.shape:
        raise ValueError(f"paired values need equal lengths: {x.size} vs {y.size}")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    d = x - y
    if not d.any():
        return d, None
    return d, d[_resample_indexes(seed, d.size, resamples)].mean(axis=1)


def paired_bootstrap(a: Sequence[float], b: Sequence[float], *, resamples: int = RESAMPLES,
                     seed: int = SEED, confidence: float = CONFIDENCE) -> Interval:
    """Percentile interval of mean(a - b), resampling queries (pairs stay together).

    All resamples come from one seeded index matrix, so equal inputs give an equal
    interval; memory is resamples x len(a) indexes (16 MB for 2,000 x 1,000 queries).
    """
    return paired_test(a, b, resamples=resamples, seed=seed, confidence=confidence)[0]


def bootstrap_p(a: Sequence[float], b: Sequence[float], *, resamples: int = RESAMPLES,
                seed: int = SEED) -> float:
    """One-sided p-value that mean(a) > mean(b), from the same resamples as paired_bootstrap:
    the share of resampled mean differences at or below 0, counted with the observed one
    ((1 + count) / (1 + resamples)), so it is never 0. 1 when a and b are equal."""
    return paired_test(b, a, resamples=resamples, seed=seed)[1]


def paired_test(a: Sequence[float], b: Sequence[float], *, resamples: int = RESAMPLES,
                seed: int = SEED, confidence: float = CONFIDENCE) -> tuple[Interval, float]:
    """paired_bootstrap(a, b) and bootstrap_p(b, a), the one-sided p-value that mean(b) >
    mean(a), from one resampling of the pairs (a comparison that needs both pays once).
    The resampled means of b - a are exactly those of a - b negated (IEEE negation and
    rounding are symmetric), so the p-value counts the means of a - b at or above 0."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    d, means = _resampled(a, b, resamples, seed)
    if means is None:  # what every resample's mean is then; the common case of an unchanged run
        return Interval(0.0, 0.0, 0.0, confidence), 1.0
    tail = (1 - confidence) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    p = (1 + np.count_nonzero(means >= 0)) / (1 + resamples)
    return Interval(float(d.mean()), float(low), float(high), confidence), float(p)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the order given: reject where adjusted < alpha
    and the family-wise error stays at most alpha."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    m, running = len(pvalues), 0.0
    out = [1.0] * m
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        out[i] = running
    return out


@dataclass(frozen=True, slots=True)
class Bounds:
    """Simultaneous one-sided bounds on the mean differences of several paired series."""

    diffs: tuple[float, ...]
    lows: tuple[float, ...]  # all true differences above these, at once, with 1 - alpha
    highs: tuple[float, ...]  # all below these, at once, with 1 - alpha
    ses: tuple[float, ...]  # bootstrap standard errors of the differences
    c_low: float  # the multipliers of the standard errors: diff -/+ c * se
    c_high: float


def simultaneous_bounds(differences: Sequence[Sequence[float]], *, alpha: float,
                        resamples: int = RESAMPLES, seed: int = SEED) -> Bounds:
    """Family-wise one-sided bounds for the means of several paired difference series on the
    same queries (each row: one comparison's per-query differences), by the bootstrap max-t
    rule: every row is resampled with the same query indexes (`_resample_indexes`), each
    resampled mean is centred on the row's mean and divided by the row's bootstrap standard
    error, and c is the 1 - alpha quantile of the largest of those over the rows. Then
    low = diff - c_low * se holds for every row at once with about 1 - alpha (and high =
    diff + c_high * se likewise, the maximum taken the other way). The rows' correlation is
    used, so the bounds are tighter than Bonferroni's (or Holm's) with many alike rows. A row
    of equal values has se 0 and its bounds are its mean."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    rows = [_values(r, "differences") for r in differences]
    if not rows:
        return Bounds((), (), (), (), 0.0, 0.0)
    n = rows[0].size
    if any(r.size != n for r in rows):
        raise ValueError("paired differences need equal lengths")
    idx = _resample_indexes(seed, n, resamples)
    top_up = np.full(resamples, -np.inf)
    top_down = np.full(resamples, -np.inf)
    diffs, ses = [], []
    for r in rows:
        d = float(r.mean())
        means = r[idx].mean(axis=1) if r.any() else np.zeros(resamples)
        se = float(means.std())
        if se > 0:
            z = (means - d) / se
            np.maximum(top_up, z, out=top_up)
            np.maximum(top_down, -z, out=top_down)
        diffs.append(d)
        ses.append(se)
    varied = np.isfinite(top_up).all()
    c_low = float(np.quantile(top_up, 1 - alpha)) if varied else 0.0
    c_high = float(np.quantile(top_down, 1 - alpha)) if varied else 0.0
    return Bounds(tuple(diffs), tuple(d - c_low * s for d, s in zip(diffs, ses)),
                  tuple(d + c_high * s for d, s in zip(diffs, ses)), tuple(ses), c_low, c_high)
