"""The verdict: is a run worse than its baseline, per metric, beyond what noise explains?

A verdict is a paired test of the new per-query values against the recorded ones: a gated
metric regressed only when the bootstrap interval of the mean difference lies wholly below
zero *and* the drop is at least `min_effect`. The same bounds upward mark an improvement,
which is reported, never failed.

An entry may carry a calibrated noise floor (`chunkeval calibrate STRATEGY --record`): per
metric, the mean and spread of the differences that harmless variants of the strategy (its
boundaries shifted) made against this very entry. Then the verdict asks two questions: does
the drop exceed what re-chunking noise explains (a prediction bound from those variants, at
the family-wise level) and what query sampling explains (a 95% paired bootstrap)? The
bootstrap alone answers the second question only, and is about twice as wide as the first
needs on the default corpus (docs/method.md, "How much to trust the gate").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..errors import BaselineError
from ..metrics import COMPARED, GATED
from .entry import BaselineEntry, Noise

if TYPE_CHECKING:  # imported by compare: a session that only configures the gate needs none
    import numpy as np

# With a calibrated noise floor, the query-sampling interval is a plain 95% one: the floor
# already carries the family-wise bound.
NOISE_CONFIDENCE = 0.95


@dataclass(frozen=True)
class Tolerance:
    min_effect: float = 0.02  # a real regression is also a big enough one (2 points)
    alpha: float = 0.05  # chance that a harmless change fails any of a strategy's comparisons
    family: int = 1  # how many comparisons of one strategy are gated in the session
    gated: tuple[str, ...] = GATED
    resamples: int = 4000
    seed: int = 0
    cut_slack: float = 0.01  # cut rate is deterministic; allow rounding only
    cut_ceiling: float = 0.25

    @property
    def confidence(self) -> float:
        """Two-sided confidence of each interval: Bonferroni over the strategy's family, so
        that one-sided, P(any harmless comparison falls wholly below 0) <= alpha."""
        return 1 - 2 * self.alpha / max(1, self.family)

    def noise_margin(self, noise: Noise) -> float:
        """Half-width of the prediction interval of one more harmless difference, one-sided
        at alpha / family, from a noise floor (Student's t)."""
        from scipy.stats import t
        j = noise.trials
        q = float(t.ppf(1 - self.alpha / max(1, self.family), j - 1))
        return q * noise.sd * math.sqrt(1 + 1 / j)

    def to_json(self) -> dict:
        """The bounds a project sets, as calibrate's report records them (the family is
        the judged table's own)."""
        return {"alpha": self.alpha, "min_effect": self.min_effect, "gated": list(self.gated),
                "cut_ceiling": self.cut_ceiling}


DEFAULT_TOLERANCE = Tolerance()


def level(confidence: float) -> str:
    """An interval's level as every output labels it: "99.6% CI"."""
    return f"{confidence * 100:.1f}".removesuffix(".0") + "% CI"


def family_note(confidences, alpha: float = DEFAULT_TOLERANCE.alpha) -> str:
    """The one sentence saying why an interval is wider than 95% (empty when none is)."""
    wide = sorted({c for c in confidences if c > NOISE_CONFIDENCE + 1e-9})
    if not wide:
        return ""
    shown = " and ".join(level(c) for c in wide)
    return (f"{shown}: family-wise intervals. A strategy's gated comparisons share one "
            f"{alpha:.0%} chance of failing a harmless change (Bonferroni), so each "
            "comparison's interval is wider than 95%.")


@dataclass(frozen=True)
class Verdict:
    metric: str
    baseline: float
    value: float
    diff: float
    low: float
    high: float
    status: str  # "ok", "regressed", "improved"
    gated: bool = True
    confidence: float = NOISE_CONFIDENCE
    # with a calibrated noise floor: the range of differences harmless variants make
    harmless: tuple[float, float] | None = None

    def describe(self) -> str:
        """In points, as the summary table shows them."""
        floor = ("" if self.harmless is None else
                 f"; harmless variants {self.harmless[0] * 100:+.1f} to "
                 f"{self.harmless[1] * 100:+.1f}")
        return (f"{self.metric}: {self.value * 100:.1f}% vs baseline {self.baseline * 100:.1f}% "
                f"(diff {self.diff * 100:+.1f} points, {level(self.confidence)} "
                f"{self.low * 100:+.1f} to {self.high * 100:+.1f}{floor}) -> {self.status}")

    @classmethod
    def from_json(cls, data: dict) -> Verdict:
        """Back from to_json (a row's verdict, as a test reports it to the controller)."""
        harmless = data.get("harmless")
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__}
                   | {"harmless": None if harmless is None else tuple(harmless)})

    def to_json(self) -> dict:
        out = {k: (round(v, 6) if isinstance(v, float) else v) for k, v in self.__dict__.items()}
        if self.harmless is None:
            del out["harmless"]
        else:
            out["harmless"] = [round(v, 6) for v in self.harmless]
        return out


class Measured(Protocol):
    """A result or a baseline entry: anything with per-query series."""

    def series(self, complete_at: float) -> dict[str, np.ndarray]: ...


def compare(now: Measured, entry: BaselineEntry, complete_at: float,
            tol: Tolerance) -> list[Verdict]:
    """One verdict per metric both sides have; only gated metrics can regress. A metric with
    a noise floor in the entry is judged against it (see the module notes). BaselineError
    when the two were not measured on the same queries."""
    import numpy as np

    from ..stats import paired_bootstrap

    new = now.series(complete_at)
    old = entry.series(complete_at)
    verdicts = []
    for m in COMPARED:
        src = m.series
        if src not in new or src not in old:
            continue
        a, b = new[src], old[src]
        if a.shape != b.shape:
            raise BaselineError(f"{m.name}: {len(a)} queries now, {len(b)} in the baseline")
        if not len(a):
            continue
        # Every comparison with NaN is false: a NaN would pass any bound.
        if not (np.isfinite(a).all() and np.isfinite(b).all()):
            raise BaselineError(f"{m.name}: a value is not a finite number")
        floor = entry.noise.get(m.name)
        confidence = tol.confidence if floor is None else NOISE_CONFIDENCE
        ci = paired_bootstrap(a, b, resamples=tol.resamples, seed=tol.seed,
                              confidence=confidence)
        harmless = None
        below, above = ci.high < 0, ci.low > 0
        if floor is not None:
            margin = tol.noise_margin(floor)
            harmless = (floor.offset - margin, floor.offset + margin)
            below = below and ci.diff < harmless[0]
            above = above and ci.diff > harmless[1]
        gated = m.name in tol.gated
        status = "ok"
        if gated and below and ci.diff <= -tol.min_effect:
            status = "regressed"
        elif above and ci.diff >= tol.min_effect:
            status = "improved"
        verdicts.append(Verdict(m.name, float(b.mean()), float(a.mean()), float(ci.diff),
                                float(ci.low), float(ci.high), status, gated, confidence,
                                harmless))
    return verdicts
