"""Questions a team already has, turned into chunkeval's JSONL: Chroma's chunking-evaluation
CSV, a Ragas test set (CSV, JSON or JSONL), LlamaIndex's EmbeddingQAFinetuneDataset JSON and
a BEIR folder (queries.jsonl, qrels/*.tsv, corpus.jsonl).

Every excerpt is located in the corpus chunkeval scores, so the file written holds `spans`
into the documents' own text: at the file's offsets where the text there is the excerpt
(through the document's file map: a Markdown document's text lacks what a reader does not
see, and an excerpt wholly inside that is reported, not searched for elsewhere), else where
an exact search finds it, else where it is found with whitespace ignored (an
HTML page's text is not its file, and a splitter may have tidied line breaks). An excerpt
found nowhere is counted and listed, never dropped unsaid.

A chunkeval query has one document. When a question's excerpts lie in several documents,
it goes to the document holding most of them (ties: the most found exactly, then the
document named first); its excerpts in other documents are counted and listed as found
"in another document". A question none of whose excerpts is found in its document is not
written. A row that cannot be read as a question (no text, no excerpts) is skipped and
listed; a file that cannot be read at all is an InputError naming it and its line.
"""

from __future__ import annotations

import ast
import bisect
import codecs
import functools
import json
import math
import re
from array import array
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from ..errors import InputError
from ..model import Corpus, Document, whitespace

FORMATS = ("chroma", "ragas", "llamaindex", "beir")

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


@dataclass(frozen=True)
class At:
    """Where in an input file something was read: a line, or an item of a JSON file."""

    path: str
    line: int | None = None
    item: str = ""

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where} {self.item}" if self.item else where

    def error(self, message: str) -> InputError:
        return InputError(self.path, f"{self.item}: {message}" if self.item else message,
                          self.line)


@dataclass
class Excerpt:
    text: str
    at: At
    offsets: tuple[int, int] | None = None  # [start, end) the file gives, if any


@dataclass
class Asked:
    """A question as read, before its excerpts are located."""

    id: str
    text: str
    excerpts: list[Excerpt]
    at: At
    doc: str | None = None  # the file's own name for the document, if it gives one


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


# -- locating excerpts -----------------------------------------------------------------------

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


# -- reading the files -----------------------------------------------------------------------

def _text(path: Path) -> str:
    _check_utf8(path)
    return _opened(path, lambda f: f.read())


def _lines(path: Path) -> Iterator[str]:
    """The file's lines, line ends kept, read one at a time: a long line is held once."""
    _check_utf8(path)
    with _open(path) as f:
        yield from f


def _open(path: Path):
    # newline="": csv sees a quoted cell's line breaks as written
    return open(path, encoding="utf-8-sig", newline="")  # spreadsheet tools write a BOM


def _opened(path: Path, read):
    try:
        with _open(path) as f:
            return read(f)
    except IsADirectoryError:
        raise InputError(str(path), "is a directory, not a file") from None
    except OSError as e:
        raise InputError(str(path), f"cannot read: {e.strerror or e}") from None


def _check_utf8(path: Path, block: int = 1 << 20) -> None:
    """InputError naming the line of the first byte that is not UTF-8, read in blocks."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    newlines = 0  # in the blocks decoded whole (a pending partial character holds none)
    try:
        with open(path, "rb") as f:
            while True:
                data = f.read(block)
                try:
                    decoder.decode(data, final=not data)
                except UnicodeDecodeError as e:
                    line = newlines + e.object.count(b"\n", 0, e.start) + 1
                    raise InputError(str(path), f"not UTF-8 text: byte 0x{e.object[e.start]:02x}"
                                                f" ({e.reason})", line) from None
                if not data:
                    return
                newlines += data.count(b"\n")
    except IsADirectoryError:
        raise InputError(str(path), "is a directory, not a file") from None
    except OSError as e:
        raise InputError(str(path), f"cannot read: {e.strerror or e}") from None


def _csv_rows(path: Path, need: tuple[tuple[str, ...], ...]) -> Iterator[tuple[At, dict]]:
    """(where, row) of each data row; `need`: of each tuple of column names, one must be
    there. A row's line is the line it starts on (a quoted cell may span lines)."""
    records = _csv_records(path)
    header = next(records, None)
    if header is None:
        raise InputError(str(path), "empty file")
    header = [h.strip() for h in header[1]]
    for names in need:
        if not any(n in header for n in names):
            raise InputError(str(path), f"no column {' or '.join(map(repr, names))} "
                                        f"(the columns: {', '.join(header)})", 1)
    for start, row in records:
        if any(cell.strip() for cell in row):
            yield At(str(path), start), dict(zip(header, row))


_LINE_END = "\r\n"


def _csv_records(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(first line, cells) of each CSV record (RFC 4180: "," between cells, a quoted cell
    may hold commas, line breaks and doubled quotes). Read here rather than by the csv
    module, which holds a cell as 4 bytes a character: an excerpt of 200 MB took 800 MB.
    A quote that does not end its cell is an error naming the line, not a row swallowing
    the rest."""
    lines = enumerate(_lines(path), 1)
    for n, line in lines:
        start, cells, pos = n, [], 0
        while True:
            if line.startswith('"', pos):
                pieces, pos = [], pos + 1
                while True:
                    q = line.find('"', pos)
                    if q == -1:  # the cell goes on on the next line
                        pieces.append(line[pos:])
                        n, line = next(lines, (n, None))
                        if line is None:
                            raise InputError(str(path), "not CSV: a quoted cell is not "
                                                        "closed before the end of the file",
                                             start)
                        pos = 0
                        continue
                    pieces.append(line[pos:q])
                    if line.startswith('"', q + 1):
                        pieces.append('"')
                        pos = q + 2
                        continue
                    pos = q + 1
                    break
                cells.append("".join(pieces))
                del pieces
                if pos < len(line) and line[pos] not in "," + _LINE_END:
                    raise InputError(str(path), "not CSV: ',' expected after '\"'", n)
            else:
                end = len(line.rstrip(_LINE_END))
                comma = line.find(",", pos, end)
                stop = comma if comma != -1 else end
                cells.append(line[pos:stop])
                pos = stop
            if pos < len(line) and line[pos] == ",":
                pos += 1
                continue
            break
        yield start, cells
        del line, cells


def _json(path: Path):
    try:
        return json.loads(_text(path))
    except json.JSONDecodeError as e:
        raise InputError(str(path), f"not JSON: {e.msg}", e.lineno) from None


def _jsonl(path: Path) -> Iterator[tuple[At, object]]:
    for n, line in enumerate(_lines(path), 1):
        if line.strip():
            try:
                yield At(str(path), n), json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(str(path), f"not JSON: {e.msg}", n) from None


class Skip(Exception):
    """A row that is no usable question: listed, and the rest read on."""


def _question(value, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Skip(f"no question in {name!r}")
    return value.strip()


def _unique(qid: str, ids: set[str]) -> str:
    out, n = qid, 1
    while out in ids:
        n += 1
        out = f"{qid}~{n}"
    ids.add(out)
    return out


# Each reader gives (questions, rows skipped, notes on rows read but not imported).
Read = tuple[list[Asked], list[str], list[str]]


def read_chroma(paths: list[Path]) -> Read:
    asked, skipped, ids = [], [], set()
    for path in paths:
        for n, (at, row) in enumerate(_csv_rows(path, (("question",), ("references",))), 1):
            try:
                text = _question(row.get("question"), "question")
                try:
                    refs = json.loads(row.get("references") or "")
                except json.JSONDecodeError as e:
                    raise Skip(f"'references' is not JSON ({e.msg})") from None
                if not isinstance(refs, list) or not refs:
                    raise Skip("'references' is not a non-empty JSON list")
                excerpts = []
                for i, ref in enumerate(refs):
                    if not isinstance(ref, dict) or not isinstance(ref.get("content"), str):
                        raise Skip(f"'references' item {i} has no 'content' string")
                    s, e = ref.get("start_index"), ref.get("end_index")
                    offsets = (s, e) if type(s) is int and type(e) is int else None
                    excerpts.append(Excerpt(ref["content"], At(at.path, at.line,
                                                               f"reference {i}"), offsets))
            except Skip as e:
                skipped.append(f"{at}: {e}")
                continue
            qid = _unique(f"{path.stem}-{n}", ids)
            asked.append(Asked(qid, text, excerpts, at, row.get("corpus_id") or None))
    return asked, skipped, []


def _string_list(value, name: str) -> list[str]:
    """A list of strings, given as one or as its JSON or Python text (Ragas' CSV holds
    str(list))."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            try:
                value = ast.literal_eval(value)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                raise Skip(f"{name!r} is not a list") from None
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise Skip(f"{name!r} is not a non-empty list of strings")
    return value


def _ragas_records(path: Path) -> Iterator[tuple[At, object]]:
    suffix = path.suffix.lower()
    if suffix == ".csv":
        yield from _csv_rows(path, (("user_input", "question"),
                                    ("reference_contexts", "contexts")))
    elif suffix == ".jsonl":
        yield from _jsonl(path)
    else:
        data = _json(path)
        if isinstance(data, dict) and isinstance(data.get("samples"), list):
            data = data["samples"]  # a Testset as saved whole
        if not isinstance(data, list):
            raise InputError(str(path), "expected a JSON list of samples (or JSONL, or CSV)")
        for i, rec in enumerate(data):
            yield At(str(path), None, f"item {i}"), rec


def read_ragas(paths: list[Path]) -> Read:
    asked, skipped, ids = [], [], set()
    for path in paths:
        for n, (at, rec) in enumerate(_ragas_records(path), 1):
            try:
                if isinstance(rec, dict) and isinstance(rec.get("eval_sample"), dict):
                    rec = rec["eval_sample"]  # a TestsetSample
                if not isinstance(rec, dict):
                    raise Skip("not an object")
                qkey = "question" if "question" in rec and "user_input" not in rec \
                    else "user_input"
                if isinstance(rec.get(qkey), list):
                    raise Skip("a multi-turn sample: only single questions are imported")
                text = _question(rec.get(qkey), qkey)
                ckey = "contexts" if "contexts" in rec and "reference_contexts" not in rec \
                    else "reference_contexts"
                contexts = _string_list(rec.get(ckey), ckey)
            except Skip as e:
                skipped.append(f"{at}: {e}")
                continue
            excerpts = [Excerpt(c, At(at.path, at.line, f"{at.item} context {i}".strip()))
                        for i, c in enumerate(contexts)]
            asked.append(Asked(_unique(f"{path.stem}-{n}", ids), text, excerpts, at))
    return asked, skipped, []


def read_llamaindex(paths: list[Path]) -> Read:
    asked, skipped, ids = [], [], set()
    for path in paths:
        data = _json(path)
        parts = {k: data.get(k) for k in ("queries", "corpus", "relevant_docs")} \
            if isinstance(data, dict) else {}
        if not parts or not all(isinstance(v, dict) for v in parts.values()):
            raise InputError(str(path), "expected an EmbeddingQAFinetuneDataset: an object "
                                        "of 'queries', 'corpus' and 'relevant_docs'")
        nodes = parts["corpus"]
        for qid, text in parts["queries"].items():
            at = At(str(path), None, f"query {qid!r}")
            try:
                text = _question(text, "queries")
                relevant = parts["relevant_docs"].get(qid)
                if not isinstance(relevant, list) or not relevant:
                    raise Skip("no relevant_docs")
                excerpts = []
                for nid in relevant:
                    if not isinstance(nodes.get(nid), str):
                        raise Skip(f"relevant node {nid!r} is not in 'corpus'")
                    excerpts.append(Excerpt(nodes[nid], At(at.path, None,
                                                           f"query {qid!r} node {nid!r}")))
            except Skip as e:
                skipped.append(f"{at}: {e}")
                continue
            asked.append(Asked(_unique(str(qid), ids), text, excerpts, at))
    return asked, skipped, []


def _beir_files(paths: list[Path]) -> tuple[Path, list[Path], Path]:
    queries, qrels, corpus = None, [], None
    for p in paths:
        if p.is_dir():
            queries, corpus = p / "queries.jsonl", p / "corpus.jsonl"
            qrels += sorted((p / "qrels").glob("*.tsv"))
        elif p.name == "queries.jsonl":
            queries = p
        elif p.name == "corpus.jsonl":
            corpus = p
        elif p.suffix.lower() == ".tsv":
            qrels.append(p)
        else:
            raise InputError(str(p), "not a BEIR file: expected queries.jsonl, corpus.jsonl, "
                                     "qrels/*.tsv or their folder")
    for name, found in (("queries.jsonl", queries), ("corpus.jsonl", corpus)):
        if found is None or not found.is_file():
            raise InputError(str(found or paths[0]), f"no {name}: give the BEIR folder or "
                                                     "each of its files")
    if not qrels:
        raise InputError(str(paths[0]), "no qrels (*.tsv): give the BEIR folder or a qrels "
                                        "file")
    return queries, qrels, corpus


def read_beir(paths: list[Path]) -> Read:
    queries_path, qrels_paths, corpus_path = _beir_files(paths)
    skipped, not_relevant = [], 0
    relevant: dict[str, list[str]] = {}  # query id -> passage ids, in qrels order
    for path in qrels_paths:
        for n, line in enumerate(_lines(path), 1):
            line = line.rstrip("\r\n")
            cells = line.split("\t")
            if not line.strip() or (n == 1 and cells[-1].strip() == "score"):
                continue
            try:
                if len(cells) != 3:
                    raise ValueError
                qid, pid, score = cells[0].strip(), cells[1].strip(), float(cells[2])
            except ValueError:
                skipped.append(f"{path}:{n}: not 'query-id<TAB>corpus-id<TAB>score'")
                continue
            if not math.isfinite(score):
                skipped.append(f"{path}:{n}: score {cells[2].strip()!r} is not a number")
                continue
            if score <= 0:
                not_relevant += 1  # BEIR's way of saying so; counted, not imported
            if score > 0 and pid not in relevant.setdefault(qid, []):
                relevant[qid].append(pid)
    wanted = {pid for pids in relevant.values() for pid in pids}
    passages: dict[str, tuple[str, At]] = {}
    # corpus.jsonl may be far larger than the passages the qrels name: keep only those.
    for at, rec in _jsonl(corpus_path):
        pid = str(rec.get("_id")) if isinstance(rec, dict) else None
        if pid in wanted and isinstance(rec.get("text"), str):
            passages[pid] = (rec["text"], at)
    asked, ids, seen = [], set(), set()
    for at, rec in _jsonl(queries_path):
        qid = str(rec.get("_id")) if isinstance(rec, dict) else None
        if qid not in relevant or qid in seen:
            continue  # queries.jsonl holds every split's queries; the qrels pick them
        seen.add(qid)
        pids = relevant[qid]
        try:
            text = _question(rec.get("text"), "text")
            missing = [p for p in pids if p not in passages]
            if missing:
                raise Skip(f"passage(s) {', '.join(map(repr, missing[:3]))} not in "
                           f"{corpus_path.name}")
        except Skip as e:
            skipped.append(f"{at}: {e}")
            continue
        excerpts = [Excerpt(passages[p][0], At(passages[p][1].path, passages[p][1].line,
                                                f"passage {p!r}")) for p in pids]
        asked.append(Asked(_unique(qid, ids), text, excerpts, at))
    skipped += [f"{qrels_paths[0]}: query {q!r} is not in {queries_path.name}"
                for q in relevant if q not in seen]
    notes = [f"qrels rows not relevant (score 0 or less), not imported: {not_relevant}"] \
        if not_relevant else []
    return asked, skipped, notes


READERS = {"chroma": read_chroma, "ragas": read_ragas, "llamaindex": read_llamaindex,
           "beir": read_beir}


def read_questions(fmt: str, files: list[str]) -> Read:
    """The questions of `files` in `fmt`, the rows skipped and notes on rows not imported;
    InputError for a file that cannot be read at all."""
    paths = [Path(f) for f in files]
    for p in paths:
        if not p.exists():
            raise InputError(str(p), "no such file")
    return READERS[fmt](paths)


def import_questions(corpus: Corpus, fmt: str, files: list[str],
                     raw: Callable[[Document], str | None] | None = None) -> Imported:
    asked, skipped, notes = read_questions(fmt, files)
    return locate(corpus, asked, skipped, raw, notes)


def jsonl_text(lines: list[dict], meta: dict) -> str:
    return "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in [{"chunkeval_meta": meta},
                                                                       *lines])
