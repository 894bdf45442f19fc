"""Structure-aware splitting (SPEC section 5) and its heading-prefix variant.

Rules:
- always cut before h1/h2/h3, so a chunk never spans a section boundary;
- pack whole blocks (with the blank lines between them) while the chunk stays <= size;
- split only a block that alone is over the size, each piece a chunk of its own:
  - a table by rows, never inside a row. The first piece holds the header row(s) as they
    stand in the text. A later piece repeats the header: its text is
    header + "\\n" + its body rows, while its [start, end) is the span of the body rows
    it holds. Those pieces are the only chunks that are not slices of the text.
  - a pre block by lines, never inside a line;
  - anything else by LangChain's recursive splitter (same separators as the recursive
    family, no overlap).
- A single table row (with its repeated header) or a single pre line longer than the
  size stays whole: these are the indivisible units that may exceed the size.

Sizes are chars, or with a unit (structure-400t) what its length function counts of the
text a chunk would hand, a repeated table header included.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Callable

from ..model import Block, Chunk, Document
from .headings import sections
from .recursive import split_spans
from .registry import Strategy, Unit

Length = Callable[[str], int]

CUT_LEVEL = 3  # h2 and h3 (and h1) always start a new chunk
PREFIX_SEP = " ＞ "


def table_header(doc: Document, block: Block) -> str:
    """The header rows' text, or "" when the table has no body rows to repeat it on."""
    h = block.header_rows
    if h <= 0 or h >= len(block.rows):
        return ""
    return doc.text[block.rows[0][0]:block.rows[h - 1][1]]


def _measure(doc: Document, start: int, end: int, length: Length | None) -> int:
    return end - start if length is None else length(doc.text[start:end])


def split_table(doc: Document, block: Block, size: int,
                length: Length | None = None) -> list[Chunk]:
    header = table_header(doc, block)
    body = list(block.rows[block.header_rows:]) if header else list(block.rows)
    chunks: list[Chunk] = []
    i = 0
    while i < len(body):
        first = not chunks
        start = block.start if first else body[i][0]
        extra = 0 if first or not header else len(header) + 1

        def measure(j: int) -> int:  # the size of the piece holding body rows i..j-1
            if length is None:
                return extra + body[j - 1][1] - start
            rows = doc.text[start:body[j - 1][1]]
            return length(header + "\n" + rows if extra else rows)

        j = i + 1  # a piece holds at least one row, however long
        while j < len(body) and measure(j + 1) <= size:
            j += 1
        end = body[j - 1][1]
        text = doc.text[start:end]
        if extra:
            text = header + "\n" + text
        chunks.append(Chunk(doc.id, start, end, text))
        i = j
    return chunks


def line_spans(text: str, offset: int) -> list[tuple[int, int]]:
    spans, pos = [], offset
    for line in text.split("\n"):
        spans.append((pos, pos + len(line)))
        pos += len(line) + 1
    return spans


def split_pre(doc: Document, block: Block, size: int,
              length: Length | None = None) -> list[Chunk]:
    lines = line_spans(doc.block_text(block), block.start)
    chunks = []
    i = 0
    while i < len(lines):
        if not doc.text[lines[i][0]:lines[i][1]].strip():
            i += 1  # a piece never starts with a blank line
            continue
        start = lines[i][0]
        j = i + 1
        while j < len(lines) and _measure(doc, start, lines[j][1], length) <= size:
            j += 1
        end = lines[j - 1][1]
        chunks.append(Chunk(doc.id, start, end, doc.text[start:end]))
        i = j
    return chunks


def split_block(doc: Document, block: Block, size: int,
                length: Length | None = None) -> list[Chunk]:
    if block.kind == "table" and block.rows:
        return split_table(doc, block, size, length)
    if block.kind == "pre":
        return split_pre(doc, block, size, length)
    spans = split_spans(doc.block_text(block), size, length=length)
    return [Chunk(doc.id, block.start + s, block.start + e, doc.text[block.start + s:block.start + e])
            for s, e in spans]


def structure_chunks(doc: Document, size: int, length: Length | None = None) -> list[Chunk]:
    chunks: list[Chunk] = []
    for section in sections(doc, CUT_LEVEL):
        packed: list[Block] = []

        def flush() -> None:
            if packed:
                start, end = packed[0].start, packed[-1].end
                chunks.append(Chunk(doc.id, start, end, doc.text[start:end]))
                packed.clear()

        for block in section:
            if _measure(doc, block.start, block.end, length) > size:
                flush()
                chunks.extend(split_block(doc, block, size, length))
            else:
                if packed and _measure(doc, packed[0].start, block.end, length) > size:
                    flush()
                packed.append(block)
        flush()
    return chunks


def heading_path(doc: Document, pos: int, starts: list[int] | None = None) -> str:
    """"title ＞ h2 ＞ h3" in force at offset `pos`, empty levels skipped."""
    if starts is None:
        starts = [b.start for b in doc.blocks]
    i = bisect_right(starts, pos) - 1
    if i < 0:
        return ""
    return PREFIX_SEP.join(h for h in doc.blocks[i].headings if h)


def with_prefix(doc: Document, chunks: list[Chunk]) -> list[Chunk]:
    """Index "title ＞ h2 ＞ h3\\n" + text; the handed text stays as it is."""
    starts = [b.start for b in doc.blocks]
    out = []
    for c in chunks:
        path = heading_path(doc, c.start, starts)
        out.append(Chunk(c.doc_id, c.start, c.end, c.text,
                         index_text=f"{path}\n{c.text}" if path else None))
    return out


def structure(size: int, prefix: bool = False, unit: Unit | None = None) -> Strategy:
    """Structure-aware packing in chars; with `unit`, in its units (structure-400t)."""
    if size <= 0:
        raise ValueError(f"chunk_size must be > 0, got {size}")
    name = f"structure-{size}" + ("t" if unit else "")
    length = unit.count if unit else None
    measured = {"unit": unit.spec} if unit else {}
    if prefix:
        return Strategy(f"{name}+prefix", "prefix",
                        lambda doc: with_prefix(doc, structure_chunks(doc, size, length)),
                        {"size": size, "cut": CUT_LEVEL, "prefix": True} | measured,
                        slices=False, keeps_structure=True)
    return Strategy(name, "structure", lambda doc: structure_chunks(doc, size, length),
                    {"size": size, "cut": CUT_LEVEL} | measured, slices=False,
                    keeps_structure=True)
