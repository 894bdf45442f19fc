"""Properties every chunking strategy must keep, checked on one document at a time.

Which properties apply depends on the strategy's family and params:

- slice: doc.text[start:end] == text. Checked for every chunk of a strategy with
  slices=True. Structure chunks are slices except later pieces of a split table, whose
  text is header + "\\n" + doc.text[start:end]; those must be exactly that.
- ordered: 0 <= start <= end <= len(text), the chunk names the document, and starts and
  ends never decrease.
- coverage: the union of the spans covers every non-whitespace char of the blocks the
  strategy keeps: all of them, except those a strategy declares in params["drops"]
  (LangChain's semantic HTML splitter drops the h2/h3 headings it splits on). Text between
  blocks (a Markdown file's markup) is not content.
- size: len(text) <= params["size"], unless the chunk is one indivisible unit: a single
  table row (with its repeated header rows) or a single pre line.
- overlap: 0 <= max(0, prev.end - next.start) <= params["overlap"] (default 0).
  Both in chars, or for a strategy sized in the units of a length function (params["unit"],
  its MODULE:ATTR) in those: the count of the text, and of the text the two chunks share.
- table_rows: no chunk boundary falls strictly inside a table row.
- headings: no chunk holds a heading of level <= params["cut"] after its own start.
- header_repeated: a piece of a split table that starts after the header rows begins
  with the header rows' text and a newline.
- prefix: index_text is "title ＞ h2 ＞ h3" in force at the chunk's start, "\\n", the text.
- parent: every chunk has a parent chunk of the same document whose span meets its own.
- deterministic: splitting twice gives equal chunks.
- split: the strategy did not raise.
"""

from __future__ import annotations

import numbers
import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from .outside import length_function
from .model import Chunk, Document
from .strategies import families
from .strategies.families import BASE, keeps_structure
from .strategies.registry import Strategy
from .strategies.structure import heading_path, table_header

MAX_EXAMPLES = 3  # offending chunks named per property; the count says how many in all
# The properties checked on every document of every run, where the numbers are made: each
# costs one pass over the chunks (the rest, `coverage` and `deterministic` included, are for
# the generated documents of the invariant tests).
CONTRACT = ("ordered", "slice", "overlap")
# Generated documents the invariant item checks a project's splitter on after the corpus's
# own (the `invariant_examples` setting): a few, as the corpus is checked whole and each
# generated document costs its generation; a nightly job may ask for hundreds.
GENERATED_EXAMPLES = 10
_NON_SPACE = re.compile(r"\S")


@dataclass(frozen=True)
class Violation:
    strategy: str
    property: str
    detail: str

    @property
    def message(self) -> str:
        return f"strategy {self.strategy!r} broke {self.property!r}: {self.detail}"

    def __str__(self) -> str:
        return self.message


def properties(strategy: Strategy) -> tuple[str, ...]:
    """The properties that apply to `strategy` (an outside family gets the base ones)."""
    family = families.family(strategy.family)
    props = None if family is None else family.properties
    if props is None:
        props = BASE + tuple(p for p in ("size", "overlap") if p in strategy.params)
        if strategy.keeps_structure:
            props += ("table_rows",)
    if not strategy.slices and not keeps_structure(strategy.family):
        props = tuple(p for p in props if p != "slice")
    return props


def check(strategy: Strategy, doc: Document, made: list[Chunk] | None = None
          ) -> list[Violation]:
    """Every property that applies, on the strategy's chunks of `doc`. `made`: its chunks of
    `doc` from an earlier call (the evaluation's), to which this split must be equal
    (deterministic) instead of to a second split here."""
    try:
        chunks = strategy.split(doc)
    except Exception as e:  # a crash is a finding about the strategy, not about the test
        return [Violation(strategy.name, "split", f"{doc.id}: raised {type(e).__name__}: {e}")]
    found: list[Violation] = []
    for prop in properties(strategy):
        if prop == "deterministic" and made is not None:
            bad = _same(chunks, made, "the evaluation's split")
        else:
            bad = _CHECKS[prop](strategy, doc, chunks)
        if bad:
            more = f" (and {len(bad) - MAX_EXAMPLES} more)" if len(bad) > MAX_EXAMPLES else ""
            found.append(Violation(strategy.name, prop,
                                   f"{doc.id}: " + "; ".join(bad[:MAX_EXAMPLES]) + more))
    return found


def contract(strategy: Strategy, doc: Document, chunks: list[Chunk]) -> tuple[str, str] | None:
    """The first way `chunks` (the strategy's output on `doc`) break the splitter contract,
    as (property, what is wrong), or None: chunks of this document, in order, within its
    text; each the slice of its span unless the strategy says it rewrites text; overlap
    within what its params declare; and at least one chunk for a document with text."""
    if not chunks and doc.text.strip():
        return "chunks", f"no chunk for a document of {len(doc.text)} characters"
    for i, c in enumerate(chunks):
        if (problem := _malformed(c)) is not None:
            return "types", f"#{i} {problem}"
    applies = properties(strategy)
    for prop in CONTRACT:
        if prop in applies:
            bad = _CHECKS[prop](strategy, doc, chunks)
            if bad:
                more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
                return prop, bad[0] + more
    # The parents are what is handed out and scored: within the document and, for a strategy
    # of slices, slices too (a structure-aware parent may repeat its table's header). Whether
    # a parent meets its child is left to the invariant tests: on real pages a child can fall
    # between two parents (a code fence's marks), and the nearest one is handed.
    parents = list(dict.fromkeys(c.parent for c in chunks if c.parent is not None))
    for p in parents:
        if (problem := _malformed(p)) is not None:
            return "parent", f"the parent of a chunk: {problem}"
    if parents:
        lenient = Strategy(strategy.name, "parents", strategy.split, slices=False)
        bad = _within(doc, parents) + (_slice(lenient, doc, parents) if strategy.slices else [])
        if bad:
            return "parent", "a parent " + bad[0]
    return None


def _malformed(c) -> str | None:
    """What makes `c` no Chunk a score can be computed from, or None."""
    if not isinstance(c, Chunk):
        return f"is a {type(c).__name__}, not a Chunk"
    if not all(isinstance(x, numbers.Integral) and not isinstance(x, bool)
               for x in (c.start, c.end)):
        return f"has offsets {c.start!r}, {c.end!r}: not whole numbers"
    if not isinstance(c.doc_id, str) or not isinstance(c.text, str):
        return "has a doc_id or text that is not a string"
    if c.index_text is not None and not isinstance(c.index_text, str):
        return "has an index_text that is not a string"
    if c.parent is not None and not isinstance(c.parent, Chunk):
        return f"has a parent that is a {type(c.parent).__name__}, not a Chunk"
    return None


def _within(doc: Document, chunks: list[Chunk]) -> list[str]:
    return [f"{_show(c)} is not within {doc.id} (length {len(doc.text)})" for c in chunks
            if c.doc_id != doc.id or not 0 <= c.start <= c.end <= len(doc.text)]


def _show(c: Chunk) -> str:
    text = c.text if len(c.text) <= 40 else c.text[:37] + "..."
    return f"chunk [{c.start},{c.end}) {text!r}"


def _slice(strategy, doc, chunks) -> list[str]:
    bad = []
    headers = _table_headers(doc)
    for i, c in enumerate(chunks):
        source = doc.text[c.start:c.end]
        if c.text == source:
            continue
        header = headers.get(c.start)
        if not strategy.slices and header is not None and c.text == header + "\n" + source:
            continue
        bad.append(f"#{i} {_show(c)} is not doc.text[{c.start}:{c.end}] = {source[:40]!r}")
    return bad


def _table_headers(doc: Document) -> dict[int, str]:
    """Body-row start offset -> header text, for every table that has header rows."""
    out = {}
    for b in doc.blocks:
        header = table_header(doc, b) if b.kind == "table" else ""
        if header:
            for s, _ in b.rows[b.header_rows:]:
                out[s] = header
    return out


def _ordered(strategy, doc, chunks) -> list[str]:
    bad = []
    for i, c in enumerate(chunks):
        if c.doc_id != doc.id:
            bad.append(f"#{i} names document {c.doc_id!r}")
        if not 0 <= c.start <= c.end <= len(doc.text):
            bad.append(f"#{i} {_show(c)} lies outside the text (length {len(doc.text)})")
        if i and (c.start < chunks[i - 1].start or c.end < chunks[i - 1].end):
            bad.append(f"#{i} {_show(c)} comes after [{chunks[i - 1].start},{chunks[i - 1].end})")
    return bad


def _coverage(strategy, doc, chunks) -> list[str]:
    # The text to keep is the blocks' (a Markdown file's markup, "# " or a code fence, lies
    # between them), less the blocks the strategy drops. One pass over the gaps between
    # the spans, not over the characters: a real document runs to megabytes.
    n = len(doc.text)
    dropped = set(strategy.params.get("drops", ()))
    kept = [b for b in doc.blocks if b.kind not in dropped]
    starts = [b.start for b in kept]
    spans = sorted((s, e) for c in chunks if (s := max(0, c.start)) < (e := min(n, c.end)))
    bad, covered = [], 0
    for s, e in spans + [(n, n)]:
        if s > covered and (i := _first_kept(doc.text, kept, starts, covered, s)) is not None:
            bad.append(f"text [{i},{s}) {doc.text[i:s][:40]!r} is in no chunk" if s < n else
                       f"text from {i} {doc.text[i:i + 40]!r} is in no chunk")
        covered = max(covered, e)
    return bad


def _first_kept(text: str, blocks, starts: list[int], a: int, b: int) -> int | None:
    """The first non-whitespace character in [a, b) that lies in one of `blocks`."""
    for block in blocks[max(0, bisect_right(starts, a) - 1):bisect_left(starts, b)]:
        lo, hi = max(a, block.start), min(b, block.end)
        if lo < hi and (found := _NON_SPACE.search(text, lo, hi)):
            return found.start()
    return None


def _indivisible(doc: Document, c: Chunk) -> str | None:
    """Name the single unit a chunk holds, if it holds one that cannot be cut."""
    starts = [b.start for b in doc.blocks]
    i = bisect_right(starts, c.start) - 1
    if i < 0:
        return None
    b = doc.blocks[i]
    if c.end > b.end:
        return None
    if b.kind == "table" and b.rows:
        body = b.rows[b.header_rows:] if table_header(doc, b) else b.rows
        held = [r for r in body if r[0] < c.end and r[1] > c.start]
        return "a single table row" if len(held) <= 1 else None
    if b.kind == "pre" and "\n" not in doc.text[c.start:c.end]:
        return "a single pre line"
    return None


def _unit(strategy) -> tuple:
    """(the strategy's length function, what it counts) for its size and overlap."""
    unit = strategy.params.get("unit")
    return (len, "chars") if unit is None else (length_function(unit), f"units of {unit}")


def _size(strategy, doc, chunks) -> list[str]:
    limit = strategy.params["size"]
    length, what = _unit(strategy)
    sizes = [length(c.text) for c in chunks]
    return [f"#{i} {_show(c)} has {n} {what} > {limit}"
            for i, (c, n) in enumerate(zip(chunks, sizes))
            if n > limit and _indivisible(doc, c) is None]


def _overlap(strategy, doc, chunks) -> list[str]:
    limit = strategy.params.get("overlap", 0)
    length, what = _unit(strategy)
    bad = []
    for i in range(1, len(chunks)):
        ov = max(0, chunks[i - 1].end - chunks[i].start)
        if ov and length is not len:
            ov = length(doc.text[chunks[i].start:chunks[i - 1].end])
        if ov > limit:
            bad.append(f"#{i - 1}/#{i} overlap by {ov} {what} > {limit}")
    return bad


def _table_rows(strategy, doc, chunks) -> list[str]:
    rows = sorted(r for b in doc.blocks if b.kind == "table" for r in b.rows)
    row_starts = [r[0] for r in rows]
    bad = []
    for i, c in enumerate(chunks):
        for edge in (c.start, c.end):
            k = bisect_left(row_starts, edge) - 1  # the last row starting before the edge
            if k >= 0 and rows[k][0] < edge < rows[k][1]:
                bad.append(f"#{i} {_show(c)} cuts table row [{rows[k][0]},{rows[k][1]}) at {edge}")
    return bad


def _headings(strategy, doc, chunks) -> list[str]:
    cut = strategy.params.get("cut", 3)
    heads = [b.start for b in doc.blocks if b.is_heading and b.level <= cut]
    bad = []
    for i, c in enumerate(chunks):
        k = bisect_right(heads, c.start)
        if k < len(heads) and heads[k] < c.end:
            bad.append(f"#{i} {_show(c)} holds a level <= {cut} heading at {heads[k]}")
    return bad


def _header_repeated(strategy, doc, chunks) -> list[str]:
    bad = []
    for b in doc.blocks:
        header = table_header(doc, b) if b.kind == "table" else ""
        if not header:
            continue
        body_start = b.rows[b.header_rows][0]
        for i, c in enumerate(chunks):
            if body_start <= c.start < b.end and not c.text.startswith(header + "\n"):
                bad.append(f"#{i} {_show(c)} is a later piece of table [{b.start},{b.end}) "
                           "without its header row")
    return bad


def _prefix(strategy, doc, chunks) -> list[str]:
    bad = []
    for i, c in enumerate(chunks):
        path = heading_path(doc, c.start)
        want = f"{path}\n{c.text}" if path else c.text
        if c.indexed != want:
            bad.append(f"#{i} {_show(c)} is indexed as {c.indexed[:60]!r}, not {want[:60]!r}")
    return bad


def _parent(strategy, doc, chunks) -> list[str]:
    bad = []
    for i, c in enumerate(chunks):
        p = c.parent
        if p is None:
            bad.append(f"#{i} {_show(c)} has no parent")
        elif p.doc_id != doc.id or not (p.start < c.end and c.start < p.end):
            bad.append(f"#{i} {_show(c)} has parent [{p.start},{p.end}) of {p.doc_id!r} "
                       "that does not meet it")
    return bad


def _deterministic(strategy, doc, chunks) -> list[str]:
    try:
        again = strategy.split(doc)
    except Exception as e:
        return [f"second split raised {type(e).__name__}: {e}"]
    return _same(again, chunks, "the first split")


def _same(now: list[Chunk], before: list[Chunk], what: str) -> list[str]:
    """How `now` differs from `before` (`what`), or nothing."""
    if now == before:
        return []
    if len(now) != len(before):
        return [f"{len(now)} chunks, against {len(before)} in {what}"]
    i = next(i for i, (a, b) in enumerate(zip(before, now)) if a != b)
    return [f"#{i} was {_show(before[i])} in {what}, then {_show(now[i])}"]


_CHECKS = {
    "slice": _slice, "ordered": _ordered, "coverage": _coverage, "size": _size,
    "overlap": _overlap, "table_rows": _table_rows, "headings": _headings,
    "header_repeated": _header_repeated, "prefix": _prefix, "parent": _parent,
    "deterministic": _deterministic,
}
