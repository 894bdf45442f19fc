"""Word (.docx) -> Document with python-docx: headings by paragraph style, paragraphs, list
items, tables one row per line.

Headings are the paragraphs styled "Title" or "Heading N". When the document uses "Title",
it is the first level and "Heading 1" the second, as a page title stands above its chapters;
without it "Heading 1" is the first. A paragraph is a list item when it is numbered or bulleted
(its own numbering or a "List ..." style). A merged table cell is read once per row.
"""

from __future__ import annotations

import io
import re

from ..errors import InputError, Problem
from ..model import TABLE_CELL_SEP, Document, Part, heading_path
from . import optional

# Bump whenever the output for the same bytes may change: it keys the parse cache.
DOCX_PARSER_VERSION = "1"

_HEADING = re.compile(r"^heading\s*([1-9])$", re.I)


def _level(style: str) -> int | None:
    """0 for the title style, N for "Heading N", None for any other style."""
    if style.lower() == "title":
        return 0
    m = _HEADING.match(style)
    return int(m.group(1)) if m else None


def _style(paragraph) -> str:
    try:
        return paragraph.style.name if paragraph.style is not None else ""
    except (KeyError, ValueError, AttributeError):  # a style id the styles part lacks
        return ""


def _is_item(paragraph, style: str) -> bool:
    ppr = paragraph._p.pPr
    return (ppr is not None and ppr.numPr is not None) or style.lower().startswith("list")


def _rows(table) -> tuple[str, ...]:
    rows = []
    for row in table.rows:
        cells, seen = [], set()
        for cell in row.cells:
            if id(cell._tc) in seen:  # a merged cell repeats across the columns it spans
                continue
            seen.add(id(cell._tc))
            cells.append(" ".join(cell.text.split()))
        if any(cells):
            rows.append(TABLE_CELL_SEP.join(cells))
    return tuple(rows)


def parse_docx(data: bytes, doc_id: str, *, path: str | None = None
               ) -> tuple[Document, list[Problem]]:
    """Parse one .docx file. Raises InputError when it cannot become a document."""
    where = str(path) if path else doc_id
    docx = optional.load("word", where)
    from docx.table import Table
    from docx.text.paragraph import Paragraph
    try:
        document = docx.Document(io.BytesIO(data))
        body = list(document.element.body.iterchildren())
    except Exception as e:  # a damaged zip or a part that is not WordprocessingML
        why = str(e)[:200] or type(e).__name__
        raise InputError(where, f"not a readable Word (.docx) file ({why}); skipped") from None

    found: list[tuple[str, str, tuple[str, ...]]] = []  # kind, text, table rows
    for el in body:
        tag = el.tag.rsplit("}", 1)[-1]
        if tag == "p":
            p = Paragraph(el, document)
            text = " ".join(p.text.split())
            if not text:
                continue
            style = _style(p)
            level = _level(style)
            kind = (f"heading{level}" if level is not None
                    else "item" if _is_item(p, style) else "paragraph")
            found.append((kind, text, ()))
        elif tag == "tbl":
            rows = _rows(Table(el, document))
            if rows:
                found.append(("table", "\n".join(rows), rows))
    if not found:
        raise InputError(where, "no text: the document holds no paragraphs or tables")

    levels = [int(k[7:]) for k, _, _ in found if k.startswith("heading")]
    shift = 1 if 0 in levels else 0  # "Title" is level 1 only when it is used
    title, path_, parts = "", ("", "", ""), []
    for kind, text, rows in found:
        if kind.startswith("heading"):
            level = 1 if kind == "heading0" else min(int(kind[7:]) + shift, 4)
            kind = f"heading{level}"
            if level == 1:
                title = title or text
            path_ = heading_path(path_, level, text)
        parts.append(Part(kind, text, path_, rows, 1 if len(rows) > 1 else 0))
    problems = []
    if not levels:
        problems.append(Problem(where, "no headings (no paragraph has a Title or Heading "
                                       "style): it is read as one section"))
    title = title or " ".join((document.core_properties.title or "").split()) or doc_id
    return Document.from_parts(doc_id, title, parts, source=where), problems
