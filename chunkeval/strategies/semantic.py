"""Semantic chunkers: cuts where an embedding model sees the text change topic.

- Kamradt's breakpoints (`kamradt`): the text as sentences, each embedded with `buffer`
  neighbours on either side; a cut goes where the cosine distance between two consecutive
  windows is above the `percentile` of the document's distances. A group still over `size`
  characters is cut again at its largest distance, so no chunk grows unbounded.
- Chroma's cluster chunker (`cluster`): the text as pieces of at most `piece` characters (the
  recursive splitter), each embedded; dynamic programming picks the contiguous groups of at
  most `size` characters whose summed pairwise similarity, less the document's mean
  similarity per pair, is largest in total.

The model is a registered embedding retriever, `use` by default or a project's own by name.
An evaluation hands the chunker the function it embeds with (`Strategy.embedded`), keeping the
vectors as its own cache settings say; a chunker split on its own looks the model up when a
document is split (a project's retrievers register after its splitters). The vectors of
chunkeval's own model are kept in its embedding cache under the retriever's name and version,
in a folder beside the retriever's chunk vectors: a warm run embeds nothing, and an index of
chunks does not load every sentence's vector. Every chunk is a slice of the text.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..errors import ConfigError, UnknownName
from ..model import Chunk, Document
from ..registry import memory
from ..retrieval import registry as retrievers
from .recursive import split_spans, stripped
from .registry import Strategy

# texts -> their L2-normalised vectors, [n, d]: what a semantic chunker cuts by
Vectors = Callable[[list[str]], "np.ndarray"]

if TYPE_CHECKING:  # numpy and the cache are imported when a document is split: the default
    import numpy as np  # matrix names these strategies on every start-up

    from ..retrieval.embedding import EmbeddingCache

Span = tuple[int, int]
MODEL = "use"
PIECE = 50
FOLDER_SUFFIX = "+pieces"

# After 。！？． a sentence ends, unless a closing bracket follows (「はい！」と答えた。 is one);
# after . ! ? (and any closing quote) only before a space or the line's end, so that 3.14,
# setup.py and a host name stay whole.
_END = re.compile(r"[。！？．]+(?![」』）】〕”’\"')\]])|[.!?]+[\"'”’)\]]*(?=\s|$)")
_LINE = re.compile(r"[^\n]+")


def sentences(text: str) -> list[Span]:
    """[start, end) of each sentence, whitespace trimmed. A line (a block, a table row, a
    line of code) ends a sentence too; a mark after no letter yet ("6.1. Build") does not."""
    out = []
    for line in _LINE.finditer(text):
        start = line.start()
        ends = [m.end() for m in _END.finditer(text, line.start(), line.end())]
        for end in ends + [line.end()]:
            if end < line.end() and not any(c.isalpha() for c in text[start:end]):
                continue
            if (span := stripped(text, start, end)) is not None:
                out.append(span)
            start = end
    return out


def _at_most(text: str, spans: list[Span], size: int) -> list[Span]:
    """`spans`, each one longer than `size` cut by the recursive splitter."""
    out = []
    for s, e in spans:
        if e - s <= size:
            out.append((s, e))
        else:
            out += [(s + a, s + b) for a, b in split_spans(text[s:e], size)]
    return out


def _caches() -> dict[Path | tuple[str, int], EmbeddingCache]:
    """The vectors of texts split outside an evaluation, by folder or, for a model from
    outside, by (name, its function's id): the run's, dropped with it (registry.memory)."""
    return memory(__name__)


# False while an evaluation that keeps no cache chunks (`vectors_on_disk`); a context
# variable, so that evaluations in two threads do not set it for each other
_ON_DISK: ContextVar[bool] = ContextVar("chunkeval_semantic_on_disk", default=True)


@contextmanager
def vectors_on_disk(allowed: bool):
    """Within it, with `allowed` False, the semantic chunkers keep no vectors on disk and read
    none from it: an evaluation without the embedding cache chunks in one."""
    token = _ON_DISK.set(_ON_DISK.get() and allowed)
    try:
        yield
    finally:
        _ON_DISK.reset(token)


def embedding_counts() -> tuple[int, int]:
    """Texts the semantic chunkers split outside an evaluation embedded anew and found in the
    cache, in this run."""
    caches = _caches().values()
    return sum(c.misses for c in caches), sum(c.hits for c in caches)


def model(r: retrievers.Retriever) -> retrievers.Retriever:
    """`r`, or ConfigError when it cannot be a semantic chunker's model here."""
    if r.embed is None:
        raise ConfigError(f"semantic chunking needs an embedding retriever; {r.name!r} "
                          "ranks with an index of its own")
    if not retrievers.available(r):
        raise ConfigError(f"retriever {r.name!r} needs an optional package: "
                          f"{getattr(r.embed, 'install', 'see the README')}")
    return r


def sentence_cache(r: retrievers.Retriever, on_disk: bool) -> EmbeddingCache:
    """Where the model's vectors of the chunkers' texts are kept: beside its chunk vectors
    (`on_disk`, for chunkeval's own model), else in memory (a model from outside is run every
    session, store/keys.py, and an evaluation may keep no cache)."""
    from ..retrieval.embedding import EmbeddingCache
    from ..retrieval import identity

    if not on_disk:
        return EmbeddingCache(r.name, "", on_disk=False)
    own = EmbeddingCache(r.name, identity.embeddings_folder(r, None)).dir
    return EmbeddingCache(r.name, own.name, own.with_name(own.name + FOLDER_SUFFIX))


def sentence_vectors(r: retrievers.Retriever, cache: EmbeddingCache) -> Vectors:
    """The model's unit vectors of texts, kept in `cache`."""
    def vectors(texts: list[str]) -> np.ndarray:
        import numpy as np

        v = cache.embed(texts, r.embed, r.batch_size).astype(np.float64)
        norms = np.linalg.norm(v, axis=1, keepdims=True)
        return v / np.where(norms > 0, norms, 1)
    return vectors


def unit_vectors(retriever: str, texts: list[str]) -> np.ndarray:
    """L2-normalised vectors of `texts` by the named embedding retriever, cached in this
    process: what a chunker split outside an evaluation cuts by."""
    from ..retrieval import identity

    r = model(retrievers.get(retriever))
    on_disk = identity.is_own_retriever(r.name) and _ON_DISK.get()
    cache = sentence_cache(r, on_disk)
    key: Path | tuple[str, int] = cache.dir if on_disk else (r.name, id(r.embed))
    return sentence_vectors(r, _caches().setdefault(key, cache))(texts)


def kamradt_spans(text: str, size: int, percentile: float = 95, buffer: int = 1,
                  retriever: str = MODEL, vectors: Vectors | None = None) -> list[Span]:
    """`vectors`: what to cut by (default: the named retriever's, unit_vectors)."""
    import numpy as np

    units = _at_most(text, sentences(text), size)
    n = len(units)
    if n < 2:
        return units
    windows = [text[units[max(0, i - buffer)][0]:units[min(n - 1, i + buffer)][1]]
               for i in range(n)]
    v = (vectors or (lambda texts: unit_vectors(retriever, texts)))(windows)
    # rounded as retrievers' scores are, so that the last bits of a batch do not move a cut
    distance = np.round(1.0 - np.sum(v[:-1] * v[1:], axis=1), 6)
    cuts = [int(i) + 1 for i in np.flatnonzero(distance > np.percentile(distance, percentile))]
    groups, todo = [], [(a, b) for a, b in zip([0] + cuts, cuts + [n])][::-1]
    while todo:
        a, b = todo.pop()
        if b - a == 1 or units[b - 1][1] - units[a][0] <= size:
            groups.append((a, b))
            continue
        inside = distance[a:b - 1]
        best = np.flatnonzero(inside == inside.max())
        # equal distances (repeated text): the middle one, not a sentence at a time
        cut = a + 1 + int(best[np.argmin(np.abs(best - (b - a - 2) / 2))])
        todo += [(cut, b), (a, cut)]
    return [(units[a][0], units[b - 1][1]) for a, b in groups]


def cluster_spans(text: str, size: int, piece: int = PIECE, retriever: str = MODEL,
                  vectors: Vectors | None = None) -> list[Span]:
    """`vectors` as for kamradt_spans."""
    pieces = split_spans(text, piece) if text.strip() else []
    if len(pieces) < 2:
        return pieces
    v = (vectors or (lambda texts: unit_vectors(retriever, texts)))(
        [text[s:e] for s, e in pieces])
    groups = best_groups(v, [s for s, _ in pieces], [e for _, e in pieces], size)
    return [(pieces[i][0], pieces[j - 1][1]) for i, j in groups]


def best_groups(v: np.ndarray, starts: list[int], ends: list[int], size: int
                ) -> list[tuple[int, int]]:
    """Pieces i..j-1 as [i, j) groups spanning at most `size` chars (a piece alone always
    fits) that maximise the sum over groups of their pairwise similarities, each less the
    mean similarity of all pairs of the document; `v` holds the pieces' unit vectors."""
    import numpy as np

    n = len(v)
    if n < 2:
        return [(0, n)] if n else []
    starts_ = np.asarray(starts)
    # A group's pairwise sum is |its summed vectors|^2 less its self terms (1, or 0 for a
    # text the model maps to zero): prefix sums give every group's in O(d).
    self_sim = np.einsum("ij,ij->i", v, v)
    total = v.sum(axis=0)
    mean = (total @ total - self_sim.sum()) / (n * (n - 1))
    prefix = np.vstack([np.zeros(v.shape[1]), np.cumsum(v, axis=0)])
    self_prefix = np.concatenate([[0.0], np.cumsum(self_sim)])
    best = np.zeros(n + 1)  # best[j]: the best total of pieces[:j]
    first = np.zeros(n + 1, dtype=np.int64)  # where that best's last group starts
    for j in range(1, n + 1):
        lo = min(int(np.searchsorted(starts_, ends[j - 1] - size)), j - 1)
        i = np.arange(lo, j)
        summed = prefix[j] - prefix[i]
        m = j - i
        reward = (np.einsum("ij,ij->i", summed, summed) - (self_prefix[j] - self_prefix[i])
                  - mean * m * (m - 1))
        score = np.round(best[i] + reward, 6)
        k = int(np.argmax(score))  # ties: the longest group
        best[j], first[j] = score[k], i[k]
    groups, j = [], n
    while j > 0:
        groups.append((int(first[j]), j))
        j = int(first[j])
    return groups[::-1]


def _chunks(doc: Document, spans: list[Span]) -> list[Chunk]:
    return [Chunk(doc.id, s, e, doc.text[s:e]) for s, e in spans]


def _on(retriever: str) -> str:
    return "" if retriever == MODEL else f"@{retriever}"


def kamradt(size: int = 800, percentile: float = 95, buffer: int = 1, retriever: str = MODEL,
            name: str | None = None) -> Strategy:
    """Kamradt's breakpoints on `retriever`'s vectors, chunks of at most `size` chars:
    `semantic-kamradt-p95-800`, with `@RETRIEVER` for another model than `use`."""
    if size <= 0 or not 0 < percentile < 100 or buffer < 0:
        raise ValueError(f"kamradt: size > 0, 0 < percentile < 100 and buffer >= 0; got "
                         f"{size}, {percentile}, {buffer}")
    name = name or f"semantic-kamradt-p{percentile:g}-{size}" + (
        f"-b{buffer}" if buffer != 1 else "") + _on(retriever)
    def embedded(vectors: Vectors | None):
        return lambda doc: _chunks(doc, kamradt_spans(doc.text, size, percentile, buffer,
                                                      retriever, vectors))
    return Strategy(name, "semantic", embedded(None),
                    {"size": size, "overlap": 0, "percentile": percentile, "buffer": buffer,
                     "model": retriever}, slices=True, embedded=embedded)


def cluster(size: int = 400, piece: int = PIECE, retriever: str = MODEL,
            name: str | None = None) -> Strategy:
    """Chroma's cluster chunker on `retriever`'s vectors: pieces of at most `piece` chars,
    groups of at most `size`: `semantic-cluster-400`, `@RETRIEVER` for another model."""
    if not 0 < piece <= size:
        raise ValueError(f"cluster: 0 < piece <= size; got piece {piece}, size {size}")
    name = name or f"semantic-cluster-{size}" + (
        f"-pc{piece}" if piece != PIECE else "") + _on(retriever)
    def embedded(vectors: Vectors | None):
        return lambda doc: _chunks(doc, cluster_spans(doc.text, size, piece, retriever,
                                                      vectors))
    return Strategy(name, "semantic", embedded(None),
                    {"size": size, "overlap": 0, "piece": piece, "model": retriever},
                    slices=True, embedded=embedded)


def installed(retriever: str = MODEL) -> bool:
    """Whether `retriever` is registered here with its package installed."""
    try:
        return retrievers.available(retrievers.get(retriever))
    except UnknownName:
        return False
