"""The lexical retrievers (SPEC section 4): BM25 and LSA over the analyzer's terms."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from ..results import DEFAULTS
from .analyzers import fit
from .ranking import Batched

K1, B = 1.2, 0.75
LSA_DIMS, LSA_SAMPLE, LSA_MAX_FEATURES = 128, 6000, 60000
ROW_BLOCK = 1 << 14


class BM25Index(Batched):
    """Okapi BM25, Lucene idf log(1 + (N - df + 0.5) / (df + 0.5)) and Lucene's term
    weight idf * tf / (tf + k1 * (1 - b + b * len / avglen)) (no constant (k1 + 1) factor,
    as in Lucene 8 and bm25s: it scales every score alike). The weight of every (term,
    chunk) pair is computed once here; a query then sums the rows of its 2-grams."""

    def __init__(self, texts: Sequence[str], *, k1: float = K1, b: float = B,
                 analyzer: str = DEFAULTS.analyzer):
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
        # Only the query's own rows of the weights: the work is their nonzeros. (A sparse
        # product q @ weights does the same sums but builds a sparse result almost as dense as
        # the scores, in two passes, which was slower; slicing the weights per query costs
        # more in scipy's bookkeeping than in the sums.)
        first, sizes = w.indptr[q.indices], np.diff(w.indptr)[q.indices]
        for i in range(len(queries)):
            lo, hi = q.indptr[i], q.indptr[i + 1]
            if lo == hi:
                continue
            # the query's rows end to end; np.add.at adds in that order, so every score sums
            # its float32 terms in term order, as weights[terms].T @ counts adds them
            size = sizes[lo:hi]
            at = np.arange(int(size.sum())) + np.repeat(first[lo:hi] - np.cumsum(size) + size,
                                                        size)
            np.add.at(out[i], w.indices[at], w.data[at] * np.repeat(q.data[lo:hi], size))
        return out


class TfIdf:
    """scikit-learn's TfidfTransformer with its defaults (smooth idf, raw counts, L2 rows),
    operation for operation, so the same bits: importing scikit-learn for it cost a run that
    builds an LSA index 1.1 s of CPU. Counts are float32, as the analyzers make them."""

    def __init__(self, counts: sp.csr_matrix):
        # the idf in the counts' dtype: df as it, (1 + n) / (1 + df), log, + 1
        df = np.bincount(counts.indices, minlength=counts.shape[1]).astype(counts.dtype)
        df += 1.0
        self.idf = np.full_like(df, fill_value=counts.shape[0] + 1)
        self.idf /= df
        np.log(self.idf, out=self.idf)
        self.idf += 1.0

    def transform(self, counts: sp.csr_matrix) -> sp.csr_matrix:
        x = counts.copy()
        x.data *= self.idf[x.indices]
        _normalize_rows(x)
        return x


def _normalize_rows(x: sp.csr_matrix) -> None:
    """Each row divided by its L2 norm, in place, as scikit-learn's
    inplace_csr_row_normalize_l2: the squares (in the data's dtype) summed in a double in
    row order, the square root, each value divided in double; empty rows left alone. The
    rows are summed side by side, one position of each at a time, longest rows first."""
    lengths = np.diff(x.indptr)
    order = np.argsort(-lengths, kind="stable")
    starts, longest_first = x.indptr[:-1][order], lengths[order]
    squares = (x.data * x.data).astype(np.float64)
    sums = np.zeros(len(order))
    ascending = longest_first[::-1]
    for k in range(int(longest_first[0]) if len(order) else 0):
        rows = len(order) - int(np.searchsorted(ascending, k, side="right"))  # longer than k
        sums[:rows] += squares[starts[:rows] + k]
    norms = np.empty(len(order))
    norms[order] = np.sqrt(sums)
    norms[norms == 0] = 1.0
    x.data[:] = x.data / np.repeat(norms, lengths)


class LSAIndex(Batched):
    """TF-IDF of the analyzer's terms (at most 60,000: the most frequent in the corpus, ties by
    term order), a truncated SVD (`lsa_components`) fitted on a seeded sample of at most 6,000
    chunks, vectors L2-normalised, ranked by cosine (float64). The TF-IDF is
    TfidfVectorizer's defaults (smooth idf, raw counts, L2 rows) applied to the same counts as
    BM25."""

    def __init__(self, texts: Sequence[str], *, seed: int = DEFAULTS.seed, dims: int = LSA_DIMS,
                 sample: int = LSA_SAMPLE, max_features: int = LSA_MAX_FEATURES,
                 analyzer: str = DEFAULTS.analyzer):
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
        self.tfidf = TfIdf(counts) if len(bigrams) else None
        x = self.tfidf.transform(counts) if self.tfidf is not None else counts
        del tf, counts  # only x from here on: the vectors, next, are the largest part
        rng = np.random.default_rng(seed)
        rows = np.sort(rng.choice(self.n, size=sample, replace=False)) if self.n > sample \
            else np.arange(self.n)
        cap = min(dims, x.shape[1] - 1, len(rows) - 1)
        # One BLAS thread: on shared CI cores, threads that spin waiting for each other made
        # the fit many times slower, and a fixed thread count keeps the vectors' last bits
        # stable.
        with one_blas_thread():
            self.components = lsa_components(x[rows], cap, seed) if cap >= 1 else None
            self.vectors = self._embed(x)

    def __len__(self) -> int:
        return self.n

    def _embed(self, x: sp.csr_matrix) -> np.ndarray:
        c = self.components
        v = np.empty((x.shape[0], x.shape[1] if c is None else len(c)), dtype=np.float64)
        terms_side = None if c is None else np.ascontiguousarray(c.T)
        # By row blocks, in place: each temporary of the whole array was the size of the index
        # (every row is computed on its own, so the values are the same).
        for lo in range(0, len(v), ROW_BLOCK):
            part, block = x[lo:lo + ROW_BLOCK], v[lo:lo + ROW_BLOCK]
            # by columns (`_by_columns`): the rows of terms_side are read in order
            block[:] = part.toarray() if c is None else _by_columns(part) @ terms_side
            norms = np.linalg.norm(block, axis=1, keepdims=True)
            block /= np.where(norms > 0, norms, 1)
        return v

    def _score_batch(self, queries: Sequence[str]) -> np.ndarray:
        q = self.bigrams.counts(queries)
        with one_blas_thread():
            q = self._embed(self.tfidf.transform(q) if self.tfidf is not None else q)
            # a matrix product's last bits depend on its shape (the batch size) and the
            # CPU: top_k rounds them off
            return q @ self.vectors.T


def one_blas_thread() -> threadpool_limits:
    """Every BLAS library of the process on one thread, until the block ends. A limit only
    reaches the libraries loaded when it is set, and scipy.linalg brings a BLAS of its own
    (not numpy's): loaded inside the block, it ran the first fit of a process on all its
    threads, so a worker's first LSA index had other last bits than the later ones (and the
    process pool's results differed from a serial run's and Ray's, whose workers start
    with one thread)."""
    import scipy.linalg  # noqa: F401 -- loaded before the limit, so that it is limited

    return threadpool_limits(1, user_api="blas")


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
    less CPU (bench/results/stages.md). Singular vectors keep the signs they
    come with: a sign flips one coordinate of every vector, which leaves each cosine as it
    is."""
    from scipy import linalg

    chunks, terms = x.shape
    a = x.T.tocsr() if chunks < terms else x  # scikit-learn's choice of side ("auto")
    at = a.T if chunks >= terms or x.has_sorted_indices else x  # CSC, as `_by_columns` says
    q = np.random.RandomState(seed).normal(size=(a.shape[1], dims + 10)).astype(x.dtype)
    # The sparse products are scipy's own loops, the same on every CPU; the dense steps are
    # LAPACK's, whose kernels differ by CPU. Run in float32, those differences were amplified
    # by the iterations into cosines that moved by up to 2e-5 between two CPUs' kernels; run
    # in float64 and rounded back to float32 for the next product, they vanish in the
    # rounding (cosines within 6e-15, far below what ranking.SCORE_BITS keeps).
    for _iteration in range(5):
        q, _ = linalg.lu((at @ (a @ q)).astype(np.float64), permute_l=True, check_finite=False)
        q = q.astype(x.dtype)
    q = _orthonormal((a @ q).astype(np.float64))
    u, _, vt = linalg.svd((at @ q).T, full_matrices=False, lapack_driver="gesdd",
                          check_finite=False)
    # a = q @ (q.T @ a) = (q @ u) s vt: the terms' side is q @ u when a is x transposed
    found = (q @ u[:, :dims]).T if chunks < terms else vt[:dims]
    return found.astype(x.dtype)  # the type scikit-learn's TruncatedSVD gives


def _by_columns(m: sp.csr_matrix):
    """`m` as CSC for a product m @ y whose y is the larger side: by columns, the product reads
    y's rows in order and adds into the smaller result, where by rows it gathered y's rows at
    random (1.5-2x slower on an LSA fit's matrices). The same bits: each result row still adds
    its terms in column order, as a CSR row with sorted indices does (the analyzers' are
    sorted; a row that is not keeps its own order, so stays CSR)."""
    return m.tocsc() if m.has_sorted_indices else m


def _orthonormal(y: np.ndarray) -> np.ndarray:
    """An orthonormal basis of the columns of a tall `y`, as QR's Q. Cholesky QR done twice:
    the Gram matrix squares y's condition number, so one pass leaves the basis only roughly
    orthonormal, and the second pass, on a nearly orthonormal matrix, is exact to rounding.
    BLAS3 products, faster than Householder QR and as orthonormal on the power iterations
    output (bench/results/design-figures.md). Householder QR
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
