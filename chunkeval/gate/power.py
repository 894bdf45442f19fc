"""Which query sets can gate: the smallest drop a set's gate catches, from its size and the
spread of its per-query coverage.

The gate's paired test of a set of n queries, one-sided at alpha / family, catches a mean
drop d with probability POWER when d >= (z(1 - alpha/family) + z(POWER)) * sd / sqrt(n),
sd being the spread of the per-query differences (normal approximation). Between two
chunking strategies that spread is about the spread of per-query coverage itself (the
median ratio was 0.93 over every pair of built-in strategies on the default corpora), so
the coverage's spread stands for it: measured on the set's baseline entries where there are
any (on at least MIN_MEASURED queries), else SD_PRIOR.

A set whose smallest caught drop exceeds MIN_DETECTABLE is reported, not gated: a 4-query
set catches only drops of 60 points and more, so passing it says nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist, median
from typing import Iterable, Sequence

from .verdict import DEFAULT_TOLERANCE

POWER = 0.8
# A set gates when it catches a 15-point drop of coverage 4 times in 5. On the default
# corpora, 15 points separates chunking choices a team would revert (fixed-1600 from
# fixed-200 under a budget; LSA on 200-character chunks); smaller sets miss such changes.
MIN_DETECTABLE = 0.15
# The median spread of per-query coverage over every built-in strategy and retriever on the
# default corpora (37-44 points); used before a set has a baseline.
SD_PRIOR = 0.40
# A spread measured on fewer queries than this only raises the prior, never lowers it: the
# spread of 4 values can be near 0 by chance, and would call a 4-query set fit to gate.
MIN_MEASURED = 30


@dataclass(frozen=True)
class SetPower:
    """What the gate can see on one query set."""

    name: str
    queries: int
    sd: float  # spread of per-query coverage, 0-1
    measured: bool  # sd from the set's baseline entries (else SD_PRIOR)
    smallest_drop: float  # the smallest mean drop caught with POWER, 0-1 (inf: no queries)
    alpha: float = DEFAULT_TOLERANCE.alpha
    family: int = 1

    @property
    def gates(self) -> bool:
        return self.smallest_drop <= MIN_DETECTABLE + 1e-9

    def reason(self) -> str:
        """Why the set is not gated, in one line (empty when it is)."""
        if self.gates:
            return ""
        if not self.queries:
            return f"query set {self.name!r} has no queries: not gated"
        spread = "measured on its baseline" if self.measured else "assumed"
        return (f"query set {self.name!r} is too small to gate: {self.queries} queries catch "
                f"only drops of {self.smallest_drop * 100:.0f} points or more (coverage "
                f"spread {self.sd * 100:.0f} points, {spread}); a gate needs "
                f"{MIN_DETECTABLE * 100:.0f} or less, "
                f"about {self.queries_needed} queries")

    def before_baseline(self) -> str:
        """Whether the set gates, in one line, judged from the assumed spread before a
        baseline is recorded (what `chunkeval init` says and writes)."""
        return f"{self.queries} queries; " + (
            f"gates: catches a drop of {self.smallest_drop * 100:.0f} points (4 times in 5)"
            if self.gates else
            f"measured and shown, does not gate: catches only drops of "
            f"{self.smallest_drop * 100:.0f} points or more (a gate needs "
            f"{MIN_DETECTABLE * 100:.0f}, about {self.queries_needed} queries); "
            "judged again from its baseline's spread once recorded")

    @property
    def queries_needed(self) -> int:
        return queries_needed(self.sd, MIN_DETECTABLE, self.alpha, self.family)

    def to_json(self) -> dict:
        return {"queries": self.queries, "sd": round(self.sd, 4), "measured": self.measured,
                "smallest_drop": (round(self.smallest_drop, 4)
                                  if math.isfinite(self.smallest_drop) else None),
                "gates": self.gates}


def _z(alpha: float, family: int, power: float = POWER) -> float:
    z = NormalDist().inv_cdf  # the standard library's: scipy.stats alone takes 0.6 s to import
    return z(1 - alpha / max(1, family)) + z(power)


def smallest_drop(queries: int, sd: float, alpha: float, family: int = 1,
                  min_effect: float = 0.0) -> float:
    """The smallest mean drop (0-1) the gate catches with POWER on `queries` queries."""
    if queries <= 0:
        return math.inf
    return max(min_effect, _z(alpha, family) * sd / math.sqrt(queries))


def queries_needed(sd: float, effect: float, alpha: float = DEFAULT_TOLERANCE.alpha,
                   family: int = 12, power: float = POWER) -> int:
    """Queries a paired test needs to catch a mean drop `effect` with the given power, when
    per-query differences have standard deviation `sd` (normal approximation, one-sided at
    alpha / family)."""
    return math.ceil((_z(alpha, family, power) * sd / effect) ** 2)


def coverage_sd(series: Iterable[Sequence[float]]) -> float | None:
    """The median spread of per-query coverage over results of one set (None: none)."""
    import numpy as np  # here: reading the gate's settings needs none

    sds = [float(np.std(s)) for s in series if len(s) > 1]
    # statistics' median: numpy's is the same number, and imports numpy.ma into every gate
    return median(sds) if sds else None


def set_power(name: str, queries: int, *, alpha: float, family: int = 1,
              min_effect: float = 0.0, sd: float | None = None) -> SetPower:
    measured = sd is not None and (queries >= MIN_MEASURED or sd >= SD_PRIOR)
    if not measured:
        sd = SD_PRIOR
    return SetPower(name, queries, sd, measured,
                    smallest_drop(queries, sd, alpha, family, min_effect), alpha, family)


__all__ = ["MIN_DETECTABLE", "POWER", "SD_PRIOR", "SetPower", "coverage_sd", "queries_needed",
           "set_power", "smallest_drop"]
