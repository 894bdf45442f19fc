"""What the result and chunk caches hold for an evaluation: a result entry read back only when
it is one of these chunks, retriever and query set, and chunks read back only when they
fit the view and keep the splitter contract."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .. import invariants
from ..errors import InputError
from ..model import Chunk, Corpus, QuerySet
from ..results import DECIMALS, METRICS, Check, ChunkStats, CutRate, Result, series
from ..store import CHUNKS, RESULTS, load_result, result_path
from ..strategies.registry import Strategy
from .chunks import ChunkSummary, Chunked, chunks_hash, handed, rewritten


def describes(chunks: ChunkSummary, retriever: str, qs: QuerySet) -> dict:
    """What a result entry describes: the chunk output, the retriever, the query set."""
    return {"chunks": chunks.stats.hash, "parents": chunks.parents, "retriever": retriever,
            "query_set": [qs.name, qs.fingerprint]}


def stored(key: str, retriever: str, qs: QuerySet, chunks: ChunkSummary,
           complete_at: float) -> Result | None:
    """The result cache's entry under `key` when it is a result of these chunks, this
    retriever and this query set, a row for each of its queries in order (an entry that does
    not read as one is a miss, and is evaluated and stored again)."""
    entry = load_result(key, describes=describes(chunks, retriever, qs))
    if entry is None:
        return None
    try:
        result = Result.from_json(entry, str(result_path(key)))
    except InputError:
        result = None
    if (result is None or (result.retriever, result.query_set) != (retriever, qs.name)
            or result.chunks.hash != chunks.stats.hash
            or [q.id for q in result.per_query] != [q.id for q in qs.queries]
            or not means_hold(result, complete_at)):
        RESULTS.reject(result_path(key))
        return None
    return result


def means_hold(result: Result, complete_at: float) -> bool:
    """Each mean of a per-query series is the mean of its rows (to the series' rounding)."""
    if not result.per_query:
        return not result.metrics or all(s.value == 0 for s in result.metrics.values())
    rows = series(result.per_query, complete_at)
    return all(abs(float(np.mean(rows[m.series])) - result.metrics[m.name].value)
               <= 10 ** -DECIMALS for m in METRICS if m.series in rows and m.name in result.metrics)


def load_chunks(key: str, view: Corpus) -> dict | None:
    return CHUNKS.load(key, describes={"view": view.fingerprint})


def reused(stored: Result, strategy_name: str, chunks: ChunkSummary) -> Result:
    """A stored entry with what this run's chunking gives; its JSON is the fresh one's but
    for timings, embedding counters and `reused`."""
    return replace(stored, strategy=strategy_name, embeddings={"embedded": 0, "cached": 0},
                   cut_rate=chunks.cut, chunks=chunks.stats,
                   seconds=replace(stored.seconds, split=round(chunks.seconds, 4)), reused=True)


def chunked_entry(chunked: Chunked, view: Corpus) -> dict:
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


def summary_from(entry: dict) -> ChunkSummary | None:
    try:
        s = entry["summary"]
        check = Check("the chunk cache")
        return ChunkSummary(ChunkStats.from_json(s["stats"], check.at("stats")),
                            CutRate.from_json(s["cut"], check.at("cut")), float(s["seconds"]),
                            s["parents"])
    except (KeyError, TypeError, ValueError, InputError):
        return None  # not what this version writes: chunked again


def chunked_from(entry: dict, view: Corpus, strategy: Strategy) -> Chunked | None:
    """The Chunked a cache entry holds (None when it does not fit this view: chunked
    again). A text left out is its range's slice of the view's document. The chunks meet the
    same contract as chunks just made (invariants.contract, each document) and hash to the
    hash their summary records, else the entry is a miss."""
    summary = summary_from(entry)
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
    handed_chunks, parent_of = handed(searched)
    if (set(by_doc) - {d.id for d in view.documents}
            or any(invariants.contract(strategy, d, by_doc.get(d.id, [])) is not None
                   for d in view.documents)
            or chunks_hash(searched, handed_chunks) != summary.stats.hash
            or ChunkSummary.of(Chunked(searched, handed_chunks, parent_of, summary.seconds,
                                       summary.stats, summary.cut)).parents != summary.parents):
        return None
    return Chunked(searched, handed_chunks, parent_of, summary.seconds, stats=summary.stats,
                   cut=summary.cut, rewritten=rewritten(handed_chunks, view))

