"""One evaluation session, built from the configuration: what the CLI and the pytest plugin
both work on.

A Session registers the project's own modules (splitters, retrievers, length measure), works
out what is evaluated (the strategies, each one's retrievers, the query sets) and with which
settings and gate, and builds the corpus and the evaluation on first use. Everything that
can be wrong with the configuration is raised when the session is made, as a ChunkevalError
naming where the value was given; the corpus and its query sets fail when first asked for.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING

from . import retrieval, strategies
from .config import Config, known
from .corpus import load_corpus
from .errors import ConfigError, InputError, Problem
from .gate.baselines import Baseline, baseline_path, corpus_identity
from .gate.power import SetPower, coverage_sd, set_power
from .gate.verdict import Tolerance
from .model import Corpus, QuerySet
from .outside import length_function
from .metrics import COMPARED
from .results import ANALYZERS, AUTO_ANALYZER, COVERAGE_RULES, Results, Settings
from .shard import Shard, measured_seconds, parse
from .store import outputs_file
from .strategies.defaults import default_retrievers

if TYPE_CHECKING:
    from .evaluate import Evaluation

# A name the settings give that only a conftest file registers is unknown to the commands and
# to the base revision's side of the gate, neither of which imports conftest files.
CONFTEST_ONLY = ("a strategy a conftest file registers is known to that pytest run only: name "
                 "its splitter in `splitters` as MODULE:ATTR to use it in the commands and "
                 "against a base revision")


@dataclass(frozen=True)
class Case:
    """One gated comparison: a strategy with a retriever on a query set, or (retriever None)
    a strategy's cut rate on a query set's view."""

    strategy: str
    retriever: str | None
    query_set: str  # a builder name or a JSONL path, as configured

    @property
    def id(self) -> str:
        parts = [self.strategy, self.retriever, Path(self.query_set).stem]
        return "-".join(p for p in parts if p)

    @property
    def group(self) -> str:
        """The tests that share this strategy's chunks and indexes on this query set."""
        return f"{self.strategy}|{self.query_set}"


class Session:
    """Made, a session has imported the project's own modules; what the rest of the
    configuration selects is worked out, and checked, on first use (`check` does it all at
    once), so that `chunkeval strategies` still lists the names a bad setting got wrong."""

    def __init__(self, config: Config):
        self.config = config
        # the strategies sized in its units (fixed-400t) are made with this session's length
        strategies.size_by(config.length, partial(length_function, config.length,
                                                  str(config.root)))
        self.splitters = self._register("splitters", "strategies", strategies.load_splitter)
        self.retrievers = self._register("outside_retrievers", "retrievers",
                                         retrieval.load_retriever)
        self._corpus: Corpus | None = None
        self._evaluation: Evaluation | None = None

    def check(self) -> "Session":
        """Every setting resolved now: a bad one fails before any work."""
        self.plan, self.settings, self.tolerance, self.shard
        return self

    @cached_property
    def strategies(self) -> list[str]:
        return self._strategy_names()

    @cached_property
    def plan(self) -> dict[str, list[str]]:
        """strategy -> its retrievers"""
        return self.plan_for(self.strategies)

    @cached_property
    def settings(self) -> Settings:
        return self._settings()

    @cached_property
    def tolerance(self) -> Tolerance:
        return self.tolerance_of(family=1)

    @cached_property
    def shard(self) -> Shard | None:
        return self._shard()[0]

    @cached_property
    def timings(self) -> dict | None:
        return self._shard()[1]

    # -- what the configuration selects ---------------------------------------------------
    def _register(self, outside_key: str, selection: str, load) -> dict[str, list[str]]:
        """Import every MODULE:ATTR of `outside_key` and of `selection` with the project root on
        the path: spec -> the names it registered. A failure names where the spec was given."""
        cfg = self.config
        specs = [(s, outside_key) for s in cfg.values[outside_key]]
        specs += [(s, selection) for s in cfg.values[selection] if ":" in s]
        loaded: dict[str, list[str]] = {}
        owner: dict[str, str] = {}  # name -> the spec that registered it
        for spec, key in specs:
            if spec in loaded:
                continue
            try:
                loaded[spec] = [x.name for x in load(spec, cfg.root)]
            except ConfigError as e:
                raise ConfigError(f"{cfg.where[key]}: {e}") from None
            twice = sorted({n for n in loaded[spec] if loaded[spec].count(n) > 1})
            if twice:
                raise ConfigError(f"{cfg.where[key]}: {spec!r} names {', '.join(twice)} more "
                                  "than once; names tell results and baselines apart")
            for name in loaded[spec]:
                if owner.setdefault(name, spec) != spec:
                    raise ConfigError(
                        f"{cfg.where[key]}: {owner[name]!r} and {spec!r} are both named "
                        f"{name!r}; names tell results and baselines apart, so give one "
                        "another (`strategy_name` or `retriever_name` on the function)")
        return loaded

    def _strategy_names(self) -> list[str]:
        """The listed strategies; else every registered one on the built-in corpus; else the
        project's splitters and the reference strategies."""
        cfg = self.config
        if cfg.strategies:
            chosen = [n for s in cfg.strategies for n in (self.splitters[s] if ":" in s else [s])]
            chosen = self._resolve(chosen, "strategies")
            return known(dict.fromkeys(chosen), strategies.names(all=True),
                         cfg.where["strategies"], "strategy", CONFTEST_ONLY)
        if cfg.builtin_corpus:
            return strategies.names()
        own = [n for spec in cfg.splitters for n in self.splitters[spec]]
        reference = known(self._resolve(cfg.reference, "reference"), strategies.names(all=True),
                          cfg.where["reference"], "strategy", CONFTEST_ONLY)
        return list(dict.fromkeys([*own, *reference]))

    @property
    def left_out(self) -> str | None:
        """A line naming the built-ins of the default matrix that cannot run here for a
        missing extra, when the default matrix is what runs; else None."""
        if self.config.strategies or not self.config.builtin_corpus:
            return None
        missing = {n: strategies.missing(n) for n in strategies.names(all=True)}
        missing = {n: how for n, how in missing.items() if how}
        if not missing:
            return None
        return (f"not run here: {', '.join(missing)}, which need an optional package: "
                + "; ".join(dict.fromkeys(missing.values())))

    def _resolve(self, names, key: str) -> list[str]:
        """The names, those with parameters (`fixed(size=300)`) as the names they register."""
        try:
            strategies.resolve(names)
            return [strategies.canonical(n) for n in names]
        except ConfigError as e:
            raise ConfigError(f"{self.config.where[key]}: {e}") from None

    def listed_retrievers(self, listed) -> list[str]:
        """The retrievers `listed` names, a MODULE:ATTR as the names it registered, once
        each; UnknownName (saying where they were set) for one that is not registered."""
        chosen = [n for r in listed for n in (self.retrievers[r] if ":" in r else [r])]
        return known(dict.fromkeys(chosen), retrieval.names(all=True),
                     self.config.where["retrievers"], "retriever")

    def plan_for(self, names: list[str]) -> dict[str, list[str]]:
        """strategy -> the retrievers it is evaluated with: the listed ones; else every
        installed built-in (the costly ones on a few strategies) and the outside ones."""
        cfg = self.config
        if cfg.retrievers:
            chosen = self.listed_retrievers(cfg.retrievers)
            return {s: chosen for s in names}
        own = [n for spec in cfg.outside_retrievers for n in self.retrievers[spec]]
        return {s: list(dict.fromkeys([*default_retrievers(s), *own])) for s in names}

    @property
    def modules(self) -> tuple[tuple[str, str, str], ...]:
        """The project's modules this session imported, as (what, MODULE:ATTR, root): what a
        worker process that does not inherit this one's memory imports again."""
        root = str(self.config.root)
        length = () if self.config.length == "chars" else (("length", self.config.length, root),)
        # a built-in named with parameters is made anew there, under the same name
        specs = [s for s in (*self.config.strategies, *self.config.reference)
                 if strategies.params.is_spec(s)]
        return (*(("splitter", spec, root) for spec in self.splitters),
                *(("retriever", spec, root) for spec in self.retrievers), *length,
                *(("strategy", spec, root) for spec in specs))

    def _settings(self) -> Settings:
        cfg = self.config
        try:
            length_function(cfg.length, str(cfg.root))  # imported from the project
        except ConfigError as e:
            raise ConfigError(f"{cfg.where['length']}: {e}") from None
        known([cfg.analyzer], (AUTO_ANALYZER, *ANALYZERS), cfg.where["analyzer"], "analyzer")
        if cfg.coverage not in COVERAGE_RULES:
            raise ConfigError(f"{cfg.where['coverage']}: coverage {cfg.coverage!r}: one of "
                              f"{', '.join(COVERAGE_RULES)}")
        return Settings(k=cfg.k, budget=cfg.budget, max_queries=cfg.max_queries,
                        analyzer=cfg.analyzer, length=cfg.length, coverage=cfg.coverage)

    def tolerance_of(self, family: int) -> Tolerance:
        """The verdict's bounds; `family` is how many comparisons of one strategy are gated."""
        cfg = self.config
        gated = tuple(known(cfg.gate, [m.name for m in COMPARED], cfg.where["gate"], "metric"))
        return Tolerance(min_effect=cfg.min_effect, alpha=cfg.alpha, family=family,
                         gated=gated, cut_ceiling=cfg.cut_ceiling)

    def _shard(self) -> tuple[Shard | None, dict | None]:
        """The configured shard and the timings that balance it; (None, None) unsharded."""
        cfg = self.config
        if not cfg.shard:
            return None, None
        part = parse(cfg.shard, cfg.where["shard"])
        timings = measured_seconds(read_results(cfg.shard_timings)) if cfg.shard_timings \
            else None
        return part, timings

    # -- what it builds on first use ------------------------------------------------------
    @property
    def corpus(self) -> Corpus:
        if self._corpus is None:
            self._corpus = load_corpus(self.config.corpus, use_cache=self.config.cache,
                                       max_document_mb=self.config.max_document_mb)
        return self._corpus

    @property
    def evaluation(self) -> Evaluation:
        if self._evaluation is None:
            # Imported here: what evaluates (numpy, the scoring, the indexes) is not needed to
            # configure a session or to collect its tests, which every pytest run does.
            from .evaluate import Evaluation

            evaluation = Evaluation(self.corpus, self.settings,
                                    query_specs=list(self.config.query_sets) or None,
                                    result_cache=self.config.result_cache and self.config.cache,
                                    embedding_cache=self.config.cache)
            evaluation.analyzer  # a bad name fails here, once
            self._evaluation = evaluation
        return self._evaluation

    def query_specs(self) -> list[str]:
        """Configured query sets, else every builder that yields queries on the corpus."""
        return list(self.config.query_sets) or self.evaluation.query_specs

    def query_set(self, spec: str) -> QuerySet:
        return self.evaluation.query_set(spec)

    def tolerance_for(self, strategy: str) -> Tolerance:
        """Bonferroni over the strategy's family: every gated comparison of it in this session
        (its retrievers x the sets that gate x gated metrics), so that a harmless change
        fails any of them with probability at most alpha."""
        sets = sum(self.power(spec).gates for spec in self.query_specs())
        return self.tolerance_of(len(self.plan[strategy]) * max(1, sets)
                                 * len(self.tolerance.gated))

    def power(self, spec: str) -> SetPower:
        """What the gate can see on a query set: the smallest drop it catches at the
        configured alpha, over the largest family of any strategy with every set counted
        (a set that gates so, gates in the smaller family of the sets that gate)."""
        if spec not in self._powers:
            qs = self.query_set(spec)
            family = (max((len(r) for r in self.plan.values()), default=1)
                      * len(self.query_specs()) * len(self.tolerance.gated))
            self._powers[spec] = set_power(qs.name, len(qs), alpha=self.config.alpha,
                                           family=family, min_effect=self.config.min_effect,
                                           sd=self._baseline_spread.get(qs.name))
        return self._powers[spec]

    @cached_property
    def _powers(self) -> dict[str, SetPower]:
        return {}

    @cached_property
    def _baseline_spread(self) -> dict[str, float]:
        """query set -> the median spread of per-query coverage over its baseline entries."""
        try:
            entries = Baseline.load(self.baseline_path).entries
        except InputError:
            return {}  # a damaged file is reported where it is compared
        by_set: dict[str, list] = {}
        for k, e in entries.items():
            by_set.setdefault(k.rsplit("|", 1)[1], []).append(e.per_query.get("coverage", []))
        return {name: sd for name, series in by_set.items()
                if (sd := coverage_sd(series)) is not None}

    def problems(self) -> list[Problem]:
        found = list(self.corpus.problems)
        for spec in self.query_specs():
            found += self.query_set(spec).problems
        return found

    def cases(self) -> tuple[list[Case], list[Case]]:
        """The metric cases (strategy x retriever x query set) and the cut-rate cases of the
        strategies that keep structure."""
        specs = self.query_specs()
        retrieval_cases = [Case(s, r, q) for q, s in itertools.product(specs, self.strategies)
                           for r in self.plan[s]]
        structured = [s for s in self.strategies if strategies.get(s).keeps_structure]
        cut = [Case(s, None, q) for q, s in itertools.product(specs, structured)]
        return retrieval_cases, cut

    @property
    def corpus_line(self) -> str:
        c = self.corpus
        return (f"corpus {c.name} (fingerprint {c.fingerprint}, {len(c)} documents; "
                f"from {self.config.where['corpus']})")

    # -- the baseline ---------------------------------------------------------------------
    @property
    def baseline_path(self) -> Path:
        return baseline_path(self.config.baselines, self.corpus.name)

    @property
    def corpus_identity(self) -> str:
        return corpus_identity(self.config.corpus, self.config.root)

    @property
    def corpus_record(self) -> dict:
        """The corpus as a baseline records it."""
        from .evaluate import corpus_summary

        return {**corpus_summary(self.corpus).to_json(), "identity": self.corpus_identity}

    @property
    def corpus_compared(self) -> dict:
        """What a gate compares with a baseline's corpus: the record without its counts,
        whose character count is a pass over the whole text."""
        return {"name": self.corpus.name, "fingerprint": self.corpus.fingerprint,
                "identity": self.corpus_identity}


def read_results(path: str | Path) -> Results:
    """A results.json, checked; InputError naming the file and what is wrong with it."""
    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    try:
        data = json.loads(outputs_file(path).decode("utf-8"))
    except FileNotFoundError:
        raise InputError(str(path), "no such file") from None
    except OSError as e:
        raise InputError(str(path), f"cannot read it: {e.strerror or e}") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise InputError(str(path), f"not valid JSON: {e}") from None
    return Results.from_json(data, str(path))
