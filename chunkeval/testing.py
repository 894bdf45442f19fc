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

# A document is a hundred-odd draws, and the engine spends tens of microseconds on each to
# record, replay and mutate it (and on each strategy it enters), whatever it draws: a
# property test costs what its documents have draws. So the picks of a list (for each word
# of a line, which separator goes before it and which kind of word it is; each pre line's
# kind; each block's kind) are one string of pick characters, uniform over the picks as the
# `integers` they replace, and how many rows or lines a list has is the length of one string
# (the engine sizes a string as it sizes a list); a cell drops its spaces in the row that
# draws it, and every strategy is built once, here.
WORD_KINDS = (
    st.text(alphabet=ENGLISH, min_size=1, max_size=12),
    st.text(alphabet=JAPANESE, min_size=1, max_size=30),
    st.text(alphabet=SAFE, min_size=1, max_size=20),
    st.integers(60, 900).map(lambda n: "x" * n),  # a long word with nowhere to break
)
SEPARATORS = (" ", "", "。", "、")
words = st.one_of(WORD_KINDS)
# pick i: SEPARATORS[i // 4] before a word of WORD_KINDS[i % 4]
_WORD_PICKS = "0123456789abcdef"[:len(SEPARATORS) * len(WORD_KINDS)]


@st.composite
def _line(draw, picks):
    out = []
    for i, pick in enumerate(draw(picks)):
        sep, kind = divmod(_WORD_PICKS.index(pick), len(WORD_KINDS))
        out.append((SEPARATORS[sep] if i else "") + draw(WORD_KINDS[kind]))
    return "".join(out)


_lines: dict[int, st.SearchStrategy[str]] = {}


def lines(max_words=12):
    """1 to `max_words` words, each after a separator (but the first)."""
    if max_words not in _lines:
        _lines[max_words] = _line(st.text(alphabet=_WORD_PICKS, min_size=1, max_size=max_words))
    return _lines[max_words]


def _count(min_size, max_size):
    """How many elements a list gets, as one draw: a string of one repeated character, which
    the engine sizes as it sizes a list."""
    return st.text(alphabet="n", min_size=min_size, max_size=max_size)


@st.composite
def _joined_lines(draw, line, count):
    return "\n".join(draw(line) for _ in draw(count))


paragraphs = _joined_lines(lines(), _count(1, 4))
headings = lines(max_words=4)
definitions = _joined_lines(lines(max_words=5), _count(2, 6))
_cell_text = st.text(alphabet=SAFE + " ", min_size=1, max_size=60)


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


_row_count = _count(1, 30)


@st.composite
def tables(draw):
    cols = draw(st.integers(1, 4))
    rows = [_row(draw, cols) for _ in draw(_row_count)]
    if draw(st.booleans()):
        rows.append(draw(words) * 3)  # one row longer than most limits
    header_rows = draw(st.integers(0, min(2, len(rows))))
    return tuple(rows), header_rows


_tables = tables()
_pre_words = lines(max_words=8)


@st.composite
def _pre_lines(draw, kinds=st.text(alphabet="012", min_size=1, max_size=40)):
    """Lines, each blank (0), indented (1) or flush (2)."""
    return "\n".join("" if k == "0" else ("    " if k == "1" else "") + draw(_pre_words)
                     for k in draw(kinds))


pre_texts = _pre_lines().filter(lambda s: s.strip())

KINDS = ("heading2", "heading3", "paragraph", "paragraph", "item",
         "table", "pre", "dl", "other", "heading4")
_kinds = st.text(alphabet="0123456789"[:len(KINDS)], max_size=25)  # a pick per block
_titles = st.text(alphabet=JAPANESE + ENGLISH, min_size=1, max_size=20)


@st.composite
def documents(draw):
    title = draw(_titles)
    h2 = h3 = ""
    parts = []
    if draw(st.booleans()):
        parts.append(Part("heading1", title, (title, "", "")))
    for kind in (KINDS[int(i)] for i in draw(_kinds)):
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
