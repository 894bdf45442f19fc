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
import csv
import json
import re
from array import array
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from ..errors import InputError
from ..model import Corpus, Document

FORMATS = ("chroma", "ragas", "llamaindex", "beir")

# How an excerpt was placed, in the order the summary lists them.
OUTCOMES = {"offsets": "at the file's offsets", "exact": "exactly, by search",
            "whitespace": "with whitespace ignored", "elsewhere": "in another document only",
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
    skipped: list[str] = field(default_factory=list)  # rows that were no question
    dropped: int = 0  # questions none of whose excerpts was found
    unknown_docs: Counter = field(default_factory=Counter)  # references matching no document

    def summary(self) -> str:
        o = self.outcomes
        out = [f"questions read     {self.read}" + (f" (+{len(self.skipped)} rows skipped)"
                                                    if self.skipped else ""),
               f"questions written  {len(self.lines)}",
               f"  not written      {self.dropped} (no excerpt found in their document)",
               f"excerpts           {sum(o.values())}"]
        out += [f"  {label:<24} {o[key]}" for key, label in OUTCOMES.items()]
        if self.unknown_docs:
            names = ", ".join(f"{n!r}" for n in sorted(self.unknown_docs)[:5])
            out.append(f"references to no document in the corpus (searched all): {names}"
                       + (" ..." if len(self.unknown_docs) > 5 else ""))
        return "\n".join(out)


# -- locating excerpts -----------------------------------------------------------------------

class Locator:
    """Finds excerpts in a corpus's documents: exactly, else with whitespace ignored."""

    def __init__(self, corpus: Corpus):
        self.corpus = corpus
        self._bare: dict[str, tuple[str, array, array]] = {}

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

    def find(self, doc: Document, text: str, near: tuple[int, int] | None = None
             ) -> tuple[int, int, str] | None:
        """(start, end, how) of `text` in `doc`, the occurrence nearest `near` first; how is
        "offsets", "exact" or "whitespace". None when it is not there (or blank)."""
        if not text.strip():
            return None
        if near is not None and doc.file_map:
            # the file's offsets, through the map (a Markdown file loses its comments...)
            kept = _kept(doc, text, near)
            if kept == "removed":
                return None  # reported, never moved to where the same words are seen
            if kept:
                return kept[0], kept[1], "offsets"
        elif near is not None and 0 <= near[0] < near[1] and doc.text[near[0]:near[1]] == text:
            return near[0], near[1], "offsets"
        hint = near[0] if near is not None else 0
        at = _nearest(doc.text, text, hint)
        if at is not None:
            return at, at + len(text), "exact"
        # str.split's whitespace, as the JSONL reader compares answers
        squeezed = "".join(text.split())
        bare, real_starts, bare_starts = self._bare_of(doc)
        k = max(bisect.bisect_right(real_starts, hint) - 1, 0)
        at = _nearest(bare, squeezed, bare_starts[k] if bare_starts else 0)
        if at is None:
            return None

        def real(j: int) -> int:
            k = bisect.bisect_right(bare_starts, j) - 1
            return real_starts[k] + j - bare_starts[k]

        return real(at), real(at + len(squeezed) - 1) + 1, "whitespace"


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


def _nearest(text: str, needle: str, hint: int) -> int | None:
    best, at, seen = None, text.find(needle), 0
    while at != -1 and seen < MAX_OCCURRENCES:
        if best is None or abs(at - hint) < abs(best - hint):
            best = at
        if at > hint:
            break  # later ones are farther still
        at, seen = text.find(needle, at + 1), seen + 1
    return best


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


def locate(corpus: Corpus, asked: list[Asked], skipped: list[str]) -> Imported:
    result = Imported(read=len(asked), skipped=skipped)
    locator = Locator(corpus)
    everything = list(corpus.documents)
    for q in asked:
        docs = candidate_docs(corpus, q.doc)
        if docs is None:
            if q.doc:
                result.unknown_docs[q.doc] += 1
            docs = everything
        chosen, placed = place(locator, q, docs)
        spans = []
        for e, hit, outcome, found_in in placed:
            result.outcomes[outcome] += 1
            if hit is None:
                where = f" (in {', '.join(found_in)})" if found_in else ""
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
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= n else flat[:n] + "…")


# -- reading the files -----------------------------------------------------------------------

def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")  # spreadsheet tools write a BOM
    except UnicodeDecodeError as e:
        raise InputError(str(path), f"not UTF-8 text: {e}") from None
    except IsADirectoryError:
        raise InputError(str(path), "is a directory, not a file") from None
    except OSError as e:
        raise InputError(str(path), f"cannot read: {e.strerror or e}") from None


def _csv_rows(path: Path, need: tuple[tuple[str, ...], ...]) -> Iterator[tuple[At, dict]]:
    """(where, row) of each data row; `need`: of each tuple of column names, one must be
    there. A row's line is the line it starts on (a quoted cell may span lines)."""
    # An excerpt or a Ragas context list can exceed csv's default 128 KiB cell.
    csv.field_size_limit(2**31 - 1)
    # strict: a stray quote is an error naming its line, not a row swallowing the rest
    reader = csv.reader(_text(path).splitlines(keepends=True), strict=True)
    try:
        header = next(reader, None)
        if header is None:
            raise InputError(str(path), "empty file")
        header = [h.strip() for h in header]
        for names in need:
            if not any(n in header for n in names):
                raise InputError(str(path), f"no column {' or '.join(map(repr, names))} "
                                            f"(the columns: {', '.join(header)})", 1)
        while True:
            start = reader.line_num + 1
            row = next(reader, None)
            if row is None:
                return
            if not any(cell.strip() for cell in row):
                continue
            yield At(str(path), start), dict(zip(header, row))
    except csv.Error as e:
        raise InputError(str(path), f"not CSV: {e}", reader.line_num) from None


def _json(path: Path):
    try:
        return json.loads(_text(path))
    except json.JSONDecodeError as e:
        raise InputError(str(path), f"not JSON: {e.msg}", e.lineno) from None


def _jsonl(path: Path) -> Iterator[tuple[At, object]]:
    for n, line in enumerate(_text(path).splitlines(), 1):
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


def read_chroma(paths: list[Path]) -> tuple[list[Asked], list[str]]:
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
    return asked, skipped


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


def read_ragas(paths: list[Path]) -> tuple[list[Asked], list[str]]:
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
    return asked, skipped


def read_llamaindex(paths: list[Path]) -> tuple[list[Asked], list[str]]:
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
    return asked, skipped


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


def read_beir(paths: list[Path]) -> tuple[list[Asked], list[str]]:
    queries_path, qrels_paths, corpus_path = _beir_files(paths)
    skipped = []
    relevant: dict[str, list[str]] = {}  # query id -> passage ids, in qrels order
    for path in qrels_paths:
        for n, line in enumerate(_text(path).splitlines(), 1):
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
    return asked, skipped


READERS = {"chroma": read_chroma, "ragas": read_ragas, "llamaindex": read_llamaindex,
           "beir": read_beir}


def read_questions(fmt: str, files: list[str]) -> tuple[list[Asked], list[str]]:
    """The questions of `files` in `fmt`, and the rows skipped; InputError for a file that
    cannot be read at all."""
    paths = [Path(f) for f in files]
    for p in paths:
        if not p.exists():
            raise InputError(str(p), "no such file")
    return READERS[fmt](paths)


def import_questions(corpus: Corpus, fmt: str, files: list[str]) -> Imported:
    asked, skipped = read_questions(fmt, files)
    return locate(corpus, asked, skipped)


def jsonl_text(lines: list[dict], meta: dict) -> str:
    return "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in [{"chunkeval_meta": meta},
                                                                       *lines])
