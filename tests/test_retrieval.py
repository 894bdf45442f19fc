"""Retrieval: the 2-gram tokens equal CountVectorizer's, BM25 equals bm25s, rankings are
deterministic, LSA and the hybrid rank a chunk first for its own text."""

import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

from chunkeval.errors import UnknownName
from chunkeval.retrieval import build_index, ranking
from chunkeval.retrieval.analyzers import fit_bigrams
from chunkeval.retrieval.hybrid import HybridIndex
from chunkeval.retrieval.lexical import BM25Index, LSAIndex, TfIdf
from chunkeval.retrieval.ranking import top_k

LEXICAL = ("bm25", "lsa", "hybrid")

SENTENCES = [
    "東京は日本の首都で、人口はおよそ千四百万人です。",
    "大阪は関西地方の中心都市として知られています。",
    "パッケージをインストールするには apt install を使います。",
    "設定ファイルは /etc/apt/sources.list にあります。",
    "The quick brown fox jumps over the lazy dog.",
    "Debian is a free operating system for your computer.",
    "カーネルのバージョンは uname -r で確認できます。",
    "Use dpkg -l to list the installed packages.",
    "ミラーサーバーを選ぶと、ダウンロードが速くなります。",
    "A stable release is supported for about three years.",
    "セキュリティ更新は毎週のように配布されています。",
    "Bug reports go to the bug tracking system.",
    "テーブルの各行は | で区切られたセルからなります。",
    "Source packages contain the upstream tarball and patches.",
    "日本語の文書では句読点として「、」と「。」を使います。",
    "Mailing lists are the main place for discussion.",
]


def make_corpus(n: int = 300) -> list[str]:
    """n distinct chunks of 1-4 sentences, some with doubled spaces and newlines."""
    out = []
    for i in range(n):
        picks = [SENTENCES[(i * 7 + j * 5) % len(SENTENCES)] for j in range(1 + i % 4)]
        sep = ("  ", "\n", " \n\t", "")[i % 4]
        out.append(f"{i:03d} " + sep.join(picks))
    return out


CORPUS = make_corpus()
QUERIES = ["日本の首都はどこですか", "apt install apt install", "the lazy dog",
           "セキュリティ更新", "ダウンロードを速くする方法", "zzzz", "首都首都首都"]
ANALYZE = CountVectorizer(analyzer="char", ngram_range=(2, 2), lowercase=False).build_analyzer()


def test_bigrams_equal_countvectorizer():
    texts = CORPUS[:60] + ["a  \n b\tc", "x", "", "  ", "𠮷野家\ud800x"]
    cv = CountVectorizer(analyzer="char", ngram_range=(2, 2), lowercase=False,
                         dtype=np.float32)
    expected = cv.fit_transform(texts)
    bigrams, term_major, lengths = fit_bigrams(texts)
    assert bigrams.terms() == list(cv.get_feature_names_out())
    assert (term_major.T != expected).nnz == 0
    assert (bigrams.counts(texts) != expected).nnz == 0
    assert list(lengths) == [len(ANALYZE(t)) for t in texts]


def test_query_counts_ignore_unknown_and_count_repeats():
    bigrams, _, _ = fit_bigrams(["abcd"])
    counts = bigrams.counts(["abab", "zz", ""]).toarray()
    terms = bigrams.terms()
    assert counts[0, terms.index("ab")] == 2 and counts[0].sum() == 2  # "ba" is unknown
    assert counts[1].sum() == 0 and counts[2].sum() == 0


def _bm25s_index(texts):
    bm25s = pytest.importorskip("bm25s")  # a test extra: only these comparisons need it
    r = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
    r.index([ANALYZE(t) for t in texts], show_progress=False)
    return r


def test_bm25s_counts_repeated_query_tokens():
    # bm25s.get_scores looks up the query token list as given, without deduplicating, so
    # a repeated 2-gram adds its weight again: feeding bm25s the full token lists is the
    # like-for-like comparison with our count-weighted query rows.
    r = _bm25s_index(CORPUS)
    once, twice = r.get_scores(["首都"]), r.get_scores(["首都", "首都"])
    assert once.max() > 0
    np.testing.assert_allclose(twice, 2 * once, rtol=1e-6)


def test_bm25_scores_equal_bm25s():
    ours = BM25Index(CORPUS).scores(QUERIES[:-2] + ["首都首都首都"])
    r = _bm25s_index(CORPUS)
    for q, row in zip(QUERIES[:-2] + ["首都首都首都"], ours):
        np.testing.assert_allclose(row, r.get_scores(ANALYZE(q)), rtol=1e-4, atol=1e-6)
    assert ours.max() > 0


def test_bm25_top5_equals_bm25s():
    queries = [q for q in QUERIES if q != "zzzz"] + [CORPUS[i][4:40] for i in range(0, 300, 37)]
    ranked = BM25Index(CORPUS).search(queries, 5)
    ids, scores = _bm25s_index(CORPUS).retrieve([ANALYZE(q) for q in queries], k=5,
                                                show_progress=False)
    full = BM25Index(CORPUS).scores(queries)
    for i in range(len(queries)):
        np.testing.assert_allclose(full[i, ranked[i]], scores[i], rtol=1e-4)
        if len(set(np.round(scores[i], 4))) == 5:  # no ties: the order is fixed
            assert list(ranked[i]) == list(ids[i])


def test_bm25_repeated_query_bigram_counts_twice():
    ix = BM25Index(CORPUS)
    once, thrice = ix.scores(["首都", "首都首都"])
    # "首都首都" is 首都 x2 and 都首 x1; 都首 occurs nowhere in the corpus
    np.testing.assert_allclose(thrice, 2 * once, rtol=1e-6)


def test_ties_rank_lower_id_first():
    texts = ["同じ文章です"] * 6 + ["違う"] * 4
    assert build_index("bm25", texts).search(["同じ"], 3).tolist() == [[0, 1, 2]]
    # a query with no known 2-gram scores 0 everywhere: chunks in id order
    assert build_index("bm25", texts).search(["xyz"], 4).tolist() == [[0, 1, 2, 3]]
    scores = np.array([[1.0, 5, 5, 5, 5, 0, 5], [3, 3, 3, 3, 3, 3, 3]])
    assert top_k(scores, 3).tolist() == [[1, 2, 3], [0, 1, 2]]
    assert top_k(scores, 9).tolist() == [[1, 2, 3, 4, 6, 0, 5, -1, -1], [0, 1, 2, 3, 4, 5, 6, -1, -1]]


@pytest.mark.parametrize("retriever", LEXICAL)
def test_shapes_padding_and_empty(retriever):
    ranked = build_index(retriever, CORPUS[:3]).search(["日本の首都", "dog"], 5)
    assert ranked.shape == (2, 5) and ranked.dtype == np.int64
    assert (ranked[:, 3:] == -1).all()
    assert sorted(ranked[0, :3]) == [0, 1, 2]
    empty = build_index(retriever, []).search(["x", "y"], 4)
    assert empty.tolist() == [[-1] * 4] * 2
    assert build_index(retriever, CORPUS[:5]).search([], 3).shape == (0, 3)


def test_unknown_retriever_names_the_known_ones():
    with pytest.raises(UnknownName, match="bm25, lsa, hybrid"):
        build_index("dense", CORPUS)


def test_batches_give_the_same_ranking(monkeypatch):
    queries = [CORPUS[i][:30] for i in range(0, 300, 11)]
    whole = build_index("bm25", CORPUS).search(queries, 10)
    lsa_whole = build_index("lsa", CORPUS).search(queries, 10)
    monkeypatch.setattr(ranking, "_BATCH_CELLS", 700)  # two queries a batch
    assert (build_index("bm25", CORPUS).search(queries, 10) == whole).all()
    assert (build_index("lsa", CORPUS).search(queries, 10) == lsa_whole).all()


@pytest.mark.parametrize("retriever", LEXICAL)
def test_a_chunk_ranks_first_for_its_own_text(retriever):
    index = build_index(retriever, CORPUS)
    picks = [5, 77, 150, 299]
    ranked = index.search([CORPUS[i] for i in picks], 5)
    assert list(ranked[:, 0]) == picks


def test_lsa_is_deterministic_and_samples():
    a = LSAIndex(CORPUS, seed=3, sample=100).search(QUERIES, 8)
    b = LSAIndex(CORPUS, seed=3, sample=100).search(QUERIES, 8)
    assert (a == b).all()
    ix = LSAIndex(CORPUS, seed=0, sample=100, dims=16)
    assert ix.vectors.shape == (300, 16)
    np.testing.assert_allclose(np.linalg.norm(ix.vectors, axis=1), 1, rtol=1e-5)


def test_lsa_tiny_corpus_caps_dimensions():
    ix = LSAIndex(["日本の首都", "the dog"])
    assert ix.vectors.shape[1] == 1
    assert ix.search(["首都"], 2)[0, 0] == 0
    no_2grams = LSAIndex(["a", "b"], analyzer="char2")
    assert no_2grams.search(["a"], 2).tolist() == [[0, 1]]


def test_lsa_tfidf_equals_tfidfvectorizer():
    ix = LSAIndex(CORPUS, dims=8)
    tv = TfidfVectorizer(analyzer="char", ngram_range=(2, 2), lowercase=False)
    expected = tv.fit_transform(CORPUS)
    ours = ix.tfidf.transform(ix.bigrams.counts(CORPUS))
    assert ix.bigrams.terms() == list(tv.get_feature_names_out())
    assert abs(ours - expected).max() < 1e-6


@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.integers(1, 300))
def test_the_tfidf_is_scikit_learns_bit_for_bit(seed, rows, terms):
    """Rows long enough that a pairwise sum would round differently (over 128 terms), empty
    rows and columns, counts above 1; the queries' transform with the corpus's idf."""
    from sklearn.feature_extraction.text import TfidfTransformer

    rng = np.random.default_rng(seed)
    dense = rng.integers(0, 4, (rows, terms)) * (rng.random((rows, terms)) < rng.random())
    dense[rng.random(rows) < 0.2] = 0
    counts = sp.csr_matrix(dense.astype(np.float32))
    queries = sp.csr_matrix(rng.integers(0, 3, (5, terms)).astype(np.float32))
    ours, theirs = TfIdf(counts), TfidfTransformer().fit(counts)
    assert ours.idf.dtype == theirs.idf_.dtype and np.array_equal(ours.idf, theirs.idf_)
    for x in (counts, queries):
        a, b = ours.transform(x), sp.csr_matrix(theirs.transform(x))
        assert a.dtype == b.dtype == np.float32
        assert np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
        assert np.array_equal(a.data, b.data)


def test_an_lsa_index_is_built_without_importing_scikit_learn():
    code = ("import sys\nfrom chunkeval.retrieval.lexical import LSAIndex\n"
            "LSAIndex(['the dog barks', 'a cat sleeps', 'the cat barks'], dims=2)\n"
            "print('sklearn' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split() == ["False"]


@pytest.mark.parametrize("shape", [(60, 400), (400, 60)])  # fewer chunks than terms, and more
def test_lsa_components_span_truncatedsvds_subspace(shape):
    """lsa_components is scikit-learn's randomized TruncatedSVD with a cheaper range finder:
    the same subspace, so the same top singular vectors up to sign and rounding."""
    from sklearn.decomposition import TruncatedSVD

    from chunkeval.retrieval.lexical import lsa_components
    rng = np.random.default_rng(0)
    low_rank = rng.random((shape[0], 12)) @ rng.random((12, shape[1]))
    x = sp.csr_matrix(np.where(rng.random(shape) < 0.2, low_rank, 0), dtype=np.float32)
    ours = lsa_components(x, 20, seed=0)
    theirs = TruncatedSVD(20, random_state=0).fit(x).components_
    assert ours.shape == theirs.shape and ours.dtype == np.float32
    np.testing.assert_allclose(np.abs((ours[:8] * theirs[:8]).sum(axis=1)), 1, atol=1e-4)
    # and the whole 20-dimensional subspace: projecting theirs on ours keeps their length
    np.testing.assert_allclose(np.linalg.norm(theirs @ ours.T, axis=1), 1, atol=1e-3)


def test_lsa_keeps_the_most_frequent_features():
    full, tf, _ = fit_bigrams(CORPUS)
    totals = dict(zip(full.terms(), np.asarray(tf.sum(axis=1)).ravel()))
    kept = set(LSAIndex(CORPUS, max_features=50, dims=8).bigrams.terms())
    assert len(kept) == 50
    assert min(totals[t] for t in kept) >= max(totals[t] for t in totals if t not in kept)


class FixedRanking:
    def __init__(self, rows):
        self.rows = np.array(rows)

    def __len__(self):
        return 4

    def search(self, queries, k):
        return self.rows[:len(queries), :k]


def test_hybrid_reciprocal_rank_fusion():
    bm25 = FixedRanking([[0, 1, 2, -1]])
    lsa = FixedRanking([[2, 1, 0, 3]])
    # 0: 1/61 + 1/63, 2: 1/63 + 1/61 (tie, lower id first), 1: 2/62 (a bit less), 3: 1/64
    assert HybridIndex(bm25, lsa, depth=4).search(["q"], 4).tolist() == [[0, 2, 1, 3]]
    assert HybridIndex(bm25, lsa, depth=4).search(["q"], 2).tolist() == [[0, 2]]


def test_hybrid_needs_the_same_chunks():
    with pytest.raises(ValueError, match="same chunks"):
        HybridIndex(BM25Index(CORPUS), LSAIndex(CORPUS[:10]))


@pytest.mark.parametrize("retriever", LEXICAL)
def test_chunks_without_any_2gram(retriever):
    index = build_index(retriever, ["a", "b", "c"], analyzer="char2")
    assert index.search(["ab"], 2).tolist() == [[0, 1]]


def _top_k_one_row_at_a_time(scores, k):
    """The plain definition: sort each row by (-score, id)."""
    out = np.full((len(scores), k), -1, dtype=np.int64)
    for i, row in enumerate(scores):
        order = np.lexsort((np.arange(len(row)), -row))[:k]
        out[i, :len(order)] = order
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_top_k_equals_sorting_every_row(dtype):
    rng = np.random.default_rng(5)
    # few distinct values: many ties at and around the k-th score
    scores = rng.integers(0, 6, size=(40, 50)).astype(dtype) / 3
    scores[3] = 0  # a row of ties only
    for k in (1, 5, 17, 49, 50, 60):
        assert (top_k(scores, k) == _top_k_one_row_at_a_time(scores, k)).all(), k


def test_bm25_scores_are_the_sparse_product_bit_for_bit():
    index = BM25Index(CORPUS)
    q = index.bigrams.counts(QUERIES)
    expected = np.vstack([index.weights[q.indices[q.indptr[i]:q.indptr[i + 1]]].T
                          @ q.data[q.indptr[i]:q.indptr[i + 1]] for i in range(len(QUERIES))])
    assert expected.dtype == np.float32
    assert np.array_equal(index.scores(QUERIES), expected)


def test_a_search_reuses_the_last_ranking_only_for_the_same_queries():
    index = BM25Index(CORPUS)
    deep = index.search(QUERIES, 150)
    assert (index.search(QUERIES, 7) == deep[:, :7]).all()
    assert (BM25Index(CORPUS).search(QUERIES, 7) == deep[:, :7]).all()
    other = QUERIES[::-1]
    assert (index.search(other, 7) == BM25Index(CORPUS).search(other, 7)).all()


def _fused_one_query_at_a_time(runs, k, constant=60):
    share = 1.0 / (constant + np.arange(1, runs[0].shape[1] + 1))
    out = np.full((len(runs[0]), k), -1, dtype=np.int64)
    for i in range(len(out)):
        ids = np.concatenate([r[i] for r in runs])
        weight = np.concatenate([share] * len(runs))
        keep = ids >= 0
        chunk, where = np.unique(ids[keep], return_inverse=True)
        fused = np.bincount(where, weights=weight[keep], minlength=len(chunk))
        best = chunk[np.lexsort((chunk, -fused))][:k]
        out[i, :len(best)] = best
    return out


@pytest.mark.parametrize("n", [3, 40, 300])
def test_hybrid_equals_fusing_each_query_alone(n):
    rng = np.random.default_rng(n)
    depth = 8
    runs = []
    for _ in range(3):
        rows = [rng.permutation(n)[:depth] for _ in range(30)]
        runs.append(np.array([np.pad(r, (0, depth - len(r)), constant_values=-1) for r in rows]))

    class Fixed:
        def __init__(self, rows):
            self.rows = rows

        def __len__(self):
            return n

        def search(self, queries, k):  # -1 padded below its depth, as an index is
            rows = self.rows[:len(queries), :k]
            return np.pad(rows, ((0, 0), (0, k - rows.shape[1])), constant_values=-1)

    hybrid = HybridIndex(*[Fixed(r) for r in runs], depth=depth)
    for k in (1, 5, 8, 20):
        expected = _fused_one_query_at_a_time([Fixed(r).search(range(30), max(depth, k))
                                               for r in runs], k)
        assert (hybrid.search(["q"] * 30, k) == expected).all(), k


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_orthonormal_basis_spans_the_columns(dtype):
    """Cholesky QR twice, as LSA's range finder ends: an orthonormal basis of y's columns,
    as Householder QR gives, and Householder QR itself when y's columns are dependent."""
    from chunkeval.retrieval.lexical import _orthonormal
    rng = np.random.default_rng(0)
    u, _ = np.linalg.qr(rng.normal(size=(2000, 40)))
    v, _ = np.linalg.qr(rng.normal(size=(40, 40)))
    y = (u * np.logspace(0, 3, 40) @ v.T).astype(dtype)  # condition 1e3, columns mixed
    eps = np.finfo(dtype).eps
    for cols in (y, np.hstack([y[:, :20], y[:, :20]])):  # the second is rank-deficient
        q = _orthonormal(cols)
        assert q.shape == cols.shape and q.dtype == dtype
        assert np.abs(q.T @ q - np.eye(40)).max() < 1e3 * eps
        # every column of y lies in the span of q
        residual = cols - q @ (q.T @ cols)
        assert np.linalg.norm(residual) < 1e3 * eps * np.linalg.norm(cols)


@pytest.mark.parametrize("workers, cores, threads", [
    (None, 2, 2),  # a process alone: both cores
    ("2", 2, 1),  # pytest -n 2: a core each
    ("2", 8, 2),  # never more than the encoder's THREADS
    ("4", 2, 1),  # at least one
])
def test_the_encoder_takes_its_share_of_the_cores(monkeypatch, workers, cores, threads):
    from chunkeval.retrieval import neural
    if workers is None:
        monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
    else:
        monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", workers)
    monkeypatch.setattr(neural.os, "sched_getaffinity", lambda pid: set(range(cores)),
                        raising=False)
    monkeypatch.setattr(neural.os, "cpu_count", lambda: cores)
    assert neural._threads() == threads
