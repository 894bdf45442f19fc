"""Markdown and plain text -> Document, with blocks pointing into the document's text.

A Markdown document's text is the file as a reader of the rendered page sees it
(rendered.py): the file's text without comments, front matter, link definitions, raw HTML
tags, attribute lists and the markers of includes, containers and directives, and with
Markdown's own markup and code kept (what an LLM would be handed). Document.file_map takes
a file offset to the text's. A plain-text document's text is its file (one run). Either
way a BOM is dropped and line ends become "\\n". A block's `[start, end)` covers its
content: list markers, "#" of headings, ">" before a quote's first line and code fences lie
between blocks, so offsets slice the text exactly and the markup is all that stays outside.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InputError, Problem
from ..model import Block, Document, heading_path
from .html import decode_html
from .rendered import compose, content_tab, expand_snippets, render

if TYPE_CHECKING:  # imported where a file is parsed, as html.py does lxml
    from markdown_it import MarkdownIt

# Bump whenever the output for the same bytes may change: it keys the parse cache.
TEXT_PARSER_VERSION = "4"

_LEVELS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 4, "h6": 4}
_PARAGRAPHS = re.compile(r"\n[ \t]*\n")


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    from markdown_it import MarkdownIt
    from mdit_py_plugins.admon import admon_plugin
    from mdit_py_plugins.front_matter import front_matter_plugin

    md = MarkdownIt("commonmark").enable("table").use(front_matter_plugin).use(admon_plugin)
    md.block.ruler.before("fence", "content_tab", content_tab,
                          {"alt": ["paragraph", "reference", "blockquote", "list"]})
    return md


def _decode(data: bytes, where: str, what: str) -> tuple[str, list[Problem]]:
    if not data.strip():
        raise InputError(where, "empty file")
    if b"\x00" in data and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError(where, f"binary file (contains NUL bytes), not {what}")
    text, problems = decode_html(data, where)  # BOM or UTF-8, then the Japanese fallbacks
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise InputError(where, "no text: the file holds only whitespace")
    return text, problems


class _Lines:
    """Offsets of the text's lines, to turn a token's line map into character spans."""

    def __init__(self, text: str):
        self.text = text
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line(self, i: int) -> str:
        start = self.starts[i]
        end = self.starts[i + 1] - 1 if i + 1 < len(self.starts) else len(self.text)
        return self.text[start:end]

    def span(self, first: int, last: int, content: str) -> tuple[int, int] | None:
        """The span of `content` (a token's text, container prefixes removed) within
        lines first..last (inclusive): from where its first line begins to the end of its
        last line. None when it is blank."""
        rows = [r for r in content.split("\n") if r.strip()]
        if not rows:
            return None
        head, tail = rows[0].strip(), rows[-1].strip()
        i = first
        while i < last and head not in self.line(i):
            i += 1
        line = self.line(i)
        col = line.find(head)
        start = self.starts[i] + max(col, len(line) - len(line.lstrip()))
        j = last
        while j > i and tail not in self.line(j):
            j -= 1
        line = self.line(j)
        col = line.rfind(tail)
        end = self.starts[j] + (col + len(tail) if col >= 0 else len(line.rstrip()))
        return (start, end) if end > start else None


def _table(tokens, i: int, lines: _Lines) -> tuple[Block | None, int, tuple]:
    """The table opening at tokens[i]: one block, one row per line (the delimiter line
    is markup, not a row). Returns the block and the index after table_close."""
    j = i
    while tokens[j].type != "table_close":
        j += 1
    first, end_line = tokens[i].map
    rows = []
    for n in range(first, end_line):
        if n == first + 1:
            continue  # |---|---|
        line = lines.line(n)
        stripped = line.strip()
        if not stripped:
            continue
        col = line.find(stripped)
        rows.append((lines.starts[n] + col, lines.starts[n] + col + len(stripped)))
    return (rows, j + 1)


_FRONT_TITLE = re.compile(r"^title:[ \t]*(['\"]?)(.+?)\1[ \t]*$", re.M)


def _front_matter_title(tokens) -> str:
    """The `title:` of YAML front matter (docs sites keep the page title there), or ""."""
    if tokens and tokens[0].type == "front_matter":
        m = _FRONT_TITLE.search(tokens[0].content)
        if m:
            return " ".join(m.group(2).split())
    return ""


def _title(headings: list[tuple[int, str]], fallback: str) -> str:
    return next((t for level, t in headings if level == 1), fallback)


def parse_markdown(data: bytes, doc_id: str, *, path: str | None = None
                   ) -> tuple[Document, list[Problem]]:
    """Parse one Markdown file. Raises InputError when it cannot become a document."""
    where = str(path) if path else doc_id
    raw, problems = _decode(data, where, "a Markdown file")
    # MkDocs snippets name files from the corpus folder (or beside the file)
    root = Path(where[:-len(doc_id)] or ".") if path and where.endswith(doc_id) else None
    expanded = expand_snippets(raw, root, Path(where) if root else None)
    problems += [Problem(where, message, line, kind)
                 for message, line, kind in expanded.problems]
    raw = expanded.text
    file_tokens = _markdown().parse(raw)
    seen = render(raw, file_tokens)
    if expanded.removed:
        seen.file_map = compose(seen.file_map, expanded.segments)
        seen.removed["include"] += expanded.removed
    text = seen.text
    tokens = file_tokens if text == raw else _markdown().parse(text)  # nothing was cut
    lines = _Lines(text)

    found: list[tuple[str, int, int, tuple, int]] = []  # kind, start, end, rows, header rows
    items = 0  # depth of list items around the current token
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.type == "list_item_open":
            items += 1
        elif tok.type == "list_item_close":
            items -= 1
        elif tok.type == "heading_open":
            inline = tokens[i + 1]
            first, end_line = tok.map
            last = end_line - 1 if tok.markup.startswith("#") else end_line - 2
            span = lines.span(first, max(first, last), inline.content)
            if span:
                found.append((f"heading{_LEVELS[tok.tag]}", *span, (), 0))
        elif tok.type == "paragraph_open":
            span = lines.span(tok.map[0], tok.map[1] - 1, tokens[i + 1].content)
            if span:
                found.append(("item" if items else "paragraph", *span, (), 0))
        elif tok.type in ("fence", "code_block"):
            first, end_line = tok.map
            span = lines.span(first, end_line - 1, tok.content)
            if span:
                found.append(("pre", *span, (), 0))
        elif tok.type == "html_block":
            span = lines.span(tok.map[0], tok.map[1] - 1, tok.content)
            if span:
                found.append(("other", *span, (), 0))
        elif tok.type == "table_open":
            rows, i = _table(tokens, i, lines)
            if rows:
                found.append(("table", rows[0][0], rows[-1][1], tuple(rows), 1))
            continue
        i += 1

    if not found:
        raise InputError(where, "no text: the file holds only markup")
    heading_texts = [(int(k[-1]), text[s:e]) for k, s, e, _, _ in found if k.startswith("heading")]
    title = _title(heading_texts, _front_matter_title(file_tokens))
    path_ = [title, "", ""]
    blocks = []
    for kind, start, end, rows, header_rows in found:
        if kind.startswith("heading"):
            path_ = heading_path(path_, int(kind[-1]), " ".join(text[start:end].split()))
        blocks.append(Block(kind, start, end, tuple(path_), rows, header_rows))
    if not heading_texts:
        problems.append(Problem(where, "no headings: the file has no structure, "
                                       "it is read as one section"))
    removed = tuple((rule, n) for rule, n in sorted(seen.removed.items()))
    return Document(doc_id, title or doc_id, text, tuple(blocks), source=where,
                    file_map=seen.file_map, removed=removed), problems


def parse_plain(data: bytes, doc_id: str, *, path: str | None = None
                ) -> tuple[Document, list[Problem]]:
    """Plain text: paragraphs split on blank lines, no headings."""
    where = str(path) if path else doc_id
    text, problems = _decode(data, where, "a text file")
    blocks = []
    pos = 0
    for m in [*_PARAGRAPHS.finditer(text), None]:
        stop = m.start() if m else len(text)
        chunk = text[pos:stop]
        if chunk.strip():
            lead = len(chunk) - len(chunk.lstrip())
            blocks.append(Block("paragraph", pos + lead, pos + len(chunk.rstrip()), ("", "", "")))
        if m:
            pos = m.end()
    return Document(doc_id, doc_id, text, tuple(blocks), source=where,
                    file_map=((0, 0, len(text)),)), problems
