"""A user's query set: a JSONL file of questions with their gold answers.

One {"id", "query", "doc", and "answer" | "answers" | "spans" | "start"+"end"} object a line.
For a document with pages (PDF), the gold may be pages instead: "page": 3 or "pages": [3, 4]
(the text of every block on them is the gold, by position); given beside another gold form,
the pages are what page hit@k looks for, else the pages of that gold are.
A line that cannot be used is skipped with a Problem naming the file and line. The first line
may instead be {"chunkeval_meta": {...}}: where the questions came from (an import, or a
generator and its seed), which the reader skips.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import InputError, Problem
from ..model import Corpus, Document, Query, QuerySet
from ..store import QUERIES
from ..store import keys
from .builders import normalize, query_leaks, sample

# A query file larger than this is refused, as a page larger than the corpus's limit is
# skipped: read whole, a file of one huge line takes many times its size in memory.
MAX_FILE_MB = 20


def _is_id(value) -> bool:
    """A query id is a non-empty string or a whole number; anything else would be named by
    its Python text ("{'a': 1}", "True"), an id no other file could match."""
    return (isinstance(value, str) and value.strip() != "") or (
        isinstance(value, int) and not isinstance(value, bool))


def _json_kind(value) -> str:
    return {dict: "an object", list: "a list", bool: "true or false", float: "a decimal number",
            str: "a blank string", type(None): "null"}.get(type(value), type(value).__name__)


def _resolve_doc(corpus: Corpus, ref: str) -> tuple[str | None, str | None]:
    """(document id, None) or (None, why not)."""
    ref = ref.strip().replace("\\", "/").removeprefix("./")
    if ref in corpus:
        return ref, None
    matches = []
    for d in corpus.documents:
        name = d.id.rsplit("/", 1)[-1]
        folder = d.id[: len(d.id) - len(name)]
        stems = {folder + name.rsplit(".", 1)[0], folder + name.split(".", 1)[0]}
        if ref in stems:
            matches.append(d.id)
    if len(matches) == 1:
        return matches[0], None
    if matches:
        return None, f"document {ref!r} is ambiguous: {', '.join(sorted(matches))}"
    return None, f"unknown document {ref!r}"


def _jsonl_gold(obj: dict, form: str, doc: Document, bare: str):
    """((answers, spans), None) for one line's gold, or (None, why not)."""
    n = len(doc.text)
    if form in ("answer", "answers"):
        given = [obj["answer"]] if form == "answer" else obj["answers"]
        if form == "answers" and (not isinstance(given, list) or not given):
            return None, "'answers' must be a non-empty list of strings"
        answers = []
        for i, a in enumerate(given):
            which = f"'{form}'" + (f" item {i}" if form == "answers" else "")
            if not isinstance(a, str) or not normalize(a):
                return None, f"{which} must be a non-empty string"
            a = normalize(a)
            # Compared without any whitespace, as coverage is scored: a line break pasted
            # into Japanese text must not make the answer unfindable.
            if "".join(a.split()) not in bare:
                return None, f"{which} not found in {doc.id} (compared without whitespace)"
            answers.append(a)
        return (tuple(answers), ()), None
    if form == "start/end":
        given, form = [[obj["start"], obj["end"]]], "start/end"
    else:
        given = obj["spans"]
        if not isinstance(given, list) or not given:
            return None, "'spans' must be a non-empty list of [start, end] pairs"
    answers, spans = [], []
    for i, span in enumerate(given):
        which = "'start'/'end'" if form == "start/end" else f"'spans' item {i}"
        ok = (isinstance(span, list) and len(span) == 2
              and all(type(v) is int for v in span) and 0 <= span[0] < span[1] <= n)
        if not ok:
            return None, (f"{which} must be integers with 0 <= start < end <= {n} "
                          f"(the length of {doc.id})")
        a = normalize(doc.text[span[0]:span[1]])
        if not a:
            return None, f"{which}: text {span[0]}-{span[1]} of {doc.id} is blank"
        answers.append(a)
        spans.append((span[0], span[1]))
    if form == "start/end":
        spans = []  # the old single-span form reads as one answer, as it always has
    return (tuple(answers), tuple(spans)), None


def _pages(obj: dict, doc: Document):
    """(the pages given, None) or (None, why not); () when none are given."""
    if "page" in obj and "pages" in obj:
        return None, "give 'page' or 'pages', not both"
    given = [obj["page"]] if "page" in obj else obj.get("pages", [])
    if not isinstance(given, list) or ("pages" in obj and not given):
        return None, "'pages' must be a non-empty list of page numbers"
    if not given:
        return (), None
    if not doc.paged:
        return None, f"{doc.id} has no pages (only a PDF has)"
    last = max(b.page for b in doc.blocks)
    if not all(type(p) is int and 1 <= p <= last for p in given):
        return None, f"pages must be whole numbers from 1 to {last} (the pages of {doc.id})"
    return tuple(sorted(set(given))), None


def _page_spans(doc: Document, pages: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    return tuple((b.start, b.end) for b in doc.blocks if b.page in pages)


def _pages_of_text(doc: Document, answers: tuple[str, ...], bare: str,
                   at: list[int]) -> tuple[int, ...]:
    """The pages of the first place each answer occurs (compared without whitespace): `bare`
    is the document's text without whitespace, `at` the offset of each of its characters."""
    pages: set[int] = set()
    for a in answers:
        a = "".join(a.split())
        i = bare.find(a)
        if i >= 0 and a:
            pages.update(doc.pages_of(at[i], at[i + len(a) - 1] + 1))
    return tuple(sorted(pages))


def read_jsonl(corpus: Corpus, path: Path, max_queries: int, seed: int,
               use_cache: bool = False) -> QuerySet:
    """The file's query set on `corpus`. `use_cache`: a file read before, byte for byte, on
    a corpus parsed to the same fingerprint, is taken from the query cache (keys.py), the
    same questions and problems without reading its lines or searching the corpus again."""
    try:
        size, limit = path.stat().st_size, int(MAX_FILE_MB * 10**6)
        if size > limit:
            raise InputError(str(path), f"{size:,} bytes, over the {limit:,}-byte limit on a "
                                        "query file")
        data = path.read_bytes()
        key = keys.query_file_key(data, str(path), corpus.fingerprint, max_queries,
                                  seed) if use_cache else None
        stored = QUERIES.load(key) if key else None
        if stored is not None:
            found = _stored(stored, path, corpus)
            if found is not None:
                return found
            QUERIES.reject(QUERIES.path(key))
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError as e:
        raise InputError(str(path), f"not UTF-8 text: {e}") from None
    except OSError as e:
        raise InputError(str(path), f"cannot read: {e.strerror or e}") from None
    found = _read(corpus, path, lines, max_queries, seed)
    if key:
        QUERIES.store(key, {
            "queries": [[q.id, q.text, q.doc_id, q.answer, q.answers, q.spans, q.pages]
                        for q in found.queries],
            "problems": [[p.path, p.message, p.line, p.kind, p.names] for p in found.problems]})
    return found


def _stored(entry: dict, path: Path, corpus: Corpus) -> QuerySet | None:
    """The query set a query cache entry holds; None when it is not one of this corpus."""
    try:
        queries = tuple(Query(i, text, doc, answer, tuple(answers),
                              tuple((a, b) for a, b in spans), tuple(pages))
                        for i, text, doc, answer, answers, spans, pages in entry["queries"])
        problems = tuple(Problem(p, message, line, kind, tuple(names))
                         for p, message, line, kind, names in entry["problems"])
    except (KeyError, TypeError, ValueError):
        return None
    if not queries or any(q.doc_id not in corpus for q in queries):
        return None
    return QuerySet(path.stem, queries, corpus, problems)


def _read(corpus: Corpus, path: Path, lines: list[str], max_queries: int,
          seed: int) -> QuerySet:
    queries: list[Query] = []
    problems: list[Problem] = []
    ids: set[str] = set()
    bare_text: dict[str, str] = {}  # per document, read once: its text without whitespace
    kept_at: dict[str, list[int]] = {}  # and where each character of that is in the text
    paged: dict[str, bool] = {}
    first = next((n for n, line in enumerate(lines, 1) if line.strip()), 0)
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue

        def bad(message: str) -> None:
            problems.append(Problem(str(path), f"{message}; line skipped", lineno))

        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            bad(f"not JSON ({e.msg})")
            continue
        if not isinstance(obj, dict):
            bad("not a JSON object")
            continue
        if lineno == first and list(obj) == ["chunkeval_meta"]:
            continue
        has_offsets = "start" in obj and "end" in obj
        forms = [f for f in ("answer", "answers", "spans") if f in obj] + (["start/end"] if has_offsets else [])
        missing = [k for k in ("id", "query", "doc") if k not in obj]
        if not forms and "page" not in obj and "pages" not in obj:
            missing.append("answer, answers or spans (or start and end, or pages)")
        if missing:
            bad(f"missing key(s): {', '.join(missing)}")
            continue
        if len(forms) > 1:
            bad(f"give one gold form, not {' and '.join(forms)}")
            continue
        if not _is_id(obj["id"]):
            bad(f"'id' must be a string or a whole number, not {_json_kind(obj['id'])}")
            continue
        qid, text, ref = str(obj["id"]), obj["query"], obj["doc"]
        if not isinstance(text, str) or not normalize(text):
            bad("'query' must be a non-empty string")
            continue
        if not isinstance(ref, str):
            bad("'doc' must be a string")
            continue
        if qid in ids:
            bad(f"duplicate id {qid!r}")
            continue
        doc_id, why = _resolve_doc(corpus, ref)
        if doc_id is None:
            bad(why)
            continue
        doc = corpus[doc_id]
        if doc_id not in bare_text:
            bare_text[doc_id] = "".join(doc.text.split())
        pages, why = _pages(obj, doc)
        if pages is None:
            bad(why)
            continue
        if forms:
            gold, why = _jsonl_gold(obj, forms[0], doc, bare_text[doc_id])
            if gold is None:
                bad(why)
                continue
            answers, spans = gold
            if doc_id not in paged:  # a look at every block: once per document
                paged[doc_id] = doc.paged
            if not pages and paged[doc_id] and spans:
                pages = tuple(sorted({p for s, e in spans for p in doc.pages_of(s, e)}))
            elif not pages and paged[doc_id]:
                if doc_id not in kept_at:
                    kept_at[doc_id] = [i for i, ch in enumerate(doc.text) if not ch.isspace()]
                pages = _pages_of_text(doc, answers, bare_text[doc_id], kept_at[doc_id])
        else:  # the pages are the gold: all of their text, by position
            spans = _page_spans(doc, pages)
            answers = tuple(normalize(doc.text[s:e]) for s, e in spans)
        ids.add(qid)
        if len(answers) == 1 and not spans:
            queries.append(Query(qid, normalize(text), doc_id, answers[0], pages=pages))
        else:
            queries.append(Query(qid, normalize(text), doc_id, "\n".join(answers),
                                 answers, spans, pages))

    if not queries:
        first = f"; first: {problems[0]}" if problems else ""
        raise InputError(str(path), f"no usable queries ({len(problems)} bad lines{first})")
    chosen = tuple(sample(queries, max_queries, seed))
    # A user's file has no view of its own: say where a chunk can contain its own question.
    found = QuerySet(path.stem, chosen, corpus)
    for qid, doc_id in query_leaks(found):
        problems.append(Problem(str(path), f"query {qid!r}: its text appears in {doc_id}, so a "
                                           "chunk can contain its own question"))
    return QuerySet(path.stem, chosen, corpus, tuple(problems))
