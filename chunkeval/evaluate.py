"""The evaluation stage: strategy x retriever x query set -> one result entry.

`Evaluation` is lazy and memoised: query sets, chunks per (strategy, view) and indexes per
(strategy, retriever, view) are each built once, on first use. The CLI runs it over the
whole matrix; the pytest plugin holds one per session and asks only for what tests need.

Results are also kept on disk across runs (cache.py, the result cache), under a key of
everything their numbers depend on: the hash of the strategy's chunks on the query set's view
(not its name), the retriever's name, version, shape and code, the resolved analyzer, the
query set's name and fingerprint, the settings, chunkeval's version, the digest of the source
that turns chunks into a result (RESULT_MODULES) and the versions of the numeric libraries.
A strategy whose chunks did not change then costs only its chunking: neither its indexes (a
hybrid's parts included) nor its scores are built again. What the chunking gives (`chunks`,
`metrics.cut_rate`, `seconds.split`) is taken from this run's chunking; the rest is the
stored entry, so a reused result equals a fresh one but for its timings and embedding
counters: `seconds.index` and `seconds.search` are those measured when the entry was stored
(what the result costs to evaluate; shard plans rely on it), the embedding counters are 0
(nothing was looked up) and `reused` is true. results.json counts reused and evaluated
entries in its top-level `result_cache`.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Iterable, Sequence

import numpy as np

from . import __version__, analyzers, cache, metrics, queries, retrieval, strategies
from .embeddings import EmbeddingCache
from .model import Chunk, Corpus, QuerySet
from .progress import Progress

# Deep enough that the 4,000-char end of the budget curve fills even with small chunks.
SEARCH_DEPTH = 64
# Parent-child searches children this many times deeper, so that after merging children
# into their parents there are still enough distinct parents.
CHILD_DEPTH_FACTOR = 8


@dataclass(frozen=True)
class Settings:
    k: int = metrics.K
    budget: int = metrics.BUDGET
    budgets: tuple[int, ...] = metrics.BUDGETS
    shingle: int = metrics.SHINGLE
    complete_at: float = metrics.COMPLETE_AT
    seed: int = 0
    max_queries: int = 800
    analyzer: str = analyzers.AUTO  # BM25 and LSA terms; auto: from the corpus's language
    length: str = metrics.LENGTH  # "chars" or "module:attr"; see metrics.length_function

    def to_json(self) -> dict:
        d = asdict(self)
        d["budgets"] = list(self.budgets)
        return d


@dataclass
class Chunked:
    """One strategy's output on one corpus view, in the two roles a chunk can play."""

    searched: list[Chunk]  # what the retriever indexes
    handed: list[Chunk]  # what the LLM gets (parents, for parent-child)
    parent_of: np.ndarray | None  # searched index -> handed index, parent-child only
    seconds: float
    stats: dict = field(default_factory=dict)
    cut: dict = field(default_factory=dict)
    scoring: dict = field(default_factory=dict)  # what metrics.score derives from handed
    # Handed chunks whose text is not the slice of their span (a repeated table header,
    # LangChain's rewritten output): (doc, start, end) -> text, so results.json can carry it.
    rewritten: dict = field(default_factory=dict)


class Evaluation:
    def __init__(self, corpus: Corpus, settings: Settings | None = None,
                 query_specs: Sequence[str | QuerySet] | None = None,
                 result_cache: bool = True):
        """`query_specs` are builder names or JSONL paths, built on first use, or ready
        QuerySets; by default every builder that yields queries on the corpus.
        `result_cache`: reuse and store results on disk across runs (see above)."""
        self.corpus = corpus
        self.settings = settings or Settings()
        self.result_cache = result_cache
        specs = list(query_specs) if query_specs else queries.build_default_query_sets(
            corpus, max_queries=self.settings.max_queries, seed=self.settings.seed)
        self._query_sets: dict[str, QuerySet] = {
            qs.name: qs for qs in specs if isinstance(qs, QuerySet)}
        self.query_specs = [qs.name if isinstance(qs, QuerySet) else qs for qs in specs]
        self._chunked: dict[tuple[str, str], Chunked] = {}
        self._indexes: dict[tuple[str, str, str], tuple[object, float]] = {}
        self._results: dict[tuple[str, str, str], dict] = {}
        self._caches: dict[str, EmbeddingCache] = {}
        self._analyzer: str | None = None

    @property
    def analyzer(self) -> str:
        """The resolved analyzer (settings.analyzer, or the corpus language's for auto)."""
        if self._analyzer is None:
            self._analyzer = analyzers.resolve(self.settings.analyzer,
                                               [d.text for d in self.corpus.documents])
        return self._analyzer

    def embedding_cache(self, retriever: retrieval.Retriever) -> EmbeddingCache:
        if retriever.name not in self._caches:
            self._caches[retriever.name] = EmbeddingCache(retriever.name, retriever.version)
        return self._caches[retriever.name]

    def _embedding_counts(self) -> tuple[int, int]:
        return (sum(c.misses for c in self._caches.values()),
                sum(c.hits for c in self._caches.values()))

    # -- stages, each memoised ------------------------------------------------------------
    def query_set(self, spec: str) -> QuerySet:
        if spec not in self._query_sets:
            self._query_sets[spec] = queries.build_query_set(
                self.corpus, spec, max_queries=self.settings.max_queries, seed=self.settings.seed)
        return self._query_sets[spec]

    def query_set_name(self, spec: str) -> str:
        return self.query_set(spec).name

    def chunked(self, strategy_name: str, spec: str) -> Chunked:
        key = (strategy_name, spec)
        if key not in self._chunked:
            strategy = strategies.get(strategy_name)
            view = self.query_set(spec).view
            t0 = time.perf_counter()
            searched: list[Chunk] = []
            for doc in view.documents:
                searched.extend(strategy.split(doc))
            seconds = time.perf_counter() - t0
            handed, parent_of = _handed(searched)
            rewritten = {(c.doc_id, c.start, c.end): c.text for c in handed
                         if view[c.doc_id].text[c.start:c.end] != c.text}
            self._chunked[key] = Chunked(
                searched, handed, parent_of, seconds,
                stats={**metrics.chunk_stats(searched, metrics.length_function(self.settings.length)),
                       "hash": chunks_hash(searched, handed)},
                cut=metrics.cut_rate(view.documents, handed), rewritten=rewritten)
        return self._chunked[key]

    def index(self, strategy_name: str, retriever: str, spec: str):
        key = (strategy_name, retriever, spec)
        if key not in self._indexes:
            r = retrieval.get(retriever)
            t0 = time.perf_counter()
            if r.fuses:
                parts = [self.index(strategy_name, p, spec) for p in r.fuses]
                self._indexes[key] = (retrieval.HybridIndex(*[i for i, _ in parts]),
                                      sum(s for _, s in parts) + time.perf_counter() - t0)
            else:
                texts = [c.indexed for c in self.chunked(strategy_name, spec).searched]
                index = retrieval.build_index(
                    r, texts, seed=self.settings.seed, analyzer=self.analyzer,
                    cache=self.embedding_cache(r) if r.embed else None)
                self._indexes[key] = (index, time.perf_counter() - t0)
        return self._indexes[key]

    def ranking(self, strategy_name: str, retriever: str, spec: str) -> tuple[np.ndarray, float]:
        """Ranked handed-chunk ids per query (-1 padded) and the search seconds."""
        chunked = self.chunked(strategy_name, spec)
        index, _ = self.index(strategy_name, retriever, spec)
        texts = [q.text for q in self.query_set(spec).queries]
        depth = max(SEARCH_DEPTH, self.settings.k)
        t0 = time.perf_counter()
        if chunked.parent_of is None:
            ranked = index.search(texts, depth)
        else:
            children = index.search(texts, depth * CHILD_DEPTH_FACTOR)
            ranked = _merge_into_parents(children, chunked.parent_of, depth)
        return ranked, time.perf_counter() - t0

    def result(self, strategy_name: str, retriever: str, spec: str, store: bool = True) -> dict:
        """One result entry. `store=False` still reads the result cache but adds nothing to
        it (calibration's throwaway variants)."""
        key = (strategy_name, retriever, spec)
        if key not in self._results:
            s = self.settings
            qs = self.query_set(spec)
            chunked = self.chunked(strategy_name, spec)
            r = retrieval.get(retriever)
            stored_key = self.result_key(chunked, retriever, qs) if self.result_cache else None
            stored = cache.load_result(stored_key) if stored_key else None
            if stored is not None and _fits(stored, retriever, qs.name):
                self._results[key] = _reused(stored, strategy_name, chunked)
                return self._results[key]
            embedded, cached = self._embedding_counts()
            _, index_seconds = self.index(strategy_name, retriever, spec)
            ranked, search_seconds = self.ranking(strategy_name, retriever, spec)
            scores = metrics.score(qs, chunked.handed, ranked, k=s.k, budget=s.budget,
                                   budgets=s.budgets, complete_at=s.complete_at, shingle=s.shingle,
                                   chunk_index=chunked.scoring,
                                   length=metrics.length_function(s.length))
            summary = scores.summary()
            summary["cut_rate"] = chunked.cut
            embedded2, cached2 = self._embedding_counts()
            self._results[key] = {
                "strategy": strategy_name, "retriever": retriever, "query_set": qs.name,
                "retriever_version": r.full_version, "analyzer": self.analyzer,
                # texts this result embedded anew, and those it found in the embedding cache
                "embeddings": {"embedded": embedded2 - embedded, "cached": cached2 - cached},
                "metrics": summary,
                "budget_curve": {str(b): v for b, v in scores.curve_summary().items()},
                "chunks": chunked.stats,
                "seconds": {"split": round(chunked.seconds, 4), "index": round(index_seconds, 4),
                            "search": round(search_seconds, 4)},
                # the text of every retrieved chunk that is not its span's slice, by
                # "doc:start:end", so that every number recomputes from this document
                "rewritten": {f"{d}:{a}:{b}": chunked.rewritten[(d, a, b)]
                              for row in scores.retrieved for d, a, b, _ in row
                              if (d, a, b) in chunked.rewritten},
                "per_query": scores.per_query(),
                "reused": False,  # true when read from the result cache
            }
            if stored_key and store:
                cache.store_result(stored_key, self._results[key])
        return self._results[key]

    def result_key(self, chunked: Chunked, retriever: str, qs: QuerySet) -> str:
        """The result cache's key: everything a result's numbers depend on, but the name of
        the strategy (equal chunks give equal results) and what the chunking gives."""
        s = self.settings
        parents = (None if chunked.parent_of is None
                   else hashlib.sha256(chunked.parent_of.astype("<i8").tobytes()).hexdigest())
        length = None
        if s.length != metrics.LENGTH:  # an outside measure: its module's source counts
            metrics.length_function(s.length)
            length = _module_digest(sys.modules.get(s.length.partition(":")[0]))
        return _digest({
            "format": cache.RESULT_FORMAT, "chunkeval": __version__, "code": _code_digest(),
            "libraries": _library_versions(),
            "chunks": chunked.stats["hash"], "parents": parents,
            "retriever": _retriever_identity(retriever),
            "analyzer": self.analyzer, "query_set": [qs.name, qs.fingerprint],
            "settings": s.to_json(), "length": length,
            "depth": [SEARCH_DEPTH, CHILD_DEPTH_FACTOR]})

    # -- the whole matrix -------------------------------------------------------------------
    def run(self, strategy_names: Iterable[str] | None = None,
            retrievers: Iterable[str] | dict[str, list[str]] | None = None,
            progress: bool | None = None, jobs: int = 1, shard=None,
            timings: dict | None = None, executor=None) -> dict:
        """Every strategy x retriever x query set. With jobs > 1, strategies are spread over
        forked worker processes (each builds its own indexes); the results are the same.
        `shard` (a shard.Shard) keeps only its part of the tasks, planned with `timings`
        (measured seconds per (query set, strategy)) or estimates; `executor` (see
        executors.py) runs the tasks elsewhere and streams their results back."""
        names = list(strategy_names or strategies.names())
        if isinstance(retrievers, dict):  # a plan: strategy -> its retrievers
            plan = {n: list(retrievers[n]) for n in names}
        else:
            plan = {n: list(retrievers) if retrievers else default_retrievers(n) for n in names}
        for r in {r for rets in plan.values() for r in rets}:
            retrieval.build_index(r, [])  # unknown or not installed: fail before any work
        self.analyzer  # resolved once here, inherited by forked workers
        tasks = [(spec, name) for spec in self.query_specs for name in names]
        for spec in self.query_specs:
            self.query_set(spec)  # built once here, inherited by forked workers
        if shard is not None:
            from .shard import select
            tasks = select(shard, self, tasks, timings)
        by_task: dict[tuple[str, str], list[dict]] = {}
        with Progress("evaluating", len(tasks), enabled=progress) as bar:
            if executor is not None:
                for task, res in executor.map(self, tasks, plan):
                    by_task[task] = res
                    bar.step(f"{task[1]} {task[0]}")
            elif jobs > 1 and len(tasks) > 1:
                for spec in self.query_specs:  # scoring tables too: built once, before the fork
                    metrics.prepare(self.query_set(spec), self.settings.shingle)
                # Longest first by the shard estimates (a view's size times its strategy
                # family's weight), so that a long task rarely starts when the rest are done.
                from .shard import task_costs
                cost = task_costs(self, tasks, timings)
                longest_first = sorted(tasks, key=lambda t: -cost[t])
                global _WORKER
                _WORKER = (self, plan)
                try:
                    ctx = multiprocessing.get_context("fork")
                    with ctx.Pool(min(jobs, len(tasks))) as pool:
                        for task, res in pool.imap_unordered(_work, longest_first):
                            by_task[task] = res
                            bar.step(f"{task[1]} {task[0]}")
                finally:
                    _WORKER = None
            else:
                for task in tasks:
                    by_task[task] = self._task(task, plan[task[1]])
                    bar.step(f"{task[1]} {task[0]}")
        results = [r for task in tasks for r in by_task[task]]
        doc = self.document(results, names)
        if shard is not None:
            # what `chunkeval merge` needs to rebuild the whole run's order and check it
            doc["shard"] = {**shard.to_json(), "strategies": names, "retrievers": plan,
                            "tasks": [[self.query_set(q).name, s] for q, s in tasks]}
        return doc

    def _task(self, task: tuple[str, str], rets: list[str]) -> list[dict]:
        spec, name = task
        out = [self.result(name, ret, spec) for ret in rets]
        # A finished strategy's chunks and indexes are not needed again: keep memory flat.
        self.release(name, spec)
        return out

    def release(self, strategy_name: str, spec: str) -> None:
        for key in [k for k in self._indexes if k[0] == strategy_name and k[2] == spec]:
            del self._indexes[key]
        self._chunked.pop((strategy_name, spec), None)

    def document(self, results: list[dict], names: Iterable[str]) -> dict:
        """The results document (results.json) around a list of result entries."""
        return {
            "schema": 1,
            "chunkeval": __version__,
            "corpus": corpus_summary(self.corpus),
            "settings": self.settings.to_json(),
            "query_sets": {self.query_set(spec).name: {
                "queries": len(self.query_set(spec)),
                "fingerprint": self.query_set(spec).fingerprint} for spec in self.query_specs},
            "strategies": {n: strategies.get(n).describe() for n in names},
            "retrievers": {r: retrieval.get(r).describe()
                           for r in dict.fromkeys(x["retriever"] for x in results)},
            "analyzer": self.analyzer,
            "embeddings": {k: sum(x.get("embeddings", {}).get(k, 0) for x in results)
                           for k in ("embedded", "cached")},
            # how many entries came from the result cache (their index and search seconds are
            # those measured when they were stored) and how many were evaluated in this run
            "result_cache": {"enabled": self.result_cache,
                             "reused": sum(1 for x in results if x.get("reused")),
                             "evaluated": sum(1 for x in results if not x.get("reused"))},
            "results": results,
        }


# The main job runs these costly retrievers on these strategies only (when the user names no
# retrievers): `use` embeds about 60 chunks a CPU second, so one strategy on debian-ja's two
# query sets (about 4,000 chunk texts) costs it a minute or more when the cache is cold.
LIMITED_RETRIEVERS = {"use": ("fixed-400", "structure-400+prefix", "recursive-400-ov40"),
                      "hybrid-use": ("fixed-400", "structure-400+prefix", "recursive-400-ov40")}


def default_retrievers(strategy: str) -> list[str]:
    """Every registered retriever that can run here, the limited ones on their strategies."""
    return [r for r in retrieval.names()
            if r not in LIMITED_RETRIEVERS or strategy in LIMITED_RETRIEVERS[r]]


_WORKER: tuple["Evaluation", dict[str, list[str]]] | None = None  # inherited by fork


def _work(task: tuple[str, str]) -> tuple[tuple[str, str], list[dict]]:
    evaluation, plan = _WORKER
    return task, evaluation._task(task, plan[task[1]])


def chunks_hash(searched: list[Chunk], handed: list[Chunk]) -> str:
    """sha256 of a strategy's output: every handed chunk's (doc, start, end, text) and every
    searched text, in order. Equal hashes mean equal chunks, whatever the strategy's name."""
    # one encoder for all lines: json.dumps with options builds a new one per call
    line = json.JSONEncoder(ensure_ascii=False).encode
    h = hashlib.sha256()
    for c in handed:
        h.update((line(["handed", c.doc_id, c.start, c.end, c.text]) + "\n").encode("utf-8"))
    for c in searched:
        h.update((line(["searched", c.indexed]) + "\n").encode("utf-8"))
    return h.hexdigest()


def _fits(stored: dict, retriever: str, query_set: str) -> bool:
    """A stored entry has the shape of a result for this retriever and query set (guards
    against a file written by another layout under the same format number)."""
    return (stored.get("retriever") == retriever and stored.get("query_set") == query_set
            and isinstance(stored.get("metrics"), dict) and isinstance(stored.get("seconds"), dict)
            and isinstance(stored.get("per_query"), list))


def _reused(stored: dict, strategy_name: str, chunked: Chunked) -> dict:
    """A stored entry with what this run's chunking gives; the keys keep their order, so the
    entry's JSON is the fresh one's but for timings, embedding counters and `reused`."""
    stored["strategy"] = strategy_name
    stored["embeddings"] = {"embedded": 0, "cached": 0}
    stored["metrics"]["cut_rate"] = chunked.cut
    stored["chunks"] = chunked.stats
    stored["seconds"]["split"] = round(chunked.seconds, 4)
    stored["reused"] = True
    return stored


def _digest(obj) -> str:
    data = json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


# The modules that turn chunks into a result. The rest of the package is covered otherwise:
# the chunking code by the chunks' hash, the corpus and query-set code by the query set's
# fingerprint (which includes its view), and the reporting code does not touch the numbers.
# So editing one strategy re-evaluates only what its new chunks change.
RESULT_MODULES = ("evaluate", "retrieval", "analyzers", "metrics", "stats", "model",
                  "embeddings", "neural", "cache")

_CODE: str | None = None


def _code_digest() -> str:
    """sha256 of the source of RESULT_MODULES: a checkout edited in place keeps its version
    number, and its old results must not be reused."""
    global _CODE
    if _CODE is None:
        from pathlib import Path
        h = hashlib.sha256()
        package = Path(__file__).parent
        for name in RESULT_MODULES:
            path = package / f"{name}.py"
            h.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
        _CODE = h.hexdigest()
    return _CODE


def _library_versions() -> dict:
    """Versions of the libraries the numbers come from (SVD, sparse products, rounding)."""
    from importlib.metadata import PackageNotFoundError, version
    out = {}
    for name in ("numpy", "scipy", "scikit-learn"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def _module_digest(module) -> str | None:
    """sha256 of the file a module was loaded from (an outside retriever or length measure
    whose code changed without a new version must not reuse old results)."""
    path = getattr(module, "__file__", None)
    try:
        return hashlib.sha256(open(path, "rb").read()).hexdigest() if path else None
    except OSError:
        return None


def _retriever_identity(name: str) -> dict:
    r = retrieval.get(name)
    fn = r.embed or r.build
    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    own = module is not None and module.__name__.split(".")[0] == __package__
    return {**r.describe(), "lexical": r.lexical, "batch_size": r.batch_size,
            # chunkeval's own retrievers are covered by _code_digest
            "code": None if fn is None or own else _module_digest(module),
            "parts": [_retriever_identity(p) for p in r.fuses]}


def corpus_summary(corpus: Corpus) -> dict:
    return {"name": corpus.name, "fingerprint": corpus.fingerprint,
            "documents": len(corpus), "chars": corpus.chars}


def _handed(searched: list[Chunk]) -> tuple[list[Chunk], np.ndarray | None]:
    if all(c.parent is None for c in searched):
        return searched, None
    handed: list[Chunk] = []
    position: dict[Chunk, int] = {}
    parent_of = np.empty(len(searched), dtype=np.int64)
    for i, c in enumerate(searched):
        p = c.handed
        if p not in position:
            position[p] = len(handed)
            handed.append(p)
        parent_of[i] = position[p]
    return handed, parent_of


def _merge_into_parents(children: np.ndarray, parent_of: np.ndarray, depth: int) -> np.ndarray:
    """Child rank order, each parent once."""
    out = np.full((children.shape[0], depth), -1, dtype=np.int64)
    for qi, row in enumerate(children):
        seen: list[int] = []
        for c in row:
            if c < 0:
                break
            p = int(parent_of[c])
            if p not in seen:
                seen.append(p)
                if len(seen) == depth:
                    break
        out[qi, :len(seen)] = seen
    return out
