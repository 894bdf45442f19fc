"""Fixed-length character windows over the document text (SPEC section 5, fixed length)."""

from __future__ import annotations

from ..model import Chunk, Document
from .registry import Strategy


def check_sizes(size: int, overlap: int) -> None:
    """The same message LangChain gives, so both families fail alike on bad settings."""
    if size <= 0:
        raise ValueError(f"chunk_size must be > 0, got {size}")
    if overlap < 0:
        raise ValueError(f"chunk_overlap must be >= 0, got {overlap}")
    if overlap > size:
        raise ValueError(f"Got a larger chunk overlap ({overlap}) than chunk size ({size}), "
                         "should be smaller.")


def fixed_windows(doc: Document, size: int, overlap: int = 0) -> list[Chunk]:
    """Windows of `size` chars every `size - overlap` chars; the last one ends at the text's end."""
    check_sizes(size, overlap)
    # overlap == size would never advance; treat it as a one-char step rather than loop forever
    step = max(1, size - overlap)
    text, n = doc.text, len(doc.text)
    chunks = []
    start = 0
    while start < n:
        end = min(start + size, n)
        chunks.append(Chunk(doc.id, start, end, text[start:end]))
        if end == n:
            break
        start += step
    return chunks


def fixed(size: int, overlap: int = 0) -> Strategy:
    check_sizes(size, overlap)
    name = f"fixed-{size}" + (f"-ov{overlap}" if overlap else "")
    return Strategy(name, "fixed", lambda doc: fixed_windows(doc, size, overlap),
                    {"size": size, "overlap": overlap}, slices=True)
