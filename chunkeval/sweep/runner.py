"""A whole sweep in a session: the settings checked, the grid evaluated (halved first when
asked), every retriever and query set judged."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import ONE_RETRIEVER
from ..errors import ConfigError, UnknownName
from ..stats import RESAMPLES, SEED as BOOTSTRAP_SEED
from .halving import ETA, FINALISTS, MIN_RUNG, check_size, halve, halving_on
from .measure import evaluate
from .points import Point, grid, parse_overlaps, parse_sizes, strategy_of
from .result import Sweep
from .verdict import (DEFAULT_MARGIN, DEFAULT_METRIC, METRICS, SEED, Row, handed, judge,
                      split_queries)


def prepare(strategy: str, sizes: list[int], overlaps: list[float], *, metric: str,
            holdout: float | None, against: str | None, root=None, where: dict | None = None
            ) -> tuple[list[Point], Point | None]:
    """The grid's configurations and the team's splitter, each with its strategy made (not
    registered), with the settings checked: what can be wrong is said before the corpus is
    read, with where it was given (`where`: setting -> place, as config.Config has it)."""
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
        made = strategy_of(against, root) if against else None
        against_point = Point(against, made.name, 0, 0, 0.0, made) if made else None
    except (ConfigError, UnknownName) as e:
        raise ConfigError(f"{at('sweep_against')}{e}") from None
    return points, against_point


@dataclass(frozen=True)
class Configured:
    """The sweep a session's settings ask for, every setting checked; `run()` evaluates the
    grid and judges it."""
    session: Any
    sizes: list[int]
    overlaps: list[float]
    retrievers: list[str]
    spelled: list[str]  # the retrievers as the project names them
    against: str | None
    margin: float
    halving: bool

    def run(self) -> Sweep:
        cfg = self.session.config
        return run(self.session, cfg.sweep_strategy, self.sizes, self.overlaps,
                   retrievers=self.retrievers, metric=cfg.sweep_metric,
                   holdout=cfg.sweep_holdout, against=self.against, margin=self.margin,
                   spelled=self.spelled, halving=self.halving)


def configure(session, yes: bool = False) -> Configured:
    """The sweep of the session's settings ([tool.chunkeval.sweep] and the command line),
    checked before anything is evaluated, each error naming where the setting was given: the
    grid's size against max_configurations (`yes`: a larger one all the same), then its
    configurations and the team's splitter (`against`, by default the first outside
    splitter). The margin defaults to the gate's min_effect."""
    cfg = session.config
    sizes = parse_sizes(cfg.sweep_size, cfg.where["sweep_size"])
    overlaps = parse_overlaps(cfg.sweep_overlap, cfg.where["sweep_overlap"])
    spelled = list(cfg.retrievers) or [ONE_RETRIEVER]
    retrievers = session.listed_retrievers(spelled)
    against = cfg.sweep_against or (cfg.splitters[0] if cfg.splitters else None)
    # said before thousands of configurations are made
    grid_size = len(sizes) * len(overlaps)
    check_size(grid_size, len(retrievers), len(session.query_specs()),
               cfg.sweep_max_configurations, yes,
               halving_on(cfg.sweep_halving, grid_size, cfg.where["sweep_halving"]))
    points, _ = prepare(cfg.sweep_strategy, sizes, overlaps, metric=cfg.sweep_metric,
                        holdout=cfg.sweep_holdout, against=against, root=cfg.root,
                        where={**cfg.where,
                               "sweep_against": cfg.where["sweep_against"]
                               if cfg.sweep_against else cfg.where["splitters"]})
    margin = cfg.sweep_margin if cfg.sweep_margin is not None else cfg.min_effect
    return Configured(session, sizes, overlaps, retrievers, spelled, against, margin,
                      halving_on(cfg.sweep_halving, len(points), cfg.where["sweep_halving"]))


def run(session, strategy: str, sizes: list[int], overlaps: list[float], *,
        retrievers: list[str], metric: str = DEFAULT_METRIC, holdout: float | None = None,
        against: str | None = None, progress: bool | None = None,
        margin: float = DEFAULT_MARGIN, spelled: list[str] | None = None,
        halving: bool = False) -> Sweep:
    """Evaluate the grid in the session and judge it (module docstring). `spelled`: the
    retrievers as the project names them (MODULE:ATTR), for the lines that adopt. The
    grid's strategies are handed to the session's evaluation, not registered: the registry
    is left as the sweep found it."""
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
    for point in points + ([against_point] if extra else []):
        evaluation.strategy(point.strategy)
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
