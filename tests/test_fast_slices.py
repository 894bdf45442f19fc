"""The fast scoring path takes a chunk's shingle ids from its document's when the chunk is the
slice of the document at its span: the same ids as looking its text up, whatever whitespace
lies around and inside it."""

import numpy as np

from chunkeval.model import Chunk, Corpus, Document, Part, Query, QuerySet
from chunkeval.scoring import score
from chunkeval.scoring.fast import _Handed, _ViewIndex

# str.split() whitespace of several kinds (ideographic, no-break, the ASCII separators
# \x1c-\x1f), and a zero-width space, which is no whitespace to it
DOC = Document.from_parts("d", "D", [
    Part("heading1", "Odd\u3000spaces here"),
    Part("paragraph", "one\u00a0two\x1cthree\x1ffour\tfive\nsix  seven\u200beight nine"),
    Part("paragraph", "短い 日本語の\u3000文章 です。 ten eleven"),
])
OTHER = Document.from_parts("e", "E", [Part("paragraph", "seven eight nine ten, elsewhere")])
VIEW = Corpus("t", (DOC, OTHER))


def chunks() -> list[Chunk]:
    """Every span of DOC on a grid of offsets (short and empty ones too), a chunk whose text
    is not its span's slice, and one of a document outside the view."""
    n = len(DOC.text)
    out = [Chunk("d", a, b, DOC.text[a:b]) for a in range(0, n, 3) for b in range(a, n + 1, 4)]
    out.append(Chunk("d", 0, 10, "Header | repeated\n" + DOC.text[0:10]))
    out.append(Chunk("x", 0, 12, "seven eight nine"))
    return out


def test_sliced_chunks_have_the_ids_of_their_text_looked_up():
    index = _ViewIndex(VIEW, 5)
    handed = chunks()
    sliced, looked_up = _Handed(index, VIEW, handed), _Handed(index, VIEW, handed)
    sliced.fill(index, handed, range(len(handed)))
    looked_up._fill_looked_up(index, handed, list(range(len(handed))))
    for i in range(len(handed)):
        ids, unknown = sliced.shingles[i]
        want_ids, want_unknown = looked_up.shingles[i]
        assert np.array_equal(ids, want_ids) and unknown == want_unknown, handed[i]


def test_fast_scores_of_sliced_chunks_equal_the_reference():
    handed = chunks()
    queries = tuple(Query(f"q{i}", "question?", "d", gold) for i, gold in enumerate(
        ["three four five six", "日本語の文章", "seven eight nine", "Odd spaces", "ten"]))
    qs = QuerySet("t", queries, VIEW)
    rng = np.random.default_rng(0)
    ranking = np.array([rng.permutation(len(handed))[:40] for _ in queries])
    fast = score(qs, handed, ranking, shingle=5, k=5)
    reference = score(qs, handed, ranking, shingle=5, k=5, exact_sets=True)
    assert [s.to_json() for s in fast.per_query()] == \
        [s.to_json() for s in reference.per_query()]
