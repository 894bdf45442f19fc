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

The files are read in formats.py (one row of its TABLE a format, on textfiles.py's UTF-8,
CSV and JSON reading), the excerpts located in excerpts.py; this module joins the two.
"""

from __future__ import annotations

import json
from typing import Callable

from ..model import Corpus, Document
from .excerpts import Imported, Locator, locate, raw_files
from .formats import FORMATS, TABLE, Format, described, read_questions

__all__ = ["FORMATS", "TABLE", "Format", "Imported", "Locator", "described", "import_questions",
           "jsonl_text", "locate", "raw_files", "read_questions"]


def import_questions(corpus: Corpus, fmt: str, files: list[str],
                     raw: Callable[[Document], str | None] | None = None) -> Imported:
    asked, skipped, notes = read_questions(fmt, files)
    return locate(corpus, asked, skipped, raw, notes)


def jsonl_text(lines: list[dict], meta: dict) -> str:
    return "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in [{"chunkeval_meta": meta},
                                                                       *lines])
