"""Generated documents for property tests of splitters, and the invariant check as an assertion.

chunkeval's own invariant items use these; a project can use them in its own hypothesis tests:

    from hypothesis import given
    from chunkeval.testing import assert_keeps_invariants, documents

    @given(doc=documents())
    def test_my_splitter(doc):
        assert_keeps_invariants(my_strategy, doc)

A generated document mixes Japanese and English words, headings of levels 1-4, paragraphs,
list items, tables (with and without header rows, one row sometimes longer than any size
limit), `pre` blocks with blank and indented lines, and definition lists.
"""

from __future__ import annotations

from hypothesis import strategies as st

from .invariants import check
from .model import Document, Part
from .strategies import Strategy

JAPANESE = "あいうえおかきくけこさしすせそアイウエオパッケージ設定日本語版問題解決。、「」・ー"
ENGLISH = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,:;()-_/<>&\"'"
SAFE = JAPANESE + ENGLISH + "|*#$%="

words = st.one_of(
    st.text(alphabet=ENGLISH, min_size=1, max_size=12),
    st.text(alphabet=JAPANESE, min_size=1, max_size=30),
    st.text(alphabet=SAFE, min_size=1, max_size=20),
    st.integers(60, 900).map(lambda n: "x" * n),  # a long word with nowhere to break
)


@st.composite
def lines(draw, max_words=12, sep=st.sampled_from([" ", "", "。", "、"])):
    ws = draw(st.lists(words, min_size=1, max_size=max_words))
    out = ws[0]
    for w in ws[1:]:
        out += draw(sep) + w
    return out


paragraphs = st.lists(lines(), min_size=1, max_size=4).map("\n".join)


@st.composite
def tables(draw):
    cols = draw(st.integers(1, 4))
    cell = st.text(alphabet=SAFE + " ", min_size=1, max_size=60).map(str.strip).filter(bool)
    row = st.lists(cell, min_size=cols, max_size=cols).map(" | ".join)
    rows = draw(st.lists(row, min_size=1, max_size=30))
    if draw(st.booleans()):
        rows.append(draw(words) * 3)  # one row longer than most limits
    header_rows = draw(st.integers(0, min(2, len(rows))))
    return tuple(rows), header_rows


pre_texts = st.lists(
    st.one_of(st.just(""), lines(max_words=8).map(lambda s: "    " + s), lines(max_words=8)),
    min_size=1, max_size=40,
).map("\n".join).filter(lambda s: s.strip())


@st.composite
def documents(draw):
    title = draw(st.text(alphabet=JAPANESE + ENGLISH, min_size=1, max_size=20))
    h2 = h3 = ""
    parts = []
    if draw(st.booleans()):
        parts.append(Part("heading1", title, (title, "", "")))
    kinds = st.sampled_from(["heading2", "heading3", "paragraph", "paragraph", "item",
                             "table", "pre", "dl", "other", "heading4"])
    for kind in draw(st.lists(kinds, max_size=25)):
        if kind in ("heading2", "heading3"):
            text = draw(lines(max_words=4))
            if kind == "heading2":
                h2, h3 = text, ""
            else:
                h3 = text
            parts.append(Part(kind, text, (title, h2, h3)))
        elif kind == "table":
            rows, header_rows = draw(tables())
            parts.append(Part("table", "\n".join(rows), (title, h2, h3), rows, header_rows))
        elif kind == "pre":
            parts.append(Part("pre", draw(pre_texts), (title, h2, h3)))
        elif kind == "dl":
            parts.append(Part("dl", draw(st.lists(lines(max_words=5), min_size=2, max_size=6)
                                         .map("\n".join)), (title, h2, h3)))
        else:
            parts.append(Part(kind, draw(paragraphs), (title, h2, h3)))
    return Document.from_parts("generated.html", title, parts)


def assert_keeps_invariants(strategy: Strategy, doc: Document) -> None:
    """Fail naming the strategy, each broken property and the offending chunks."""
    violations = check(strategy, doc)
    assert violations == [], "\n".join(str(v) for v in violations)
