"""What a run measured, as types: Settings, the METRICS table, PerQuery, Result, Results and
BaselineEntry.

`results.json` is `Results.to_json()`; a baseline file's entries are `BaselineEntry.to_json()`.
Each `from_json` checks everything once - types, lengths, finite rates in [0, 1], per-query
rows complete - and raises InputError naming the file and the first field that is wrong, so
the stages that read these files (merge, compare, the reports, the gate) never check again.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Sequence

from .errors import InputError

if TYPE_CHECKING:  # imported where series are made: reading settings and results needs none
    import numpy as np

SCHEMA = 1
# Per-query values in a baseline are rounded to this many decimals (readable diffs).
DECIMALS = 4


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


@dataclass(frozen=True)
class Metric:
    name: str  # as results.json, baselines and the gate spell it
    series: str | None  # the per-query series it is the mean of; None: summary only
    gated: bool  # gated by default (docs/method.md, "How much to trust the gate")
    label: str  # as tables show it; "k" is the run's k
    rate: bool = True  # a share in [0, 1]; else a mean count (pages)
    # How scoring computes it: the mean of this per-query array of scoring.Scores (for
    # Chroma's metrics, its entry in Scores.chroma) over the queries `over` names: "all",
    # "positional" (those with spans), "gold pages" (those with gold pages) or "paged"
    # (every query, of a view with pages).
    scores: str = ""
    over: str = "all"
    optional: bool = True  # recorded since the rank metrics exist: older files may lack it
    stored: bool = True  # its series is kept per query (else derived: complete from coverage)

    def title(self, k: int) -> str:
        return self.label.replace("@k", f"@{k}")


# The order is results.json's and the verdicts'. The seed's four are gated by default; the
# rank metrics are reported, precision and IoU have no per-query series in a baseline.
METRICS: tuple[Metric, ...] = (
    Metric("recall_at_k", "coverage", True, "Recall@k", scores="coverage", optional=False),
    Metric("budget_recall", "budget_coverage", True, "budget recall",
           scores="budget_coverage", optional=False),
    Metric("complete_rate", "complete", True, "complete rate", scores="complete",
           optional=False, stored=False),
    Metric("doc_hit_at_k", "doc_hit", True, "doc hit@k", scores="doc_hit", optional=False),
    Metric("precision", None, False, "precision", scores="precision"),
    Metric("iou", None, False, "IoU", scores="iou"),
    Metric("mrr_at_k", "rr", False, "MRR@k", scores="rr"),
    Metric("ndcg_at_k", "ndcg", False, "nDCG@k", scores="ndcg"),
    # Chroma's chunking evaluation's own definitions (scoring/positional.py)
    Metric("chroma_recall", None, False, "Chroma recall", scores="chroma", over="positional"),
    Metric("chroma_precision", None, False, "Chroma precision", scores="chroma",
           over="positional"),
    Metric("chroma_iou", None, False, "Chroma IoU", scores="chroma", over="positional"),
    Metric("precision_omega", None, False, "precision Ω", scores="chroma", over="positional"),
    # Corpora with pages (PDF): a top-k chunk of the gold document on a gold page, and the
    # pages (document, page) the chunks within the budget come from (scoring/pages.py)
    Metric("page_hit_at_k", None, False, "page hit@k", scores="page_hit", over="gold pages"),
    Metric("budget_pages", None, False, "pages in budget", rate=False, scores="budget_pages",
           over="paged"),
)
BY_NAME = {m.name: m for m in METRICS}
# Metrics a per-query series stands behind: what the gate can compare.
COMPARED = tuple(m for m in METRICS if m.series is not None)
GATED = tuple(m.name for m in METRICS if m.gated)
OPTIONAL = tuple(m.name for m in METRICS if m.optional)
SERIES = tuple(m.series for m in COMPARED if m.stored)  # stored per query
# The stored series of the optional metrics (rr, ndcg): a row or an entry may lack them.
LATE_SERIES = tuple(m.series for m in COMPARED if m.stored and m.optional)


# -- checking ---------------------------------------------------------------------------------
class Check:
    """Raises InputError(where, "<path>.<field> ...") on the first thing wrong."""

    def __init__(self, where: str, path: str = ""):
        self.where, self.path = where, path

    def at(self, part: str | int) -> "Check":
        sub = f"[{part}]" if isinstance(part, int) else (f".{part}" if self.path else part)
        return Check(self.where, self.path + sub)

    def fail(self, name: str | None, problem: str):
        field_ = self.path if name is None else (f"{self.path}.{name}" if self.path else name)
        raise InputError(self.where, f"{field_} {problem}" if field_ else problem)

    def that(self, ok: bool, name: str | None, problem: str) -> None:
        if not ok:
            self.fail(name, problem)

    def object(self, data: Any, name: str | None = None) -> None:
        self.that(isinstance(data, dict), name, "is missing or not an object")

    def has(self, data: dict, *keys: str) -> None:
        for k in keys:
            self.that(k in data, k, "is missing")

    def string(self, value: Any, name: str, empty: bool = False) -> None:
        self.that(isinstance(value, str) and (empty or bool(value)), name,
                  f"is {value!r}, not a string")

    def count(self, value: Any, name: str, least: int = 0) -> None:
        self.that(type(value) is int and value >= least, name,
                  f"is {value!r}, not a whole number >= {least}")

    def number(self, value: Any, name: str, least: float | None = 0.0) -> None:
        self.that(_finite(value) and (least is None or value >= least), name,
                  f"is {value!r}, not a finite number" + (f" >= {least:g}" if least is not None
                                                          else ""))

    def rate(self, value: Any, name: str) -> None:
        self.that(_rate(value), name, f"is {value!r}, not a number in [0, 1]")


def _finite(x: Any) -> bool:
    return type(x) in (int, float) and math.isfinite(x)


def _rate(x: Any) -> bool:
    return _finite(x) and 0 <= x <= 1


# -- a result ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Stat:
    """A mean over queries and its standard error."""

    value: float
    se: float

    def to_json(self) -> dict:
        return {"value": self.value, "se": self.se}

    @classmethod
    def from_json(cls, data: Any, check: Check, rate: bool = True) -> "Stat":
        check.object(data)
        check.has(data, "value", "se")
        if rate:
            check.rate(data["value"], "value")
        else:
            check.number(data["value"], "value")
        check.number(data["se"], "se")
        return cls(data["value"], data["se"])


@dataclass(frozen=True, slots=True)
class CutRate:
    """Share of table and pre blocks with a chunk boundary strictly inside them."""

    value: float
    blocks: int
    cut: int

    def to_json(self) -> dict:
        return {"value": self.value, "blocks": self.blocks, "cut": self.cut}

    @classmethod
    def from_json(cls, data: Any, check: Check) -> "CutRate":
        check.object(data)
        check.has(data, "value", "blocks", "cut")
        check.rate(data["value"], "value")
        check.count(data["blocks"], "blocks")
        check.count(data["cut"], "cut")
        check.that(data["cut"] <= data["blocks"], "cut", "is above blocks")
        return cls(data["value"], data["blocks"], data["cut"])


@dataclass(frozen=True, slots=True)
class Overlap:
    """Realised overlap between neighbouring chunks of one document."""

    boundaries: int
    zero: int
    mean: float
    max: int

    def to_json(self) -> dict:
        return {"boundaries": self.boundaries, "zero": self.zero, "mean": self.mean,
                "max": self.max}

    @classmethod
    def from_json(cls, data: Any, check: Check) -> "Overlap":
        check.object(data)
        check.has(data, "boundaries", "zero", "mean", "max")
        for name in ("boundaries", "zero", "max"):
            check.count(data[name], name)
        check.number(data["mean"], "mean")
        return cls(data["boundaries"], data["zero"], data["mean"], data["max"])


@dataclass(frozen=True, slots=True)
class ChunkStats:
    """A strategy's chunks on one corpus view: count, lengths, overlap, and the sha256 of the
    whole output (equal hashes mean equal chunks, whatever the strategy's name)."""

    count: int
    mean_len: float
    max_len: int
    under_30: int
    overlap: Overlap
    hash: str | None = None

    def to_json(self) -> dict:
        out = {"count": self.count, "mean_len": self.mean_len, "max_len": self.max_len,
               "under_30": self.under_30, "overlap": self.overlap.to_json()}
        if self.hash is not None:
            out["hash"] = self.hash
        return out

    @classmethod
    def from_json(cls, data: Any, check: Check) -> "ChunkStats":
        check.object(data)
        check.has(data, "count", "mean_len", "max_len", "under_30", "overlap")
        for name in ("count", "max_len", "under_30"):
            check.count(data[name], name)
        check.number(data["mean_len"], "mean_len")
        if data.get("hash") is not None:
            check.that(_is_sha256(data["hash"]), "hash", "is not a sha256 hex digest")
        return cls(data["count"], data["mean_len"], data["max_len"], data["under_30"],
                   Overlap.from_json(data["overlap"], check.at("overlap")), data.get("hash"))


@dataclass(frozen=True, slots=True)
class Seconds:
    split: float
    index: float
    search: float

    @property
    def total(self) -> float:
        return self.split + self.index + self.search

    def to_json(self) -> dict:
        return {"split": self.split, "index": self.index, "search": self.search}

    @classmethod
    def from_json(cls, data: Any, check: Check) -> "Seconds":
        check.object(data)
        check.has(data, "split", "index", "search")
        for name in ("split", "index", "search"):
            check.number(data[name], name)
        return cls(data["split"], data["index"], data["search"])


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

    def to_json(self) -> dict:
        out = {"id": self.id, "coverage": self.coverage, "budget_coverage": self.budget_coverage,
               "doc_hit": self.doc_hit}
        out |= {name: getattr(self, name) for name in LATE_SERIES
                if getattr(self, name) is not None}
        out["retrieved"] = self.retrieved
        if self.best is not None:
            out["best"] = self.best
        return out

    @classmethod
    def from_json(cls, data: Any, check: Check) -> "PerQuery":
        check.object(data)
        check.has(data, "id", "coverage", "budget_coverage", "doc_hit", "retrieved")
        check.string(data["id"], "id")
        check.rate(data["coverage"], "coverage")
        check.rate(data["budget_coverage"], "budget_coverage")
        check.that(type(data["doc_hit"]) is bool, "doc_hit", "is not true or false")
        for name in LATE_SERIES:
            if data.get(name) is not None:
                check.rate(data[name], name)
        spans = data["retrieved"]
        check.that(isinstance(spans, list), "retrieved", "is not a list")
        for i, s in enumerate(spans):
            ok = (isinstance(s, list) and len(s) == 4 and isinstance(s[0], str)
                  and all(type(v) is int and v >= 0 for v in s[1:]) and s[1] <= s[2])
            check.that(ok, f"retrieved[{i}]", "is not [doc, start, end, length]")
        best = data.get("best")
        if best is not None:
            check.that(type(best) is int and 0 <= best < len(spans), "best",
                       "is not the index of a retrieved chunk")
        return cls(data["id"], data["coverage"], data["budget_coverage"], data["doc_hit"],
                   data.get("rr"), data.get("ndcg"), spans, best)


def series(rows: Sequence[PerQuery], complete_at: float) -> dict[str, np.ndarray]:
    """The per-query series behind the compared metrics, rounded as a baseline stores them;
    `complete` is derived from coverage, `rr` and `ndcg` only when every row has them."""
    import numpy as np

    cov = np.round([q.coverage for q in rows], DECIMALS)
    out = {"coverage": cov,
           "budget_coverage": np.round([q.budget_coverage for q in rows], DECIMALS),
           "complete": (cov >= complete_at).astype(float),
           "doc_hit": np.array([float(q.doc_hit) for q in rows])}
    for name in LATE_SERIES:
        if rows and all(getattr(q, name) is not None for q in rows):
            out[name] = np.round([getattr(q, name) for q in rows], DECIMALS)
    return out


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
        check.object(data)
        check.has(data, "strategy", "retriever", "query_set", "metrics", "chunks", "seconds",
                  "per_query")
        for name in ("strategy", "retriever", "query_set"):
            check.string(data[name], name)
        for name in ("retriever_version", "analyzer"):
            if data.get(name) is not None:
                check.string(data[name], name)
        m = data["metrics"]
        mc = check.at("metrics")
        mc.object(m)
        mc.has(m, "cut_rate", *(x.name for x in METRICS if x.name not in OPTIONAL))
        metrics = {x.name: Stat.from_json(m[x.name], mc.at(x.name), x.rate) for x in METRICS
                   if x.name in m}
        unknown = sorted(set(m) - set(BY_NAME) - {"cut_rate"})
        mc.that(not unknown, unknown[0] if unknown else None, "is not a metric")
        embeddings = data.get("embeddings")
        if embeddings is not None:
            ec = check.at("embeddings")
            ec.object(embeddings)
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
        check.object(data)
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
class CorpusSummary:
    name: str
    fingerprint: str
    documents: int
    chars: int

    def to_json(self) -> dict:
        return {"name": self.name, "fingerprint": self.fingerprint,
                "documents": self.documents, "chars": self.chars}

    @classmethod
    def from_json(cls, data: Any, check: Check) -> "CorpusSummary":
        check.object(data)
        check.has(data, "name", "fingerprint", "documents", "chars")
        check.string(data["name"], "name")
        check.string(data["fingerprint"], "fingerprint")
        check.count(data["documents"], "documents")
        check.count(data["chars"], "chars")
        return cls(data["name"], data["fingerprint"], data["documents"], data["chars"])


@dataclass(frozen=True)
class QuerySetSummary:
    queries: int
    fingerprint: str
    coverage: str = "text"  # how its gold was scored: text, positional or mixed

    def to_json(self) -> dict:
        return {"queries": self.queries, "fingerprint": self.fingerprint} | (
            {"coverage": self.coverage} if self.coverage != "text" else {})


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
            qc.object(qs)
            qc.has(qs, "queries", "fingerprint")
            qc.count(qs["queries"], "queries")
            qc.string(qs["fingerprint"], "fingerprint")
            qc.that(qs.get("coverage", "text") in ("text", "positional", "mixed"), "coverage",
                    "is not text, positional or mixed")
            summaries[name] = QuerySetSummary(qs["queries"], qs["fingerprint"],
                                              qs.get("coverage", "text"))
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
    check.object(shard)
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


# -- a baseline entry -------------------------------------------------------------------------
# What a retriever's numbers depend on besides the chunks: recorded per entry, and an entry
# made under other values is not compared.
RETRIEVER_FIELDS = ("retriever_version", "analyzer")
MIN_NOISE_TRIALS = 3


@dataclass(frozen=True, slots=True)
class Noise:
    """The differences harmless variants of a strategy made against an entry: their mean,
    standard deviation and count (chunkeval calibrate --record)."""

    offset: float
    sd: float
    trials: int

    def to_json(self) -> dict:
        return {"offset": self.offset, "sd": self.sd, "trials": self.trials}

    @classmethod
    def from_json(cls, data: Any, check: Check) -> "Noise":
        check.object(data)
        check.that(_finite(data.get("offset")) and -1 <= data["offset"] <= 1, "offset",
                   f"is {data.get('offset')!r}, not a number in [-1, 1]")
        check.number(data.get("sd"), "sd")
        check.count(data.get("trials"), "trials", least=MIN_NOISE_TRIALS)
        return cls(data["offset"], data["sd"], data["trials"])


@dataclass
class BaselineEntry:
    """What a baseline keeps of one result: the metric means, the per-query series the
    verdict pairs with a new run's, the chunk output's hash and, once calibrated, the noise
    floor of each metric."""

    metrics: dict[str, float]
    cut_rate: float
    chunks: int
    per_query: dict[str, list]  # series name (SERIES, "first") -> one value a query
    chunks_hash: str | None = None
    params: dict | None = None
    retriever_version: str | None = None
    analyzer: str | None = None
    noise: dict[str, Noise] = field(default_factory=dict)
    # doc id -> the hash of the strategy's chunks of that document (evaluate.document_hashes):
    # what tells, on a changed corpus, whether the chunking of the other documents changed
    documents: dict[str, str] | None = None

    @classmethod
    def from_rows(cls, rows: Sequence[PerQuery], complete_at: float, *, cut_rate: float,
                  chunks: ChunkStats, params: dict | None = None,
                  retriever_version: str | None = None, analyzer: str | None = None,
                  first: bool = True) -> "BaselineEntry":
        s = series(rows, complete_at)
        per_query = {"coverage": s["coverage"].tolist(),
                     "budget_coverage": s["budget_coverage"].tolist(),
                     "doc_hit": s["doc_hit"].astype(int).tolist()}
        per_query |= {n: s[n].tolist() for n in LATE_SERIES if n in s}
        if first:  # the chunk that held the most gold: what a failure message shows
            per_query["best"] = [q.best_span for q in rows]
        return cls(metrics={m.name: round(float(s[m.series].mean()), DECIMALS)
                            if len(s[m.series]) else 0.0
                            for m in COMPARED if m.series in s},
                   cut_rate=round(float(cut_rate), DECIMALS), chunks=chunks.count,
                   per_query=per_query, chunks_hash=chunks.hash, params=params,
                   retriever_version=retriever_version, analyzer=analyzer)

    @classmethod
    def from_result(cls, result: Result, complete_at: float,
                    params: dict | None = None) -> "BaselineEntry":
        return cls.from_rows(result.per_query, complete_at, cut_rate=result.cut_rate.value,
                             chunks=result.chunks, params=params,
                             retriever_version=result.retriever_version,
                             analyzer=result.analyzer)

    def series(self, complete_at: float) -> dict[str, np.ndarray]:
        """The per-query series as `series` gives a result's."""
        import numpy as np

        pq = self.per_query
        cov = np.asarray(pq["coverage"], dtype=float)
        out = {"coverage": cov, "budget_coverage": np.asarray(pq["budget_coverage"], dtype=float),
               "complete": (cov >= complete_at).astype(float),
               "doc_hit": np.asarray(pq["doc_hit"], dtype=float)}
        return out | {n: np.asarray(pq[n], dtype=float) for n in LATE_SERIES if n in pq}

    @property
    def best(self) -> tuple[list[str | None], bool]:
        """Per query, the span of the chunk that held the most gold, and True; a file
        recorded before that was kept gives the first retrieved chunk's, and False."""
        if "best" in self.per_query:
            return self.per_query["best"], True
        return self.per_query.get("first") or [None] * len(self.per_query["coverage"]), False

    def same_measurement(self, other: "BaselineEntry") -> bool:
        """True when a noise floor measured against `other` holds for this entry too."""
        return (self.per_query == other.per_query and self.chunks_hash == other.chunks_hash
                and all(getattr(self, f) == getattr(other, f) for f in RETRIEVER_FIELDS))

    def to_json(self) -> dict:
        out: dict[str, Any] = {k: getattr(self, k) for k in RETRIEVER_FIELDS
                               if getattr(self, k) is not None}
        out |= {"metrics": dict(self.metrics), "cut_rate": self.cut_rate, "chunks": self.chunks}
        if self.chunks_hash:
            out["chunks_hash"] = self.chunks_hash
        if self.params is not None:
            out["params"] = self.params
        out["per_query"] = {k: list(v) for k, v in self.per_query.items()}
        if self.noise:
            out["noise"] = {m: n.to_json() for m, n in self.noise.items()}
        if self.documents is not None:
            out["documents"] = dict(self.documents)
        return out

    @classmethod
    def from_json(cls, data: Any, where: str, name: str = "entry") -> "BaselineEntry":
        check = Check(where, name)
        check.object(data)
        check.has(data, "metrics", "cut_rate", "chunks", "per_query")
        mc = check.at("metrics")
        mc.object(data["metrics"])
        for m in COMPARED:
            if not (m.name in OPTIONAL and m.name not in data["metrics"]):
                mc.rate(data["metrics"].get(m.name), m.name)
        check.rate(data["cut_rate"], "cut_rate")
        check.count(data["chunks"], "chunks")
        if "chunks_hash" in data:
            check.that(_is_sha256(data["chunks_hash"]), "chunks_hash",
                       "is not a sha256 hex digest")
        if "params" in data:
            check.object(data["params"], "params")
        for f in RETRIEVER_FIELDS:
            if f in data:
                check.string(data[f], f)
        noise = data.get("noise", {})
        nc = check.at("noise")
        nc.object(noise)
        for m in noise:
            nc.that(m in BY_NAME, m, f"is not a metric (known: {', '.join(BY_NAME)})")
        pq = data["per_query"]
        pc = check.at("per_query")
        pc.object(pq)
        lengths = set()
        for s in SERIES:
            if s in LATE_SERIES and s not in pq:
                continue
            values = pq.get(s)
            pc.that(isinstance(values, list), s, "is missing or not a list")
            ok = (lambda v: v in (0, 1) and type(v) is int) if s == "doc_hit" else _rate
            bad = next((i for i, v in enumerate(values) if not ok(v)), None)
            if bad is not None:
                pc.fail(f"{s}[{bad}]", f"is {values[bad]!r}, not "
                        + ("0 or 1" if s == "doc_hit" else "a number in [0, 1]"))
            lengths.add(len(values))
        for name in ("best", "first"):
            if name in pq:
                spans = pq[name]
                pc.that(isinstance(spans, list) and all(f is None or isinstance(f, str)
                                                        for f in spans),
                        name, "is not a list of 'doc:start:end' spans")
                lengths.add(len(spans))
        pc.that(len(lengths) <= 1, None, "lists differ in length")
        documents = data.get("documents")
        if documents is not None:
            check.that(isinstance(documents, dict) and all(
                isinstance(v, str) for v in documents.values()), "documents",
                "is not an object of chunk hashes by document")
        return cls(metrics=dict(data["metrics"]), cut_rate=data["cut_rate"],
                   chunks=data["chunks"], per_query={k: list(v) for k, v in pq.items()},
                   chunks_hash=data.get("chunks_hash"), params=data.get("params"),
                   retriever_version=data.get("retriever_version"), analyzer=data.get("analyzer"),
                   noise={m: Noise.from_json(n, nc.at(m)) for m, n in noise.items()},
                   documents=documents)


def _is_sha256(value: Any) -> bool:
    return isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value) is not None


def with_noise(entry: BaselineEntry, noise: dict[str, Noise]) -> BaselineEntry:
    return replace(entry, noise=dict(noise))
