"""PDF -> Document: the text layer of each page in reading order, cut into blocks that
know their page.

pdfplumber (on pdfminer.six) gives every character with its position, font and size, which
is what structure needs here: headings are lines set larger than the body text (levels by
rank of size, largest first) or wholly bold at body size; paragraphs end where the line
spacing opens up or an indented line follows a short one; monospaced runs are `pre`; the
tables pdfplumber finds from ruling lines become one row per line. Lines that repeat at a
page's top or bottom edge (running headers, footers, page numbers) and table-of-contents
lines (dot leaders and a page number) are dropped. A paragraph that runs over a page break
is two blocks, so that every block has one page and a chunk's pages follow from its offsets
(Document.pages_of). No OCR: a PDF without a text layer is reported, not read.
"""

from __future__ import annotations

import io
import re
from collections import Counter

from ..errors import InputError, Problem
from ..model import TABLE_CELL_SEP, Document, Part, heading_path
from . import optional

# Bump whenever the output for the same bytes may change: it keys the parse cache.
PDF_PARSER_VERSION = "1"

_BOLD = re.compile(r"(?i)bold|black|heavy|semibold|demi|\+?cmbx|\bcmb\d|-b$|,b$")
_MONO = re.compile(r"(?i)mono|courier|cmtt|cmsltt|consol|menlo|typewriter|code")
# Dot leaders and a page number, or a list of them (an index entry: ". . . 27, 34")
_TOC = re.compile(r"(?:\s*\.){4,}\s*[0-9ivxlcdm]+(?:\s*[,–-]\s*[0-9ivxlcdm]+)*\s*$")
_BULLET = re.compile(r"^(?:[•◦▪▫■□●○·‣⁃–—*-]|\(?[0-9]{1,3}[.)]|\(?[a-z][.)])\s")
_DIGITS = re.compile(r"[0-9]+|\b[ivxlcdm]+\b")
_HYPHENATED = re.compile(r"[^\W\d_]-$")


class _Line:
    __slots__ = ("text", "top", "bottom", "x0", "x1", "size", "bold", "mono")

    def __init__(self, raw: dict):
        chars = [c for c in raw["chars"] if c["text"].strip()] or raw["chars"]
        self.text = " ".join(raw["text"].split())
        self.top, self.bottom = raw["top"], raw["bottom"]
        self.x0, self.x1 = raw["x0"], raw["x1"]
        # The size most of the line is set in; a larger first letter (a title set in
        # small capitals, "R FAQ") sets it.
        self.size = max(Counter(round(c["size"], 1) for c in chars).most_common(1)[0][0],
                        round(chars[0]["size"], 1))
        fonts = [c.get("fontname", "") for c in chars]
        self.bold = all(_BOLD.search(f) for f in fonts)
        self.mono = sum(bool(_MONO.search(f)) for f in fonts) >= 0.8 * len(fonts)


def _open(data: bytes, where: str):
    pdfplumber = optional.load("pdf", where)
    try:
        pdf = pdfplumber.open(io.BytesIO(data))
        pdf.pages  # noqa: B018 - reads the page tree: a damaged file fails here
        return pdf
    except Exception as e:  # pdfminer raises many kinds on a damaged file
        raise InputError(where, _why(e)) from None


def _why(e: Exception) -> str:
    """What a reading error means for the user. pdfplumber wraps pdfminer's error."""
    inner = e.args[0] if type(e).__name__ == "PdfminerException" and e.args else e
    kind = type(inner).__name__
    if kind == "PDFPasswordIncorrect":
        return "encrypted PDF (it needs a password); skipped"
    if kind in ("PDFEncryptionError", "PDFEncryptionWarning"):
        return f"encrypted PDF in a way this reader cannot decrypt ({inner}); skipped"
    detail = str(inner) or kind
    return f"damaged PDF, cannot be read ({detail[:200]}); skipped"


def _page_lines(page) -> tuple[list[tuple[float, object]], list[_Line]]:
    """The page's tables (top, rows) and its text lines outside them, top to bottom."""
    tables = []
    boxes = []
    for t in page.find_tables():
        rows = [TABLE_CELL_SEP.join(" ".join((c or "").split()) for c in row)
                for row in t.extract()]
        rows = [r for r in rows if r.replace("|", "").strip()]
        if rows:
            tables.append((t.bbox[1], rows))
            boxes.append(t.bbox)
    raw = page.extract_text_lines(x_tolerance_ratio=0.15, return_chars=True, strip=True)
    lines = []
    for r in raw:
        if not r["text"].strip():
            continue
        mid = (r["top"] + r["bottom"]) / 2
        if any(x0 <= (r["x0"] + r["x1"]) / 2 <= x1 and top <= mid <= bottom
               for x0, top, x1, bottom in boxes):
            continue
        lines.append(_Line(r))
    lines.sort(key=lambda l: (round(l.top), l.x0))
    return tables, lines


def _edges(pages: list[list[_Line]]) -> set[tuple[int, int]]:
    """(page index, line index) of running headers, footers and page numbers: a page's
    first or last line whose text, digits aside, recurs at that edge on another page, or
    that sits apart from the body at a height where most pages have such a line."""
    found: set[tuple[int, int]] = set()
    for edge in (0, -1):
        keys: Counter = Counter()
        heights: Counter = Counter()
        at = []
        for pi, lines in enumerate(pages):
            if not lines:
                continue
            li = 0 if edge == 0 else len(lines) - 1
            line = lines[li]
            key = _DIGITS.sub("#", line.text.lower())
            keys[key] += 1
            heights[round(line.top)] += 1
            neighbour = lines[li + 1] if edge == 0 and len(lines) > 1 else (
                lines[li - 1] if edge == -1 and len(lines) > 1 else None)
            gap = abs(neighbour.top - line.top) if neighbour else 0
            apart = neighbour is None or gap > 2.2 * line.size
            at.append((pi, li, key, round(line.top), apart, len(line.text)))
        with_lines = sum(1 for p in pages if p)
        for pi, li, key, top, apart, length in at:
            if keys[key] >= 2 or (apart and length < 100 and with_lines >= 3
                                  and heights[top] * 2 >= with_lines):
                found.add((pi, li))
    return found


def _body(lines: list[_Line]) -> list[_Line]:
    """A page's lines without its table of contents: lines ending in dot leaders and a page
    number, and on a page that is mostly such lines, also the wrapped first lines of
    entries (all but lines set larger than every entry: the contents' own heading)."""
    toc = [bool(_TOC.search(l.text)) for l in lines]
    if sum(toc) * 2 >= len(lines) > 0:
        largest = max(l.size for l, t in zip(lines, toc) if t)
        return [l for l, t in zip(lines, toc) if not t and l.size > largest]
    return [l for l, t in zip(lines, toc) if not t]


def _join(lines: list[str]) -> str:
    out = ""
    for t in lines:
        if out and _HYPHENATED.search(out) and t[:1].islower():
            out = out[:-1] + t  # a word broken at the line end
        else:
            out = f"{out} {t}" if out else t
    return out


def parse_pdf(data: bytes, doc_id: str, *, path: str | None = None
              ) -> tuple[Document, list[Problem]]:
    """Parse one PDF. Raises InputError (naming the file) when it is encrypted, damaged or
    holds no text layer."""
    where = str(path) if path else doc_id
    pdf = _open(data, where)
    try:
        pages, tables = [], []
        for page in pdf.pages:
            t, lines = _page_lines(page)
            pages.append(lines)
            tables.append(t)
        meta_title = " ".join(str(pdf.metadata.get("Title", "") or "").split())
    except Exception as e:
        raise InputError(where, _why(e)) from None
    finally:
        pdf.close()

    if not any(pages) and not any(tables):
        raise InputError(where, "no text layer (a scanned or image-only PDF; OCR is not done "
                                "here); skipped")
    edges = _edges(pages)
    pages = [_body([l for li, l in enumerate(lines) if (pi, li) not in edges])
             for pi, lines in enumerate(pages)]

    sizes = Counter()
    for lines in pages:
        for l in lines:
            sizes[l.size] += len(l.text)
    body = sizes.most_common(1)[0][0] if sizes else 0
    larger = sorted({s for s in sizes if s > body + 0.5}, reverse=True)
    level_of = {s: min(i + 1, 4) for i, s in enumerate(larger)}
    bold_level = min(len(larger) + 1, 4)
    # The line pitch of body text: the commonest step between two body lines (the steps
    # between paragraphs are larger and fewer).
    pitches = Counter(round(b.top - a.top) for lines in pages for a, b in zip(lines, lines[1:])
                      if a.size == b.size == body and 0 < b.top - a.top < 3 * body)
    pitch = min(pitches, key=lambda p: (-pitches[p], p)) if pitches else 1.2 * body

    def level(l: _Line) -> int:
        if l.size in level_of and len(l.text) <= 200:
            return level_of[l.size]
        if l.bold and abs(l.size - body) <= 0.5 and len(l.text) <= 120 and not l.mono:
            return bold_level
        return 0

    parts: list[Part] = []
    path_ = ["", "", ""]
    title = ""

    def heading(text: str, lvl: int, page: int) -> None:
        nonlocal title
        text = " ".join(text.split())
        if lvl == 1:
            title = title or text
        path_[:] = heading_path(path_, lvl, text)
        parts.append(Part(f"heading{lvl}", text, tuple(path_), page=page))

    for pi, lines in enumerate(pages):
        page = pi + 1
        right = max((l.x1 for l in lines if l.size == body), default=0)
        pending = sorted(tables[pi], key=lambda t: t[0])
        kind, texts, prev, x_min = "", [], None, 0.0

        def flush() -> None:
            nonlocal kind, texts
            if texts:
                if kind.startswith("heading"):
                    heading(" ".join(texts), int(kind[-1]), page)
                elif kind == "pre":
                    parts.append(Part("pre", "\n".join(texts), tuple(path_), page=page))
                else:
                    parts.append(Part(kind, _join(texts), tuple(path_), page=page))
            kind, texts = "", []

        for line in lines:
            while pending and pending[0][0] <= line.top:
                flush()
                rows = tuple(pending.pop(0)[1])
                parts.append(Part("table", "\n".join(rows), tuple(path_), rows,
                                  1 if len(rows) > 1 else 0, page=page))
                prev = None
            lvl = level(line)
            this = (f"heading{lvl}" if lvl else "pre" if line.mono
                    else "item" if _BULLET.match(line.text) else "paragraph")
            step = line.top - prev.top if prev else 0
            gap = prev is not None and step > 1.3 * max(pitch, prev.size * 1.1)
            indented = (prev is not None and line.x0 > prev.x0 + 0.8 * line.size
                        and prev.x1 < right - 2 * line.size)
            same = bool(texts) and not gap and (
                (this == kind and this.startswith("heading"))
                or (this == "pre" and kind == "pre")
                or (this == "paragraph" and kind == "paragraph" and not indented)
                # an item's lines run on at or right of its bullet (a hanging indent)
                or (this == "paragraph" and kind == "item" and line.x0 >= x_min - 1))
            if not same:
                flush()
                kind, x_min = this, line.x0
            if kind == "pre":
                width = 0.525 * line.size  # a monospaced glyph's advance, about
                x_min = min(x_min, line.x0)
                texts.append(" " * max(0, round((line.x0 - x_min) / width)) + line.text)
            else:
                texts.append(line.text)
            prev = line
        flush()
        for _, rows in pending:
            parts.append(Part("table", "\n".join(rows), tuple(path_), tuple(rows),
                              1 if len(rows) > 1 else 0, page=page))

    problems: list[Problem] = []
    if not any(p.kind.startswith("heading") for p in parts):
        problems.append(Problem(where, "no headings (no line is set larger or bolder than "
                                       "the body text): it is read as one section"))
    title = title or meta_title or doc_id
    # Blocks before the first heading1 are under the title too.
    parts = [p if p.headings[0] else Part(p.kind, p.text, (title, *p.headings[1:]), p.rows,
                                          p.header_rows, p.page) for p in parts]
    return Document.from_parts(doc_id, title, parts, source=where), problems
