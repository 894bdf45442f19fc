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

from hypothesis import reject, strategies as st

from .invariants import check
from .model import Document, Part
from .strategies import Strategy

JAPANESE = "あいうえおかきくけこさしすせそアイウエオパッケージ設定日本語版問題解決。、「」・ー"
ENGLISH = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,:;()-_/<>&\"'"
SAFE = JAPANESE + ENGLISH + "|*#$%="

# A document is a few hundred draws, and the engine spends tens of microseconds on each to
# record, replay and mutate it, whatever it draws: a property test costs what its documents
# have draws. So a word and the separator before it are one pick of `integers` (uniform over
# the pairs, as the `one_of` and `sampled_from` it replaces were over each), a cell drops
# its spaces in the row that draws it, and every strategy is built once, here.
WORD_KINDS = (
    st.text(alphabet=ENGLISH, min_size=1, max_size=12),
    st.text(alphabet=JAPANESE, min_size=1, max_size=30),
    st.text(alphabet=SAFE, min_size=1, max_size=20),
    st.integers(60, 900).map(lambda n: "x" * n),  # a long word with nowhere to break
)
SEPARATORS = (" ", "", "。", "、")
words = st.one_of(WORD_KINDS)
_word_and_separator = st.integers(0, len(SEPARATORS) * len(WORD_KINDS) - 1)


@st.composite
def _word_after(draw):
    """(the separator before it, a word)"""
    sep, kind = divmod(draw(_word_and_separator), len(WORD_KINDS))
    return SEPARATORS[sep], draw(WORD_KINDS[kind])


_words_after = _word_after()


def _joined(pairs):
    return pairs[0][1] + "".join(sep + w for sep, w in pairs[1:])


def lines(max_words=12):
    return st.lists(_words_after, min_size=1, max_size=max_words).map(_joined)


paragraphs = st.lists(lines(), min_size=1, max_size=4).map("\n".join)
headings = lines(max_words=4)
definitions = st.lists(lines(max_words=5), min_size=2, max_size=6).map("\n".join)
_cell_text = st.text(alphabet=SAFE + " ", min_size=1, max_size=60)


@st.composite
def _row(draw, cols):
    """`cols` cells, none empty once stripped of spaces (three tries, as .filter(bool))."""
    cells = []
    for _ in range(cols):
        for _ in range(3):
            cell = draw(_cell_text).strip()
            if cell:
                break
        else:
            reject()
        cells.append(cell)
    return " | ".join(cells)


_rows = [_row(cols) for cols in range(1, 5)]


@st.composite
def tables(draw):
    cols = draw(st.integers(1, 4))
    rows = draw(st.lists(_rows[cols - 1], min_size=1, max_size=30))
    if draw(st.booleans()):
        rows.append(draw(words) * 3)  # one row longer than most limits
    header_rows = draw(st.integers(0, min(2, len(rows))))
    return tuple(rows), header_rows


_tables = tables()
_pre_line_kind = st.integers(0, 2)
_pre_words = lines(max_words=8)


@st.composite
def _pre_line(draw):
    """A blank line, an indented one or a flush one."""
    kind = draw(_pre_line_kind)
    return "" if kind == 0 else ("    " if kind == 1 else "") + draw(_pre_words)


pre_texts = st.lists(_pre_line(), min_size=1, max_size=40).map("\n".join).filter(
    lambda s: s.strip())

KINDS = ("heading2", "heading3", "paragraph", "paragraph", "item",
         "table", "pre", "dl", "other", "heading4")
_kinds = st.lists(st.integers(0, len(KINDS) - 1), max_size=25)
_titles = st.text(alphabet=JAPANESE + ENGLISH, min_size=1, max_size=20)


@st.composite
def documents(draw):
    title = draw(_titles)
    h2 = h3 = ""
    parts = []
    if draw(st.booleans()):
        parts.append(Part("heading1", title, (title, "", "")))
    for kind in (KINDS[i] for i in draw(_kinds)):
        if kind in ("heading2", "heading3"):
            text = draw(headings)
            if kind == "heading2":
                h2, h3 = text, ""
            else:
                h3 = text
            parts.append(Part(kind, text, (title, h2, h3)))
        elif kind == "table":
            rows, header_rows = draw(_tables)
            parts.append(Part("table", "\n".join(rows), (title, h2, h3), rows, header_rows))
        elif kind == "pre":
            parts.append(Part("pre", draw(pre_texts), (title, h2, h3)))
        elif kind == "dl":
            parts.append(Part("dl", draw(definitions), (title, h2, h3)))
        else:
            parts.append(Part(kind, draw(paragraphs), (title, h2, h3)))
    return Document.from_parts("generated.html", title, parts)


def assert_keeps_invariants(strategy: Strategy, doc: Document) -> None:
    """Fail naming the strategy, each broken property and the offending chunks."""
    violations = check(strategy, doc)
    assert violations == [], "\n".join(str(v) for v in violations)
