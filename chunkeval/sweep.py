"""`chunkeval sweep`: which size and overlap, for this corpus and this retriever.

A grid of configurations of one strategy family (sizes x overlaps) is evaluated with the
session's evaluation, every configuration through the result cache (equal chunks: one
result). Per retriever and query set, at the top k (recall_at_k) and under the budget
(budget_recall), the chosen metric first:

- the best configuration by its mean is compared with every other one on the same queries:
  the difference (configuration - best) with one-sided bounds that hold for all the
  comparisons at once (`stats.simultaneous_bounds`, bootstrap max-t, at the configured
  `alpha`). A configuration is *as good as the best* when its lower bound is above -margin
  (`margin`, default the gate's min_effect: 2 points).
- the verdict: "several as good as the best" when some are; a "confirmed winner" when every
  other one is shown worse (its upper bound below 0); else "not enough evidence", with about
  how many queries would tell, and no recommendation.
- the recommendation: of the best and those as good as it, the cheapest: fewest chunks to
  index, then the fewest characters (units of `length`) handed to the LLM per query, then
  the lowest cut rate of tables and code.
- with a holdout share, the queries are split once (seed 0): the best is chosen on the rest
  and compared, and the recommendation judged, on the held-out queries only; a query set
  with fewer than MIN_HOLDOUT held out is left out with that reason (all of them: refused).
- with `against` (the team's current splitter), the recommendation minus it, paired.
- a grid of more than HALVING_FROM configurations (or with halving on) is first narrowed by
  successive halving on nested samples of the queries (`halve`), each rung dropping only the
  configurations it shows worse than its leader by more than the margin; the finalists are
  judged as above on all the queries (or all the held-out ones).

Every number of the verdict recomputes from sweep.json, which holds each configuration's
per-query series.
"""

from __future__ import annotations

import math
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from . import config, strategies
from .errors import ConfigError
from .progress import Progress
from .results import Failure, Result
from .report.markdown import md_text as md
from .report.sweep_page import HALVING_NOTE, pts, rung_dropped, unclear, versus_best
from .gate.verdict import DEFAULT_TOLERANCE
from .stats import RESAMPLES, SEED as BOOTSTRAP_SEED, paired_bootstrap, simultaneous_bounds
from .strategies import params as strategy_params
from .strategies.specs import call_spec

FILES = ("sweep.json", "sweep.html", "sweep.md")
METRICS = {"recall_at_k": "coverage", "budget_recall": "budget_coverage"}
DEFAULT_METRIC = config.BY_NAME["sweep_metric"].default
MIN_HOLDOUT = 30  # fewer held-out queries cannot carry a verdict
MIN_QUESTIONS = 30  # nor fewer queries at all: with fewer, "not enough evidence"
SEED = 0
DEFAULT_MARGIN = DEFAULT_TOLERANCE.min_effect  # the gate's: 2 points
FORMAT = 1


# -- the grid -----------------------------------------------------------------------------------
def parse_sizes(text: str, where: str = "--size") -> list[int]:
    """"100:2000:100" (start:stop:step, stop included), "200,400,800", or both mixed."""
    sizes: list[int] = []
    for part in [p.strip() for p in str(text).split(",") if p.strip()]:
        try:
            if ":" in part:
                bits = [int(b) for b in part.split(":")]
                if len(bits) not in (2, 3):
                    raise ValueError
                start, stop, step = bits if len(bits) == 3 else (*bits, 100)
                if step < 1 or stop < start:
                    raise ValueError
                sizes += list(range(start, stop + 1, step))
            else:
                sizes.append(int(part))
        except ValueError:
            raise ConfigError(f"{where}: {part!r} is not a size, a list of sizes or "
                              "START:STOP:STEP of whole numbers") from None
    bad = [s for s in sizes if s < 1]
    if not sizes or bad:
        raise ConfigError(f"{where}: sizes must be whole numbers of at least 1, got {text!r}")
    return list(dict.fromkeys(sizes))


def parse_overlaps(text: str, where: str = "--overlap") -> list[float]:
    """"0,0.1,0.2": a value under 1 is a share of the size, 1 or more a count."""
    out: list[float] = []
    for part in [p.strip() for p in str(text).split(",") if p.strip()]:
        try:
            v = float(part)
        except ValueError:
            raise ConfigError(f"{where}: {part!r} is not a number") from None
        if v < 0 or (v >= 1 and not v.is_integer()):
            raise ConfigError(f"{where}: {part!r}: an overlap is a share from 0 to under 1, "
                              "or a whole count")
        out.append(int(v) if v >= 1 else v)
    return list(dict.fromkeys(out)) or [0]


@dataclass(frozen=True)
class Point:
    """One configuration of the grid: the spec that makes it and the name it registers."""

    spec: str
    name: str
    size: int
    overlap: int  # in the size's units
    share: float  # overlap / size

    def to_json(self) -> dict:
        return {"spec": self.spec, "strategy": self.name, "size": self.size,
                "overlap": self.overlap, "share": round(self.share, 4)}


def _literal(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v) if isinstance(v, str) else f"{v:g}" if isinstance(v, float) else str(v)


def _call(head: str, kwargs: dict[str, Any]) -> str:
    return f"{head}({', '.join(f'{k}={_literal(v)}' for k, v in kwargs.items())})"


def _units(size: int, overlap: float) -> int:
    return int(round(size * overlap)) if overlap < 1 else int(overlap)


def grid(strategy: str, sizes: list[int], overlaps: list[float], root=None) -> list[Point]:
    """The configurations of `strategy` (a built-in family, `chonkie:Class` or a project's
    factory `module:attr`, each maybe with fixed parameters) at every size and overlap,
    registered. A family without an overlap takes only 0; an overlap of a size or more is
    left out of the grid (it would never advance)."""
    head, fixed_args = call_spec(strategy, "sweep strategy")
    for k in ("size", "overlap", "chunk_size", "chunk_overlap"):
        if k in fixed_args:
            raise ConfigError(f"sweep strategy {strategy!r}: parameter {k!r} is the grid's "
                              "(--size, --overlap), not the strategy's")
    if head in strategy_params.FAMILIES:
        takes = strategy_params.FAMILIES[head]
        if "size" not in takes:
            raise ConfigError(f"sweep strategy {strategy!r}: {head} has no size to sweep")
        if "overlap" not in takes and any(overlaps):
            raise ConfigError(f"sweep strategy {strategy!r}: parameter 'overlap': {head} "
                              "has none; sweep it with --overlap 0")
    elif ":" not in head:
        raise ConfigError(f"sweep strategy {strategy!r}: expected a built-in family "
                          f"({', '.join(strategy_params.FAMILIES)}), chonkie:Class or "
                          "module:factory")
    points: dict[str, Point] = {}
    for size in sizes:
        for ov in overlaps:
            units = _units(size, ov)
            if units >= size:
                continue
            if head.startswith("chonkie:"):
                args = {**fixed_args, "chunk_size": size} | (
                    {"chunk_overlap": units} if units else {})
            elif head in strategy_params.FAMILIES:
                args = {"size": size} | ({"overlap": units} if units else {}) | fixed_args
            else:
                args = {"size": size, "overlap": units, **fixed_args}
            spec = _call(head, args)
            name = register(spec, root)
            if name in points and head not in strategy_params.FAMILIES \
                    and points[name].spec != spec:
                # a built-in's name is what it does (0.5 and 50 of 100 are one); another
                # splitter that names itself so would hide every configuration but one
                raise ConfigError(f"sweep strategy {strategy!r}: {points[name].spec} and "
                                  f"{spec} are both named {name!r}; a swept splitter must "
                                  "not set its own strategy_name")
            if name not in points:
                points[name] = Point(spec, name, size, units, units / size)
    if not points:
        raise ConfigError(f"sweep of {strategy!r}: no configuration (every overlap is as "
                          "large as its size)")
    return list(points.values())


@contextmanager
def own_strategies():
    """The strategies registered inside are the sweep's: they are unregistered on the way out,
    so that a second sweep or a run in the same process knows only what it knew before."""
    before = set(strategies.names(all=True))
    try:
        yield
    finally:
        for name in set(strategies.names(all=True)) - before:
            strategies.unregister(name)


def register(spec: str, root=None) -> str:
    """The registered name of a built-in spec, a chonkie spec or a factory spec."""
    if strategy_params.is_spec(spec):
        return strategies.canonical(spec)
    if ":" in spec:
        found = strategies.load_splitter(spec, root)
        if len(found) != 1:
            raise ConfigError(f"splitter {spec!r}: makes {len(found)} strategies; a sweep "
                              "needs one per configuration")
        return found[0].name
    strategies.get(spec)  # a plain name: known or UnknownName
    return spec


# -- evaluation ---------------------------------------------------------------------------------
def evaluate(evaluation, names: list[str], retrievers: list[str], specs: list[str],
             progress: bool | None = None) -> tuple[dict, list[Failure]]:
    """(strategy, retriever, query set spec) -> Result for every configuration; what the
    caches hold is read, the rest evaluated, with configurations done, remaining and an
    estimate of the time left."""
    results: dict[tuple[str, str, str], Result] = {}
    failures: list[Failure] = []
    tasks = [(spec, name) for spec in specs for name in names]
    started, evaluated = time.monotonic(), 0
    with Progress("sweep", len(tasks), enabled=progress) as bar:
        for i, task in enumerate(tasks):
            stored = evaluation.stored_task(task, retrievers)
            if stored is None:
                stored = evaluation.run_task(task, retrievers)
                evaluated += 1
            for r, out in zip(retrievers, stored):
                if isinstance(out, Failure):
                    failures.append(out)
                else:
                    results[(task[1], r, task[0])] = out
            left = len(tasks) - i - 1
            rate = (time.monotonic() - started) / max(1, evaluated)
            eta = f", about {_duration(rate * left)} left" if evaluated and left else ""
            bar.step(f"{task[1]} on {task[0]} ({left} to go{eta})")
    return results, failures


def _duration(seconds: float) -> str:
    return f"{seconds:.0f}s" if seconds < 90 else f"{seconds / 60:.0f} min"


# -- successive halving ------------------------------------------------------------------------
HALVING_FROM = 60  # larger grids are halved unless told otherwise
FINALISTS = 8  # halving stops when this few are left
ETA = 3  # each rung is on three times the queries of the one before
MIN_RUNG = 30  # no rung judges on fewer queries


def halving_on(setting: str, configurations: int, where: str = "--halving") -> bool:
    if setting not in ("auto", "on", "off"):
        raise ConfigError(f"{where}: {setting!r}: one of auto, on, off")
    return setting == "on" or (setting == "auto" and configurations > HALVING_FROM)


def check_size(points: int, retrievers: int, query_sets: int, most: int, yes: bool,
               halving: bool) -> None:
    """Refuse a grid past `most` configurations without --yes, saying what it would cost."""
    if points <= most or yes:
        return
    searched = "" if not halving else (
        "; successive halving would judge all of them on a sample of the queries first and "
        "the ones it does not show worse than the sample's leader by more than the margin "
        "on more, perhaps on all")
    raise ConfigError(
        f"a sweep of {points:,} configurations would chunk the corpus {points:,} times, build "
        f"{points * retrievers:,} indexes and run {points * retrievers * query_sets:,} query "
        f"sets through them{searched}; past {most:,} configurations, pass --yes or raise "
        "[tool.chunkeval.sweep] max_configurations")


def rung_bounds(series: dict[str, np.ndarray], alpha: float) -> tuple[str, dict[str, float]]:
    """The rung's leader (the highest mean on the rung's queries; ties: the first) and, for
    every other configuration, the upper bound of (configuration - leader), one-sided and
    family-wise over the rung's comparisons (`stats.simultaneous_bounds`)."""
    leader = max(series, key=lambda n: float(series[n].mean()))
    others = [n for n in series if n != leader]
    bounds = simultaneous_bounds([series[n] - series[leader] for n in others], alpha=alpha)
    return leader, dict(zip(others, bounds.highs))


def halve(evaluation, names: list[str], retrievers: list[str], spec: str, metric: str,
          pool: np.ndarray, alpha: float, margin: float, progress: bool | None = None
          ) -> tuple[list[str], list[dict], list[Failure]]:
    """Successive halving of the configurations `names` on one query set: rung after rung,
    every one left is evaluated on a nested sample of the queries `pool` (indexes; with a
    holdout, those chosen on), three times larger each rung, until FINALISTS or fewer are
    left or a rung would need all the queries. A configuration is dropped only when the
    rung shows it worse than the rung's leader by more than the margin, for every retriever:
    its upper bound of (configuration - leader) is below -margin. The leader is no better
    than the best on all the queries, so a dropped configuration could not have been as
    good as the best; the rungs share `alpha` (each alpha / rungs), so the chance that any
    drop was wrong stays under alpha. Nothing is dropped by rank: a grid the samples cannot
    tell apart reaches the final comparison whole. Returns the finalists, the rungs (what was
    dropped where, on how many queries, with its bound) and the failures."""
    qs = evaluation.query_set(spec)
    order = np.random.default_rng(SEED + 1).permutation(pool)
    alive, rungs, failures = list(names), [], []
    total = math.ceil(math.log(max(1, len(alive) / FINALISTS), ETA)) if alive else 0
    for rung in range(total):
        if len(alive) <= FINALISTS:
            break
        m = max(MIN_RUNG, math.ceil(len(pool) / ETA ** (total - rung)))
        if m >= len(pool):
            break
        sample = f"{spec}#{m}"
        evaluation.add_query_set(sample, replace(
            qs, queries=tuple(qs.queries[j] for j in sorted(order[:m]))))
        found, failed = evaluate(evaluation, alive, retrievers, [sample], progress)
        failures += failed
        # name -> (retriever, leader, bound) with the highest bound: the weakest evidence
        weakest: dict[str, tuple[str, str, float]] = {}
        for ret in retrievers:
            series = {n: np.array([getattr(q, METRICS[metric]) for q in res.per_query])
                      for n in alive if (res := found.get((n, ret, sample))) is not None}
            if not series:
                continue
            leader, highs = rung_bounds(series, alpha / total)
            weakest[leader] = (ret, leader, math.inf)
            for n, high in highs.items():
                if n not in weakest or high > weakest[n][2]:
                    weakest[n] = (ret, leader, high)
        # a configuration that failed with every retriever is left out; its failure says why
        keep = [n for n in alive if n in weakest and weakest[n][2] >= -margin]
        dropped = [n for n in alive if n in weakest and n not in keep]
        rungs.append({"query_set": qs.name, "queries": m, "evaluated": len(alive),
                      "kept": len(keep), "dropped": dropped, "alpha": alpha / total,
                      "margin": margin,
                      "bounds": [{"strategy": n, "retriever": weakest[n][0],
                                  "leader": weakest[n][1], "high": weakest[n][2]}
                                 for n in dropped],
                      "failed": [n for n in alive if n not in weakest]})
        alive = keep
    return alive, rungs, failures


# -- the verdict --------------------------------------------------------------------------------
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
        return np.array([getattr(q, METRICS[metric]) for q in self.result.per_query])

    def cost(self, metric: str) -> tuple[float, float, float]:
        hand = self.handed_k if metric == "recall_at_k" else self.handed_budget
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


# -- the whole sweep ----------------------------------------------------------------------------
@dataclass
class Sweep:
    settings: dict
    points: list[Point]
    rows: dict[tuple[str, str], list[Row]]  # (retriever, query set name) -> rows
    verdicts: list[Verdict]
    against: dict[tuple[str, str], Row]
    failures: list[Failure]
    corpus: dict
    refused: dict[str, str] = field(default_factory=dict)  # query set -> why it was left out
    rungs: list[dict] = field(default_factory=list)  # successive halving, when it ran

    def to_json(self) -> dict:
        configs = []
        sets: dict[str, list[str]] = {}
        for (ret, qs), rows in self.rows.items():
            sets.setdefault(qs, [q.id for q in rows[0].result.per_query])
            for r in rows + ([self.against[(ret, qs)]] if (ret, qs) in self.against else []):
                res = r.result
                configs.append({
                    **r.point.to_json(), "retriever": ret, "query_set": qs,
                    "against": r is self.against.get((ret, qs)),
                    "metrics": {m: s.to_json() for m, s in res.metrics.items()},
                    "cut_rate": res.cut_rate.to_json(), "chunks": res.chunks.to_json(),
                    "handed_at_k": r.handed_k, "handed_in_budget": r.handed_budget,
                    "per_query": {"coverage": [q.coverage for q in res.per_query],
                                  "budget_coverage": [q.budget_coverage
                                                      for q in res.per_query],
                                  **dict(zip(("handed_at_k", "handed_in_budget"),
                                             handed_per_query(res, self.settings["k"],
                                                              self.settings["budget"])))},
                    "reused": bool(res.reused)})
        return {"format": FORMAT, "corpus": self.corpus, "settings": self.settings,
                "grid": [p.to_json() for p in self.points], "query_ids": sets,
                "configurations": configs, "verdicts": [v.to_json() for v in self.verdicts],
                "failed": [f.to_json() for f in self.failures], "refused": self.refused,
                "rungs": self.rungs}


def prepare(strategy: str, sizes: list[int], overlaps: list[float], *, metric: str,
            holdout: float | None, against: str | None, root=None, where: dict | None = None
            ) -> tuple[list[Point], Point | None]:
    """The grid's configurations and the team's splitter, registered, with the settings
    checked: what can be wrong is said before the corpus is read, with where it was given
    (`where`: setting -> place, as config.Config has it)."""
    def at(key: str) -> str:
        return f"{where[key]}: " if where and key in where else ""

    if metric not in METRICS:
        raise ConfigError(f"{at('sweep_metric')}sweep metric {metric!r}: one of "
                          f"{', '.join(METRICS)}")
    if holdout is not None and not 0 < holdout < 1:
        raise ConfigError(f"{at('sweep_holdout')}holdout {holdout!r}: a share of the queries, "
                          "over 0 and under 1")
    try:
        points = grid(strategy, sizes, overlaps, root)
    except ConfigError as e:
        raise ConfigError(f"{at('sweep_strategy')}{e}") from None
    try:
        against_point = Point(against, register(against, root), 0, 0, 0.0) if against else None
    except ConfigError as e:
        raise ConfigError(f"{at('sweep_against')}{e}") from None
    return points, against_point


@own_strategies()
def run(session, strategy: str, sizes: list[int], overlaps: list[float], *,
        retrievers: list[str], metric: str = DEFAULT_METRIC, holdout: float | None = None,
        against: str | None = None, progress: bool | None = None,
        margin: float = DEFAULT_MARGIN, spelled: list[str] | None = None,
        halving: bool = False) -> Sweep:
    """Evaluate the grid in the session and judge it (module docstring). `spelled`: the
    retrievers as the project names them (MODULE:ATTR), for the lines that adopt. The
    grid's strategies are registered for the sweep only (`own_strategies`)."""
    if not 0 < margin < 1:
        raise ConfigError(f"sweep margin {margin!r}: a share of the metric, over 0 and under 1 "
                          "(0.02: 2 points)")
    points, against_point = prepare(strategy, sizes, overlaps, metric=metric, holdout=holdout,
                                    against=against, root=session.config.root)
    evaluation = session.evaluation
    specs = session.query_specs()
    refused: dict[str, str] = {}
    if holdout:  # a set too small for the holdout is left out before any work, saying why
        for spec in specs:
            qs = evaluation.query_set(spec)
            try:
                split_queries([q.id for q in qs.queries], holdout, qs.name)
            except ConfigError as e:
                refused[qs.name] = str(e)
        if len(refused) == len(specs):
            raise ConfigError("; ".join(refused.values()))
        specs = [q for q in specs if evaluation.query_set(q).name not in refused]
    names = [p.name for p in points]
    extra = [against_point.name] if against_point and against_point.name not in names else []
    found, failures, rungs, finalists = {}, [], [], {}
    for spec in specs:
        finalists[spec] = names
        if halving:
            ids = [q.id for q in evaluation.query_set(spec).queries]
            chosen, _ = split_queries(ids, holdout, evaluation.query_set(spec).name)
            finalists[spec], more, failed = halve(evaluation, names, retrievers, spec, metric,
                                                  np.flatnonzero(chosen),
                                                  session.config.alpha, margin, progress)
            rungs += more
            failures += failed
        got, failed = evaluate(evaluation, finalists[spec] + extra, retrievers, [spec],
                               progress)
        found.update(got)
        failures += failed
    s = evaluation.settings
    by_name = {p.name: p for p in points}
    rows: dict[tuple[str, str], list[Row]] = {}
    against_rows: dict[tuple[str, str], Row] = {}
    verdicts = []
    for spec in specs:
        qs_name = evaluation.query_set(spec).name
        for ret in retrievers:
            here = [Row(by_name[n], res, *handed(res, s.k, s.budget))
                    for n in finalists[spec] if (res := found.get((n, ret, spec))) is not None]
            if not here:
                continue
            rows[(ret, qs_name)] = here
            a_row = None
            if against_point and (res := found.get((against_point.name, ret, spec))):
                a_row = Row(by_name.get(against_point.name, against_point), res,
                            *handed(res, s.k, s.budget))
                if against_point.name not in by_name:
                    against_rows[(ret, qs_name)] = a_row
            for m in (metric, *[m for m in METRICS if m != metric]):
                verdicts.append(judge(here, m, session.config.alpha, holdout, ret, qs_name,
                                      a_row, margin))
    settings = {"strategy": strategy, "sizes": sizes, "overlaps": overlaps,
                "retrievers": retrievers, "query_sets": specs, "metric": metric,
                "retrievers_as_given": spelled or retrievers,
                "holdout": holdout, "against": against, "alpha": session.config.alpha,
                "margin": margin,
                "bootstrap": {"resamples": RESAMPLES, "seed": BOOTSTRAP_SEED,
                              "bounds": "max-t: one-sided, family-wise over the comparisons "
                                        "with the best, c = 1 - alpha quantile of the "
                                        "largest centred resampled mean / se"},
                "holdout_seed": SEED, **s.to_json()}
    corpus = {"name": evaluation.corpus.name, "fingerprint": evaluation.corpus.fingerprint,
              "documents": len(evaluation.corpus)}
    settings["halving"] = ({"finalists": FINALISTS, "eta": ETA, "min_rung": MIN_RUNG,
                            "seed": SEED + 1,
                            "drops": "upper bound of (configuration - rung leader) below "
                                     "-margin for every retriever, family-wise over the "
                                     "rung's comparisons at alpha / rungs"}
                           if halving else None)
    return Sweep(settings, points, rows, verdicts, against_rows, failures, corpus, refused,
                 rungs)


# -- what it says -------------------------------------------------------------------------------
def against_line(v: Verdict) -> str | None:
    a = v.against
    if not a or not v.recommendation:
        return None
    return (f"{v.recommendation['spec']} vs {a['spec']}: {pts(a['diff'])} points "
            f"[{pts(a['low'])}, {pts(a['high'])}]")


def unclear_line(v: Verdict) -> str:
    return unclear(v.to_json())


def _listed(names: list[str], most: int = 12) -> str:
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most
                                      else "")


def summary_lines(sweep: Sweep) -> list[str]:
    """The verdicts as a terminal says them, one block per retriever and set."""
    out = [f"left out: {why}" for why in sweep.refused.values()]
    for v in sweep.verdicts:
        rec = v.recommendation
        held = (f", chosen on {v.chosen_on} queries, judged on {v.judged_on} held out"
                if v.chosen_on != v.judged_on else f", {v.queries} queries")
        out.append(f"{v.retriever} on {v.query_set} ({v.metric}{held}):")
        out.append(f"  best {v.best} {v.best_value * 100:.1f}%: {v.word} (against "
                   f"{len(v.comparisons)} others, margin {v.margin * 100:g} points, "
                   f"family-wise at alpha {v.alpha:g})")
        if v.as_good:
            out.append(f"  as good as the best: {_listed(v.as_good)}")
        if rec is None:
            out.append(f"  no recommendation: {unclear_line(v)}")
            continue
        out.append(f"  recommended: {rec['spec']} = {rec['strategy']} ({rec['chunks']:,} "
                   f"chunks, {rec['handed']:,.0f} handed per query, cut rate "
                   f"{rec['cut_rate'] * 100:.1f}%): {versus_best(rec, v.margin)}")
        if (line := against_line(v)):
            out.append(f"  {line}")
    return out


def adopted_verdict(sweep: Sweep) -> Verdict | None:
    """The verdict whose recommendation is adopted: by the chosen metric, for the first
    retriever, on the largest query set with a recommendation (the most evidence)."""
    first = sweep.verdicts[0] if sweep.verdicts else None
    found = [x for x in sweep.verdicts if first and x.retriever == first.retriever
             and x.metric == first.metric and x.recommendation]
    return max(found, key=lambda x: x.queries) if found else None


def adopted_point(sweep: Sweep, v: Verdict) -> Point:
    return next(p for p in sweep.points if p.name == v.recommendation["strategy"])


def factory_call(against: str | None, point: Point) -> str | None:
    """The team's factory (`against`, given with its parameters) at the point's size and
    overlap; None when `against` is no such factory."""
    against = against or ""
    head = against.partition("(")[0]
    if ":" in head and not head.startswith("chonkie:") and "(" in against:
        _, given = call_spec(against, "splitter")
        given.update(size=point.size, overlap=point.overlap)
        return _call(head, given)
    return None


def config_lines(sweep: Sweep) -> list[str]:
    """A [tool.chunkeval] that adopts the recommendation, for a project without one; a
    factory given as `against` gets the recommended size and overlap."""
    v = adopted_verdict(sweep)
    if v is None:
        return []
    point = adopted_point(sweep, v)
    s = sweep.settings
    lines = ["[tool.chunkeval]"]
    if (call := factory_call(s.get("against"), point)):
        lines.append(f'splitters = ["{call}"]  # your factory, at the recommended size and '
                     "overlap")
    elif ":" in point.spec:
        lines.append(f'splitters = ["{point.spec}"]')
    else:
        lines.append(f'strategies = ["{point.spec}"]  # = {point.name}')
    rets = ", ".join(f'"{r}"' for r in s.get("retrievers_as_given") or s["retrievers"])
    lines += [f"retrievers = [{rets}]", f"k = {s['k']}", f"budget = {s['budget']}"]
    lines += differ_note(sweep, v, point)
    return lines


def differ_note(sweep: Sweep, v: Verdict, point: Point) -> list[str]:
    differ = {x.recommendation["strategy"] for x in sweep.verdicts
              if x.metric == v.metric and x.recommendation} - {point.name}
    if not differ:
        return []
    return [f"# chosen by {v.metric} for {v.retriever} on {v.query_set}; other retrievers or "
            f"query sets recommend {', '.join(sorted(differ))} (see above)"]


def halving_lines(sweep: Sweep) -> list[str]:
    """Which configurations successive halving dropped, at which rung, on how many queries,
    and why (each one's bound against the rung's leader)."""
    if not sweep.rungs:
        return []
    out = [HALVING_NOTE, "",
           "| query set | rung | queries | evaluated | kept | dropped |",
           "|---|---:|---:|---:|---:|---|"]
    for i, r in enumerate(sweep.rungs, 1):
        out.append(f"| {md(r['query_set'])} | {i} | {r['queries']} | {r['evaluated']} | "
                   f"{r['kept']} | "
                   f"{md(', '.join(rung_dropped(r))) or 'none'} |")
    return out + [""]


def markdown(sweep: Sweep, adopt: list[str] | None = None) -> str:
    """sweep.md: every name from outside (corpus folder, query set, retriever, strategy)
    escaped as the job summary escapes it, so none becomes an element, a link or a cell."""
    s = sweep.settings
    out = [f"## chunkeval sweep: {md(s['strategy'])} on {md(sweep.corpus['name'])}", "",
           f"{len(sweep.points)} configurations (sizes {s['sizes'][0]}–{s['sizes'][-1]}, "
           f"overlaps {', '.join(f'{o:g}' for o in s['overlaps'])}), retrievers "
           f"{md(', '.join(s['retrievers']))}, top {s['k']}, budget {s['budget']}, metric "
           f"{md(s['metric'])}, margin {s['margin'] * 100:g} points"
           + (f", holdout {s['holdout']:g}" if s["holdout"] else "") + ".",
           "", *[f"Left out: {md(why)}.\n" for why in sweep.refused.values()]]
    out += halving_lines(sweep)
    for v in sweep.verdicts:
        rec = v.recommendation
        out += [f"### {md(v.retriever)} on {md(v.query_set)}, {v.metric}", "",
                f"- best: {md(v.best)} {v.best_value * 100:.1f}% — **{v.word}** (against "
                f"{len(v.comparisons)} others, margin {v.margin * 100:g} points, one-sided "
                f"bounds family-wise at alpha {v.alpha:g}; judged on {v.judged_on} queries)",
                f"- as good as the best: {md(', '.join(v.as_good)) or 'none'}"]
        if rec is None:
            out.append(f"- **no recommendation**: {md(unclear_line(v))}")
        else:
            out.append(f"- **recommended: {md(rec['spec'])}** — {rec['chunks']:,} chunks, "
                       f"{rec['handed']:,.0f} handed per query, cut rate "
                       f"{rec['cut_rate'] * 100:.1f}%; {versus_best(rec, v.margin)}")
        if (line := against_line(v)):
            out.append(f"- {md(line)}")
        out.append("")
        out += ["| configuration | chunks | handed | cut | mean | vs best | family-wise bounds "
                "| as good |", "|---|---:|---:|---:|---:|---:|---|---|"]
        rows = {r.point.name: r for r in sweep.rows[(v.retriever, v.query_set)]}
        best = rows[v.best]
        out.append(f"| {md(v.best)} (best) | {best.chunks:,} | {best.cost(v.metric)[1]:,.0f} | "
                   f"{best.cut * 100:.1f}% | {v.best_value * 100:.1f}% | | | |")
        for c in sorted(v.comparisons, key=lambda c: -c["mean"]):
            r = rows[c["strategy"]]
            out.append(f"| {md(c['strategy'])} | {r.chunks:,} | {r.cost(v.metric)[1]:,.0f} | "
                       f"{r.cut * 100:.1f}% | {c['mean'] * 100:.1f}% | {pts(c['diff'])} | "
                       f"[{pts(c['low'])}, {pts(c['high'])}] | "
                       f"{'**yes**' if c['as_good'] else 'no'} |")
        out.append("")
    lines = config_lines(sweep) if adopt is None else adopt
    if lines:
        out += ["```toml", *lines, "```", ""]
    return "\n".join(out)
