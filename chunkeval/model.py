"""The domain types every stage passes along: Block, Document, Corpus, Query, QuerySet, Chunk.

Data flows one way: corpus -> queries -> strategies -> retrieval -> metrics -> results.
Every type here is immutable; a stage that needs a changed document builds a new one.

A Document's text is assembled from its blocks, separated by a blank line ("\\n\\n"), so
offsets are right by construction and recursive splitters see paragraph breaks.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import sys
from dataclasses import dataclass
from functools import cache, cached_property
from typing import Any, Iterable, Sequence

from .errors import Problem

BLOCK_SEP = "\n\n"
TABLE_CELL_SEP = " | "

HEADING_KINDS = ("heading1", "heading2", "heading3", "heading4")
BLOCK_KINDS = HEADING_KINDS + ("paragraph", "item", "table", "pre", "dl", "other")

# The heading path in force at a block: (title, h2, h3). Missing levels are "".
Headings = tuple[str, str, str]


def heading_path(path: Sequence[str], level: int, text: str) -> Headings:
    """The heading path in force after a heading of `level` (1-4) titled `text`: a heading
    ends the sections of its level and below; a level-4 heading leaves the path as it is."""
    if level == 1:
        return (text, "", "")
    if level == 2:
        return (path[0], text, "")
    if level == 3:
        return (path[0], path[1], text)
    return (path[0], path[1], path[2])


@dataclass(frozen=True, slots=True)
class Part:
    """A block before it has offsets: what a parser emits and a corpus view filters.

    `rows` holds the text of each table row (cells joined by TABLE_CELL_SEP); for a
    table, `text` must equal "\\n".join(rows). `header_rows` counts leading header rows.
    """

    kind: str
    text: str
    headings: Headings = ("", "", "")
    rows: tuple[str, ...] = ()
    header_rows: int = 0
    page: int = 0


@dataclass(frozen=True, slots=True)
class Block:
    """A unit of document structure with `[start, end)` offsets into Document.text.

    For a table, `rows` are the `[start, end)` spans of its rows (one line each) and the
    first `header_rows` of them are header rows. `page` is the 1-based page the block is
    on (a PDF's paragraph that runs over a page break is two blocks); 0 when the source
    has no pages.
    """

    kind: str
    start: int
    end: int
    headings: Headings
    rows: tuple[tuple[int, int], ...] = ()
    header_rows: int = 0
    page: int = 0

    @property
    def is_heading(self) -> bool:
        return self.kind in HEADING_KINDS

    @property
    def level(self) -> int:
        """1-4 for headings, 0 otherwise."""
        return int(self.kind[-1]) if self.is_heading else 0


@dataclass(frozen=True, slots=True)
class Document:
    id: str  # path relative to the corpus root, e.g. "debian-faq-ja/basic-defs.ja.html"
    title: str
    text: str
    blocks: tuple[Block, ...]
    source: str = ""  # where it came from (package, file), for messages
    # Where the text is the file's (line-end-normalised) text: sorted runs (text_start,
    # file_start, length), contiguous in the text; what lies between runs in the file is
    # markup the parser removed. Markdown and plain text have it (plain text one run, the
    # whole file); HTML, whose text is no slice of its file, has none.
    file_map: tuple[tuple[int, int, int], ...] = ()
    removed: tuple[tuple[str, int], ...] = ()  # (rule, characters) the parser cut, by rule

    @classmethod
    def from_parts(cls, id: str, title: str, parts: Iterable[Part], source: str = "") -> "Document":
        pieces: list[str] = []
        blocks: list[Block] = []
        pos = 0
        for part in parts:
            if not part.text:
                continue
            if pieces:
                pieces.append(BLOCK_SEP)
                pos += len(BLOCK_SEP)
            rows: list[tuple[int, int]] = []
            if part.kind == "table":
                assert part.text == "\n".join(part.rows), "table text must be its rows"
                p = pos
                for row in part.rows:
                    rows.append((p, p + len(row)))
                    p += len(row) + 1
            pieces.append(part.text)
            blocks.append(Block(part.kind, pos, pos + len(part.text), part.headings,
                                tuple(rows), part.header_rows, part.page))
            pos += len(part.text)
        return cls(id, title, "".join(pieces), tuple(blocks), source)

    def parts(self) -> list[Part]:
        """The inverse of from_parts: what a view filters and reassembles."""
        out = []
        for b in self.blocks:
            rows = tuple(self.text[s:e] for s, e in b.rows)
            # A Markdown table's text also holds its delimiter line, which is no row.
            text = "\n".join(rows) if rows else self.text[b.start:b.end]
            out.append(Part(b.kind, text, b.headings, rows, b.header_rows, b.page))
        return out

    @property
    def paged(self) -> bool:
        return any(b.page for b in self.blocks)

    def pages_of(self, start: int, end: int) -> tuple[int, ...]:
        """The pages text [start, end) lies on: those of the blocks it overlaps, or of the
        block before it when it holds only a separator; () for a document without pages."""
        i = bisect.bisect_right(self.blocks, start, key=lambda b: b.end)
        pages = set()
        for b in self.blocks[i:]:
            if b.start >= max(end, start + 1):
                break
            pages.add(b.page)
        if not pages and i:
            pages.add(self.blocks[i - 1].page)
        return tuple(sorted(p for p in pages if p))

    def block_text(self, block: Block) -> str:
        return self.text[block.start:block.end]

    def text_offset(self, file_offset: int) -> int | None:
        """The text offset of a file offset; None when the parser removed the character
        there (or the document has no map)."""
        i = bisect.bisect_right(self.file_map, file_offset, key=lambda run: run[1]) - 1
        if i < 0:
            return None
        t, f, n = self.file_map[i]
        return t + file_offset - f if file_offset < f + n else None

    def file_offset(self, text_offset: int) -> int:
        """The file offset of a text offset (the text's end maps to its last run's end; text
        another file put in, a Markdown snippet, maps to where it was put in)."""
        if not self.file_map:
            raise ValueError(f"{self.id}: the document text is not a slice of its file")
        i = max(bisect.bisect_right(self.file_map, text_offset, key=lambda run: run[0]) - 1, 0)
        t, f, n = self.file_map[i]
        return f + max(0, min(text_offset - t, n))

    def text_span(self, start: int, end: int) -> tuple[int, int] | None:
        """The text span of what the parser kept of the file's [start, end); None when it
        kept none of it (or the document has no map)."""
        kept = [(max(start, f) - f + t, min(end, f + n) - f + t)
                for t, f, n in self.file_map if f < end and start < f + n]
        return (kept[0][0], kept[-1][1]) if kept else None

    def to_json(self) -> dict:
        return {
            "id": self.id, "title": self.title, "text": self.text, "source": self.source,
            "blocks": [{"kind": b.kind, "start": b.start, "end": b.end,
                        "headings": list(b.headings),
                        **({"rows": [list(r) for r in b.rows], "header_rows": b.header_rows}
                           if b.kind == "table" else {}),
                        **({"page": b.page} if b.page else {})}
                       for b in self.blocks],
            # only when there is one, so that an HTML corpus's fingerprint stays as it was
            **({"file_map": [list(r) for r in self.file_map]} if self.file_map else {}),
            **({"removed": [list(r) for r in self.removed]} if self.removed else {}),
        }

    @classmethod
    def from_json(cls, d: dict) -> "Document":
        blocks = tuple(Block(b["kind"], b["start"], b["end"], tuple(b["headings"]),
                             tuple(tuple(r) for r in b.get("rows", ())), b.get("header_rows", 0),
                             b.get("page", 0))
                       for b in d["blocks"])
        return cls(d["id"], d["title"], d["text"], blocks, d.get("source", ""),
                   tuple(tuple(r) for r in d.get("file_map", ())),
                   tuple(tuple(r) for r in d.get("removed", ())))


@cache
def whitespace() -> tuple[int, ...]:
    """The code points str.split() splits on and str.isspace() calls whitespace: what the
    shingle rule and excerpt matching leave out (found once, by testing every code point)."""
    return tuple(c for c in range(sys.maxunicode + 1) if chr(c).isspace())


def digest(obj: Any) -> str:
    """sha256 of `obj` as canonical JSON: fingerprints here, cache keys in store/keys.py."""
    data = json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Corpus:
    name: str
    documents: tuple[Document, ...]
    problems: tuple[Problem, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "_by_id", {d.id: d for d in self.documents})

    def __getitem__(self, doc_id: str) -> Document:
        return self._by_id[doc_id]

    def __contains__(self, doc_id: str) -> bool:
        return doc_id in self._by_id

    def __len__(self) -> int:
        return len(self.documents)

    # Computed once: a corpus is immutable, and a session asks for these per test.
    @cached_property
    def chars(self) -> int:
        """Non-whitespace characters, the size measure the spec quotes."""
        return sum(len("".join(d.text.split())) for d in self.documents)

    @cached_property
    def fingerprint(self) -> str:
        return digest([d.to_json() for d in self.documents])[:16]

    @cached_property
    def document_fingerprints(self) -> dict[str, str]:
        """doc id -> the fingerprint of that document alone: what tells which documents a
        changed corpus changed."""
        return {d.id: digest(d.to_json())[:16] for d in self.documents}

    @cached_property
    def paged(self) -> bool:
        """Some document has pages (a PDF): the page metrics apply."""
        return any(d.paged for d in self.documents)


@dataclass(frozen=True, slots=True)
class Query:
    id: str
    text: str
    doc_id: str
    answer: str  # the gold text; scored by shingles, so whitespace does not matter
    # Several gold excerpts (JSONL `answers` or `spans`): coverage is over the union of their
    # shingles, and `answer` holds them joined by "\n" for reading. `spans` are the
    # [start, end) offsets into the document text the excerpts came from, when given so.
    answers: tuple[str, ...] = ()
    spans: tuple[tuple[int, int], ...] = ()
    # The pages the gold is on (a document with pages): what page_hit_at_k looks for.
    pages: tuple[int, ...] = ()

    @property
    def golds(self) -> tuple[str, ...]:
        return self.answers or (self.answer,)

    @property
    def key(self) -> str:
        """The question as the gate pairs it with a recorded one: its id, text and gold."""
        return digest([self.id, self.text, self.doc_id, self.answer, list(self.answers),
                       [list(s) for s in self.spans], list(self.pages)])[:12]

    def gold_json(self) -> dict:
        """The gold as the dump and results write it: `answer`, plus `answers`/`spans`."""
        out = {"answer": self.answer}
        if self.answers:
            out["answers"] = list(self.answers)
        if self.spans:
            out["spans"] = [list(s) for s in self.spans]
        if self.pages:
            out["pages"] = list(self.pages)
        return out


@dataclass(frozen=True)
class QuerySet:
    """Queries plus the corpus view they are measured on (their own text removed)."""

    name: str
    queries: tuple[Query, ...]
    view: Corpus
    # Lines of a user's query file that were skipped, each naming the file and line.
    problems: tuple[Problem, ...] = ()
    # A built set: the candidates its builder found, and how many each rule removed
    # ("answer under 40 characters": 12, ...), in the order the rules apply.
    candidates: int = 0
    removed: tuple[tuple[str, int], ...] = ()

    def __len__(self) -> int:
        return len(self.queries)

    @cached_property
    def fingerprint(self) -> str:
        # Extra gold forms only when present, so single-answer sets keep their fingerprints.
        qs = [[q.id, q.text, q.doc_id, q.answer]
              + ([list(q.answers), [list(s) for s in q.spans]] if q.answers else [])
              + ([list(q.pages)] if q.pages else [])
              for q in self.queries]
        return digest({"queries": qs, "view": self.view.fingerprint})[:16]


@dataclass(frozen=True, slots=True)
class Chunk:
    """What a strategy emits. `text` is handed to the LLM and scored; `index_text` is
    what the retriever indexes (a heading prefix may differ). For parent-child, the
    chunk is the searched child and `parent` the chunk handed in its place."""

    doc_id: str
    start: int
    end: int
    text: str
    index_text: str | None = None
    parent: "Chunk | None" = None

    @property
    def indexed(self) -> str:
        return self.text if self.index_text is None else self.index_text

    @property
    def handed(self) -> "Chunk":
        return self if self.parent is None else self.parent
