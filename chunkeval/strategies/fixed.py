"""Fixed-length windows over the document text (SPEC section 5, fixed length): of characters,
or of the units of a length function (a tokenizer's count), found on the text itself."""

from __future__ import annotations

from typing import Callable

from ..model import Chunk, Document
from .registry import Strategy, Unit


def check_sizes(size: int, overlap: int) -> None:
    """The same message LangChain gives, so both families fail alike on bad settings."""
    if size <= 0:
        raise ValueError(f"chunk_size must be > 0, got {size}")
    if overlap < 0:
        raise ValueError(f"chunk_overlap must be >= 0, got {overlap}")
    if overlap > size:
        raise ValueError(f"Got a larger chunk overlap ({overlap}) than chunk size ({size}), "
                         "should be smaller.")


def fixed_windows(doc: Document, size: int, overlap: int = 0,
                  length: Callable[[str], int] | None = None) -> list[Chunk]:
    """Windows of `size` chars every `size - overlap` chars; the last one ends at the text's end.
    With `length`, windows of at most `size` units (measured_windows)."""
    check_sizes(size, overlap)
    if length is not None:
        return [Chunk(doc.id, s, e, doc.text[s:e])
                for s, e in measured_windows(doc.text, size, overlap, length)]
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


def measured_windows(text: str, size: int, overlap: int,
                     length: Callable[[str], int]) -> list[tuple[int, int]]:
    """Each window the longest span from its start that `length` counts at most `size`; the
    next starts at the earliest offset from which the text to that end counts at most
    `overlap` (at the end, with no overlap). With `length=len`, fixed_windows' windows.

    The ends are searched on the text (doubling, then halving), so any count works that
    grows with the text, a tokenizer's included: no window is over the size or overlaps the
    next by more than the overlap, as measured, and each starts at least one char later."""
    n = len(text)
    spans: list[tuple[int, int]] = []
    start, lo, step = 0, 1, size
    while start < n:
        # lo: an end known to fit (the previous end) or, for a new start, the first char,
        # taken even when it alone is over the size
        end = _last_fit(lambda e: length(text[start:e]) <= size, start + lo, n, step)
        spans.append((start, end))
        if end == n:
            break
        step = max(1, end - start)
        nxt = end if overlap == 0 else _first_fit(
            lambda s: length(text[s:end]) <= overlap, start + 1, end)
        lo = max(1, end - nxt)
        start = nxt
    return spans


def _last_fit(fits: Callable[[int], bool], lo: int, hi: int, step: int) -> int:
    """The largest e in [lo, hi] with fits(e), lo taken as fitting."""
    good = lo
    while good < hi:
        probe = min(hi, good + step)
        if not fits(probe):
            bad = probe
            break
        good, step = probe, step * 2
    else:
        return good
    while bad - good > 1:
        mid = (good + bad) // 2
        if fits(mid):
            good = mid
        else:
            bad = mid
    return good


def _first_fit(fits: Callable[[int], bool], lo: int, hi: int) -> int:
    """The smallest s in [lo, hi] with fits(s), hi taken as fitting."""
    while lo < hi:
        mid = (lo + hi) // 2
        if fits(mid):
            hi = mid
        else:
            lo = mid + 1
    return hi


def fixed(size: int, overlap: int = 0, unit: Unit | None = None) -> Strategy:
    """Windows of characters; with `unit`, of its units, named with a "t" (fixed-400t)."""
    check_sizes(size, overlap)
    t = "t" if unit else ""
    name = f"fixed-{size}{t}" + (f"-ov{overlap}{t}" if overlap else "")
    params = {"size": size, "overlap": overlap} | ({"unit": unit.spec} if unit else {})
    length = unit.count if unit else None
    return Strategy(name, "fixed", lambda doc: fixed_windows(doc, size, overlap, length),
                    params, slices=True)
