"""What a run measured, as types: Settings, PerQuery, Result, Failure and Results.

`results.json` is `Results.to_json()`. Each `from_json` checks everything once - types,
lengths, finite rates in [0, 1], per-query rows complete - and raises InputError naming the
file and the first field that is wrong (checking.Check), so the stages that read these files
(merge, compare, the reports, the gate) never check again. The metric table is metrics.py, the
measured values besides the rows measured.py, a baseline's entry gate/entry.py.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any

from .checking import Check, Fields
from .measured import ChunkStats, CutRate, Overlap, Seconds, Stat
from .metrics import (BY_NAME, COMPARED, DECIMALS, GATED, LATE_SERIES, METRICS, OPTIONAL,
                      SERIES, STORED, Metric, series)

if TYPE_CHECKING:  # imported where series are made: reading settings and results needs none
    import numpy as np

# Names read from here before the table and the measured values had modules of their own.
__all__ = ["SCHEMA", "MAX_K", "ANALYZERS", "AUTO_ANALYZER", "COVERAGE_RULES", "Settings",
           "DEFAULTS", "Check", "Stat", "CutRate", "Overlap", "ChunkStats", "Seconds", "Span",
           "span_of", "PerQuery", "Result", "Failure", "CorpusSummary", "QuerySetSummary",
           "Results", "Metric", "METRICS", "BY_NAME", "COMPARED", "GATED", "OPTIONAL",
           "SERIES", "LATE_SERIES", "DECIMALS", "series"]

SCHEMA = 1

# The largest k a run takes. A ranking is kept as int64 [queries, k] for every strategy x
# retriever, and the metrics read it whole: at 800 queries, 10,000 is 64 MB a ranking, while
# 3,000,000,000 failed as a MemoryError deep in a search. A prompt holds a few dozen chunks,
# so a k in the thousands already measures nothing a reader would be handed.
MAX_K = 10_000

# The analyzers BM25 and LSA read terms with (Settings.analyzer; retrieval/analyzers.py), and
# "auto": the one that fits the corpus's language. Here, so that a setting is checked before
# anything that evaluates is imported.
ANALYZERS = ("char2", "word", "word+stem")
AUTO_ANALYZER = "auto"

# How gold given as spans may be scored (Settings.coverage).
COVERAGE_RULES = ("auto", "positional", "text")


@dataclass(frozen=True)
class Settings:
    """What a number means: a result made under other settings is another measurement."""

    k: int = 5  # chunks handed per query
    budget: int = 2000  # context budget, in characters or the units of `length`
    budgets: tuple[int, ...] = (500, 1000, 1500, 2000, 3000, 4000)  # the budget curve
    shingle: int = 8  # characters per shingle of the coverage rule
    complete_at: float = 0.95  # coverage that counts a query as complete
    seed: int = 0
    max_queries: int = 800  # queries sampled per set
    analyzer: str = "auto"  # BM25 and LSA terms; auto: from the corpus's language
    length: str = "chars"  # "chars" or "module:attr", a callable text -> int
    # how gold given as `spans` is scored: "auto" and "positional" by position, "text" by
    # shingles wherever they occur in the gold document (scoring.coverage_rule)
    coverage: str = "auto"

    def to_json(self) -> dict:
        d = asdict(self)
        d["budgets"] = list(self.budgets)
        return d

    @classmethod
    def from_json(cls, data: Any, where: str) -> "Settings":
        check = Check(where, "settings")
        check.object(data)
        known = {f.name for f in fields(cls)}
        given = {k: v for k, v in data.items() if k in known}
        for name in ("k", "budget", "shingle"):
            if name in given:
                check.count(given[name], name, least=1)
        if "seed" in given:
            check.count(given["seed"], "seed")
        if "max_queries" in given:
            check.count(given["max_queries"], "max_queries")
        if "complete_at" in given:
            check.rate(given["complete_at"], "complete_at")
        if "budgets" in given:
            check.that(isinstance(given["budgets"], list), "budgets", "is not a list")
            for i, b in enumerate(given["budgets"]):
                check.count(b, f"budgets[{i}]", least=1)
            given["budgets"] = tuple(given["budgets"])
        for name in ("analyzer", "length", "coverage"):
            if name in given:
                check.that(isinstance(given[name], str), name, "is not a string")
        return cls(**given)


DEFAULTS = Settings()


Span = list  # [doc, start, end, length] of one retrieved chunk, as results.json lists it


def span_of(name: str) -> tuple[str, int, int]:
    """(document, start, end) of a chunk named "doc:start:end" (`PerQuery.best_span`, the
    keys of `Result.rewritten`); a document id may hold ":" itself."""
    doc, start, end = name.rsplit(":", 2)
    return doc, int(start), int(end)


@dataclass(slots=True)
class PerQuery:
    """One query's scores. `retrieved` lists the chunks of the top k and of the budget as
    [doc, start, end, length], so every number recomputes from results.json."""

    id: str
    # One field per stored series of the metric table (metrics.STORED), of the same name.
    coverage: float
    budget_coverage: float
    doc_hit: bool
    rr: float | None = None
    ndcg: float | None = None
    retrieved: list[Span] = field(default_factory=list)
    best: int | None = None  # which of the top k added the most gold (None: none held any)

    @property
    def first(self) -> str | None:
        """The first retrieved chunk's span as "doc:start:end"."""
        r = self.retrieved
        return f"{r[0][0]}:{r[0][1]}:{r[0][2]}" if r else None

    @property
    def best_span(self) -> str | None:
        """The span ("doc:start:end") of the chunk that added the most gold, or None."""
        if self.best is None:
            return None
        d, a, b, _ = self.retrieved[self.best]
        return f"{d}:{a}:{b}"

    def scored(self) -> dict[str, Any]:
        """Its value of each stored series, an optional one only when it has it."""
        out = {}
        for m in STORED:
            value = getattr(self, m.series)
            if value is not None or not m.optional:
                out[m.series] = value
        return out

    def to_json(self) -> dict:
        out = {"id": self.id, **self.scored(), "retrieved": self.retrieved}
        if self.best is not None:
            out["best"] = self.best
        return out

    @classmethod
    def from_json(cls, data: Any, check: Check) -> "PerQuery":
        check.has(data, "id", *(m.series for m in STORED if not m.optional), "retrieved")
        check.string(data["id"], "id")
        for m in STORED:
            if m.optional and data.get(m.series) is None:
                continue
            if m.hit:
                check.that(type(data[m.series]) is bool, m.series, "is not true or false")
            else:
                check.rate(data[m.series], m.series)
        spans = data["retrieved"]
        check.that(isinstance(spans, list), "retrieved", "is not a list")
        for i, s in enumerate(spans):
            ok = (isinstance(s, list) and len(s) == 4 and isinstance(s[0], str)
                  and all(type(v) is int and v >= 0 for v in s[1:]) and s[1] <= s[2])
            if not ok:
                check.fail(f"retrieved[{i}]", "is not [doc, start, end, length]")
        best = data.get("best")
        if best is not None:
            check.that(type(best) is int and 0 <= best < len(spans), "best",
                       "is not the index of a retrieved chunk")
        return cls(data["id"], **{m.series: data.get(m.series) for m in STORED},
                   retrieved=spans, best=best)


@dataclass
class Result:
    """One strategy x retriever x query set: its metrics, its chunks and every query's score."""

    strategy: str
    retriever: str
    query_set: str
    metrics: dict[str, Stat]  # by METRICS name
    cut_rate: CutRate  # results.json keeps it under metrics
    chunks: ChunkStats
    seconds: Seconds
    per_query: list[PerQuery]
    retriever_version: str | None = None
    analyzer: str | None = None
    # texts this result embedded anew, and those whose vectors it reused (from the embedding
    # cache, or embedded earlier in the run)
    embeddings: dict[str, int] | None = None
    budget_curve: dict[int, Stat] = field(default_factory=dict)
    # the text of every retrieved chunk that is not its span's slice, by "doc:start:end"
    rewritten: dict[str, str] = field(default_factory=dict)
    reused: bool | None = None  # read from the result cache
    # on positional gold: retrieved gold-document chunks that could not be placed (not
    # their range's slice), scored by the shingle rule instead
    fallback: int | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return self.strategy, self.retriever, self.query_set

    def value(self, metric: str) -> float | None:
        if metric == "cut_rate":
            return self.cut_rate.value
        stat = self.metrics.get(metric)
        return None if stat is None else stat.value

    def series(self, complete_at: float) -> dict[str, np.ndarray]:
        return series(self.per_query, complete_at)

    def values(self, key: str) -> dict[str, float]:
        """query id -> its value of a per-query field (coverage, budget_coverage, ...)."""
        return {q.id: float(getattr(q, key)) for q in self.per_query
                if getattr(q, key) is not None}

    def to_json(self) -> dict:
        out: dict[str, Any] = {"strategy": self.strategy, "retriever": self.retriever,
                               "query_set": self.query_set}
        if self.retriever_version is not None:
            out["retriever_version"] = self.retriever_version
        if self.analyzer is not None:
            out["analyzer"] = self.analyzer
        if self.embeddings is not None:
            out["embeddings"] = dict(self.embeddings)
        out["metrics"] = {**{m: s.to_json() for m, s in self.metrics.items()},
                          "cut_rate": self.cut_rate.to_json()}
        out["budget_curve"] = {str(b): s.to_json() for b, s in self.budget_curve.items()}
        out["chunks"] = self.chunks.to_json()
        out["seconds"] = self.seconds.to_json()
        out["rewritten"] = dict(self.rewritten)
        out["per_query"] = [q.to_json() for q in self.per_query]
        if self.reused is not None:
            out["reused"] = self.reused
        if self.fallback is not None:
            out["positional_fallback"] = self.fallback
        return out

    @classmethod
    def from_json(cls, data: Any, where: str, path: str = "result") -> "Result":
        check = Check(where, path)
        check.has(data, "strategy", "retriever", "query_set", "metrics", "chunks", "seconds",
                  "per_query")
        for name in ("strategy", "retriever", "query_set"):
            check.string(data[name], name)
        for name in ("retriever_version", "analyzer"):
            if data.get(name) is not None:
                check.string(data[name], name)
        m = data["metrics"]
        mc = check.at("metrics")
        mc.has(m, "cut_rate", *(x.name for x in METRICS if not x.optional))
        metrics = {x.name: Stat.from_json(m[x.name], mc.at(x.name), x.rate) for x in METRICS
                   if x.name in m}
        unknown = sorted(set(m) - set(BY_NAME) - {"cut_rate"})
        mc.that(not unknown, unknown[0] if unknown else None, "is not a metric")
        embeddings = data.get("embeddings")
        if embeddings is not None:
            ec = check.at("embeddings")
            ec.has(embeddings, "embedded", "cached")
            ec.count(embeddings["embedded"], "embedded")
            ec.count(embeddings["cached"], "cached")
        curve = data.get("budget_curve") or {}
        check.object(curve, "budget_curve")
        for b in curve:
            check.that(b.isdigit(), f"budget_curve.{b}", "is not a budget in whole units")
        rewritten = data.get("rewritten") or {}
        check.that(isinstance(rewritten, dict) and all(isinstance(v, str)
                                                      for v in rewritten.values()),
                   "rewritten", "is not an object of texts")
        rows = data["per_query"]
        check.that(isinstance(rows, list), "per_query", "is not a list")
        pq = check.at("per_query")
        if data.get("reused") is not None:
            check.that(type(data["reused"]) is bool, "reused", "is not true or false")
        if data.get("positional_fallback") is not None:
            check.count(data["positional_fallback"], "positional_fallback")
        return cls(
            strategy=data["strategy"], retriever=data["retriever"], query_set=data["query_set"],
            metrics=metrics, cut_rate=CutRate.from_json(m["cut_rate"], mc.at("cut_rate")),
            chunks=ChunkStats.from_json(data["chunks"], check.at("chunks")),
            seconds=Seconds.from_json(data["seconds"], check.at("seconds")),
            per_query=[PerQuery.from_json(q, pq.at(i)) for i, q in enumerate(rows)],
            retriever_version=data.get("retriever_version"), analyzer=data.get("analyzer"),
            embeddings=dict(embeddings) if embeddings is not None else None,
            budget_curve={int(b): Stat.from_json(s, check.at("budget_curve").at(b))
                          for b, s in curve.items()},
            rewritten=dict(rewritten), reused=data.get("reused"),
            fallback=data.get("positional_fallback"))


@dataclass(frozen=True)
class Failure:
    """A strategy (or one retriever on its chunks) that could not be scored on a query set,
    and why: results.json lists it under `failed` instead of numbers."""

    strategy: str
    query_set: str
    message: str  # one line: strategy, retriever, document, what went wrong
    retriever: str | None = None  # None: the splitter failed, so every retriever did
    document: str | None = None
    detail: str = ""  # the frames of the user's code that raised

    def to_json(self) -> dict:
        out = {"strategy": self.strategy, "retriever": self.retriever,
               "query_set": self.query_set, "document": self.document,
               "message": self.message}
        return out | ({"detail": self.detail} if self.detail else {})

    @classmethod
    def from_json(cls, data: Any, check: Check) -> "Failure":
        check.has(data, "strategy", "query_set", "message")
        for name in ("strategy", "query_set", "message"):
            check.string(data[name], name)
        for name in ("retriever", "document", "detail"):
            if data.get(name) is not None:
                check.string(data[name], name, empty=True)
        return cls(data["strategy"], data["query_set"], data["message"], data.get("retriever"),
                   data.get("document"), data.get("detail") or "")


# -- a run ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CorpusSummary(Fields):
    name: str
    fingerprint: str
    documents: int
    chars: int


# How a set's gold was scored where a file does not say: files written before the rule was
# recorded were all scored as text, and a text-scored set is written without it.
UNSTATED_COVERAGE = "text"


@dataclass(frozen=True)
class QuerySetSummary:
    queries: int
    fingerprint: str
    coverage: str = UNSTATED_COVERAGE  # how its gold was scored: text, positional or mixed

    def to_json(self) -> dict:
        return {"queries": self.queries, "fingerprint": self.fingerprint} | (
            {"coverage": self.coverage} if self.coverage != UNSTATED_COVERAGE else {})


@dataclass
class Results:
    """A run's results document (results.json): what was measured, on what, and how."""

    corpus: CorpusSummary
    settings: Settings
    query_sets: dict[str, QuerySetSummary]
    strategies: dict[str, dict]  # name -> Strategy.describe()
    retrievers: dict[str, dict]  # name -> Retriever.describe()
    results: list[Result]
    analyzer: str | None = None
    embeddings: dict[str, int] = field(default_factory=lambda: {"embedded": 0, "cached": 0})
    # how many entries came from the result cache (their index and search seconds are those
    # measured when they were stored) and how many were evaluated in this run
    result_cache: dict | None = None
    chunkeval: str = ""
    # a shard's run: its place, the whole run's plan, and its own tasks (what merge checks)
    shard: dict | None = None
    schema: int = SCHEMA
    failures: list[Failure] = field(default_factory=list)  # what could not be scored

    def __post_init__(self):
        self._rows: dict[tuple[str, str, str], Result] = {}
        for r in self.results:
            self._rows.setdefault((r.query_set, r.strategy, r.retriever), r)

    def row(self, query_set: str, strategy: str, retriever: str) -> Result | None:
        return self._rows.get((query_set, strategy, retriever))

    @property
    def query_set_names(self) -> list[str]:
        """The declared query sets in order, then any that only the results name."""
        names = list(self.query_sets)
        names += [r.query_set for r in self.results if r.query_set not in names]
        return list(dict.fromkeys(names))

    def to_json(self) -> dict:
        out: dict[str, Any] = {
            "schema": self.schema, "chunkeval": self.chunkeval, "corpus": self.corpus.to_json(),
            "settings": self.settings.to_json(),
            "query_sets": {n: q.to_json() for n, q in self.query_sets.items()},
            "strategies": self.strategies, "retrievers": self.retrievers}
        if self.analyzer is not None:
            out["analyzer"] = self.analyzer
        out["embeddings"] = dict(self.embeddings)
        if self.result_cache is not None:
            out["result_cache"] = dict(self.result_cache)
        out["results"] = [r.to_json() for r in self.results]
        if self.failures:
            out["failed"] = [f.to_json() for f in self.failures]
        if self.shard is not None:
            out["shard"] = self.shard
        return out

    @classmethod
    def from_json(cls, data: Any, where: str) -> "Results":
        """The checked document; InputError names `where` and the first field that is wrong."""
        check = Check(where)
        check.that(isinstance(data, dict) and isinstance(data.get("results"), list), None,
                   "not a chunkeval results document (no 'results' list)")
        check.that(data.get("schema") == SCHEMA, "schema",
                   f"is {data.get('schema')!r}, expected {SCHEMA}")
        check.has(data, "corpus", "settings", "query_sets", "strategies")
        sets = data["query_sets"]
        check.object(sets, "query_sets")
        summaries = {}
        for name, qs in sets.items():
            qc = check.at("query_sets").at(name)
            qc.has(qs, "queries", "fingerprint")
            qc.count(qs["queries"], "queries")
            qc.string(qs["fingerprint"], "fingerprint")
            qc.that(qs.get("coverage", UNSTATED_COVERAGE) in ("text", "positional", "mixed"),
                    "coverage", "is not text, positional or mixed")
            summaries[name] = QuerySetSummary(qs["queries"], qs["fingerprint"],
                                              qs.get("coverage", UNSTATED_COVERAGE))
        for key in ("strategies", "retrievers"):
            value = data.get(key, {})
            check.that(isinstance(value, dict) and all(isinstance(v, dict)
                                                       for v in value.values()),
                       key, "is not an object of descriptions")
        results = [Result.from_json(r, where, f"results[{i}]")
                   for i, r in enumerate(data["results"])]
        for i, r in enumerate(results):
            qs = summaries.get(r.query_set)
            if qs is not None and len(r.per_query) != qs.queries:
                check.fail(f"results[{i}].per_query",
                           f"has {len(r.per_query)} rows, but query set {r.query_set!r} has "
                           f"{qs.queries} queries")
        if data.get("embeddings") is not None:
            ec = check.at("embeddings")
            ec.object(data["embeddings"])
            for k in ("embedded", "cached"):
                ec.count(data["embeddings"].get(k), k)
        if data.get("result_cache") is not None:
            rc = check.at("result_cache")
            rc.object(data["result_cache"])
            rc.that(type(data["result_cache"].get("enabled")) is bool, "enabled",
                    "is not true or false")
            for k in ("reused", "evaluated"):
                rc.count(data["result_cache"].get(k), k)
        if data.get("shard") is not None:
            _check_shard(data["shard"], check.at("shard"))
        if data.get("analyzer") is not None:
            check.string(data["analyzer"], "analyzer")
        failed = data.get("failed") or []
        check.that(isinstance(failed, list), "failed", "is not a list")
        failures = [Failure.from_json(f, check.at("failed").at(i)) for i, f in enumerate(failed)]
        return cls(corpus=CorpusSummary.from_json(data["corpus"], check.at("corpus")),
                   settings=Settings.from_json(data["settings"], where),
                   query_sets=summaries, strategies=dict(data["strategies"]),
                   retrievers=dict(data.get("retrievers") or {}), results=results,
                   analyzer=data.get("analyzer"),
                   embeddings=dict(data.get("embeddings") or {"embedded": 0, "cached": 0}),
                   result_cache=data.get("result_cache"), chunkeval=str(data.get("chunkeval", "")),
                   shard=data.get("shard"), schema=data["schema"], failures=failures)


def _check_shard(shard: Any, check: Check) -> None:
    check.has(shard, "index", "count", "strategies", "retrievers")
    check.count(shard["count"], "count", least=1)
    check.count(shard["index"], "index", least=1)
    check.that(shard["index"] <= shard["count"], "index", "is above count")
    check.that(isinstance(shard["strategies"], list)
               and all(isinstance(x, str) for x in shard["strategies"]), "strategies",
               "is not a list of names")
    plan = shard["retrievers"]
    check.that(isinstance(plan, dict) and all(
        isinstance(v, list) and all(isinstance(x, str) for x in v) for v in plan.values())
        and all(s in plan for s in shard["strategies"]), "retrievers",
        "is not a list of retrievers for each strategy")


