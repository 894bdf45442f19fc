"""LangChain's recursive character split (its RecursiveCharacterTextSplitter with
keep_separator="end"), computed on [start, end) spans of the text.

The algorithm is LangChain's: split at the first separator the text holds, keeping each
separator at the end of its piece; merge runs of pieces shorter than the size into chunks
of at most the size, carrying up to `overlap` over into the next; split a longer piece again
with the separators after the one used; strip each chunk's outer whitespace. On spans
instead of strings, every chunk's offsets are right by construction (LangChain's own
`add_start_index` finds each chunk with `str.find` from a guessed position, which lands on
the wrong copy where text repeats), and a run needs no LangChain: its splitters bring
LangSmith, whose pytest plugin would load in every pytest run of a project. The tests hold
these chunks to LangChain's own output, text for text.
"""

from __future__ import annotations

from collections import deque
from typing import Callable

from ..model import Chunk, Document
from .fixed import check_sizes
from .registry import Strategy, Unit

# Separators by the document's script: CJK text has no spaces between words, so it breaks
# at 。 and 、; space-delimited text at sentence ends, clause marks, then spaces.
CJK_SEPARATORS = ["\n\n", "\n", "。", "、", ""]
SPACE_SEPARATORS = ["\n\n", "\n", ". ", "? ", "! ", "; ", ", ", " ", ""]
SEPARATORS = CJK_SEPARATORS  # the default before languages were told apart


def separators_for(text: str) -> list[str]:
    # The analyzers' language rule, imported on use: splitting needs no retrieval code.
    from ..retrieval.analyzers import is_cjk
    return CJK_SEPARATORS if is_cjk([text]) else SPACE_SEPARATORS

Span = tuple[int, int]
Length = Callable[[str], int]


def _pieces(text: str, span: Span, sep: str) -> list[Span]:
    """Split at `sep`, each piece keeping the separator at its end; empty pieces dropped."""
    start, end = span
    if not sep:
        return [(i, i + 1) for i in range(start, end)]
    out, pos = [], start
    hit = text.find(sep, pos, end)
    while hit != -1:
        out.append((pos, hit + len(sep)))
        pos = hit + len(sep)
        hit = text.find(sep, pos, end)
    if pos < end:
        out.append((pos, end))
    return out


def stripped(text: str, start: int, end: int) -> Span | None:
    """The span of text[start:end] without its leading and trailing whitespace; None when
    nothing else is left."""
    segment = text[start:end]
    core = segment.strip()
    if not core:
        return None
    lead = len(segment) - len(segment.lstrip())
    return start + lead, start + lead + len(core)


def _measured(text: str, pieces: list[Span], length: Length | None) -> list[int]:
    if length is None:
        return [e - s for s, e in pieces]
    return [length(text[s:e]) for s, e in pieces]


def _merge(text: str, pieces: list[Span], measures: list[int], size: int, overlap: int,
           length: Length | None = None) -> list[Span]:
    """`measures`: each piece's size, measured once by the caller."""
    # LangChain counts the separator it joins with ("" for keep_separator="end") too
    sep = 0 if length is None else length("")
    out: list[Span] = []
    # pieces leave from the front: a long run of one-character pieces (a word with no
    # separator) would make list.pop(0) quadratic
    current: deque[Span] = deque()
    sizes: deque[int] = deque()
    total = 0
    for piece, n in zip(pieces, measures):
        if current and total + n + sep > size:
            joined = stripped(text, current[0][0], current[-1][1])
            if joined:
                out.append(joined)
            while total > overlap or (total + n + (sep if current else 0) > size and total > 0):
                total -= sizes[0] + (sep if len(current) > 1 else 0)
                current.popleft()
                sizes.popleft()
        current.append(piece)
        sizes.append(n)
        total += n + (sep if len(current) > 1 else 0)
    if current:
        joined = stripped(text, current[0][0], current[-1][1])
        if joined:
            out.append(joined)
    return out


def _char_windows(text: str, span: Span, size: int, overlap: int) -> list[Span]:
    """What _merge makes of the one-character pieces of `span` in chars, without a piece per
    character: windows of `size` chars, each starting `size - overlap` after the one before
    (the overlap a full window carries is at most size - 1), the last ending at the span's
    end; each stripped, and dropped when only whitespace."""
    start, end = span
    step = size - min(overlap, size - 1)
    out = []
    for a in range(start, end, step):
        if (joined := stripped(text, a, min(a + size, end))):
            out.append(joined)
        if a + size >= end:
            break
    return out


def tracked_spans(text: str, size: int, overlap: int = 0, span: Span | None = None,
                  separators: list[str] = SEPARATORS, length: Length | None = None
                  ) -> list[Span]:
    """LangChain's recursive split of text[span] as spans into `text`, sizes counted in
    chars or by `length`."""
    span = span or (0, len(text))
    sep, rest = separators[-1], []
    for i, s in enumerate(separators):
        if not s:
            sep = s
            break
        if text.find(s, *span) != -1:
            sep, rest = s, separators[i + 1:]
            break
    if not sep and length is None and size > 1:
        # every piece is one character, so shorter than the size: one merge of them all
        return _char_windows(text, span, size, overlap)
    out: list[Span] = []
    good: list[Span] = []
    measures: list[int] = []  # of the good pieces
    pieces = _pieces(text, span, sep)
    for piece, n in zip(pieces, _measured(text, pieces, length)):
        if n < size:
            good.append(piece)
            measures.append(n)
            continue
        if good:
            out += _merge(text, good, measures, size, overlap, length)
            good, measures = [], []
        if rest:
            out += tracked_spans(text, size, overlap, piece, rest, length)
        else:
            out.append(piece)  # LangChain keeps such a piece as it is, unstripped
    if good:
        out += _merge(text, good, measures, size, overlap, length)
    return out


def split_spans(text: str, size: int, overlap: int = 0,
                separators: list[str] | None = None, length: Length | None = None
                ) -> list[Span]:
    """[start, end) spans of the recursive chunks of `text`, each an exact slice.
    Separators: by default those of the text's script (`separators_for`). Sizes are chars,
    or what `length` counts (LangChain's length_function)."""
    check_sizes(size, overlap)
    seps = separators if separators is not None else separators_for(text)
    return tracked_spans(text, size, overlap, separators=seps, length=length)


def recursive_chunks(doc: Document, size: int, overlap: int = 0,
                     length: Length | None = None) -> list[Chunk]:
    try:
        spans = split_spans(doc.text, size, overlap, length=length)
    except ValueError as e:
        raise ValueError(f"{doc.id}: recursive-{size}{'t' if length else ''}: {e}") from None
    return [Chunk(doc.id, s, e, doc.text[s:e]) for s, e in spans]


def recursive(size: int, overlap: int = 0, unit: Unit | None = None) -> Strategy:
    """The recursive split in chars; with `unit`, in its units (recursive-400t)."""
    check_sizes(size, overlap)  # fail at definition time on bad settings
    t = "t" if unit else ""
    name = f"recursive-{size}{t}" + (f"-ov{overlap}{t}" if overlap else "")
    length = unit.count if unit else None
    return Strategy(name, "recursive", lambda doc: recursive_chunks(doc, size, overlap, length),
                    {"size": size, "overlap": overlap,
                     "separators": {"cjk": CJK_SEPARATORS, "space-delimited": SPACE_SEPARATORS},
                     "keep_separator": "end"} | ({"unit": unit.spec} if unit else {}),
                    slices=True)
