"""Successive halving: a large grid narrowed on nested samples of the queries, each rung
dropping only what it shows worse than its leader by more than the margin."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ..config import HALVING_FROM
from ..errors import ConfigError
from ..results import Failure
from ..stats import simultaneous_bounds
from .measure import evaluate
from .verdict import SEED, series_of


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
            series = {n: series_of(res, metric)
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
