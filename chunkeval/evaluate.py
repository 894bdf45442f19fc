"""The evaluation stage: strategy x retriever x query set -> one result entry.

`Evaluation` is lazy and memoised: query sets, chunks per (strategy, view) and indexes per
(strategy, retriever, view) are each built once, on first use. The CLI runs it over the
whole matrix; the pytest plugin holds one per session and asks only for what tests need.

Results are also kept on disk across runs (store/, the result cache), under a key of
everything their numbers depend on (keys.result_key): the hash of the strategy's chunks
on the query set's view (not its name), the retriever's identity, the resolved analyzer, the
query set's name and fingerprint, the settings, chunkeval's code and the versions of the
numeric libraries. A team's retriever is run every session, its vectors kept in this
evaluation's memory only, unless its team declares a cache key; a declared one is first
re-run on a sample of the session's texts (spotcheck.py). A team's splitter is run every
time (only chunkeval's own strategies' chunks are kept, keys.chunk_key), so its chunks
are always its code's of today. A strategy whose chunks did not change then costs only its
chunking: neither its indexes (a hybrid's parts included) nor its scores are built again.
What the chunking gives (`chunks`, `metrics.cut_rate`, `seconds.split`) is taken from this
run's chunking; the rest is the stored entry, so a reused result equals a fresh one but for
its timings and embedding counters: `seconds.index` and `seconds.search` are those measured
when the entry was stored (what the result costs to evaluate; shard plans rely on it), the
embedding counters are 0 (nothing was looked up) and `reused` is true. results.json counts
reused and evaluated entries in its top-level `result_cache`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sysconfig
import time
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from . import __version__, invariants, outside, queries, retrieval, scoring, spotcheck, strategies
from .errors import ChunkevalError, ConfigError, ContractError, InputError, StrategyFailed
from .executors import Executor, Serial
from .model import Chunk, Corpus, QuerySet
from .progress import Progress
from .results import (METRICS, Check, ChunkStats, CorpusSummary, CutRate, Failure,
                      QuerySetSummary, Result, Results, Seconds, Settings, DECIMALS, series)
from .retrieval.analyzers import resolve as resolve_analyzer
from .retrieval.embedding import EmbeddingCache
from .retrieval.hybrid import HybridIndex
from .shard import select
from .store import CHUNKS, RESULTS, keys, load_result, notice, result_path, store_result
from .strategies.defaults import default_retrievers
from .strategies.semantic import embedding_counts, vectors_on_disk

# Deep enough that the 4,000-char end of the budget curve fills even with small chunks.
SEARCH_DEPTH = 64
# Parent-child searches children this many times deeper, so that after merging children
# into their parents there are still enough distinct parents.
CHILD_DEPTH_FACTOR = 8


@dataclass
class Chunked:
    """One strategy's output on one corpus view, in the two roles a chunk can play."""

    searched: list[Chunk]  # what the retriever indexes
    handed: list[Chunk]  # what the LLM gets (parents, for parent-child)
    parent_of: np.ndarray | None  # searched index -> handed index, parent-child only
    seconds: float
    stats: ChunkStats
    cut: CutRate
    scoring: dict = field(default_factory=dict)  # what scoring.score derives from handed
    # Handed chunks whose text is not the slice of their span (a repeated table header,
    # LangChain's rewritten output): (doc, start, end) -> text, so results.json can carry it.
    rewritten: dict = field(default_factory=dict)
    # under an outside length measure: the digest of the handed chunks' lengths by it
    lengths: str | None = None


@dataclass(frozen=True)
class ChunkSummary:
    """What a result needs of a strategy's chunks when they need not be read: their
    statistics (and hash), cut rate, chunking seconds, the digest of the parent map and,
    under an outside length measure, of the chunks' lengths."""

    stats: ChunkStats
    cut: CutRate
    seconds: float
    parents: str | None
    lengths: str | None = None

    @classmethod
    def of(cls, chunked: Chunked) -> ChunkSummary:
        parents = (None if chunked.parent_of is None
                   else hashlib.sha256(chunked.parent_of.astype("<i8").tobytes()).hexdigest())
        return cls(chunked.stats, chunked.cut, chunked.seconds, parents, chunked.lengths)


class Evaluation:
    def __init__(self, corpus: Corpus, settings: Settings | None = None,
                 query_specs: Sequence[str | QuerySet] | None = None,
                 result_cache: bool = True, embedding_cache: bool = True):
        """`query_specs` are builder names or JSONL paths, built on first use, or ready
        QuerySets; by default every builder that yields queries on the corpus.
        `result_cache`: reuse and store results (and chunkeval's own strategies' chunks) on
        disk across runs (see above); `embedding_cache`: keep and reuse vectors."""
        self.corpus = corpus
        self.settings = settings or Settings()
        self.result_cache = result_cache
        self.use_embedding_cache = embedding_cache
        specs = list(query_specs) if query_specs else queries.build_default_query_sets(
            corpus, max_queries=self.settings.max_queries, seed=self.settings.seed)
        self._query_sets: dict[str, QuerySet] = {
            qs.name: qs for qs in specs if isinstance(qs, QuerySet)}
        self.query_specs = [qs.name if isinstance(qs, QuerySet) else qs for qs in specs]
        self._chunked: dict[tuple[str, str], Chunked] = {}
        self._summaries: dict[tuple[str, str], ChunkSummary] = {}  # read from the chunk cache
        self._indexes: dict[tuple[str, str, str], tuple[object, float]] = {}
        self._results: dict[tuple[str, str, str], Result] = {}
        self._failed: dict[tuple[str, str], StrategyFailed] = {}  # failed chunkings
        self._caches: dict[str, EmbeddingCache] = {}
        self._analyzer: str | None = None
        # a retriever from outside: its declared key and epoch, None when nothing is kept
        self._declared: dict[str, dict | None] = {}
        self._spot_checked: set[str] = set()  # of those, the ones checked this session

    @property
    def analyzer(self) -> str:
        """The resolved analyzer (settings.analyzer, or the corpus language's for auto)."""
        if self._analyzer is None:
            self._analyzer = resolve_analyzer(self.settings.analyzer,
                                              [d.text for d in self.corpus.documents])
        return self._analyzer

    def embedding_cache(self, retriever: retrieval.Retriever) -> EmbeddingCache:
        """The retriever's vectors on disk (keys.embeddings_folder). Without the
        embedding cache, or for a retriever from outside that declares no cache key, in this
        evaluation's memory only: a text is embedded once a session, and counted."""
        if retriever.name not in self._caches:
            folder = keys.embeddings_folder(retriever, self.declared(retriever)) \
                if self.use_embedding_cache else None
            self._caches[retriever.name] = EmbeddingCache(retriever.name, folder) \
                if folder is not None else EmbeddingCache(retriever.name, "", on_disk=False)
        return self._caches[retriever.name]

    def retriever_identity(self, name: str) -> dict | None:
        """keys.retriever_identity: None when the retriever's results are not kept."""
        return keys.retriever_identity(name, self.declared)

    def declared(self, r: retrieval.Retriever) -> dict | None:
        """A retriever from outside's declared cache key and its epoch; None when it declares
        none, or is an embedding one and the embedding cache is off (its sample check
        compares with the vectors kept)."""
        if r.name not in self._declared:
            key = keys.declared_key(r)
            kept = key is not None and (self.use_embedding_cache or r.embed is None)
            self._declared[r.name] = {"key": key, "epoch": keys.epoch(r, key)} \
                if kept else None
        return self._declared[r.name]

    def spot_check(self, retriever: str, strategy_name: str, spec: str, *,
                   rows: bool = True) -> None:
        """Before anything kept of a declared retriever from outside (`retriever` or a part
        of it) is used this session: its sample check (spotcheck.py), on this task's texts.
        Embedding parts first, by their vectors; `rows=False` checks only those (an index is
        being built); the rest, and an embedding part whose sample the embedding cache no
        longer holds, by the rows of the kept result."""
        parts = sorted(_leaves(retriever), key=lambda p: retrieval.get(p).embed is None)
        for part in parts:
            r = retrieval.get(part)
            if (part in self._spot_checked or keys.is_own_retriever(part)
                    or self.declared(r) is None or (r.embed is None and not rows)):
                continue
            # vectors pruned from the cache leave results to check by their rows
            compared = (r.embed is not None and self._check_vectors(r, strategy_name, spec)
                        or rows and self._check_rows(r, retriever, strategy_name, spec))
            if compared:
                self._spot_checked.add(part)

    def _check_vectors(self, r: retrieval.Retriever, strategy_name: str, spec: str) -> bool:
        """Re-embed the sample; False when the cache holds none of its texts yet."""
        at = spotcheck.turn()
        texts = [q.text for q in self.query_set(spec).queries]
        sample = [texts[i] for i in spotcheck.queries(len(texts), at)] + spotcheck.chunks(
            [c.indexed for c in self.chunked(strategy_name, spec).searched], at)
        kept = self.embedding_cache(r).stored(sample)
        if not kept:
            return False
        with _retriever_failure(strategy_name, r.name):
            differ = spotcheck.vectors_differ(r.embed, r.batch_size, kept)
        if differ:
            self._discard(r, f"vectors ({differ} of {len(kept)} sampled texts differ)")
        return True

    def _check_rows(self, r: retrieval.Retriever, retriever: str, strategy_name: str,
                    spec: str) -> bool:
        """Search with the sampled queries and score them; False when no result is kept."""
        summary = self.chunk_summary(strategy_name, spec)
        qs = self.query_set(spec)
        stored = _stored(self.result_key(summary, retriever, qs), retriever, qs, summary,
                         self.settings.complete_at)
        if stored is None:
            return False
        picked = spotcheck.queries(len(qs.queries), spotcheck.turn())
        sub = replace(qs, queries=tuple(qs.queries[i] for i in picked))
        chunked = self.chunked(strategy_name, spec)
        ranked, _ = self.ranking(strategy_name, retriever, spec, sub)
        fresh = self._scores(sub, chunked, ranked).per_query()
        differ = sum(a.to_json() != b.to_json()
                     for a, b in zip(fresh, [stored.per_query[i] for i in picked]))
        if differ:
            self._discard(r, f"results ({differ} of {len(picked)} sampled queries differ)")
        return True

    def _discard(self, r: retrieval.Retriever, what: str) -> None:
        """Said in one line: what is kept under the retriever's key is never read again."""
        notice(spotcheck.said(r.name, what))
        kept = self._declared[r.name]
        self._declared[r.name] = {**kept, "epoch": keys.discard(r, kept["key"])}
        self._caches.pop(r.name, None)  # its next use reads the new epoch's folder
        for key in [k for k in self._indexes if r.name in _leaves(k[1])]:
            del self._indexes[key]  # a check's index may hold vectors of the old epoch

    def _embedding_counts(self) -> tuple[int, int]:
        """Texts embedded anew and found in the cache so far: by retrievers and by the
        semantic chunkers (whose texts are embeddings too)."""
        chunking = embedding_counts()
        return (sum(c.misses for c in self._caches.values()) + chunking[0],
                sum(c.hits for c in self._caches.values()) + chunking[1])

    # -- stages, each memoised ------------------------------------------------------------
    def query_set(self, spec: str) -> QuerySet:
        if spec not in self._query_sets:
            qs = queries.build_query_set(self.corpus, spec, max_queries=self.settings.max_queries,
                                         seed=self.settings.seed, use_cache=self.result_cache)
            scoring.coverage_rule(qs, self.settings.coverage)  # "positional" on text: refused
            self._query_sets[spec] = qs
        return self._query_sets[spec]

    def asked(self, spec: str) -> QuerySet:
        """The query set, or ConfigError when it has no questions on this corpus (a builder
        finds none where the corpus lacks what it reads): there would be nothing to score."""
        qs = self.query_set(spec)
        if not qs.queries:
            raise ConfigError(f"query set {qs.name!r} has no questions on the corpus "
                              f"{self.corpus.name!r}: nothing to score; name another")
        return qs

    def add_query_set(self, spec: str, qs: QuerySet) -> None:
        """A ready query set under `spec` (a sweep's sample of a set's queries): its chunks
        are those of its view, as for every set on that view."""
        self._query_sets[spec] = qs

    def chunked(self, strategy_name: str, spec: str) -> Chunked:
        """The strategy's chunks of the query set's view, each document's checked against the
        splitter contract as it is made; StrategyFailed (kept, and raised again when asked
        again) when the splitter raises or breaks it."""
        key = (strategy_name, spec)
        if key in self._failed:
            raise self._failed[key]
        if key not in self._chunked:
            stored_key = self.chunk_key(strategy_name, spec)
            view = self.query_set(spec).view
            entry = _load_chunks(stored_key, view) if stored_key else None
            loaded = _chunked_from(entry, view, strategies.get(strategy_name)) if entry else None
            if entry and loaded is None:  # well-formed, but not chunks that fit this view
                CHUNKS.reject(CHUNKS.path(stored_key))
            if loaded is None:
                loaded = self._chunk(strategy_name, spec)
                if stored_key:
                    CHUNKS.store(stored_key, _chunked_entry(loaded, view),
                                       describes={"view": view.fingerprint})
            self._chunked[key] = loaded
        return self._chunked[key]

    def chunk_summary(self, strategy_name: str, spec: str) -> ChunkSummary:
        """The strategy's chunk statistics on the query set's view: from its chunks when they
        are in memory, else from the chunk cache without building them (what a result read
        from the result cache needs), else by chunking."""
        key = (strategy_name, spec)
        if key not in self._chunked and key not in self._failed:
            summary = self._stored_summary(strategy_name, spec)
            if summary is not None:
                return summary
        return ChunkSummary.of(self.chunked(strategy_name, spec))

    def _stored_summary(self, strategy_name: str, spec: str) -> ChunkSummary | None:
        """The strategy's chunk summary as the chunk cache holds it (read once), else None."""
        key = (strategy_name, spec)
        if key not in self._summaries:
            stored_key = self.chunk_key(strategy_name, spec)
            entry = _load_chunks(stored_key, self.query_set(spec).view) if stored_key else None
            summary = _summary_from(entry) if entry else None
            if summary is None:
                return None
            self._summaries[key] = summary
        return self._summaries[key]

    def chunk_key(self, strategy_name: str, spec: str) -> str | None:
        """The chunk cache's key (keys.chunk_key): None without the result cache, and for
        anything that is not chunkeval's own code, which is chunked afresh every run."""
        if not self.result_cache:
            return None
        strategy = strategies.get(strategy_name)
        model = strategy.params.get("model")
        # a semantic strategy's chunks follow the vectors of the retriever it names
        model = (self.retriever_identity(model) if model in retrieval.names(all=True)
                 and keys.is_own_retriever(model) else None)
        return keys.chunk_key(strategy, self.query_set(spec).view.fingerprint,
                                  self.settings.length, model)

    def _chunk(self, strategy_name: str, spec: str) -> Chunked:
        """Split every document of the view, checking each against the contract."""
        key = (strategy_name, spec)
        needs = strategies.missing(strategy_name)
        if needs:  # a built-in whose library this process lacks (a cluster node may): this
            # task fails, the others go on
            self._failed[key] = StrategyFailed(strategy_name,
                                               f"needs an optional package: {needs}")
            raise self._failed[key]
        strategy = strategies.get(strategy_name)
        view = self.query_set(spec).view
        t0 = time.perf_counter()
        searched: list[Chunk] = []
        for doc in view.documents:
            try:
                with vectors_on_disk(self.use_embedding_cache):  # a semantic chunker's
                    out = strategy.split(doc)
                    chunks = list(out) if hasattr(out, "__iter__") and not isinstance(
                        out, str) else out
            except Exception as e:  # the splitter's own failure, said as one line
                self._failed[key] = StrategyFailed(
                    strategy_name, f"split() raised {_said(e)}", document=doc.id,
                    detail=own_frames(e))
                raise self._failed[key] from e
            problem = None
            if not isinstance(chunks, list) or not all(isinstance(c, Chunk) for c in chunks):
                problem = f"split() returned {_kind(chunks)}, not a list of Chunk"
            elif strategy.checked and (
                    broken := invariants.contract(strategy, doc, chunks)) is not None:
                problem = f"its chunks break {broken[0]!r}: {broken[1]}"
            if problem:
                self._failed[key] = StrategyFailed(strategy_name, problem, document=doc.id)
                raise self._failed[key]
            searched.extend(chunks)
        seconds = time.perf_counter() - t0
        handed, parent_of = _handed(searched)
        rewritten = {(c.doc_id, c.start, c.end): c.text for c in handed
                     if view[c.doc_id].text[c.start:c.end] != c.text}
        try:  # the first use of an outside length measure
            length = outside.length_function(self.settings.length)
            stats = scoring.chunk_stats(searched, length, hash=chunks_hash(searched, handed))
            lengths = (None if self.settings.length == scoring.LENGTH
                       else keys.lengths_digest([length(c.text) for c in handed]))
        except ConfigError:
            raise
        except Exception as e:
            self._failed[key] = StrategyFailed(
                strategy_name, f"the length measure {self.settings.length!r}: "
                               f"{e if isinstance(e, ChunkevalError) else _said(e)}",
                detail=own_frames(e))
            raise self._failed[key] from e
        return Chunked(searched, handed, parent_of, seconds, stats=stats,
                       cut=scoring.cut_rate(view.documents, handed), rewritten=rewritten,
                       lengths=lengths)

    def index(self, strategy_name: str, retriever: str, spec: str):
        key = (strategy_name, retriever, spec)
        if key not in self._indexes:
            r = retrieval.get(retriever)
            t0 = time.perf_counter()
            if r.fuses:
                parts = [self.index(strategy_name, p, spec) for p in r.fuses]
                self._indexes[key] = (HybridIndex(*[i for i, _ in parts]),
                                      sum(s for _, s in parts) + time.perf_counter() - t0)
            else:
                texts = [c.indexed for c in self.chunked(strategy_name, spec).searched]
                if r.embed is not None:
                    self.spot_check(retriever, strategy_name, spec, rows=False)
                with _retriever_failure(strategy_name, retriever):
                    index = retrieval.build_index(
                        r, texts, seed=self.settings.seed, analyzer=self.analyzer,
                        cache=self.embedding_cache(r) if r.embed else None)
                self._indexes[key] = (index, time.perf_counter() - t0)
        return self._indexes[key]

    def ranking(self, strategy_name: str, retriever: str, spec: str,
                qs: QuerySet | None = None) -> tuple[np.ndarray, float]:
        """Ranked handed-chunk ids per query (-1 padded) and the search seconds; of the
        queries of `qs` when given (some of the spec's)."""
        chunked = self.chunked(strategy_name, spec)
        index, _ = self.index(strategy_name, retriever, spec)
        texts = [q.text for q in (qs or self.query_set(spec)).queries]
        depth = max(SEARCH_DEPTH, self.settings.k)
        t0 = time.perf_counter()
        with _retriever_failure(strategy_name, retriever):
            if chunked.parent_of is None:
                ranked = _checked(index.search(texts, depth), len(texts),
                                  len(chunked.searched), retriever)
            else:
                children = _checked(index.search(texts, depth * CHILD_DEPTH_FACTOR),
                                    len(texts), len(chunked.searched), retriever)
                ranked = _merge_into_parents(children, chunked.parent_of, depth)
        return ranked, time.perf_counter() - t0

    def result(self, strategy_name: str, retriever: str, spec: str, store: bool = True
               ) -> Result:
        """One result entry. `store=False` still reads the result cache but adds nothing to
        it (calibration's throwaway variants)."""
        key = (strategy_name, retriever, spec)
        if key not in self._results:
            s = self.settings
            qs = self.asked(spec)
            r = retrieval.get(retriever)
            embedded, cached = self._embedding_counts()  # chunking may embed (semantic)
            if self.result_cache:
                self.spot_check(retriever, strategy_name, spec)
                summary = self.chunk_summary(strategy_name, spec)
                stored_key = self.result_key(summary, retriever, qs)
                stored = _stored(stored_key, retriever, qs, summary,
                                 s.complete_at) if stored_key else None
                if stored is not None:
                    embedded2, cached2 = self._embedding_counts()  # chunking's, if it ran
                    self._results[key] = replace(
                        _reused(stored, strategy_name, summary),
                        embeddings={"embedded": embedded2 - embedded, "cached": cached2 - cached})
                    return self._results[key]
            else:
                stored_key = None
            chunked = self.chunked(strategy_name, spec)
            _, index_seconds = self.index(strategy_name, retriever, spec)
            ranked, search_seconds = self.ranking(strategy_name, retriever, spec)
            scores = self._scores(qs, chunked, ranked)
            embedded2, cached2 = self._embedding_counts()
            self._results[key] = Result(
                strategy=strategy_name, retriever=retriever, query_set=qs.name,
                retriever_version=r.full_version, analyzer=self.analyzer,
                embeddings={"embedded": embedded2 - embedded, "cached": cached2 - cached},
                metrics=scores.summary(), cut_rate=chunked.cut,
                budget_curve=scores.curve_summary(), chunks=chunked.stats,
                seconds=Seconds(round(chunked.seconds, 4), round(index_seconds, 4),
                                round(search_seconds, 4)),
                # every number recomputes from results.json: the text of each retrieved chunk
                # that is not its span's slice goes with it
                rewritten={f"{d}:{a}:{b}": chunked.rewritten[(d, a, b)]
                           for row in scores.retrieved for d, a, b, _ in row
                           if (d, a, b) in chunked.rewritten},
                per_query=scores.per_query(), reused=False,
                fallback=scores.fallback if scores.positional is not None else None)
            if stored_key and store:
                store_result(stored_key, self._results[key].to_json(),
                                   describes=_describes(summary, retriever, qs))
        return self._results[key]

    def _scores(self, qs: QuerySet, chunked: Chunked, ranked: np.ndarray) -> scoring.Scores:
        s = self.settings
        return scoring.score(qs, chunked.handed, ranked, k=s.k, budget=s.budget,
                             budgets=s.budgets, complete_at=s.complete_at, shingle=s.shingle,
                             chunk_index=chunked.scoring, length=outside.length_function(s.length),
                             coverage=s.coverage)

    def result_key(self, chunks: ChunkSummary, retriever: str, qs: QuerySet) -> str | None:
        """The result cache's key (keys.result_key); None for a retriever whose results
        are not kept (one from outside that declares no cache key)."""
        kept = self.retriever_identity(retriever)
        if kept is None:
            return None
        return keys.result_key(
            chunks=chunks.stats.hash, parents=chunks.parents, lengths=chunks.lengths,
            retriever=kept, analyzer=self.analyzer,
            query_set=(qs.name, qs.fingerprint), settings=self.settings.to_json(),
            depth=(SEARCH_DEPTH, CHILD_DEPTH_FACTOR))

    # -- the whole matrix -------------------------------------------------------------------
    def run(self, strategy_names: Iterable[str] | None = None,
            retrievers: Iterable[str] | dict[str, list[str]] | None = None,
            progress: bool | None = None, shard=None, timings: dict | None = None,
            executor: Executor | None = None) -> Results:
        """Every strategy x retriever x query set, each task (a strategy on a query set, its
        retrievers inside) run by `executor` (executors.py; default: one after the other,
        here). `shard` (a shard.Shard) keeps only its part of the tasks, planned with
        `timings` (measured seconds per (query set, strategy)) or estimates."""
        names = list(strategy_names or strategies.names())
        if isinstance(retrievers, dict):  # a plan: strategy -> its retrievers
            plan = {n: list(retrievers[n]) for n in names}
        else:
            plan = {n: list(retrievers) if retrievers else default_retrievers(n) for n in names}
        for n in names:
            strategies.require(n)  # fail before any work, as a retriever does here
        for r in {r for rets in plan.values() for r in rets}:
            retrieval.build_index(r, [])  # unknown or not installed: fail before any work
        self.analyzer  # resolved once here, inherited by workers
        tasks = [(spec, name) for spec in self.query_specs for name in names]
        for spec in self.query_specs:
            self.asked(spec)  # built once here, inherited by workers
        if shard is not None:
            tasks = select(shard, self, tasks, timings)
        by_task: dict[tuple[str, str], list[Result]] = {}
        with Progress("evaluating", len(tasks), enabled=progress) as bar:
            # Tasks the caches answer whole are read here: sending them to workers would
            # cost more (forking, pickling the results back) than reading them.
            for task in tasks:
                stored = self.stored_task(task, plan[task[1]])
                if stored is not None:
                    by_task[task] = stored
                    bar.step(f"{task[1]} {task[0]}")
            rest = [t for t in tasks if t not in by_task]
            for task, res in (executor or Serial()).map(self, rest, plan, timings):
                by_task[task] = res
                bar.step(f"{task[1]} {task[0]}")
        done = [r for task in tasks for r in by_task[task]]
        failures = list({(f.strategy, f.retriever, f.query_set): f for f in done
                         if isinstance(f, Failure)}.values())
        results = self.document([r for r in done if isinstance(r, Result)], names, failures)
        if shard is not None:
            # what `chunkeval merge` needs to rebuild the whole run's order and check it
            results.shard = {**shard.to_json(), "strategies": names, "retrievers": plan,
                             "tasks": [[self.query_set(q).name, s] for q, s in tasks]}
        return results

    def stored_task(self, task: tuple[str, str], retrievers: list[str]) -> list[Result] | None:
        """The task's results when the chunk cache holds its chunks' summary and the result
        cache every retriever's result; else None, having built nothing."""
        spec, name = task
        key = (name, spec)
        if not self.result_cache or key in self._failed:
            return None
        if key not in self._chunked and self._stored_summary(name, spec) is None:
            return None
        if any(self._unchecked(ret) for ret in retrievers):
            return None  # checked where the task runs, where a failure is the task's
        summary = self.chunk_summary(name, spec)
        qs = self.query_set(spec)
        out = []
        for ret in retrievers:
            if (name, ret, spec) not in self._results:
                stored_key = self.result_key(summary, ret, qs)
                stored = _stored(stored_key, ret, qs, summary,
                                 self.settings.complete_at) if stored_key else None
                if stored is None:
                    return None
                self._results[(name, ret, spec)] = _reused(stored, name, summary)
            out.append(self._results[(name, ret, spec)])
        return out

    def _unchecked(self, retriever: str) -> bool:
        """Whether a part of the retriever awaits its sample check (or is not kept)."""
        return any(not keys.is_own_retriever(p) and (
            p not in self._spot_checked or self.declared(retrieval.get(p)) is None)
            for p in _leaves(retriever))

    def run_task(self, task: tuple[str, str], retrievers: list[str]
                 ) -> list[Result | Failure]:
        """One task: a strategy on a query set (`(spec, strategy)`), with each retriever; a
        result or, where the strategy or the retriever failed, the failure. Its chunks and
        indexes are released afterwards: memory stays flat over a run."""
        spec, name = task
        out: list[Result | Failure] = []
        for i, ret in enumerate(retrievers):
            try:
                out.append(self.result(name, ret, spec))
            except StrategyFailed as e:
                if e.retriever not in (None, ret):  # a part of a hybrid: the hybrid failed
                    e = StrategyFailed(name, f"its part {e.retriever!r}: {e.problem}",
                                       retriever=ret, document=e.document, detail=e.detail)
                out.append(Failure(e.strategy, self.query_set(spec).name, str(e), e.retriever,
                                   e.document, e.detail))
            # An index no later retriever of the task fuses goes now, not after the next
            # index is built beside it.
            later = {p for r in retrievers[i + 1:] for p in (r, *retrieval.get(r).fuses)}
            for key in [k for k in self._indexes if k[0] == name and k[2] == spec
                        and k[1] not in later]:
                del self._indexes[key]
        self.release(name, spec)
        return out

    def prepare_for_workers(self) -> None:
        """Build what every task shares (query sets, the analyzer, the scoring tables) once,
        so that forked workers inherit it instead of each building its own."""
        self.analyzer
        for spec in self.query_specs:
            scoring.prepare(self.query_set(spec), self.settings.shingle)

    def release(self, strategy_name: str, spec: str) -> None:
        for key in [k for k in self._indexes if k[0] == strategy_name and k[2] == spec]:
            del self._indexes[key]
        self._chunked.pop((strategy_name, spec), None)

    def forget(self, strategy_name: str) -> None:
        """Everything built for a strategy, its results included (a throwaway variant)."""
        for spec in self.query_specs:
            self.release(strategy_name, spec)
        for key in [k for k in self._results if k[0] == strategy_name]:
            del self._results[key]
        for key in [k for k in self._failed if k[0] == strategy_name]:
            del self._failed[key]

    def __getstate__(self) -> dict:
        """An evaluation travels (to a Ray worker) with its inputs only: what a run builds
        (chunks, indexes, results, loaded embeddings) is built again where it is needed."""
        state = dict(self.__dict__)
        for built in ("_chunked", "_indexes", "_results", "_caches", "_failed"):
            state[built] = {}
        return state

    def document(self, results: list[Result], names: Iterable[str],
                 failures: Iterable[Failure] = ()) -> Results:
        """The results document (results.json) around a list of result entries, and what
        could not be scored."""
        return Results(
            chunkeval=__version__, corpus=corpus_summary(self.corpus), settings=self.settings,
            query_sets={self.query_set(spec).name: QuerySetSummary(
                len(self.query_set(spec)), self.query_set(spec).fingerprint,
                scoring.coverage_rule(self.query_set(spec), self.settings.coverage))
                for spec in self.query_specs},
            strategies={n: strategies.get(n).describe() for n in names},
            retrievers={r: _described(r, self.declared(retrieval.get(r)))
                        for r in dict.fromkeys(x.retriever for x in results)},
            analyzer=self.analyzer,
            embeddings={k: sum((x.embeddings or {}).get(k, 0) for x in results)
                        for k in ("embedded", "cached")},
            result_cache={"enabled": self.result_cache,
                          "reused": sum(1 for x in results if x.reused),
                          "evaluated": sum(1 for x in results if not x.reused)},
            results=results, failures=list(failures))


@contextlib.contextmanager
def _retriever_failure(strategy: str, retriever: str):
    """A retriever that raises, or returns what its contract rules out, fails the strategy's
    result with it (one line), not the run. A setting it cannot use stays a ConfigError."""
    try:
        yield
    except StrategyFailed:
        raise
    except ContractError as e:
        said = str(e).removeprefix(f"retriever {retriever!r}: ")
        raise StrategyFailed(strategy, said, retriever=retriever) from e
    except ChunkevalError:
        raise
    except Exception as e:
        raise StrategyFailed(strategy, _said(e), retriever=retriever,
                             detail=own_frames(e)) from e


def _said(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


def own_frames(e: BaseException, fallback: int = 4) -> str:
    """The frames of the traceback that are the user's own code: not chunkeval's, not the
    standard library's nor an installed package's; with none of those (a failure inside an
    installed library), the last `fallback` frames."""
    skip = tuple({sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib",
                                                      "platlib")} | {str(Path(__file__).parent)})
    every = traceback.extract_tb(e.__traceback__)
    frames = [f for f in every if not os.path.abspath(f.filename).startswith(skip)]
    return "".join(traceback.format_list(frames or every[-fallback:])).rstrip()


def _kind(value) -> str:
    if isinstance(value, list):
        odd = next((c for c in value if not isinstance(c, Chunk)), None)
        return f"a list holding a {type(odd).__name__}"
    return f"a {type(value).__name__}"


def _checked(ranked, queries: int, chunks: int, retriever: str) -> np.ndarray:
    """A retriever's ranking as the index contract promises it: integer chunk ids, a row a
    query, -1 padding; anything else is the retriever's fault, said as such."""
    ranked = np.asarray(ranked)
    ok = (ranked.ndim == 2 and ranked.shape[0] == queries
          and (ranked.size == 0 or (np.issubdtype(ranked.dtype, np.integer)
                                    and ranked.min() >= -1 and ranked.max() < chunks)))
    if not ok:
        raise ContractError(f"retriever {retriever!r}: search() returned {ranked.dtype} of "
                            f"shape {ranked.shape} for {queries} queries over {chunks} chunks; "
                            "expected integer chunk ids in [-1, chunks), a row a query")
    if ranked.size:
        found = ranked >= 0
        gap = (found[:, 1:] & ~found[:, :-1]).any(axis=1)  # an id after the -1 padding
        ordered = np.sort(ranked, axis=1)
        twice = ((ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)).any(axis=1)
        for bad, what in ((gap, "a chunk id after -1 padding"), (twice, "a chunk id twice")):
            if bad.any():
                raise ContractError(f"retriever {retriever!r}: search() returned {what} for "
                                    f"query {int(np.argmax(bad))}: a ranking lists each chunk "
                                    "once, best first, -1 only at its end")
    return ranked.astype(np.int64, copy=False)


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


def document_hashes(chunked: Chunked) -> dict[str, str]:
    """doc id -> a short hash of the strategy's chunks of that document (handed spans and
    texts, searched texts), as chunks_hash hashes the whole output."""
    line = json.JSONEncoder(ensure_ascii=False).encode
    by_doc: dict[str, hashlib._Hash] = {}
    for c in chunked.handed:
        by_doc.setdefault(c.doc_id, hashlib.sha256()).update(
            (line(["handed", c.start, c.end, c.text]) + "\n").encode("utf-8"))
    for c in chunked.searched:
        by_doc.setdefault(c.doc_id, hashlib.sha256()).update(
            (line(["searched", c.indexed]) + "\n").encode("utf-8"))
    return {d: h.hexdigest()[:16] for d, h in sorted(by_doc.items())}


def _describes(chunks: ChunkSummary, retriever: str, qs: QuerySet) -> dict:
    """What a result entry describes: the chunk output, the retriever, the query set."""
    return {"chunks": chunks.stats.hash, "parents": chunks.parents, "retriever": retriever,
            "query_set": [qs.name, qs.fingerprint]}


def _stored(key: str, retriever: str, qs: QuerySet, chunks: ChunkSummary,
            complete_at: float) -> Result | None:
    """The result cache's entry under `key` when it is a result of these chunks, this
    retriever and this query set, a row for each of its queries in order (an entry that does
    not read as one is a miss, and is evaluated and stored again)."""
    stored = load_result(key, describes=_describes(chunks, retriever, qs))
    if stored is None:
        return None
    try:
        result = Result.from_json(stored, str(result_path(key)))
    except InputError:
        result = None
    if (result is None or (result.retriever, result.query_set) != (retriever, qs.name)
            or result.chunks.hash != chunks.stats.hash
            or [q.id for q in result.per_query] != [q.id for q in qs.queries]
            or not _means_hold(result, complete_at)):
        RESULTS.reject(result_path(key))
        return None
    return result


def _means_hold(result: Result, complete_at: float) -> bool:
    """Each mean of a per-query series is the mean of its rows (to the series' rounding)."""
    if not result.per_query:
        return not result.metrics or all(s.value == 0 for s in result.metrics.values())
    rows = series(result.per_query, complete_at)
    return all(abs(float(np.mean(rows[m.series])) - result.metrics[m.name].value)
               <= 10 ** -DECIMALS for m in METRICS if m.series in rows and m.name in result.metrics)


def _load_chunks(key: str, view: Corpus) -> dict | None:
    return CHUNKS.load(key, describes={"view": view.fingerprint})


def _reused(stored: Result, strategy_name: str, chunks: ChunkSummary) -> Result:
    """A stored entry with what this run's chunking gives; its JSON is the fresh one's but
    for timings, embedding counters and `reused`."""
    return replace(stored, strategy=strategy_name, embeddings={"embedded": 0, "cached": 0},
                   cut_rate=chunks.cut, chunks=chunks.stats,
                   seconds=replace(stored.seconds, split=round(chunks.seconds, 4)), reused=True)


def _chunked_entry(chunked: Chunked, view: Corpus) -> dict:
    """A strategy's chunks as the chunk cache keeps them: a chunk that is its range's slice
    without its text (the view has it), parents once, referred to by number."""
    numbers: dict[str, int] = {}
    parents: dict[Chunk, int] = {}

    def row(c: Chunk) -> list:
        d = numbers.setdefault(c.doc_id, len(numbers))
        text = None if view[c.doc_id].text[c.start:c.end] == c.text else c.text
        return [d, c.start, c.end, text, c.index_text]

    rows = [row(c) + [None if c.parent is None else parents.setdefault(c.parent, len(parents))]
            for c in chunked.searched]
    return {"docs": list(numbers), "chunks": rows, "parents": [row(p) for p in parents],
            "summary": {"stats": chunked.stats.to_json(), "cut": chunked.cut.to_json(),
                        "seconds": chunked.seconds,
                        "parents": ChunkSummary.of(chunked).parents}}


def _summary_from(entry: dict) -> ChunkSummary | None:
    try:
        s = entry["summary"]
        check = Check("the chunk cache")
        return ChunkSummary(ChunkStats.from_json(s["stats"], check.at("stats")),
                            CutRate.from_json(s["cut"], check.at("cut")), float(s["seconds"]),
                            s["parents"])
    except (KeyError, TypeError, ValueError, InputError):
        return None  # not what this version writes: chunked again


def _chunked_from(entry: dict, view: Corpus, strategy: strategies.Strategy) -> Chunked | None:
    """The Chunked a cache entry holds (None when it does not fit this view: chunked
    again). A text left out is its range's slice of the view's document. The chunks meet the
    same contract as chunks just made (invariants.contract, each document) and hash to the
    hash their summary records, else the entry is a miss."""
    summary = _summary_from(entry)
    if summary is None:
        return None
    try:
        texts = [view[d].text for d in entry["docs"]]
        ids = list(entry["docs"])

        def chunk(r, parent=None) -> Chunk:
            d, a, b, text, index_text = r[:5]
            return Chunk(ids[d], a, b, texts[d][a:b] if text is None else text, index_text,
                         parent)

        parents = [chunk(r) for r in entry["parents"]]
        searched = [chunk(r, None if r[5] is None else parents[r[5]]) for r in entry["chunks"]]
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    by_doc: dict[str, list[Chunk]] = {}
    for c in searched:
        by_doc.setdefault(c.doc_id, []).append(c)
    handed, parent_of = _handed(searched)
    if (set(by_doc) - {d.id for d in view.documents}
            or any(invariants.contract(strategy, d, by_doc.get(d.id, [])) is not None
                   for d in view.documents)
            or chunks_hash(searched, handed) != summary.stats.hash
            or ChunkSummary.of(Chunked(searched, handed, parent_of, summary.seconds,
                                       summary.stats, summary.cut)).parents != summary.parents):
        return None
    rewritten = {(c.doc_id, c.start, c.end): c.text for c in handed
                 if view[c.doc_id].text[c.start:c.end] != c.text}
    return Chunked(searched, handed, parent_of, summary.seconds, stats=summary.stats,
                   cut=summary.cut, rewritten=rewritten)


def _described(name: str, declared: dict | None = None) -> dict:
    """A retriever as results.json describes it; an outside one with its source's digest and
    the cache key it declares, so that results of other code or models under the same
    version are told apart (merge)."""
    r = retrieval.get(name)
    code = r.source
    return r.describe() | ({"code": code} if code else {}) | (
        {"cache_key": declared["key"]} if declared else {})


def _leaves(name: str) -> set[str]:
    """The retrievers a retriever is made of: itself, or a hybrid's parts (theirs too)."""
    r = retrieval.get(name)
    return set().union(*map(_leaves, r.fuses)) if r.fuses else {name}


def corpus_summary(corpus: Corpus) -> CorpusSummary:
    return CorpusSummary(corpus.name, corpus.fingerprint, len(corpus), corpus.chars)


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
