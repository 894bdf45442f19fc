"""Locating an imported question's excerpts in the corpus chunkeval scores, and choosing the
question's document (see imports.py for the rules)."""

from __future__ import annotations

import bisect
import functools
import re
from array import array
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..model import Corpus, Document, whitespace
from .formats import Asked

# How an excerpt was placed, in the order the summary lists them.
OUTCOMES = {"offsets": "at the file's offsets", "exact": "exactly, by search",
            "whitespace": "with whitespace ignored",
            "ambiguous": "ambiguous, at the first",
            "elsewhere": "in another document only",
            "removed": "in markup a reader does not see", "missing": "not found"}

# An excerpt found this many times in a document is placed at the occurrence nearest its
# hint among the first ones: a short excerpt ("Yes.") can occur thousands of times.
MAX_OCCURRENCES = 1000
_RUN = re.compile(r"\S+")  # re's \s is str.isspace, which str.split splits on


@dataclass
class Imported:
    lines: list[dict] = field(default_factory=list)  # the JSONL objects to write
    read: int = 0  # questions read
    outcomes: Counter = field(default_factory=Counter)
    unfound: list[str] = field(default_factory=list)  # one line per excerpt not placed
    ambiguous: list[str] = field(default_factory=list)  # one line per excerpt placed at a guess
    skipped: list[str] = field(default_factory=list)  # rows that were no question
    dropped: int = 0  # questions none of whose excerpts was found
    unknown_docs: Counter = field(default_factory=Counter)  # references matching no document
    notes: list[str] = field(default_factory=list)  # rows read and, by design, not imported

    def summary(self) -> str:
        o = self.outcomes
        out = [f"questions read     {self.read}" + (f" (+{len(self.skipped)} rows skipped)"
                                                    if self.skipped else ""),
               f"questions written  {len(self.lines)}",
               f"  not written      {self.dropped} (no excerpt found in their document)",
               f"excerpts           {sum(o.values())}"]
        out += [f"  {label:<24} {o[key]}" for key, label in OUTCOMES.items()]
        out += self.notes
        if self.unknown_docs:
            names = ", ".join(f"{n!r}" for n in sorted(self.unknown_docs)[:5])
            out.append(f"references to no document in the corpus (searched all): {names}"
                       + (" ..." if len(self.unknown_docs) > 5 else ""))
        return "\n".join(out)


class Locator:
    """Finds excerpts in a corpus's documents: exactly, else with whitespace ignored.

    `raw(doc)` gives a document's file as text, when it can be read (a folder's files): file
    offsets then choose among repeated copies of an excerpt by their order in the file."""

    def __init__(self, corpus: Corpus, raw: Callable[[Document], str | None] | None = None):
        self.corpus = corpus
        self.raw = raw or (lambda doc: None)
        self._bare: dict[str, tuple[str, array, array]] = {}
        self._raw: dict[str, str | None] = {}

    def _bare_of(self, doc: Document) -> tuple[str, array, array]:
        """The text without whitespace, and where each run of non-space characters starts in
        the text and in that bare text: a table per word, not per character, so that a large
        corpus fits."""
        if doc.id not in self._bare:
            real, bare, n = array("q"), array("q"), 0
            for m in _RUN.finditer(doc.text):
                real.append(m.start())
                bare.append(n)
                n += m.end() - m.start()
            self._bare[doc.id] = ("".join(doc.text.split()), real, bare)
        return self._bare[doc.id]

    def _raw_of(self, doc: Document) -> str | None:
        if doc.id not in self._raw:
            self._raw[doc.id] = self.raw(doc)
        return self._raw[doc.id]

    def _text_offset(self, doc: Document, file_offset: int, text: str) -> int | None:
        """The text offset of a file offset for a document without a map (HTML): itself where
        the text is the file's (or, the file not at hand, where `text` is found there); None
        when nothing tells."""
        raw = self._raw_of(doc)
        if raw is None:  # the file is not at hand: its offsets count if the text is there
            return file_offset if doc.text.startswith(text, file_offset) else None
        return file_offset if raw == doc.text else None

    def find(self, doc: Document, text: str, near: tuple[int, int] | None = None,
             within: tuple[int, int] | None = None) -> tuple[int, int, str] | None:
        """(start, end, how) of `text` in `doc`; how is "offsets", "exact", "whitespace" or
        "ambiguous". `near`: the [start, end) the question's file gives, in the document's
        file; `within`: the [start, end) of the text to search (a section). None when it is
        not there (or blank).

        A copy is chosen by the file's offsets mapped to the text (the nearest copy to them),
        else by its order among the copies in the file; an excerpt found more than once with
        nothing to choose by is placed at its first copy and is "ambiguous"."""
        if not text.strip():
            return None
        lo, hi = within if within is not None else (0, len(doc.text))
        hint = None
        if near is not None and doc.file_map:
            # the file's offsets, through the map (a Markdown file loses its comments...)
            kept = _kept(doc, text, near)
            if kept == "removed":
                return None  # reported, never moved to where the same words are seen
            if kept and lo <= kept[0] and kept[1] <= hi:
                return kept[0], kept[1], "offsets"
            hint = doc.text_offset(near[0]) if 0 <= near[0] else None
        elif near is not None and 0 <= near[0] < near[1]:
            hint = self._text_offset(doc, near[0], text)
            if hint is not None and lo <= hint and hint + len(text) <= hi \
                    and doc.text.startswith(text, hint):
                return hint, hint + len(text), "offsets"
        found = _occurrences(doc.text, text, lo, hi)
        if found:
            if hint is not None:
                at = min(found, key=lambda a: abs(a - hint))
                return at, at + len(text), "exact"
            if len(found) == 1:
                return found[0], found[0] + len(text), "exact"
            k = self._ordinal(doc, text, near) if near is not None else None
            if k is not None and len(found) < MAX_OCCURRENCES:
                at = found[k] if k < len(found) else None
                if at is not None:
                    return at, at + len(text), "exact"
            return found[0], found[0] + len(text), "ambiguous"
        # str.split's whitespace, as the JSONL reader compares answers
        squeezed = squeeze(text)
        bare, real_starts, bare_starts = self._bare_of(doc)

        def bare_at(pos: int) -> int:  # where the first run starting at or after pos begins
            k = bisect.bisect_left(real_starts, pos)
            return bare_starts[k] if k < len(bare_starts) else len(bare)

        def real(j: int) -> int:
            k = bisect.bisect_right(bare_starts, j) - 1
            return real_starts[k] + j - bare_starts[k]

        found = [a for a in _occurrences(bare, squeezed, bare_at(lo), bare_at(hi))
                 if real(a + len(squeezed) - 1) < hi]
        if not found:
            return None
        if hint is not None:
            k = max(bisect.bisect_right(real_starts, hint) - 1, 0)
            near_bare = bare_starts[k] if bare_starts else 0
            at = min(found, key=lambda a: abs(a - near_bare))
        else:
            at = found[0]
        how = "whitespace" if hint is not None or len(found) == 1 else "ambiguous"
        return real(at), real(at + len(squeezed) - 1) + 1, how

    def _ordinal(self, doc: Document, text: str, near: tuple[int, int]) -> int | None:
        """Which copy of `text` the file's offset names, counted in the file: the one nearest
        the offset. None when the file cannot be read or holds the excerpt as often as the
        text does not."""
        raw = self._raw_of(doc)
        if raw is None:
            return None
        in_file, in_text = _occurrences(raw, text), _occurrences(doc.text, text)
        if not in_file or len(in_file) != len(in_text) or len(in_file) >= MAX_OCCURRENCES:
            return None
        return min(range(len(in_file)), key=lambda i: abs(in_file[i] - near[0]))


def _kept(doc: Document, text: str, near: tuple[int, int]):
    """The text span of the file's [start, end) when the excerpt is what the file holds
    there, as far as the text shows it (every character the parser kept agrees); "removed"
    when the parser kept none of it; else None."""
    start, end = near
    if not 0 <= start < end or end - start != len(text):
        return None
    span = doc.text_span(start, end)
    if span is None:
        return "removed"
    kept = "".join(text[max(start, f) - start:min(end, f + n) - start]
                   for _, f, n in doc.file_map if f < end and start < f + n)
    return span if doc.text[span[0]:span[1]] == kept else None


@functools.cache
def _spaces() -> dict[int, None]:
    return dict.fromkeys(whitespace())


def squeeze(text: str) -> str:
    """`text` without the whitespace str.split splits on, built as one string: splitting a
    long excerpt into words would hold an object per word."""
    return text.translate(_spaces())


def _occurrences(text: str, needle: str, lo: int = 0, hi: int | None = None) -> list[int]:
    """Where `needle` starts in text[lo:hi] (whole inside it), overlapping copies too; at most
    MAX_OCCURRENCES of them."""
    hi = len(text) if hi is None else hi
    out, at = [], text.find(needle, lo, hi)
    while at != -1 and len(out) < MAX_OCCURRENCES:
        out.append(at)
        at = text.find(needle, at + 1, hi)
    return out


def raw_files(root: str | Path) -> Callable[[Document], str | None]:
    """A document's file under the folder `root`, as text (undecodable bytes replaced, so
    that its offsets count characters as a reader of the file counted them); None for a file
    that cannot be read or is compressed."""
    base = Path(root)

    def raw(doc: Document) -> str | None:
        path = base / doc.id
        if path.suffix.lower() == ".gz" or not path.is_file():
            return None
        try:
            return path.read_bytes().decode("utf-8-sig", errors="replace")
        except OSError:
            return None

    return raw


def candidate_docs(corpus: Corpus, ref: str | None) -> list[Document] | None:
    """The documents a file's reference names: by path, by file name, or by file name
    without its suffix (Chroma names its corpora so); None when it names none."""
    if not ref or not ref.strip():
        return None
    ref = ref.strip().replace("\\", "/")
    if ref in corpus:
        return [corpus[ref]]
    tail = [d for d in corpus.documents if ref.endswith("/" + d.id)]
    if tail:
        return tail
    name = ref.rsplit("/", 1)[-1]
    for key in (lambda d: d.id.rsplit("/", 1)[-1], lambda d: d.id.rsplit("/", 1)[-1]
                .rsplit(".", 1)[0]):
        found = [d for d in corpus.documents if key(d) == name]
        if found:
            return found
    return None


def place(locator: Locator, asked: Asked, docs: list[Document]):
    """(document id or None, [(excerpt, (start, end, how) or None, outcome, the documents it
    was found in)])."""
    hits = [{d.id: h for d in docs if (h := locator.find(d, e.text, e.offsets)) is not None}
            for e in asked.excerpts]
    order = {d.id: i for i, d in enumerate(docs)}
    found_in = Counter(doc for h in hits for doc in h)
    exact = Counter(doc for h in hits for doc, (_, _, how) in h.items() if how != "whitespace")
    chosen = min(found_in, key=lambda d: (-found_in[d], -exact[d], order[d]), default=None)
    out = []
    for e, h in zip(asked.excerpts, hits):
        if chosen in h:
            out.append((e, h[chosen], h[chosen][2], list(h)))
        else:
            gone = e.offsets and any(_kept(d, e.text, e.offsets) == "removed" for d in docs
                                     if d.file_map)
            out.append((e, None, "elsewhere" if h else "removed" if gone else "missing",
                        list(h)))
    return chosen, out


def locate(corpus: Corpus, asked: list[Asked], skipped: list[str],
           raw: Callable[[Document], str | None] | None = None,
           notes: list[str] = ()) -> Imported:
    result = Imported(read=len(asked), skipped=skipped, notes=list(notes))
    locator = Locator(corpus, raw)
    everything = list(corpus.documents)
    for q in asked:
        docs = candidate_docs(corpus, q.doc)
        named = docs is not None
        if docs is None:
            if q.doc:
                result.unknown_docs[q.doc] += 1
            docs = everything
        chosen, placed = place(locator, q, docs)
        spans = []
        for e, hit, outcome, found_in in placed:
            if outcome == "missing" and named:  # say where it is, when not where named
                mine = {d.id for d in docs}
                found_in = [d.id for d in everything if d.id not in mine
                            and locator.find(d, e.text) is not None]
                outcome = "elsewhere" if found_in else outcome
            result.outcomes[outcome] += 1
            if outcome == "ambiguous":
                result.ambiguous.append(f"{e.at}: found more than once in {chosen}; placed "
                                        f"at the first ({hit[0]}): {_preview(e.text)}")
            if hit is None:
                where = f" (in {', '.join(found_in[:5])})" if found_in else ""
                if named and found_in:
                    where = (f": not in {q.doc!r}, the document it names; found in "
                             f"{', '.join(found_in[:5])}")
                result.unfound.append(f"{e.at}: {OUTCOMES[outcome]}{where}: "
                                      f"{_preview(e.text)}")
            elif [hit[0], hit[1]] not in spans:
                spans.append([hit[0], hit[1]])
        if not spans:
            result.dropped += 1
            continue
        result.lines.append({"id": q.id, "query": q.text, "doc": chosen, "spans": spans})
    return result


def _preview(text: str, n: int = 60) -> str:
    flat = " ".join(text[:4 * n].split())
    return repr(flat if len(flat) <= n else flat[:n] + "…")

