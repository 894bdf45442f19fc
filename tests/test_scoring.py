"""The fast scoring path (shingle ids and positions) gives the numbers of the set-based
reference (`score(..., exact_sets=True)`): on hand-made documents and on the default corpus."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from chunkeval.scoring import fast, sets
from chunkeval.scoring import Scores, score
from chunkeval.model import Chunk, Corpus, Document, Part, Query, QuerySet
from helpers import one_per_family

FIELDS = ("coverage", "budget_coverage", "precision", "iou", "rr", "ndcg")


def assert_close(actual, desired, err_msg: str) -> None:
    """np.testing.assert_allclose(actual, desired, rtol=0, atol=1e-9), whose report (and its
    own cost, larger than the check's on the short arrays compared here thousands of times)
    is made only for arrays that do not pass the same test done plainly first."""
    a, d = np.asarray(actual), np.asarray(desired)
    if a.shape == d.shape and bool(np.all(np.abs(a - d) <= 1e-9)):
        return
    np.testing.assert_allclose(actual, desired, rtol=0, atol=1e-9, err_msg=err_msg)


def assert_same(fast: Scores, ref: Scores) -> None:
    assert fast.query_ids == ref.query_ids
    for name in FIELDS:
        assert_close(getattr(fast, name), getattr(ref, name), err_msg=name)
    assert set(fast.curve) == set(ref.curve)
    for b in ref.curve:
        assert_close(fast.curve[b], ref.curve[b], err_msg=f"curve {b}")
    assert fast.doc_hit.tolist() == ref.doc_hit.tolist()
    assert fast.complete.tolist() == ref.complete.tolist()
    assert fast.retrieved == ref.retrieved
    assert fast.settings == ref.settings


def both(qs, handed, ranking, **kw) -> Scores:
    """Score with both paths, check they agree, return the fast one."""
    ranking = np.asarray(ranking, dtype=np.int64)
    fast = score(qs, handed, ranking, **kw)
    assert_same(fast, score(qs, handed, ranking, exact_sets=True, **kw))
    return fast


def rows(*rs, width=None):
    width = width or max(len(r) for r in rs) + 1
    out = np.full((len(rs), width), -1, dtype=np.int64)
    for i, r in enumerate(rs):
        out[i, :len(r)] = r
    return out


def sliced(doc: Document, start: int, end: int) -> Chunk:
    return Chunk(doc.id, start, end, doc.text[start:end])


A = Document.from_parts("a", "A", [
    Part("heading1", "Alpha manual"),
    Part("paragraph", "repeat me please. repeat me please. tail text here"),
    Part("paragraph", "spa ced ou t wor ds with\ttabs and\nnew lines"),
    Part("paragraph", "xyz marks a short answer; the end of alpha"),
])
B = Document.from_parts("b", "B", [
    Part("heading1", "Beta manual"),
    Part("paragraph", "repeat me please. something else entirely"),
])
VIEW = Corpus("t", (A, B))


def query(i, doc, *golds):
    return Query(f"q{i}", "question?", doc, "\n".join(golds), answers=golds if len(golds) > 1 else ())


def find(doc, text):
    at = doc.text.index(text)
    return at, at + len(text)


def test_hand_made_cases_agree_and_hold_the_worked_values():
    s_rep, e_rep = find(A, "repeat me please. repeat me please.")
    s_sp, e_sp = find(A, "spa ced ou t wor ds with\ttabs")
    handed = [
        sliced(A, 0, s_rep + 18),                # 0: heading and the first "repeat me please."
        sliced(A, s_rep + 18, e_rep + 10),       # 1: the second one and a bit of the tail
        sliced(A, s_sp, s_sp + 14),              # 2: whitespace inside its shingles
        sliced(A, s_sp + 10, e_sp),              # 3: overlaps 2
        sliced(A, *find(A, "xyz marks")),        # 4
        sliced(B, 0, len(B.text)),               # 5: another document, same sentence
        Chunk("a", s_sp, e_sp, "Alpha manual\n" + A.text[s_sp:e_sp]),  # 6: rewritten
        sliced(A, *find(A, "xyz")),              # 7: shorter than a shingle
        Chunk("zz", 0, 20, "repeat me please. zz"),  # 8: a document outside the view
        sliced(A, 0, len(A.text)),               # 9: a parent holding everything
    ]
    qs = QuerySet("t", (
        query(0, "a", "repeat me please."),
        query(1, "a", "spa ced ou t wor ds with\ttabs"),
        query(2, "a", "xyz"),
        query(3, "a", "repeat me please. tail", "xyz marks a short"),
        query(4, "b", "repeat me please. something"),
        query(5, "a", "not in the document at all"),
        query(6, "zz", "repeat me please."),
    ), VIEW)
    ranking = rows([1, 0], [2, 3], [7, 4], [0, 1, 4], [1, 0, 5], [9, 0], [8, 1], width=12)
    s = both(qs, handed, ranking, k=2, budgets=(10, 40, 100))
    assert s.coverage[0] == 1.0  # the second copy is enough
    # two chunks hold it between them, but not the shingles across their short overlap
    assert 0.5 < s.coverage[1] < 1.0
    assert s.coverage[2] == 1.0  # a short gold inside a short chunk
    assert s.coverage[4] == 0.0 and not s.doc_hit[4]  # chunk 5 is not in its top 2
    assert s.budget_coverage[4] > 0  # but within the budget
    assert s.coverage[5] == 0.0 and s.precision[5] == 0.0
    assert s.coverage[6] == 1.0  # the outside document is the gold one
    # every pair of chunks, in both orders, for every query
    pairs = [[i, j] for i in range(len(handed)) for j in range(len(handed)) if i != j]
    for qi in range(len(qs)):
        one = QuerySet("t", (qs.queries[qi],), VIEW)
        for pair in pairs:
            both(one, handed, rows(pair), k=1, budget=30, budgets=(30, 60))
            both(one, handed, rows(pair), k=2)


def test_parent_child_rankings_agree():
    # parents are slices and one is rewritten; the ranking holds each parent once
    s_sp, e_sp = find(A, "spa ced ou t wor ds with\ttabs and\nnew lines")
    parents = [sliced(A, 0, s_sp), sliced(A, s_sp, len(A.text)),
               Chunk("a", s_sp, len(A.text), "## " + A.text[s_sp:]), sliced(B, 0, len(B.text))]
    qs = QuerySet("t", (query(0, "a", "tail text here spa ced"), query(1, "a", "xyz marks"),
                        query(2, "b", "something else")), VIEW)
    for ranking in ([0, 1, 2, 3], [3, 2, 1, 0], [2], [1, 3]):
        both(qs, parents, rows(ranking, ranking, ranking), k=2, budgets=(50, 100, 200))


@pytest.mark.parametrize("collide", [False, True], ids=["hashes", "colliding-hashes"])
def test_small_batches_and_colliding_hashes_agree(monkeypatch, collide):
    """A vocabulary merged a few shingles at a time, chunks and pairs looked up a few at a
    time, and a hash under which different shingles meet (the exact keys take over); the
    reference counts every top k's union as it does long chunks', by their intersections."""
    monkeypatch.setattr(sets, "LONG", 0)
    monkeypatch.setattr(fast, "UNION_BATCH", 5)
    monkeypatch.setattr(fast, "PAIR_BLOCK", 7)
    if collide:
        hash_ = fast._hash
        monkeypatch.setattr(fast, "_hash", lambda rows: hash_(rows) % np.uint64(3))
    VIEW.__dict__.pop("_chunkeval_scoring", None)  # the view's vocabulary, built again
    try:
        test_hand_made_cases_agree_and_hold_the_worked_values()
        test_parent_child_rankings_agree()
        assert (VIEW.__dict__["_chunkeval_scoring"][("view", 8)].hash is None) == collide
    finally:
        VIEW.__dict__.pop("_chunkeval_scoring", None)


def test_no_chunks_retrieve_nothing():
    """A strategy with no output (an empty index ranks -1 everywhere) scores 0 throughout."""
    qs = QuerySet("t", (query(0, "a", "manual repeat me"), query(1, "b", "Beta")), VIEW)
    scores = both(qs, [], rows([-1, -1, -1], [-1, -1, -1]))
    assert not scores.coverage.any() and not scores.doc_hit.any()
    assert scores.retrieved == [[], []]
    # an empty ranking may come as floats (numpy's default); chunk ids as floats may not
    for exact in (False, True):
        assert score(qs, [], np.zeros((2, 0)), exact_sets=exact).retrieved == [[], []]
    with pytest.raises(ValueError, match="integer chunk ids"):
        score(qs, [sliced(A, 0, 10)], np.zeros((2, 1)))


def test_shingle_size_other_than_eight():
    handed = [sliced(A, 0, 40), sliced(A, 30, 90), sliced(B, 0, 25)]
    qs = QuerySet("t", (query(0, "a", "manual repeat me"), query(1, "b", "Beta")), VIEW)
    for n in (1, 3, 8, 20):
        both(qs, handed, rows([0, 1, 2], [2, 1, 0]), k=2, shingle=n)


@given(st.data())
def test_random_documents_chunks_and_golds_agree(data):
    alphabet = st.sampled_from("ab cd\n")  # few letters: shingles repeat
    texts = [data.draw(st.text(alphabet, min_size=1, max_size=60)) for _ in range(2)]
    docs = tuple(Document.from_parts(f"d{i}", "", [Part("paragraph", t)])
                 for i, t in enumerate(texts) if t)
    if not docs:
        return
    view = Corpus("r", docs)
    handed = []
    for _ in range(data.draw(st.integers(1, 8))):
        doc = data.draw(st.sampled_from(docs))
        start = data.draw(st.integers(0, len(doc.text)))
        end = data.draw(st.integers(start, len(doc.text)))
        chunk = sliced(doc, start, end)
        if data.draw(st.booleans()):
            chunk = Chunk(doc.id, start, end, data.draw(st.text(alphabet, max_size=5)) + chunk.text)
        handed.append(chunk)
    queries = []
    for qi in range(3):
        doc = data.draw(st.sampled_from(docs))
        golds = []
        for _ in range(data.draw(st.integers(1, 2))):
            start = data.draw(st.integers(0, len(doc.text)))
            golds.append(doc.text[start:data.draw(st.integers(start, len(doc.text)))] or "ab")
        queries.append(query(qi, doc.id, *golds))
    qs = QuerySet("r", tuple(queries), view)
    ranked = []
    for _ in queries:  # any prefix of a permutation, with padding anywhere in the row
        row = data.draw(st.permutations(range(len(handed))))
        row = row[:data.draw(st.integers(0, len(row)))]
        for _ in range(data.draw(st.integers(0, 2))):
            row.insert(data.draw(st.integers(0, len(row))), -1)
        ranked.append(row)
    ranking = rows(*ranked)
    both(qs, handed, ranking, k=data.draw(st.integers(1, 4)), budget=20, budgets=(5, 20, 40),
         shingle=data.draw(st.sampled_from((3, 8))))


# -- the default corpus ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def evaluation():
    from chunkeval.corpus import load_corpus
    from chunkeval.evaluate import Evaluation
    return Evaluation(load_corpus("debian-ja"))


def _strategy_names():
    """One strategy of each family (every one under CHUNKEVAL_EXHAUSTIVE=1): the paths part
    ways on how chunks meet, which the family decides; the hand-made cases and the property
    above reach the odd cases."""
    from chunkeval import strategies
    return one_per_family(strategies.names())


@pytest.mark.corpus
@pytest.mark.parametrize("strategy", _strategy_names())
def test_default_corpus_fast_scores_equal_the_reference(evaluation, strategy):
    rng = np.random.default_rng(0)
    for spec in evaluation.query_specs:
        qs = evaluation.query_set(spec)
        chunked = evaluation.chunked(strategy, spec)
        bm25, _ = evaluation.ranking(strategy, "bm25", spec)
        # random rankings over the same chunks reach deep and odd cases BM25 rarely does
        random = np.stack([rng.permutation(len(chunked.handed))[:bm25.shape[1]]
                           for _ in range(len(qs))])
        shingles: dict = {}  # the reference's, shared by its two calls
        for ranking in (random, bm25):
            fast = score(qs, chunked.handed, ranking, chunk_index=chunked.scoring)
            ref = score(qs, chunked.handed, ranking, chunk_shingles=shingles, exact_sets=True)
            assert_same(fast, ref)
        assert fast.coverage.any()  # BM25's: the comparison is not of empty scores
        evaluation.release(strategy, spec)
