"""An HTML page's tree -> Parts: the walk that cuts the text into ordered blocks (heading,
paragraph, item, table, pre, dl, other) with the heading path in force, and the whitespace
rule the text is read with."""

from __future__ import annotations

import re
from contextlib import contextmanager

from ..model import TABLE_CELL_SEP, Part, heading_path

# Never text, whatever the drop selectors say.
_NOT_TEXT = {"head", "title", "script", "style", "template", "meta", "link"}
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 4, "h6": 4}
_LISTS = {"ul", "ol", "menu", "dir"}
# Elements that end a run of text: what is inside them is a block of its own or part of one.
_BLOCK_TAGS = {
    "address", "article", "aside", "blockquote", "body", "center", "details", "dialog",
    "div", "fieldset", "figcaption", "figure", "footer", "form", "header", "hgroup", "hr",
    "html", "legend", "main", "p", "section", "summary", "caption", "tr", "td", "th",
    "thead", "tbody", "tfoot", "li", "dt", "dd",
} | set(_HEADINGS) | _LISTS | {"dl", "table", "pre"}
# Containers whose loose text reads as prose.
_PROSE_CLASSES = {
    "note", "tip", "warning", "caution", "important", "admonition", "attention", "danger",
    "error", "hint", "seealso", "footnote", "footnotes", "sidebar", "topic",
}
# DocBook draws admonitions with a layout table (icon cell, title cell, body cell).
_ADMONITION_CLASSES = _PROSE_CLASSES - {"footnote", "footnotes", "sidebar", "topic"}

_CJK = (r"\u2e80-\u2fdf\u3001-\u303f\u3040-\u30ff\u3100-\u312f\u31f0-\u31ff\u3400-\u4dbf"
        r"\u4e00-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0003ffff")
_CJK_RE = re.compile(f"[{_CJK}]")
# A break the markup made (<br>, a block edge inside flattened text): always a space.
BREAK = "\x1f"
_WS_RE = re.compile(r"[ \t\n\f\v\xa0\x1f]+")


# A whitespace run holding a line break and no BREAK, between two CJK characters.
_CJK_WRAP_RE = re.compile(f"(?<=[{_CJK}])[ \\t\\f\\v\\xa0]*\\n[ \\t\\n\\f\\v\\xa0]*(?=[{_CJK}])")


def normalize(text: str) -> str:
    """Collapse whitespace to one space, but drop a line break between two CJK characters:
    DocBook wraps Japanese lines inside <p>, and Japanese has no spaces between words.
    (Two substitutions without a Python callback: a callback per whitespace run made this
    the slowest step of parsing a large page.)"""
    return _WS_RE.sub(" ", _CJK_WRAP_RE.sub("", text)).strip()


# Control characters: libxml2 refuses them, and BREAK must be ours alone.
CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _classes(el) -> set[str]:
    return set((el.get("class") or "").split())


def _gather(el, out: list[str], verbatim: bool = False) -> None:
    """All text under `el` (not its tail); block elements and <br> separate words."""
    if el.text:
        out.append(el.text)
    for child in el:
        tag = child.tag if isinstance(child.tag, str) else None
        if tag == "br":
            out.append("\n" if verbatim else BREAK)
        elif tag is not None and tag not in _NOT_TEXT:
            block = tag in _BLOCK_TAGS
            if block and not verbatim:
                out.append(BREAK)
            _gather(child, out, verbatim)
            if block and not verbatim:
                out.append(BREAK)
        if child.tail:
            out.append(child.tail)


def raw_text(el, verbatim: bool = False) -> str:
    out: list[str] = []
    _gather(el, out, verbatim)
    return "".join(out)


def text_of(el) -> str:
    return normalize(raw_text(el))


def _has_blocks(el) -> bool:
    return any(isinstance(d.tag, str) and d.tag in _BLOCK_TAGS for d in el.iterdescendants())


class Walker:
    """Walks the body once, keeping the heading path in force and a buffer of running text.

    A context is the block being filled: its kind, whether <p>/<div> inside it merge into
    it (list items, definitions, paragraphs) or start blocks of their own (containers), and
    whether tables in it are layout (admonitions) rather than data.
    """

    def __init__(self, title: str):
        self.parts: list[Part] = []
        self.path = [title, "", ""]
        self.buf: list[str] = []
        self.kind, self.merge, self.prefix, self.layout = "other", False, None, False

    def emit(self, kind: str, text: str, rows: tuple[str, ...] = (), header_rows: int = 0):
        self.parts.append(Part(kind, text, tuple(self.path), rows, header_rows))

    def flush(self) -> None:
        text = normalize("".join(self.buf))
        self.buf.clear()
        if self.prefix is not None:
            text = define(self.prefix, text)
            self.prefix = None
        if text:
            self.emit(self.kind, text)

    @contextmanager
    def context(self, kind: str, merge: bool, prefix: str | None = None, layout: bool = False):
        self.flush()
        saved = (self.buf, self.kind, self.merge, self.prefix, self.layout)
        self.buf, self.kind, self.merge, self.prefix, self.layout = [], kind, merge, prefix, layout
        try:
            yield
        finally:
            self.flush()
            self.buf, self.kind, self.merge, self.prefix, self.layout = saved

    def walk(self, el) -> None:
        if el.text:
            self.buf.append(el.text)
        for child in el:
            if isinstance(child.tag, str):
                self.visit(child)
            if child.tail:
                self.buf.append(child.tail)

    def visit(self, el) -> None:
        tag = el.tag
        if tag in _NOT_TEXT:
            return
        if tag in _HEADINGS:
            self.heading(el, _HEADINGS[tag])
        elif tag == "pre":
            self.flush()
            self.pre(el)
        elif tag == "table":
            self.flush()
            if self.layout:
                self.layout_table(el)
            else:
                self.table(el)
        elif tag in _LISTS:
            self.list(el)
        elif tag == "dl":
            self.dl(el)
        elif tag == "li":
            with self.context("item", True):
                self.walk(el)
        elif tag in ("dt", "dd"):
            with self.context("dl", True):
                self.walk(el)
        elif tag in _BLOCK_TAGS:
            classes = _classes(el)
            if self.merge:
                self.buf.append(BREAK)
                self.walk(el)
                self.buf.append(BREAK)
            elif tag == "p" or "footnote" in classes:
                with self.context("paragraph", True):  # a footnote's label joins its text
                    self.walk(el)
            else:
                prose = tag == "blockquote" or bool(classes & _PROSE_CLASSES)
                with self.context("paragraph" if prose else self.kind, False,
                                  layout=bool(classes & _ADMONITION_CLASSES)):
                    self.walk(el)
        elif tag == "br":
            self.buf.append(BREAK)
        elif _has_blocks(el):
            self.walk(el)  # an inline element wrapped around blocks: see through it
        else:
            self.buf.append(raw_text(el))  # normalised with its neighbours

    def heading(self, el, level: int) -> None:
        text = text_of(el)
        if not text:
            return
        self.flush()
        self.path = heading_path(self.path, level, text)
        self.emit(f"heading{level}", text)

    def pre(self, el) -> None:
        text = CONTROL_RE.sub(" ", raw_text(el, verbatim=True))  # from &#x1f; and the like
        text = text[1:] if text.startswith("\n") else text
        text = text[:-1] if text.endswith("\n") else text
        if text.strip():
            self.emit("pre", text)

    def table(self, el) -> None:
        for caption in el.findall("caption"):
            with self.context("paragraph", True):
                self.walk(caption)
        rows, header_rows, leading = [], 0, True
        for tr, in_head in _table_rows(el):
            cells = [c for c in tr if c.tag in ("td", "th")]
            texts = [text_of(c) for c in cells]
            if not any(texts):
                continue
            rows.append(TABLE_CELL_SEP.join(texts))
            leading = leading and (in_head or all(c.tag == "th" for c in cells))
            header_rows += leading
        if rows:
            self.emit("table", "\n".join(rows), tuple(rows), header_rows)

    def layout_table(self, el) -> None:
        """An admonition's table is layout: each cell's content is prose."""
        for tr, _ in _table_rows(el):
            for cell in tr:
                if cell.tag in ("td", "th"):
                    with self.context("paragraph", False):
                        self.walk(cell)

    def list(self, el) -> None:
        self.flush()
        with self.context("item", True):
            self.walk(el)  # each <li> opens its own item context

    def dl(self, el) -> None:
        self.flush()
        terms: list[str] = []
        for child in _dl_children(el):
            if child.tag == "dt":
                terms.append(text_of(child))
            elif child.tag == "dd":
                prefix = ", ".join(t for t in terms if t) or None
                terms = []
                with self.context("dl", True, prefix=prefix):
                    self.walk(child)
            else:
                with self.context("dl", True):
                    self.visit(child)
        if any(terms):
            self.emit("dl", ", ".join(t for t in terms if t))


def _table_rows(el) -> list[tuple]:
    """(tr, in_thead) of this table (not of tables nested in its cells), in reading
    order: thead, then tbody and bare rows, then tfoot."""
    head, body, foot = [], [], []
    for child in el:
        if child.tag == "thead":
            head += [(tr, True) for tr in child if tr.tag == "tr"]
        elif child.tag == "tbody":
            body += [(tr, False) for tr in child if tr.tag == "tr"]
        elif child.tag == "tfoot":
            foot += [(tr, False) for tr in child if tr.tag == "tr"]
        elif child.tag == "tr":
            body.append((child, False))
    return head + body + foot


def define(term: str, definition: str) -> str:
    """"term: definition", without doubling a colon the term already ends with."""
    if not definition:
        return term
    return f"{term} {definition}" if term.endswith((":", "：")) else f"{term}: {definition}"


def _dl_children(el):
    """dt/dd children of a <dl>, looking through <div> groups (allowed by HTML)."""
    for child in el:
        if not isinstance(child.tag, str):
            continue
        if child.tag == "div" and any(c.tag in ("dt", "dd") for c in child):
            yield from _dl_children(child)
        else:
            yield child
