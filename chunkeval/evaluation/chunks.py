"""A strategy's chunks of a corpus view: split, checked against the splitter contract as
they are made, and hashed (what the chunk and result caches key them by)."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field

import numpy as np

from .. import invariants, outside, scoring
from ..errors import ChunkevalError, ConfigError, StrategyFailed
from ..model import Chunk, Corpus
from ..results import ChunkStats, CutRate
from ..store import keys
from ..strategies.registry import Strategy
from .failures import kind, own_frames, said


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



def split_view(strategy: Strategy, view: Corpus, length_spec: str) -> Chunked:
    """Split every document of the view, checking each against the contract; StrategyFailed
    when the splitter raises, returns something else than chunks or breaks the contract, or
    the length measure `length_spec` fails on its chunks."""
    t0 = time.perf_counter()
    searched: list[Chunk] = []
    for doc in view.documents:
        try:
            out = strategy.split(doc)
            chunks = list(out) if hasattr(out, "__iter__") and not isinstance(out, str) else out
        except Exception as e:  # the splitter's own failure, said as one line
            raise StrategyFailed(strategy.name, f"split() raised {said(e)}", document=doc.id,
                                 detail=own_frames(e)) from e
        problem = None
        if not isinstance(chunks, list) or not all(isinstance(c, Chunk) for c in chunks):
            problem = f"split() returned {kind(chunks)}, not a list of Chunk"
        elif strategy.checked and (
                broken := invariants.contract(strategy, doc, chunks)) is not None:
            problem = f"its chunks break {broken[0]!r}: {broken[1]}"
        if problem:
            raise StrategyFailed(strategy.name, problem, document=doc.id)
        searched.extend(chunks)
    seconds = time.perf_counter() - t0
    handed_chunks, parent_of = handed(searched)
    try:  # the first use of an outside length measure
        length = outside.length_function(length_spec)
        stats = scoring.chunk_stats(searched, length, hash=chunks_hash(searched, handed_chunks))
        lengths = (None if length_spec == scoring.LENGTH
                   else keys.lengths_digest([length(c.text) for c in handed_chunks]))
    except ConfigError:
        raise
    except Exception as e:
        raise StrategyFailed(
            strategy.name, f"the length measure {length_spec!r}: "
                           f"{e if isinstance(e, ChunkevalError) else said(e)}",
            detail=own_frames(e)) from e
    return Chunked(searched, handed_chunks, parent_of, seconds, stats=stats,
                   cut=scoring.cut_rate(view.documents, handed_chunks),
                   rewritten=rewritten(handed_chunks, view), lengths=lengths)


def rewritten(handed_chunks: list[Chunk], view: Corpus) -> dict:
    """(doc, start, end) -> text of each handed chunk whose text is not its span's slice."""
    return {(c.doc_id, c.start, c.end): c.text for c in handed_chunks
            if view[c.doc_id].text[c.start:c.end] != c.text}


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



def handed(searched: list[Chunk]) -> tuple[list[Chunk], np.ndarray | None]:
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


