"""The verdict on one retriever and query set: the best, every other configuration against it
with family-wise one-sided bounds, those as good as the best within the margin, and the
cheapest of them recommended (the method: the package's docstring)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .. import config
from ..errors import ConfigError
from ..gate.verdict import DEFAULT_TOLERANCE
from ..results import BY_NAME, Metric, Result
from ..stats import paired_bootstrap, simultaneous_bounds
from .points import Point

# The two metrics a sweep judges by, from the metric table, each with what a query hands the
# LLM (its cost) as sweep.json names it: the top k, or what fits the budget.
AT_K, IN_BUDGET = BY_NAME["recall_at_k"], BY_NAME["budget_recall"]
JUDGED: tuple[Metric, ...] = (AT_K, IN_BUDGET)
HANDED = {AT_K.name: "handed_at_k", IN_BUDGET.name: "handed_in_budget"}
METRICS = {m.name: m.series for m in JUDGED}  # metric -> the per-query series it is the mean of
DEFAULT_METRIC = config.BY_NAME["sweep_metric"].default
MIN_HOLDOUT = 30  # fewer held-out queries cannot carry a verdict
MIN_QUESTIONS = 30  # nor fewer queries at all: with fewer, "not enough evidence"
SEED = 0
DEFAULT_MARGIN = DEFAULT_TOLERANCE.min_effect  # the gate's: 2 points


def series_of(result: Result, metric: str) -> np.ndarray:
    """The per-query values `metric` is the mean of, unrounded."""
    return np.array([getattr(q, METRICS[metric]) for q in result.per_query])


def split_queries(ids: list[str], holdout: float | None, query_set: str
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(selection, judged) masks over the queries: both all of them without a holdout; else a
    seeded split, refused when the held-out part is under MIN_HOLDOUT queries."""
    n = len(ids)
    every = np.ones(n, dtype=bool)
    if not holdout:
        return every, every
    held = int(round(n * holdout))
    if held < MIN_HOLDOUT or n - held < 1:
        raise ConfigError(f"holdout {holdout:g}: query set {query_set!r} has {n} queries, so "
                          f"{held} would be held out; a verdict needs at least {MIN_HOLDOUT} "
                          "held-out queries and some left to choose on")
    judged = np.zeros(n, dtype=bool)
    judged[np.random.default_rng(SEED).permutation(n)[:held]] = True
    return ~judged, judged


def handed_per_query(result: Result, k: int, budget: int) -> tuple[list[int], list[int]]:
    """Each query's length handed to the LLM: the top k, and what fits the budget (the first
    chunk always taken), from the lengths of its retrieved chunks."""
    at_k, in_budget = [], []
    for q in result.per_query:
        lengths = [r[3] for r in q.retrieved]
        at_k.append(sum(lengths[:k]))
        total = 0
        for j, n in enumerate(lengths):
            if j and total + n > budget:
                break
            total += n
        in_budget.append(total)
    return at_k, in_budget


def handed(result: Result, k: int, budget: int) -> tuple[float, float]:
    """The means of handed_per_query, rounded as sweep.json holds them, so that the cost
    order recomputes from it exactly."""
    at_k, in_budget = handed_per_query(result, k, budget)
    return (round(float(np.mean(at_k)), 2) if at_k else 0.0,
            round(float(np.mean(in_budget)), 2) if in_budget else 0.0)


@dataclass
class Row:
    """One configuration with one retriever on one query set: its series and its costs."""

    point: Point
    result: Result
    handed_k: float
    handed_budget: float

    @property
    def chunks(self) -> int:
        return self.result.chunks.count

    @property
    def cut(self) -> float:
        return self.result.cut_rate.value

    def series(self, metric: str) -> np.ndarray:
        return series_of(self.result, metric)

    def cost(self, metric: str) -> tuple[float, float, float]:
        hand = self.handed_k if metric == AT_K.name else self.handed_budget
        return (self.chunks, hand, self.cut)


@dataclass
class Verdict:
    retriever: str
    query_set: str
    metric: str
    queries: int
    chosen_on: int
    judged_on: int
    best: str
    best_value: float
    alpha: float
    margin: float
    comparisons: list[dict] = field(default_factory=list)
    as_good: list[str] = field(default_factory=list)
    recommendation: dict | None = None
    needed: int | None = None  # about how many queries would tell within the margin
    bound: float = 0.0  # c of the family-wise lower bounds: diff - c * se
    against: dict | None = None

    @property
    def word(self) -> str:
        if self.as_good:
            return AS_GOOD
        return WINNER if all(c["shown_worse"] for c in self.comparisons) else UNCLEAR

    def to_json(self) -> dict:
        return {"retriever": self.retriever, "query_set": self.query_set, "metric": self.metric,
                "queries": self.queries, "chosen_on": self.chosen_on,
                "judged_on": self.judged_on, "best": self.best,
                "best_value": self.best_value, "alpha": self.alpha, "margin": self.margin,
                "verdict": self.word, "tested": len(self.comparisons), "as_good": self.as_good,
                "bound_multiplier": self.bound, "comparisons": self.comparisons,
                "recommendation": self.recommendation, "queries_needed": self.needed,
                "against": self.against}


WINNER, AS_GOOD, UNCLEAR = "confirmed winner", "several as good as the best", "not enough evidence"


def queries_needed(n: int, c: float, comparisons: list[dict], margin: float) -> int | None:
    """About how many queries would show some configuration within `margin` of the best: the
    family-wise bound narrows with the square root of the queries, so for a comparison with
    difference d and standard error se, d - c * se * sqrt(n / N) > -margin when
    N > n * (c * se / (margin + d))^2; the fewest over the comparisons whose difference is
    within the margin (None when none is)."""
    want = [n * (c * x["se"] / (margin + x["diff"])) ** 2 for x in comparisons
            if x["diff"] > -margin and x["se"] > 0]
    return int(math.ceil(min(want))) if want else None


def compare(series: dict[str, np.ndarray], costs: dict[str, tuple], chosen: np.ndarray,
            judged: np.ndarray, alpha: float, margin: float) -> tuple[str, list[dict], float]:
    """The best (by its mean on the `chosen` queries; ties: the cheaper) and every other
    configuration against it on the `judged` queries: difference, family-wise bounds, as good
    as the best or shown worse. Returns (best, comparisons, c of the lower bounds)."""
    best = max(series, key=lambda n: (float(series[n][chosen].mean()),
                                      tuple(-c for c in costs[n])))
    b = series[best][judged]
    others = [n for n in series if n != best]
    bounds = simultaneous_bounds([series[n][judged] - b for n in others], alpha=alpha)
    # on a handful of queries the bootstrap sees a handful of distinct resamples: its bounds
    # claim nothing
    enough = int(judged.sum()) >= MIN_QUESTIONS
    comparisons = [{"strategy": n, "mean": float(series[n][judged].mean()),
                    "diff": bounds.diffs[i], "se": bounds.ses[i], "low": bounds.lows[i],
                    "high": bounds.highs[i], "as_good": enough and bounds.lows[i] > -margin,
                    "shown_worse": enough and bounds.highs[i] < 0}
                   for i, n in enumerate(others)]
    return best, comparisons, bounds.c_low


def recommend(best: str, comparisons: list[dict], costs: dict[str, tuple]) -> str | None:
    """The cheapest of the best and those as good as it; None when neither that nor a
    confirmed winner was shown."""
    good = [c["strategy"] for c in comparisons if c["as_good"]]
    if not good and not all(c["shown_worse"] for c in comparisons):
        return None
    return min([best, *good], key=lambda n: costs[n])


def judge(rows: list[Row], metric: str, alpha: float, holdout: float | None,
          retriever: str, query_set: str, against: Row | None = None,
          margin: float = DEFAULT_MARGIN) -> Verdict:
    """The verdict on one retriever and query set (module docstring)."""
    ids = [q.id for q in rows[0].result.per_query]
    for r in rows[1:]:
        if [q.id for q in r.result.per_query] != ids:
            raise ConfigError(f"{r.point.name}: not measured on the same queries of "
                              f"{query_set!r} as {rows[0].point.name}")
    chosen, judged = split_queries(ids, holdout, query_set)
    series = {r.point.name: r.series(metric) for r in rows}
    costs = {r.point.name: r.cost(metric) for r in rows}
    best_name, comparisons, c_low = compare(series, costs, chosen, judged, alpha, margin)
    best = next(r for r in rows if r.point.name == best_name)
    b = series[best_name][judged]
    as_good = [c["strategy"] for c in comparisons if c["as_good"]]
    verdict = Verdict(retriever, query_set, metric, len(ids), int(chosen.sum()),
                      int(judged.sum()), best.point.name, float(b.mean()), alpha, margin,
                      comparisons, as_good, bound=c_low)
    if verdict.word == UNCLEAR:
        needed = queries_needed(verdict.judged_on, c_low, comparisons, margin)
        verdict.needed = max(needed or 0, MIN_QUESTIONS) if verdict.judged_on < MIN_QUESTIONS \
            else needed
        return verdict
    by_name = {c["strategy"]: c for c in comparisons}
    rec_name = recommend(best_name, comparisons, costs)
    rec = next(r for r in rows if r.point.name == rec_name)
    c = by_name.get(rec.point.name, {"diff": 0.0, "low": 0.0, "high": 0.0})
    chunks, hand, cut = rec.cost(metric)
    verdict.recommendation = {
        "strategy": rec.point.name, "spec": rec.point.spec,
        "mean": float(series[rec.point.name][judged].mean()), "diff": c["diff"],
        "low": c["low"], "high": c["high"], "is_best": rec is best,
        "chunks": chunks, "handed": hand, "cut_rate": cut}
    if against is not None:
        a = against.series(metric)
        if [q.id for q in against.result.per_query] != ids:
            raise ConfigError(f"{against.point.name}: not measured on the same queries of "
                              f"{query_set!r}")
        ci = paired_bootstrap(series[rec.point.name][judged], a[judged])
        verdict.against = {"strategy": against.point.name, "spec": against.point.spec,
                           "mean": float(a[judged].mean()), "diff": ci.diff, "low": ci.low,
                           "high": ci.high, "shows_difference": ci.shows_difference}
    return verdict
