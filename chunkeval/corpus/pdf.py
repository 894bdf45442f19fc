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
PDF_PARSER_VERSION = "2"

_BOLD = re.compile(r"(?i)bold|black|heavy|semibold|demi|\+?cmbx|\bcmb\d|-b$|,b$")
_MONO = re.compile(r"(?i)mono|courier|cmtt|cmsltt|consol|menlo|typewriter|code")
# Dot leaders and a page number, or a list of them (an index entry: ". . . 27, 34")
_TOC = re.compile(r"(?:\s*\.){4,}\s*[0-9ivxlcdm]+(?:\s*[,–-]\s*[0-9ivxlcdm]+)*\s*$")
_BULLET = re.compile(r"^(?:[•◦▪▫■□●○·‣⁃–—*-]|\(?[0-9]{1,3}[.)]|\(?[a-z][.)])\s")
_DIGITS = re.compile(r"[0-9]+|\b[ivxlcdm]+\b")
_HYPHENATED = re.compile(r"[^\W\d_]-$")
# The title of an admonition ("Note:", "Warning"): set large in some manuals, never a heading
_ADMONITION = re.compile(r"(?i)^(?:note|warning|tip|hint|important|caution|danger|attention|"
                         r"error|see also|example|todo)s?\s*:?$")
_NOT_WORD = re.compile(r"[\W_]+")
_SECTION_NUMBER = re.compile(r"^\s*(?:[0-9]+|[A-Z])(?:\.[0-9]+)*\.?\s+")


class _Line:
    __slots__ = ("text", "top", "bottom", "x0", "x1", "size", "bold", "mono", "cells")

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
        self.cells = _cells(chars, self.size)


# Between two cells of a row: wider than the widest word space of a justified line
_COLUMN_GAP = 0.9  # em
_WORD_GAP = 0.15  # em


def _cells(chars: list[dict], size: float) -> list[tuple[float, float, str, bool]]:
    """A line cut where its characters leave a gap a column would: (x0, x1, text, whether
    it is set in a monospaced font) each."""
    cells: list[list] = []
    last = None
    for c in sorted((c for c in chars if c["text"].strip()), key=lambda c: c["x0"]):
        gap = c["x0"] - last if last is not None else 0
        mono = int(bool(_MONO.search(c.get("fontname", ""))))
        if not cells or gap > _COLUMN_GAP * size:
            cells.append([c["x0"], c["x1"], c["text"], mono, 1])
        else:
            cells[-1][2] += (" " if gap > _WORD_GAP * size else "") + c["text"]
            cells[-1][1] = c["x1"]
            cells[-1][3] += mono
            cells[-1][4] += 1
        last = c["x1"]
    return [(x0, x1, text, mono * 2 > n) for x0, x1, text, mono, n in cells]


def _aligned_tables(lines: list[_Line]) -> tuple[list[tuple[float, list[str]]], list[_Line]]:
    """Tables drawn without rules: at least three consecutive rows, close together, cut into
    the same number (two or more) of cells whose left or right edges line up from row to
    row; a line whose cells all fall under later columns continues the row above (a wrapped
    cell). Prose never has such gaps, contents and index lines (dot leaders) are not tables,
    and code (monospaced) keeps its spacing as `pre`. Returns the tables (top, rows) and the
    lines left."""
    tables, rest, i = [], [], 0
    while i < len(lines):
        first = lines[i]
        rows: list[list[str]] = []
        j = i
        while j < len(lines) and _row_like(lines[j]) and (
                j == i or lines[j].top - lines[j - 1].top <= 2 * lines[j].size):
            line = lines[j]
            if len(line.cells) == len(first.cells):
                rows.append([t for _, _, t, _ in line.cells])
            elif rows and (at := _under(line, first)) is not None and at[0] > 0:
                for k, t in zip(at, (t for _, _, t, _ in line.cells)):
                    rows[-1][k] += " " + t
            else:
                break
            j += 1
        run = [l for l in lines[i:j] if len(l.cells) == len(first.cells)]
        if len(rows) >= 3 and len(first.cells) >= 2 and _columns_line_up(run):
            tables.append((first.top, [TABLE_CELL_SEP.join(" ".join(c.split()) for c in row)
                                       for row in rows]))
            i = j
        else:
            rest.append(first)
            i += 1
    return tables, rest


def _row_like(line: _Line) -> bool:
    """Not code (every cell monospaced: aligned comments), not contents or index lines."""
    return (not all(mono for *_, mono in line.cells) and not _TOC.search(line.text)
            and ". . . ." not in line.text)


def _under(line: _Line, first: _Line) -> list[int] | None:
    """The columns of `first` the cells of `line` start under, or None."""
    at = []
    for x0, *_ in line.cells:
        k = next((k for k, (c0, *_) in enumerate(first.cells) if abs(c0 - x0) <= 2), None)
        if k is None:
            return None
        at.append(k)
    return at


def _columns_line_up(run: list[_Line]) -> bool:
    """Every column after the first starts within two points across the rows, or ends so
    and holds short cells (right-aligned numbers; a justified line's words also end at
    the margin, but are no short cells)."""
    for k in range(1, len(run[0].cells)):
        starts = [l.cells[k][0] for l in run]
        ends = [l.cells[k][1] for l in run]
        if max(starts) - min(starts) > 2 and (
                max(ends) - min(ends) > 2 or any(len(l.cells[k][2]) > 12 for l in run)):
            return False
    return True


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


def _outline(pdf) -> list[tuple[int, str, int, float | None]]:
    """The document's bookmarks: (level, title, page index, top of the target from the
    page's top, or None). [] when it has none or they cannot be read."""
    from pdfminer.pdftypes import resolve1

    pages = {p.page_obj.pageid: (i, p.height) for i, p in enumerate(pdf.pages)}
    out = []
    try:
        for level, title, dest, action, _ in pdf.doc.get_outlines():
            target = dest
            if target is None and action is not None:
                target = resolve1(action).get("D")
            target = resolve1(target)
            if isinstance(target, (bytes, str)) or hasattr(target, "name"):
                name = getattr(target, "name", target)
                target = resolve1(pdf.doc.get_dest(name))
            if isinstance(target, dict):
                target = resolve1(target.get("D"))
            if not isinstance(target, list) or not target:
                continue
            ref = getattr(target[0], "objid", None)
            if ref not in pages or not isinstance(title, str):
                continue
            index, height = pages[ref]
            kind = getattr(target[1], "name", "") if len(target) > 1 else ""
            at = target[3] if kind == "XYZ" and len(target) > 3 else (
                target[2] if kind in ("FitH", "FitBH") and len(target) > 2 else None)
            top = height - float(at) if isinstance(at, (int, float)) else None
            out.append((level, " ".join(title.split()), index, top))
    except Exception:  # no outline (PDFNoOutlines), or a damaged one: fonts decide
        return []
    return out


def _outline_headings(outline, pages: list[list[_Line]]) -> dict[int, int]:
    """id(line) -> heading level, for the lines the bookmarks point at. A bookmark's title
    is found on its page at or below the point it targets: a line that ends with it (a
    section number may come first, or the bookmark's own number be set apart), or
    consecutive lines that together spell it."""
    if not outline:
        return {}
    # Several top-level bookmarks are chapters under the document's title (heading 1);
    # a single one is the title itself.
    top_level = min(level for level, *_ in outline)
    shift = 1 if sum(1 for level, *_ in outline if level == top_level) > 1 else 0
    marks: dict[int, int] = {}
    for level, title, index, top in outline:
        lines = [l for l in pages[index] if top is None or l.top >= top - 2 * l.size][:20]
        for want in dict.fromkeys((_NOT_WORD.sub("", title.lower()),
                                   _NOT_WORD.sub("", _SECTION_NUMBER.sub("", title).lower()))):
            run = _spelled(want, lines, marks) if want else None
            if run:
                for l in run:
                    marks[id(l)] = min(level - top_level + 1 + shift, 4)
                break
    return marks


def _spelled(want: str, lines: list[_Line], marks: dict[int, int]) -> list[_Line] | None:
    """The first of `lines` (not yet marked) that ends with `want`, letters and digits
    alone, or the run of lines from one that together spell it."""
    for j, line in enumerate(lines):
        got = _NOT_WORD.sub("", line.text.lower())
        if not got or id(line) in marks:
            continue
        if got.endswith(want):
            return [line]
        got = got.lstrip("0123456789")
        run = [line]
        while want.startswith(got) and got != want and j + len(run) < len(lines):
            got += _NOT_WORD.sub("", lines[j + len(run)].text.lower())
            run.append(lines[j + len(run)])
        if got == want:
            return run
    return None


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
    aligned, lines = _aligned_tables(lines)
    return tables + aligned, lines


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
        outline = _outline(pdf)
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

    marks = _outline_headings(outline, pages)
    problems: list[Problem] = []
    if outline and len(marks) < len(outline) / 2:
        problems.append(Problem(where, f"only {len(marks)} of the {len(outline)} bookmarks in "
                                       "its outline were found on their pages: headings are "
                                       "taken from font sizes instead"))
        marks = {}
    sizes = Counter()
    for lines in pages:
        for l in lines:
            sizes[l.size] += len(l.text)
    body = sizes.most_common(1)[0][0] if sizes else 0
    larger = sorted({l.size for lines in pages for l in lines
                     if l.size > body + 0.5 and not _ADMONITION.match(l.text)}, reverse=True)
    level_of = {s: min(i + 1, 4) for i, s in enumerate(larger)}
    bold_level = min(len(larger) + 1, 4)
    # The line pitch of body text: the commonest step between two body lines (the steps
    # between paragraphs are larger and fewer).
    pitches = Counter(round(b.top - a.top) for lines in pages for a, b in zip(lines, lines[1:])
                      if a.size == b.size == body and 0 < b.top - a.top < 3 * body)
    pitch = min(pitches, key=lambda p: (-pitches[p], p)) if pitches else 1.2 * body

    def level(l: _Line) -> int:
        if marks:  # the outline says which lines are headings; the title is the largest
            return marks.get(id(l), 1 if not title and level_of.get(l.size) == 1 else 0)
        if _ADMONITION.match(l.text):
            return 0
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
                or (this == "paragraph" and kind == "paragraph" and not indented
                    and abs(line.size - prev.size) <= 0.5)  # "Note:" set larger: its own
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

    if not any(p.kind.startswith("heading") for p in parts):
        problems.append(Problem(where, "no headings (no line is set larger or bolder than "
                                       "the body text): it is read as one section"))
    title = title or meta_title or doc_id
    # Blocks before the first heading1 are under the title too.
    parts = [p if p.headings[0] else Part(p.kind, p.text, (title, *p.headings[1:]), p.rows,
                                          p.header_rows, p.page) for p in parts]
    return Document.from_parts(doc_id, title, parts, source=where), problems
