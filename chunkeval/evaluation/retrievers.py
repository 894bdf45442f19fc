"""An evaluation's retrievers: where their vectors are kept, what their results are kept
under, and the sample check a retriever from outside passes before anything kept of it is
used (spotcheck.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from .. import retrieval, spotcheck
from ..retrieval.embedding import EmbeddingCache
from ..retrieval.registry import Retriever
from ..retrieval import identity
from ..store import notice
from ..strategies import semantic
from .cached import stored
from .failures import retriever_failure


class Retrievers:
    """The retriever side of an Evaluation (which it is a part of)."""

    def embedding_cache(self, retriever: Retriever) -> EmbeddingCache:
        """The retriever's vectors on disk (identity.embeddings_folder). Without the
        embedding cache, or for a retriever from outside that declares no cache key, in this
        evaluation's memory only: a text is embedded once a session, and counted."""
        if retriever.name not in self._caches:
            folder = identity.embeddings_folder(retriever, self.declared(retriever)) \
                if self.use_embedding_cache else None
            self._caches[retriever.name] = EmbeddingCache(retriever.name, folder) \
                if folder is not None else EmbeddingCache(retriever.name, "", on_disk=False)
        return self._caches[retriever.name]

    def retriever_identity(self, name: str) -> dict | None:
        """identity.retriever_identity: None when the retriever's results are not kept."""
        return identity.retriever_identity(name, self.declared, self.retriever)

    def _knows_retriever(self, name: str) -> bool:
        return name in self._retrievers or name in retrieval.registry.current()

    def declared(self, r: Retriever) -> dict | None:
        """A retriever from outside's declared cache key and its epoch; None when it declares
        none, or is an embedding one and the embedding cache is off (its sample check
        compares with the vectors kept)."""
        if r.name not in self._declared:
            key = identity.declared_key(r)
            kept = key is not None and (self.use_embedding_cache or r.embed is None)
            self._declared[r.name] = {"key": key, "epoch": identity.epoch(r, key)} \
                if kept else None
        return self._declared[r.name]

    def spot_check(self, retriever: str, strategy_name: str, spec: str, *,
                   rows: bool = True) -> None:
        """Before anything kept of a declared retriever from outside (`retriever` or a part
        of it) is used this session: its sample check (spotcheck.py), on this task's texts.
        Embedding parts first, by their vectors; `rows=False` checks only those (an index is
        being built); the rest, and an embedding part whose sample the embedding cache no
        longer holds, by the rows of the kept result."""
        parts = sorted(leaves(retriever, self.retriever),
                       key=lambda p: self.retriever(p).embed is None)
        for part in parts:
            r = self.retriever(part)
            if (part in self._spot_checked or identity.is_own_retriever(part, self.retriever)
                    or self.declared(r) is None or (r.embed is None and not rows)):
                continue
            # vectors pruned from the cache leave results to check by their rows
            compared = (r.embed is not None and self._check_vectors(r, strategy_name, spec)
                        or rows and self._check_rows(r, retriever, strategy_name, spec))
            if compared:
                self._spot_checked.add(part)

    def _check_vectors(self, r: Retriever, strategy_name: str, spec: str) -> bool:
        """Re-embed the sample; False when the cache holds none of its texts yet."""
        at = spotcheck.turn()
        texts = [q.text for q in self.query_set(spec).queries]
        sample = [texts[i] for i in spotcheck.queries(len(texts), at)] + spotcheck.chunks(
            [c.indexed for c in self.chunked(strategy_name, spec).searched], at)
        kept = self.embedding_cache(r).stored(sample)
        if not kept:
            return False
        with retriever_failure(strategy_name, r.name):
            differ = spotcheck.vectors_differ(r.embed, r.batch_size, kept)
        if differ:
            self._discard(r, f"vectors ({differ} of {len(kept)} sampled texts differ)")
        return True

    def _check_rows(self, r: Retriever, retriever: str, strategy_name: str,
                    spec: str) -> bool:
        """Search with the sampled queries and score them; False when no result is kept."""
        summary = self.chunk_summary(strategy_name, spec)
        qs = self.query_set(spec)
        found = stored(self.result_key(summary, retriever, qs), retriever, qs, summary,
                       self.settings.complete_at)
        if found is None:
            return False
        picked = spotcheck.queries(len(qs.queries), spotcheck.turn())
        sub = replace(qs, queries=tuple(qs.queries[i] for i in picked))
        chunked = self.chunked(strategy_name, spec)
        ranked, _ = self.ranking(strategy_name, retriever, spec, sub)
        fresh = self._scores(sub, chunked, ranked).per_query()
        differ = sum(a.to_json() != b.to_json()
                     for a, b in zip(fresh, [found.per_query[i] for i in picked]))
        if differ:
            self._discard(r, f"results ({differ} of {len(picked)} sampled queries differ)")
        return True

    def _discard(self, r: Retriever, what: str) -> None:
        """Said in one line: what is kept under the retriever's key is never read again."""
        notice(spotcheck.said(r.name, what))
        kept = self._declared[r.name]
        self._declared[r.name] = {**kept, "epoch": identity.discard(r, kept["key"])}
        self._caches.pop(r.name, None)  # its next use reads the new epoch's folder
        for key in [k for k in self._indexes if r.name in leaves(k[1], self.retriever)]:
            del self._indexes[key]  # a check's index may hold vectors of the old epoch

    def sentence_vectors(self, name: str) -> semantic.Vectors:
        """What a semantic chunker on the model `name` cuts by: its unit vectors, kept beside
        its chunk vectors for chunkeval's own model with the embedding cache on, else in this
        evaluation's memory."""
        r = semantic.model(self.retriever(name))
        if name not in self._sentence_caches:
            on_disk = self.use_embedding_cache and identity.is_own_retriever(name, self.retriever)
            self._sentence_caches[name] = semantic.sentence_cache(r, on_disk)
        return semantic.sentence_vectors(r, self._sentence_caches[name])

    def _embedding_counts(self) -> tuple[int, int]:
        """Texts embedded anew and found in the cache so far: by retrievers and by the
        semantic chunkers (whose texts are embeddings too)."""
        caches = [*self._caches.values(), *self._sentence_caches.values()]
        return sum(c.misses for c in caches), sum(c.hits for c in caches)

    def _unchecked(self, retriever: str) -> bool:
        """Whether a part of the retriever awaits its sample check (or is not kept)."""
        return any(not identity.is_own_retriever(p, self.retriever) and (
            p not in self._spot_checked or self.declared(self.retriever(p)) is None)
            for p in leaves(retriever, self.retriever))



def described(name: str, declared: dict | None = None,
              get: Callable[[str], Retriever] = retrieval.get) -> dict:
    """A retriever as results.json describes it; an outside one with its source's digest and
    the cache key it declares, so that results of other code or models under the same
    version are told apart (merge). `get`: the retriever of a name."""
    r = get(name)
    code = r.source
    return r.describe(get) | ({"code": code} if code else {}) | (
        {"cache_key": declared["key"]} if declared else {})


def leaves(name: str, get: Callable[[str], Retriever] = retrieval.get) -> set[str]:
    """The retrievers a retriever is made of: itself, or a hybrid's parts (theirs too)."""
    r = get(name)
    return set().union(*(leaves(p, get) for p in r.fuses)) if r.fuses else {name}
