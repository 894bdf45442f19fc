"""A baseline's entry for one result (strategy x retriever x query set): the metric means and
per-query series the gate compares a new run's with, and the noise floor calibrate measured.

A baseline file's entries are `BaselineEntry.to_json()`; `from_json` checks an entry once,
where the file is read, and raises InputError naming the file and the first field wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Sequence

from ..checking import Check, Fields, finite, is_rate, is_sha256
from ..metrics import BY_NAME, COMPARED, DECIMALS, SERIES, STORED, derived, series
from ..results import ChunkStats, PerQuery, Result

if TYPE_CHECKING:
    import numpy as np

# What a retriever's numbers depend on besides the chunks: recorded per entry, and an entry
# made under other values is not compared.
RETRIEVER_FIELDS = ("retriever_version", "analyzer")
MIN_NOISE_TRIALS = 3


@dataclass(frozen=True, slots=True)
class Noise(Fields):
    """The differences harmless variants of a strategy made against an entry: their mean,
    standard deviation and count (chunkeval calibrate --record)."""

    offset: float
    sd: float
    trials: int

    @classmethod
    def from_json(cls, data: Any, check: Check) -> "Noise":
        check.object(data)
        check.that(finite(data.get("offset")) and -1 <= data["offset"] <= 1, "offset",
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
        per_query = {m.series: (s[m.series].astype(int) if m.hit else s[m.series]).tolist()
                     for m in STORED if m.series in s}
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

        return derived({s: np.asarray(self.per_query[s], dtype=float) for s in SERIES
                        if s in self.per_query}, complete_at)

    @property
    def best(self) -> tuple[list[str | None], bool]:
        """Per query, the span of the chunk that held the most gold, and True; a file
        recorded before that was kept gives the first retrieved chunk's, and False."""
        if "best" in self.per_query:
            return self.per_query["best"], True
        queries = len(self.per_query[SERIES[0]])  # a series every entry has
        return self.per_query.get("first") or [None] * queries, False

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
        check.has(data, "metrics", "cut_rate", "chunks", "per_query")
        mc = check.at("metrics")
        mc.object(data["metrics"])
        for m in COMPARED:
            if not (m.optional and m.name not in data["metrics"]):
                mc.rate(data["metrics"].get(m.name), m.name)
        check.rate(data["cut_rate"], "cut_rate")
        check.count(data["chunks"], "chunks")
        if "chunks_hash" in data:
            check.that(is_sha256(data["chunks_hash"]), "chunks_hash",
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
        for m in STORED:
            s = m.series
            if m.optional and s not in pq:
                continue
            values = pq.get(s)
            pc.that(isinstance(values, list), s, "is missing or not a list")
            ok = (lambda v: v in (0, 1) and type(v) is int) if m.hit else is_rate
            bad = next((i for i, v in enumerate(values) if not ok(v)), None)
            if bad is not None:
                pc.fail(f"{s}[{bad}]", f"is {values[bad]!r}, not "
                        + ("0 or 1" if m.hit else "a number in [0, 1]"))
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


def with_noise(entry: BaselineEntry, noise: dict[str, Noise]) -> BaselineEntry:
    return replace(entry, noise=dict(noise))
