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
time (only chunkeval's own strategies' chunks are kept, strategies/identity.py), so its chunks
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

import time
from dataclasses import replace
from typing import Iterable, Sequence

import numpy as np

from . import __version__, outside, queries, retrieval, scoring, strategies
from .errors import ConfigError, StrategyFailed
from .evaluation.cached import (chunked_entry, chunked_from, describes, load_chunks, reused,
                                stored, summary_from)
from .evaluation.chunks import Chunked, ChunkSummary, chunks_hash, document_hashes, split_view
from .evaluation.failures import own_frames, retriever_failure
from .evaluation.matrix import Matrix
from .evaluation.ranking import CHILD_DEPTH_FACTOR, SEARCH_DEPTH, checked, merge_into_parents
from .evaluation.retrievers import Retrievers, described
from .model import Corpus, QuerySet
from .results import CorpusSummary, Failure, QuerySetSummary, Result, Results, Seconds, Settings
from .retrieval.analyzers import resolve as resolve_analyzer
from .retrieval.embedding import EmbeddingCache
from .retrieval import identity as retrieval_identity
from .retrieval.hybrid import HybridIndex
from .retrieval.registry import Retriever
from .store import CHUNKS, keys, store_result
from .strategies import identity as strategy_identity
from .strategies.defaults import default_retrievers
from .strategies.registry import Strategy

# names tests, benchmarks and the plugin import from here
__all__ = ["CHILD_DEPTH_FACTOR", "SEARCH_DEPTH", "ChunkSummary", "Chunked", "Evaluation",
           "chunks_hash", "corpus_summary", "default_retrievers", "document_hashes",
           "own_frames"]
# the old private names, for the tests that reach them
_merge_into_parents = merge_into_parents
_described = described


class Evaluation(Retrievers, Matrix):
    def __init__(self, corpus: Corpus, settings: Settings | None = None,
                 query_specs: Sequence[str | QuerySet] | None = None,
                 result_cache: bool = True, embedding_cache: bool = True, *,
                 strategies: Iterable[Strategy] = (), retrievers: Iterable[Retriever] = ()):
        """`query_specs` are builder names or JSONL paths, built on first use, or ready
        QuerySets; by default every builder that yields queries on the corpus.
        `result_cache`: reuse and store results (and chunkeval's own strategies' chunks) on
        disk across runs (see above); `embedding_cache`: keep and reuse vectors.
        `strategies`, `retrievers`: objects to evaluate beside the registered ones; every
        method also takes one where it takes a name."""
        self._strategies = {s.name: s for s in strategies}
        self._retrievers = {r.name: r for r in retrievers}
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
        self._sentence_caches: dict[str, EmbeddingCache] = {}  # the semantic chunkers'
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

    # -- what it evaluates -------------------------------------------------------------------
    def strategy(self, strategy: str | Strategy) -> Strategy:
        """A strategy handed in (here or to the constructor), by its name; else the one
        registered under the name."""
        if isinstance(strategy, Strategy):
            if self._strategies.get(strategy.name, strategy) is not strategy:
                self.forget(strategy.name)  # another strategy under the name: built anew
            self._strategies[strategy.name] = strategy
            return strategy
        return self._strategies.get(strategy) or strategies.get(strategy)

    def retriever(self, retriever: str | Retriever) -> Retriever:
        """A retriever handed in (here or to the constructor), by its name; else the one
        registered under the name. A hybrid's parts are looked up the same way."""
        if isinstance(retriever, Retriever):
            if self._retrievers.get(retriever.name, retriever) is not retriever:
                self._forget_retriever(retriever.name)
            self._retrievers[retriever.name] = retriever
            return retriever
        return self._retrievers.get(retriever) or retrieval.get(retriever)

    def _forget_retriever(self, name: str) -> None:
        for built in (self._indexes, self._results):
            for key in [k for k in built if k[1] == name]:
                del built[key]
        self._caches.pop(name, None)
        self._sentence_caches.pop(name, None)
        self._declared.pop(name, None)

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

    def chunked(self, strategy: str | Strategy, spec: str) -> Chunked:
        """The strategy's chunks of the query set's view, each document's checked against the
        splitter contract as it is made; StrategyFailed (kept, and raised again when asked
        again) when the splitter raises or breaks it."""
        strategy_name = self.strategy(strategy).name
        key = (strategy_name, spec)
        if key in self._failed:
            raise self._failed[key]
        if key not in self._chunked:
            stored_key = self.chunk_key(strategy_name, spec)
            view = self.query_set(spec).view
            entry = load_chunks(stored_key, view) if stored_key else None
            loaded = chunked_from(entry, view, self.strategy(strategy_name)) if entry else None
            if entry and loaded is None:  # well-formed, but not chunks that fit this view
                CHUNKS.reject(CHUNKS.path(stored_key))
            if loaded is None:
                loaded = self._chunk(strategy_name, spec)
                if stored_key:
                    CHUNKS.store(stored_key, chunked_entry(loaded, view),
                                       describes={"view": view.fingerprint})
            self._chunked[key] = loaded
        return self._chunked[key]

    def chunk_summary(self, strategy: str | Strategy, spec: str) -> ChunkSummary:
        """The strategy's chunk statistics on the query set's view: from its chunks when they
        are in memory, else from the chunk cache without building them (what a result read
        from the result cache needs), else by chunking."""
        strategy_name = self.strategy(strategy).name
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
            entry = load_chunks(stored_key, self.query_set(spec).view) if stored_key else None
            summary = summary_from(entry) if entry else None
            if summary is None:
                return None
            self._summaries[key] = summary
        return self._summaries[key]

    def chunk_key(self, strategy_name: str, spec: str) -> str | None:
        """The chunk cache's key (strategies/identity.py): None without the result cache, and for
        anything that is not chunkeval's own code, which is chunked afresh every run."""
        if not self.result_cache:
            return None
        strategy = self.strategy(strategy_name)
        model = strategy.params.get("model")
        # a semantic strategy's chunks follow the vectors of the retriever it names
        model = (self.retriever_identity(model) if self._knows_retriever(model)
                 and retrieval_identity.is_own_retriever(model, self.retriever) else None)
        return strategy_identity.chunk_key(strategy, self.query_set(spec).view.fingerprint,
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
        try:
            strategy = self.strategy(strategy_name)
            if strategy.embedded is not None:  # a semantic chunker: it embeds as we keep
                strategy = replace(strategy, split=strategy.embedded(
                    self.sentence_vectors(strategy.params["model"])))
            return split_view(strategy, self.query_set(spec).view, self.settings.length)
        except StrategyFailed as e:
            self._failed[key] = e  # raised again when asked again
            raise

    def index(self, strategy: str | Strategy, retriever: str | Retriever, spec: str):
        strategy_name, r = self.strategy(strategy).name, self.retriever(retriever)
        retriever = r.name
        key = (strategy_name, retriever, spec)
        if key not in self._indexes:
            t0 = time.perf_counter()
            if r.fuses:
                parts = [self.index(strategy_name, p, spec) for p in r.fuses]
                self._indexes[key] = (HybridIndex(*[i for i, _ in parts]),
                                      sum(s for _, s in parts) + time.perf_counter() - t0)
            else:
                texts = [c.indexed for c in self.chunked(strategy_name, spec).searched]
                if r.embed is not None:
                    self.spot_check(retriever, strategy_name, spec, rows=False)
                with retriever_failure(strategy_name, retriever):
                    index = retrieval.build_index(
                        r, texts, seed=self.settings.seed, analyzer=self.analyzer,
                        cache=self.embedding_cache(r) if r.embed else None)
                self._indexes[key] = (index, time.perf_counter() - t0)
        return self._indexes[key]

    def ranking(self, strategy: str | Strategy, retriever: str | Retriever, spec: str,
                qs: QuerySet | None = None) -> tuple[np.ndarray, float]:
        """Ranked handed-chunk ids per query (-1 padded) and the search seconds; of the
        queries of `qs` when given (some of the spec's)."""
        strategy_name, retriever = self.strategy(strategy).name, self.retriever(retriever).name
        chunked = self.chunked(strategy_name, spec)
        index, _ = self.index(strategy_name, retriever, spec)
        texts = [q.text for q in (qs or self.query_set(spec)).queries]
        depth = max(SEARCH_DEPTH, self.settings.k)
        t0 = time.perf_counter()
        with retriever_failure(strategy_name, retriever):
            if chunked.parent_of is None:
                ranked = checked(index.search(texts, depth), len(texts),
                                 len(chunked.searched), retriever)
            else:
                children = checked(index.search(texts, depth * CHILD_DEPTH_FACTOR),
                                   len(texts), len(chunked.searched), retriever)
                ranked = merge_into_parents(children, chunked.parent_of, depth)
        return ranked, time.perf_counter() - t0

    def result(self, strategy: str | Strategy, retriever: str | Retriever, spec: str,
               store: bool = True) -> Result:
        """One result entry. `store=False` still reads the result cache but adds nothing to
        it (calibration's throwaway variants)."""
        strategy_name, r = self.strategy(strategy).name, self.retriever(retriever)
        retriever = r.name
        key = (strategy_name, retriever, spec)
        if key not in self._results:
            s = self.settings
            qs = self.asked(spec)
            embedded, cached = self._embedding_counts()  # chunking may embed (semantic)
            if self.result_cache:
                self.spot_check(retriever, strategy_name, spec)
                summary = self.chunk_summary(strategy_name, spec)
                stored_key = self.result_key(summary, retriever, qs)
                kept = stored(stored_key, retriever, qs, summary,
                              s.complete_at) if stored_key else None
                if kept is not None:
                    embedded2, cached2 = self._embedding_counts()  # chunking's, if it ran
                    self._results[key] = replace(
                        reused(kept, strategy_name, summary),
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
                retriever_version=r.version_with(self.retriever), analyzer=self.analyzer,
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
                                   describes=describes(summary, retriever, qs))
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

    def release(self, strategy: str | Strategy, spec: str) -> None:
        strategy_name = strategy if isinstance(strategy, str) else strategy.name
        for key in [k for k in self._indexes if k[0] == strategy_name and k[2] == spec]:
            del self._indexes[key]
        self._chunked.pop((strategy_name, spec), None)

    def forget(self, strategy: str | Strategy) -> None:
        """Everything built for a strategy, its results included (a throwaway variant)."""
        strategy_name = strategy if isinstance(strategy, str) else strategy.name
        for spec in self.query_specs:
            self.release(strategy_name, spec)
        for key in [k for k in self._results if k[0] == strategy_name]:
            del self._results[key]
        for built in (self._failed, self._summaries):
            for key in [k for k in built if k[0] == strategy_name]:
                del built[key]
        self._strategies.pop(strategy_name, None)

    def __getstate__(self) -> dict:
        """An evaluation travels (to a Ray worker) with its inputs only: what a run builds
        (chunks, indexes, results, loaded embeddings) is built again where it is needed."""
        state = dict(self.__dict__)
        for built in ("_chunked", "_indexes", "_results", "_caches", "_sentence_caches",
                      "_failed"):
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
            strategies={n: self.strategy(n).describe() for n in names},
            retrievers={r: described(r, self.declared(self.retriever(r)), self.retriever)
                        for r in dict.fromkeys(x.retriever for x in results)},
            analyzer=self.analyzer,
            embeddings={k: sum((x.embeddings or {}).get(k, 0) for x in results)
                        for k in ("embedded", "cached")},
            result_cache={"enabled": self.result_cache,
                          "reused": sum(1 for x in results if x.reused),
                          "evaluated": sum(1 for x in results if not x.reused)},
            results=results, failures=list(failures))



def corpus_summary(corpus: Corpus) -> CorpusSummary:
    return CorpusSummary(corpus.name, corpus.fingerprint, len(corpus), corpus.chars)
