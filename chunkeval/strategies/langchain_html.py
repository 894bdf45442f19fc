"""LangChain's HTML splitters, run on clean HTML rendered from the document's blocks.

Both splitters rewrite text (cells lose their " | ", whitespace is collapsed, the header
splitter joins lines with "  \\n", the semantic splitter drops the text of the headings it
splits on), so their chunks are not slices: `text` is LangChain's output unchanged and
`[start, end)` is where that text sits in the source, found like this:

1. Compare on a key that ignores whitespace, and in the source also the " | " between
   table cells (the HTML has cells instead) and the text the splitter drops: the
   output's key is searched in the document's key from a cursor that only moves
   forward, and the span runs from the first to the last matched source char.
2. If the output's key is not found whole (LangChain added or reordered text, e.g. a
   preserved-element placeholder cut in two), its 8-char shingles are looked up after
   the cursor and the span covers the densest cluster of them.
3. If nothing matches at all the chunk gets an empty span at the cursor.

What they keep: the header splitter keeps every character's text (its headings become
chunks of their own); the semantic splitter keeps everything except the h2/h3 headings
it splits on (they only go to its metadata), recorded as params["drops"].
"""

from __future__ import annotations

import html
import importlib.util
import warnings
from functools import lru_cache

from ..model import Chunk, Document, TABLE_CELL_SEP
from .registry import Strategy

HEADERS = [("h2", "h2"), ("h3", "h3")]
SEMANTIC_SIZE = 800
SEMANTIC_SEPARATORS = ["\n\n", "\n", "。", "、", " ", ""]
PRESERVED = ["table", "ul", "ol", "pre", "dl"]
SHINGLE = 8
SEMANTIC_DROPS = ("heading2", "heading3")  # the headings it splits on go to metadata only

# Every code point str.isspace() accepts (all of them lie below U+3001).
_SPACES = [c for c in range(0x3001) if chr(c).isspace()]

_TAGS = {"heading1": "h1", "heading2": "h2", "heading3": "h3", "heading4": "h4",
         "paragraph": "p", "pre": "pre", "other": "div"}


def render_html(doc: Document) -> str:
    """The document's blocks as plain HTML: the same cleaned text the other strategies see."""
    out = ["<html><body>"]
    in_list = False
    for block in doc.blocks:
        text = doc.block_text(block)
        if block.kind == "item":
            if not in_list:
                out.append("<ul>")
                in_list = True
            out.append(f"<li>{html.escape(text, quote=False)}</li>")
            continue
        if in_list:
            out.append("</ul>")
            in_list = False
        if block.kind == "table":
            rows = [doc.text[s:e] for s, e in block.rows] or text.split("\n")
            out.append("<table>")
            for i, row in enumerate(rows):
                cell = "th" if i < block.header_rows else "td"
                cells = "".join(f"<{cell}>{html.escape(c, quote=False)}</{cell}>"
                                for c in row.split(TABLE_CELL_SEP))
                out.append(f"<tr>{cells}</tr>")
            out.append("</table>")
        elif block.kind == "dl":
            lines = "".join(f"<dd>{html.escape(line, quote=False)}</dd>" for line in text.split("\n"))
            out.append(f"<dl>{lines}</dl>")
        else:
            tag = _TAGS.get(block.kind, "div")
            out.append(f"<{tag}>{html.escape(text, quote=False)}</{tag}>")
    if in_list:
        out.append("</ul>")
    out.append("</body></html>")
    return "\n".join(out)


def _unseen(doc: Document, drops: tuple[str, ...]) -> set[int]:
    """Offsets a splitter's output cannot contain: the "|" that join table cells (the
    rendered HTML has cells instead) and the blocks of the kinds it drops."""
    out = set()
    for b in doc.blocks:
        if b.kind in drops:
            out.update(range(b.start, b.end))
        for s, e in b.rows if b.kind == "table" else ():
            pos = s
            for cell in doc.text[s:e].split(TABLE_CELL_SEP)[:-1]:
                pos += len(cell)
                out.add(pos + 1)
                pos += len(TABLE_CELL_SEP)
    return out


def _keyed(text: str, skip: set[int] = frozenset()) -> tuple[str, list[int]]:
    """The text without whitespace (and the offsets in `skip`), and each kept char's offset.

    Done on code point arrays: a Python loop over every character was a third of these
    strategies' time. (numpy is imported here: registering these strategies, as every
    session does, needs none.)"""
    import numpy as np

    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    keep = ~np.isin(codes, _SPACES)
    if skip:
        drop = np.fromiter(skip, dtype=np.int64, count=len(skip))
        keep[drop[drop < len(keep)]] = False
    pos = np.flatnonzero(keep)
    return codes[pos].tobytes().decode("utf-32-le", "surrogatepass"), pos.tolist()


def map_spans(doc: Document, texts: list[str], drops: tuple[str, ...] = ()) -> list[tuple[int, int]]:
    """A source span for each rewritten output text, in order (see the module docstring)."""
    key, pos = _keyed(doc.text, _unseen(doc, drops))
    n = len(key)
    cursor = 0  # in key coordinates
    spans = []

    def at(k: int) -> int:  # source offset of key position k (k may be n)
        return pos[k] if k < n else len(doc.text)

    for text in texts:
        # the output's key alone, without offsets: str.split() drops exactly the
        # characters str.isspace() accepts, as _keyed does, at a fraction of its cost on
        # short texts
        out = "".join(text.split())
        if not out:
            spans.append((at(cursor), at(cursor)))
            continue
        k = key.find(out, cursor)
        if k != -1:
            lo, hi = k, k + len(out)
        else:
            lo, hi = _best_cluster(key, out, cursor)
        if lo == hi:
            spans.append((at(cursor), at(cursor)))
            continue
        spans.append((pos[lo], pos[hi - 1] + 1))
        cursor = max(cursor, hi)
    return spans


def _best_cluster(key: str, out: str, cursor: int) -> tuple[int, int]:
    shingles = {out[i:i + SHINGLE] for i in range(max(1, len(out) - SHINGLE + 1))}
    anchors = sorted(a for a in (key.find(s, cursor) for s in shingles) if a != -1)
    if not anchors:
        return cursor, cursor
    width = len(out) + SHINGLE
    best, best_i, best_j = 0, 0, 0
    j = 0
    for i in range(len(anchors)):
        while j < len(anchors) and anchors[j] - anchors[i] <= width:
            j += 1
        if j - i > best:
            best, best_i, best_j = j - i, i, j
    lo = anchors[best_i]
    hi = min(len(key), anchors[best_j - 1] + min(SHINGLE, len(out)))
    return lo, hi


# An extra: LangChain's splitters bring langchain-core and LangSmith, whose pytest plugin
# every pytest run of a project would then load, whether it runs these two or not.
INSTALL = "pip install 'chunkeval[langchain]' (the langchain-text-splitters package)"


def installed() -> bool:
    return importlib.util.find_spec("langchain_text_splitters") is not None


@lru_cache(maxsize=None)
def header_splitter():
    from langchain_text_splitters import HTMLHeaderTextSplitter
    return HTMLHeaderTextSplitter(headers_to_split_on=HEADERS)


@lru_cache(maxsize=None)
def semantic_splitter(size: int = SEMANTIC_SIZE):
    from langchain_text_splitters import HTMLSemanticPreservingSplitter
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # it is marked beta; the warning says nothing new here
        return HTMLSemanticPreservingSplitter(
            headers_to_split_on=HEADERS, max_chunk_size=size, chunk_overlap=0,
            separators=SEMANTIC_SEPARATORS, keep_separator="end",
            elements_to_preserve=PRESERVED)


def _chunks(doc: Document, texts: list[str], drops: tuple[str, ...] = ()) -> list[Chunk]:
    return [Chunk(doc.id, s, e, t) for t, (s, e) in zip(texts, map_spans(doc, texts, drops))]


def lc_header_chunks(doc: Document) -> list[Chunk]:
    if not doc.blocks:
        return []
    return _chunks(doc, [d.page_content for d in header_splitter().split_text(render_html(doc))])


def lc_semantic_chunks(doc: Document, size: int = SEMANTIC_SIZE) -> list[Chunk]:
    if not doc.blocks:
        return []
    splitter = semantic_splitter(size)
    return _chunks(doc, [d.page_content for d in splitter.split_text(render_html(doc))],
                   SEMANTIC_DROPS)


def lc_html_header() -> Strategy:
    return Strategy("lc-html-header", "langchain-html", lc_header_chunks,
                    {"headers": "h2,h3", "drops": []}, slices=False)


def lc_html_semantic(size: int = SEMANTIC_SIZE) -> Strategy:
    return Strategy("lc-html-semantic", "langchain-html", lambda doc: lc_semantic_chunks(doc, size),
                    {"headers": "h2,h3", "max_chunk_size": size, "preserved": PRESERVED,
                     "drops": list(SEMANTIC_DROPS)}, slices=False)
