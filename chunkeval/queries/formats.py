"""The question files chunkeval imports, one row of TABLE each: its name, the files it reads
and its reader. A reader gives the questions as read (`Asked`, their excerpts not yet
located), the rows it skipped, each with why, and notes on rows read and by design not
imported."""

from __future__ import annotations

import ast
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from ..errors import InputError, UnknownName
from .textfiles import At, csv_rows, jsonl_rows, read_json, read_lines


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
        for n, (at, row) in enumerate(csv_rows(path, (("question",), ("references",))), 1):
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
        yield from csv_rows(path, (("user_input", "question"),
                                    ("reference_contexts", "contexts")))
    elif suffix == ".jsonl":
        yield from jsonl_rows(path)
    else:
        data = read_json(path)
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
        data = read_json(path)
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
        for n, line in enumerate(read_lines(path), 1):
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
    for at, rec in jsonl_rows(corpus_path):
        pid = str(rec.get("_id")) if isinstance(rec, dict) else None
        if pid in wanted and isinstance(rec.get("text"), str):
            passages[pid] = (rec["text"], at)
    asked, ids, seen = [], set(), set()
    for at, rec in jsonl_rows(queries_path):
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


@dataclass(frozen=True)
class Format:
    """A kind of question file: its name on the command line, the files it reads (as the
    help describes them) and its reader."""

    name: str
    reads: str
    read: Callable[[list[Path]], Read]


# Every format, once: the command line's choices and its description are taken from here.
TABLE = (Format("chroma", "Chroma's chunking-evaluation CSV", read_chroma),
         Format("ragas", "a Ragas test set (CSV, JSON, JSONL)", read_ragas),
         Format("llamaindex", "LlamaIndex's EmbeddingQAFinetuneDataset JSON", read_llamaindex),
         Format("beir", "a BEIR folder", read_beir))
FORMATS = tuple(f.name for f in TABLE)


def format_named(name: str) -> Format:
    for f in TABLE:
        if f.name == name:
            return f
    raise UnknownName("question format", name, [f.name for f in TABLE])


def described() -> str:
    """What the formats read, as one phrase: "A, B or C"."""
    reads = [f.reads for f in TABLE]
    return ", ".join(reads[:-1]) + " or " + reads[-1]


def read_questions(fmt: str, files: list[str]) -> Read:
    """The questions of `files` in `fmt`, the rows skipped and notes on rows not imported;
    InputError for a file that cannot be read at all."""
    reader = format_named(fmt).read
    paths = [Path(f) for f in files]
    for p in paths:
        if not p.exists():
            raise InputError(str(p), "no such file")
    return reader(paths)
