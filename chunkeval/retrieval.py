"""Retrieval (SPEC section 4): the retriever registry; BM25, LSA, embeddings and RRF hybrids.

A Retriever has a name and a version (both go into results and baselines) and one of two
shapes: `embed(texts) -> [n, d]` vectors, ranked by cosine (`EmbeddingIndex`, vectors kept
in the embedding cache), or `build(texts) -> Index`, any object with `search(queries, k)`
(BM25 variants, rerankers, a vector database client). A hybrid fuses the rankings of
registered retrievers by reciprocal rank. Outside retrievers come in as "module:attribute"
(`load_retriever`). BM25 and LSA take their terms from the corpus's analyzer (analyzers.py).

Every index answers `search(queries, k)` with an int64 array [len(queries), k] of chunk ids
in rank order, padded with -1 when there are fewer than k chunks. Equal scores rank the lower
chunk id first, so a ranking is a pure function of the texts and the queries.

The `char2` analyzer's tokens are the character 2-grams of scikit-learn's
`CountVectorizer(analyzer="char", ngram_range=(2, 2), lowercase=False)`: runs of two or more
whitespace characters collapse to one space, then every pair of adjacent characters is a token.
CountVectorizer itself feeds every token through a Python dict (about 10 s for 6M characters),
so `Bigrams` computes the same tokens, the same vocabulary in the same (code point) order and
the same counts with a few numpy sorts; tests check it against CountVectorizer.
"""

from __future__ import annotations

import importlib
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits  # comes with scikit-learn

K1, B = 1.2, 0.75
LSA_DIMS, LSA_SAMPLE, LSA_MAX_FEATURES = 128, 6000, 60000
RRF_CONSTANT, RRF_DEPTH = 60, 100

# A batch of dense scores holds at most this many floats, whatever the corpus size.
_BATCH_CELLS = 1 << 23
_MAX_BATCH = 256

_WHITE_SPACES = re.compile(r"\s\s+")  # CountVectorizer's own whitespace rule


class Index(Protocol):
    def __len__(self) -> int: ...

    def search(self, queries: Sequence[str], k: int) -> np.ndarray: ...


# --- tokens -------------------------------------------------------------------------------

def _code_points(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """All texts' code points end to end (whitespace runs collapsed), and each text's length."""
    norm = [_WHITE_SPACES.sub(" ", t) for t in texts]
    lengths = np.fromiter(map(len, norm), dtype=np.int64, count=len(norm))
    raw = "".join(norm).encode("utf-32-le", errors="surrogatepass")
    return np.frombuffer(raw, dtype=np.uint32), lengths


def _inside(lengths: np.ndarray) -> np.ndarray:
    """For joined texts: a mask over adjacent character pairs, False where a pair would
    straddle the end of one text and the start of the next."""
    total = int(lengths.sum())
    inside = np.ones(max(total - 1, 0), dtype=bool)
    last = np.cumsum(lengths)[:-1] - 1  # last character of every text but the final one
    inside[last[(last >= 0) & (last < total - 1)]] = False
    return inside


def _owners(lengths: np.ndarray) -> np.ndarray:
    """The text number of every 2-gram, in order."""
    return np.repeat(np.arange(len(lengths), dtype=np.int64), np.maximum(lengths - 1, 0))


def _pair_keys(ids: np.ndarray, bits: int, inside: np.ndarray) -> np.ndarray:
    """(first char id << bits) | second char id for every 2-gram inside a text."""
    keys = ids[:-1].astype(np.int64)
    keys <<= bits
    keys |= ids[1:]
    return keys[inside]


@dataclass(frozen=True)
class Bigrams:
    """A fitted 2-gram vocabulary: the characters seen and the sorted 2-gram keys.

    A key is (first char id << bits) | second char id, where char ids number the characters
    seen in code point order; so key order is the order of the 2-gram strings.
    """

    alphabet: np.ndarray  # sorted code points (uint32)
    vocab: np.ndarray  # sorted keys (int64)
    bits: int

    def __len__(self) -> int:
        return len(self.vocab)

    def subset(self, keep: np.ndarray) -> "Bigrams":
        return Bigrams(self.alphabet, self.vocab[keep], self.bits)

    def terms(self) -> list[str]:
        first, second = self.vocab >> self.bits, self.vocab & ((1 << self.bits) - 1)
        return [chr(self.alphabet[a]) + chr(self.alphabet[b]) for a, b in zip(first, second)]

    def keys(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Each 2-gram of the texts that is in the vocabulary: (term id, text number)."""
        codes, lengths = _code_points(texts)
        if not len(self.vocab) or len(codes) < 2:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        inside = _inside(lengths)
        ids = np.searchsorted(self.alphabet, codes)
        ids[ids == len(self.alphabet)] = 0
        known = self.alphabet[ids] == codes
        ok = (known[:-1] & known[1:])[inside]
        keys, owner = _pair_keys(ids, self.bits, inside)[ok], _owners(lengths)[ok]
        term = np.searchsorted(self.vocab, keys)
        term[term == len(self.vocab)] = 0
        hit = self.vocab[term] == keys
        return term[hit], owner[hit]

    def counts(self, texts: Sequence[str]) -> sp.csr_matrix:
        """[len(texts), len(vocab)] 2-gram counts; a 2-gram seen twice counts twice."""
        term, owner = self.keys(texts)
        m = sp.csr_matrix((np.ones(len(term), dtype=np.float32), (owner, term)),
                          shape=(len(texts), len(self.vocab)))
        m.sum_duplicates()
        return m


def fit_bigrams(texts: Sequence[str]) -> tuple[Bigrams, sp.csr_matrix, np.ndarray]:
    """The vocabulary of `texts`, their counts term-major ([vocab, texts], CSR) and each
    text's number of 2-grams. One sort of (2-gram, text) keys yields all three."""
    codes, lengths = _code_points(texts)
    n_tokens = np.maximum(lengths - 1, 0)
    seen = np.zeros(0x110000, dtype=bool)  # a table beats np.unique on millions of chars
    seen[codes] = True
    alphabet = np.flatnonzero(seen).astype(np.uint32)
    bits = max(1, (len(alphabet) - 1).bit_length())
    text_bits = max(1, (len(texts) - 1).bit_length())
    if 2 * bits + text_bits > 63:
        raise ValueError(f"too many distinct characters ({len(alphabet)}) and texts "
                         f"({len(texts)}) for one 64-bit key")
    table = np.zeros(int(alphabet[-1]) + 1 if len(alphabet) else 1, dtype=np.int32)
    table[alphabet] = np.arange(len(alphabet))
    keys = _pair_keys(table[codes], bits, _inside(lengths))
    keys <<= text_bits
    keys |= _owners(lengths)
    keys.sort()
    first = np.ones(len(keys), dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    starts = np.flatnonzero(first)
    tf = np.diff(np.append(starts, len(keys))).astype(np.float32)
    pairs = keys[starts]
    doc = pairs & ((1 << text_bits) - 1)
    bigram = pairs >> text_bits
    new_term = np.ones(len(bigram), dtype=bool)
    new_term[1:] = bigram[1:] != bigram[:-1]
    term_starts = np.flatnonzero(new_term)
    vocab = bigram[term_starts]
    indptr = np.append(term_starts, len(bigram))
    matrix = sp.csr_matrix((tf, doc.astype(np.int32), indptr), shape=(len(vocab), len(texts)))
    return Bigrams(alphabet, vocab, bits), matrix, n_tokens


# --- ranking ------------------------------------------------------------------------------

def _batches(n_queries: int, n_chunks: int):
    size = max(1, min(_MAX_BATCH, _BATCH_CELLS // max(n_chunks, 1)))
    for lo in range(0, n_queries, size):
        yield lo, min(lo + size, n_queries)


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Row-wise ids of the k highest scores, best first, lower id first among equals."""
    n_rows, n = scores.shape
    out = np.full((n_rows, k), -1, dtype=np.int64)
    take = min(k, n)
    if take == 0 or n_rows == 0:
        return out
    if take < n:
        part = np.argpartition(-scores, take - 1, axis=1)[:, :take]
        kth = scores[np.arange(n_rows)[:, None], part].min(axis=1)[:, None]
        # argpartition picks arbitrarily among scores equal to the k-th; take the lowest ids
        above = scores > kth
        tied = scores == kth
        need = take - above.sum(axis=1, keepdims=True)
        chosen = above | (tied & (np.cumsum(tied, axis=1, dtype=np.int32) <= need))
        cand = np.nonzero(chosen)[1].reshape(n_rows, take)
    else:
        cand = np.broadcast_to(np.arange(n), (n_rows, n))
    rows = np.repeat(np.arange(n_rows), take)
    flat = cand.ravel()
    order = np.lexsort((flat, -scores[rows, flat], rows))
    out[:, :take] = flat[order].reshape(n_rows, take)
    return out


def _check_k(k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")


# --- BM25 ---------------------------------------------------------------------------------

class _Batched:
    """Scores queries in batches, so memory stays bounded at any corpus size; subclasses
    give `n` (the chunk count) and `_score_batch(queries) -> [batch, n] scores`."""

    n: int

    def _score_batch(self, queries: Sequence[str]) -> np.ndarray:
        raise NotImplementedError

    def scores(self, queries: Sequence[str]) -> np.ndarray:
        """Dense [len(queries), len(self)] scores."""
        return np.vstack([self._score_batch(queries[lo:hi])
                          for lo, hi in _batches(len(queries), self.n)]
                         or [np.zeros((0, self.n), dtype=np.float32)])

    def search(self, queries: Sequence[str], k: int) -> np.ndarray:
        """Ranks at least RRF_DEPTH deep and keeps the last ranking: a hybrid over this
        index, asked for the same queries next, reuses it instead of scoring them again.
        (A shallower ranking is a prefix of a deeper one: the order is total.)"""
        _check_k(k)
        queries = list(queries)
        last = getattr(self, "_last", None)
        if last is None or last[0] != queries or last[1].shape[1] < k:
            depth = max(k, RRF_DEPTH)
            ranked = np.full((len(queries), depth), -1, dtype=np.int64)
            for lo, hi in _batches(len(queries), self.n):
                ranked[lo:hi] = top_k(self._score_batch(queries[lo:hi]), depth)
            self._last = last = (queries, ranked)
        return last[1][:, :k].copy()


class BM25Index(_Batched):
    """Okapi BM25, Lucene idf log(1 + (N - df + 0.5) / (df + 0.5)) and Lucene's term
    weight idf * tf / (tf + k1 * (1 - b + b * len / avglen)) (no constant (k1 + 1) factor,
    as in Lucene 8 and bm25s: it scales every score alike). The weight of every (term,
    chunk) pair is computed once here; a query then sums the rows of its 2-grams."""

    def __init__(self, texts: Sequence[str], *, k1: float = K1, b: float = B,
                 analyzer: str = "char2"):
        from .analyzers import fit
        self.bigrams, tf, lengths = fit(analyzer, texts)
        self.n = len(texts)
        avg = float(lengths.mean()) if self.n else 0.0
        df = np.diff(tf.indptr)
        idf = np.log1p((self.n - df + 0.5) / (df + 0.5)).astype(np.float32)
        norm = (k1 * (1 - b + b * lengths / avg) if avg > 0 else np.full(self.n, k1)
                ).astype(np.float32)
        # in place, float32: this runs over every (2-gram, chunk) pair of the corpus
        data = norm[tf.indices]
        data += tf.data
        np.divide(tf.data, data, out=data)
        data *= np.repeat(idf, df)
        # [vocab, chunks]: a query's count row times this is its score row
        self.weights = sp.csr_matrix((data, tf.indices, tf.indptr), shape=tf.shape)

    def __len__(self) -> int:
        return self.n

    def _score_batch(self, queries: Sequence[str]) -> np.ndarray:
        q = self.bigrams.counts(queries)  # repeated 2-grams count each time
        w = self.weights
        out = np.zeros((len(queries), self.n), dtype=np.float32)
        for i in range(len(queries)):
            row = out[i]
            # Only the query's own rows of the weights: the work is their nonzeros. (A
            # sparse product q @ weights does the same sums but builds a sparse result
            # almost as dense as the scores, in two passes: 1.6x slower; slicing the
            # weights per query costs more in scipy's bookkeeping than in the sums.)
            # float32 sums in term order, as weights[terms].T @ counts adds them.
            for term, count in zip(q.indices[q.indptr[i]:q.indptr[i + 1]].tolist(),
                                   q.data[q.indptr[i]:q.indptr[i + 1]]):
                lo, hi = w.indptr[term], w.indptr[term + 1]
                row[w.indices[lo:hi]] += w.data[lo:hi] * count
        return out



# --- LSA ----------------------------------------------------------------------------------

class LSAIndex(_Batched):
    """TF-IDF of the analyzer's terms (at most 60,000: the most frequent in the corpus, ties by
    term order), a truncated SVD (`lsa_components`) fitted on a seeded sample of at most 6,000
    chunks, vectors L2-normalised, ranked by cosine (float64, rounded to 1e-9). The TF-IDF is
    TfidfVectorizer's defaults (smooth idf, raw counts, L2 rows) applied to the same counts as
    BM25."""

    def __init__(self, texts: Sequence[str], *, seed: int = 0, dims: int = LSA_DIMS,
                 sample: int = LSA_SAMPLE, max_features: int = LSA_MAX_FEATURES,
                 analyzer: str = "char2"):
        from sklearn.feature_extraction.text import TfidfTransformer

        from .analyzers import fit

        self.n = len(texts)
        bigrams, tf, _ = fit(analyzer, texts)
        if len(bigrams) > max_features:
            totals = np.asarray(tf.sum(axis=1)).ravel()
            keep = np.sort(np.argsort(-totals, kind="stable")[:max_features])
            bigrams = bigrams.subset(keep)
            tf = tf[keep]
        self.bigrams = bigrams
        counts = tf.T.tocsr()
        # no 2-grams at all (one-character chunks): every score is 0
        self.tfidf = TfidfTransformer().fit(counts) if len(bigrams) else None
        x = self.tfidf.transform(counts) if self.tfidf is not None else counts
        rng = np.random.default_rng(seed)
        rows = np.sort(rng.choice(self.n, size=sample, replace=False)) if self.n > sample \
            else np.arange(self.n)
        cap = min(dims, x.shape[1] - 1, len(rows) - 1)
        # One BLAS thread: on shared CI cores, threads that spin waiting for each other made
        # the fit 15x slower, and a fixed thread count keeps the vectors' last bits stable.
        with threadpool_limits(1, user_api="blas"):
            self.components = lsa_components(x[rows], cap, seed) if cap >= 1 else None
            self.vectors = self._embed(x)

    def __len__(self) -> int:
        return self.n

    def _embed(self, x: sp.csr_matrix) -> np.ndarray:
        v = x @ self.components.T if self.components is not None else x.toarray()
        v = np.asarray(v, dtype=np.float64)
        norms = np.linalg.norm(v, axis=1, keepdims=True)
        return v / np.where(norms > 0, norms, 1)

    def _score_batch(self, queries: Sequence[str]) -> np.ndarray:
        q = self.bigrams.counts(queries)
        with threadpool_limits(1, user_api="blas"):
            q = self._embed(self.tfidf.transform(q) if self.tfidf is not None else q)
            # A matrix product's last bits depend on its shape (the batch size); rounding
            # them off keeps near-equal chunks in id order whatever the batching.
            return np.round(q @ self.vectors.T, 9)



def lsa_components(x: sp.csr_matrix, dims: int, seed: int) -> np.ndarray:
    """The top `dims` right singular vectors of `x` (rows of the result), by the randomized
    SVD of scikit-learn's TruncatedSVD as LSA uses it: 10 oversamples, 5 power iterations,
    the same seeded Gaussian start, an exact SVD of the projection.

    Only the range finder is cheaper. scikit-learn normalises after every product, with A
    and then with A.T, and the first is an LU factorisation of a (terms x 138) matrix; here
    each iteration applies A.T @ A and normalises once, on the smaller side (chunks, as a
    rule), both products run on CSR matrices, and the basis of the last product comes from
    Cholesky QR (`_orthonormal`). The subspace is the same in exact arithmetic: on the
    default corpus every LSA and hybrid metric, per query, came out as with TruncatedSVD, for
    less than half its CPU (bench/results/stages.md). Singular vectors keep the signs they
    come with: a sign flips one coordinate of every vector, which leaves each cosine as it
    is."""
    from scipy import linalg

    chunks, terms = x.shape
    a = x.T.tocsr() if chunks < terms else x  # scikit-learn's choice of side ("auto")
    at = x if chunks < terms else x.T.tocsr()
    q = np.random.RandomState(seed).normal(size=(a.shape[1], dims + 10)).astype(x.dtype)
    for _iteration in range(5):
        q, _ = linalg.lu(at @ (a @ q), permute_l=True, check_finite=False)
    q = _orthonormal(a @ q)
    u, _, vt = linalg.svd((at @ q).T, full_matrices=False, lapack_driver="gesdd",
                          check_finite=False)
    # a = q @ (q.T @ a) = (q @ u) s vt: the terms' side is q @ u when a is x transposed
    return (q @ u[:, :dims]).T if chunks < terms else vt[:dims]


def _orthonormal(y: np.ndarray) -> np.ndarray:
    """An orthonormal basis of the columns of a tall `y`, as QR's Q. Cholesky QR done twice:
    the Gram matrix squares y's condition number, so one pass leaves the basis only roughly
    orthonormal, and the second pass, on a nearly orthonormal matrix, is exact to rounding.
    BLAS3 products, 2.5x as fast as Householder QR here, and as orthonormal (float32, y of
    25,000 x 138 with condition number about 1e3 after the power iterations). Householder QR
    takes over when the first pass fails or leaves the basis far from orthonormal (a badly
    conditioned or rank-deficient y)."""
    from scipy import linalg

    try:
        r = linalg.cholesky(y.T @ y, check_finite=False)
        q = linalg.solve_triangular(r, y.T, trans="T", check_finite=False).T
        gram = q.T @ q
        if np.linalg.norm(gram - np.eye(len(gram))) <= 0.5:
            r = linalg.cholesky(gram, check_finite=False)
            return linalg.solve_triangular(r, q.T, trans="T", check_finite=False).T
    except linalg.LinAlgError:
        pass
    return linalg.qr(y, mode="economic", check_finite=False)[0]


class _EmptyIndex:
    """No chunks: every query gets an all -1 ranking."""

    def __len__(self) -> int:
        return 0

    def search(self, queries: Sequence[str], k: int) -> np.ndarray:
        _check_k(k)
        return np.full((len(queries), k), -1, dtype=np.int64)


# --- embeddings ---------------------------------------------------------------------------

class EmbeddingIndex(_Batched):
    """Cosine ranking of L2-normalised vectors (rounded to 1e-6, so that ties and the
    last bits of a batched product do not decide an order)."""

    def __init__(self, texts: Sequence[str], embed: Callable[[list[str]], np.ndarray]):
        self.embed = embed
        self.n = len(texts)
        self.vectors = _normalised(embed(list(texts)))

    def __len__(self) -> int:
        return self.n

    def _score_batch(self, queries: Sequence[str]) -> np.ndarray:
        q = _normalised(self.embed(list(queries)))
        if q.shape[1] != self.vectors.shape[1]:
            raise ValueError(f"query vectors have {q.shape[1]} dimensions, chunk vectors "
                             f"{self.vectors.shape[1]}")
        return np.round(q @ self.vectors.T, 6)


def _normalised(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return v / np.where(norms > 0, norms, 1)


# --- hybrid -------------------------------------------------------------------------------

class HybridIndex:
    """Reciprocal rank fusion: a chunk scores sum 1 / (60 + rank) over the parts' rankings
    (rank from 1, the top `depth` of each), so no score scale dominates. Built from
    existing indexes over the same chunks, so an evaluator reuses them."""

    def __init__(self, *parts: Index, constant: int = RRF_CONSTANT, depth: int = RRF_DEPTH):
        if len(parts) < 2 or len({len(p) for p in parts}) != 1:
            raise ValueError(f"hybrid needs two or more indexes over the same chunks: "
                             f"{', '.join(str(len(p)) for p in parts)} chunks")
        self.parts, self.constant, self.depth = parts, constant, depth

    def __len__(self) -> int:
        return len(self.parts[0])

    def search(self, queries: Sequence[str], k: int) -> np.ndarray:
        _check_k(k)
        depth = max(self.depth, k)
        runs = [p.search(queries, depth) for p in self.parts]
        share = 1.0 / (self.constant + np.arange(1, depth + 1))
        n = len(self)
        out = np.full((len(queries), k), -1, dtype=np.int64)
        for lo, hi in _batches(len(queries), n):
            # column n takes the -1 padding; a chunk is in a run once, so no id repeats
            # within one += (the sums run over the parts in order, as a bincount would)
            fused = np.zeros((hi - lo, n + 1))
            rows = np.arange(hi - lo)[:, None]
            for run in runs:
                fused[rows, run[lo:hi]] += share
            fused = fused[:, :n]
            best = top_k(fused, k)
            # a chunk in no run has no score: pad with -1 rather than rank it
            best[fused[rows, np.maximum(best, 0)] == 0] = -1
            out[lo:hi] = best
        return out


# --- the registry ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Retriever:
    """`embed(texts) -> [n, d]` or `build(texts) -> Index` or `fuses` (names of registered
    retrievers). `lexical` ones get the corpus's analyzer and the seed: build(texts,
    analyzer=..., seed=...). Embeddings are computed `batch_size` texts at a time."""

    name: str
    version: str
    embed: Callable[[list[str]], np.ndarray] | None = field(default=None, compare=False)
    build: Callable[..., Index] | None = field(default=None, compare=False)
    fuses: tuple[str, ...] = ()
    lexical: bool = False
    batch_size: int = 64
    description: str = ""

    def __post_init__(self):
        shapes = (self.embed is not None) + (self.build is not None) + bool(self.fuses)
        if shapes != 1:
            raise ValueError(f"retriever {self.name!r}: give exactly one of embed, build "
                             f"or fuses")
        if not self.name or "|" in self.name:
            raise ValueError(f"retriever name {self.name!r}: must be non-empty, without '|'")

    @property
    def full_version(self) -> str:
        """The version, and for a hybrid its parts' versions too: a new `use` model makes
        `hybrid-use` another retriever."""
        if not self.fuses:
            return str(self.version)
        return f"{self.version}({'+'.join(get(p).full_version for p in self.fuses)})"

    def describe(self) -> dict:
        shape = "embed" if self.embed else "build" if self.build else "hybrid"
        d = {"name": self.name, "version": self.full_version, "shape": shape}
        if self.fuses:
            d["fuses"] = list(self.fuses)
        return d


_REGISTRY: dict[str, Retriever] = {}


def register(retriever: Retriever, *, replace: bool = False) -> Retriever:
    old = _REGISTRY.get(retriever.name)
    if old is not None and not replace and old is not retriever:
        raise ValueError(f"a retriever named {retriever.name!r} is already registered")
    _REGISTRY[retriever.name] = retriever
    return retriever


def unregister(name: str) -> None:
    _REGISTRY.pop(name, None)


def get(name: str) -> Retriever:
    _ensure_builtins()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown retriever {name!r}; known: {', '.join(names(all=True))}"
                         ) from None


def names(*, all: bool = False) -> list[str]:
    """Registered retrievers that can run here; with all=True also those whose optional
    package is missing (asking for one of those says what to install)."""
    _ensure_builtins()
    return [n for n, r in _REGISTRY.items() if all or available(r)]


def available(retriever: Retriever) -> bool:
    return all(available(get(p)) for p in retriever.fuses) and getattr(
        retriever.embed or retriever.build, "available", True)


class RetrieverError(Exception):
    pass


def load_retriever(spec: str) -> list[Retriever]:
    """Import "module:attribute" and register it (chunkeval.config imports it from the
    project's folder).

    The attribute may be a Retriever, a list of them, or a plain callable
    `embed(texts) -> array [n, d]`: that is named after `f.retriever_name` (default the
    attribute), versioned by `f.version` (default "0") and batched by `f.batch_size`."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise RetrieverError(f"{spec!r}: expected 'module:attribute'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise RetrieverError(f"{spec!r}: cannot import {module_name!r} ({e})"
                             ) from None
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise RetrieverError(f"{spec!r}: {module_name!r} has no attribute "
                                 f"{attr!r}") from None
    try:
        if isinstance(obj, Retriever):
            found = [obj]
        elif isinstance(obj, (list, tuple)) and obj and all(isinstance(r, Retriever)
                                                            for r in obj):
            found = list(obj)
        elif callable(obj):
            found = [Retriever(name=str(getattr(obj, "retriever_name", attr.rsplit(".", 1)[-1])),
                               version=str(getattr(obj, "version", "0")), embed=obj,
                               batch_size=int(getattr(obj, "batch_size", 64)))]
        else:
            raise RetrieverError(f"{spec!r}: not a Retriever, a list of them, or "
                                 f"an embedding function")
        _ensure_builtins()
        for r in found:
            register(r, replace=True)
    except ValueError as e:
        raise RetrieverError(f"{spec!r}: {e}") from None
    return found


def _ensure_builtins() -> None:
    if "bm25" in _REGISTRY:
        return
    from . import neural
    register(Retriever("bm25", "1", build=lambda texts, analyzer, seed: BM25Index(
        texts, analyzer=analyzer), lexical=True, description="Okapi BM25"))
    register(Retriever("lsa", "1", build=lambda texts, analyzer, seed: LSAIndex(
        texts, seed=seed, analyzer=analyzer), lexical=True,
        description="TF-IDF + truncated SVD, 128 dimensions"))
    register(Retriever("hybrid", "1", fuses=("bm25", "lsa"), description="RRF of bm25, lsa"))
    register(Retriever("use", neural.use_version(), embed=neural.use_embed,
                       batch_size=neural.BATCH,
                       description="Universal Sentence Encoder multilingual v3"))
    register(Retriever("hybrid-use", "1", fuses=("bm25", "use"),
                       description="RRF of bm25, use"))


def build_index(retriever: str | Retriever, texts: Sequence[str], *, seed: int = 0,
                analyzer: str = "char2", cache=None) -> Index:
    """An index of `texts` (no memo: hybrids build their parts here too). `cache` is an
    EmbeddingCache for an embedding retriever; without one, vectors are not kept."""
    r = retriever if isinstance(retriever, Retriever) else get(retriever)
    if not available(r):
        raise ValueError(f"retriever {r.name!r} needs an optional package: "
                         f"{getattr(r.embed or r.build, 'install', 'see the README')}")
    texts = list(texts)
    if not texts:
        return _EmptyIndex()
    if r.fuses:
        return HybridIndex(*[build_index(p, texts, seed=seed, analyzer=analyzer, cache=cache)
                             for p in r.fuses])
    if r.build is not None:
        index = r.build(texts, analyzer=analyzer, seed=seed) if r.lexical else r.build(texts)
        if not hasattr(index, "search"):
            raise ValueError(f"retriever {r.name!r}: build() returned {type(index).__name__}, "
                             f"which has no search(queries, k)")
        return index
    if cache is None:
        return EmbeddingIndex(texts, r.embed)
    return EmbeddingIndex(texts, lambda batch: cache.embed(batch, r.embed, r.batch_size))
