"""Heading-only splitting: one chunk per section, no size limit (SPEC section 5)."""

from __future__ import annotations

from ..model import Block, Chunk, Document
from .registry import Strategy


def cuts_before(block: Block, level: int) -> bool:
    """True for a heading that opens a section at `level` or above (h1 counts too)."""
    return block.is_heading and block.level <= level


def sections(doc: Document, level: int) -> list[list[Block]]:
    """Blocks grouped into sections, a new one before every heading of level <= `level`."""
    out: list[list[Block]] = []
    for block in doc.blocks:
        if not out or cuts_before(block, level):
            out.append([])
        out[-1].append(block)
    return out


def heading_chunks(doc: Document, level: int) -> list[Chunk]:
    chunks = []
    for section in sections(doc, level):
        start, end = section[0].start, section[-1].end
        chunks.append(Chunk(doc.id, start, end, doc.text[start:end]))
    return chunks


def headings(level: int) -> Strategy:
    name = {2: "heading-h2", 3: "heading-h2h3"}[level]
    return Strategy(name, "headings", lambda doc: heading_chunks(doc, level),
                    {"cut": level}, slices=True)
