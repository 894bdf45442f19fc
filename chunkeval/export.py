"""Each case's ranking and its gold as an IR toolkit reads them: TREC run and qrels files
(trec_eval) or ranx's JSON dictionaries.

A document is a chunk, named "doc:start:end" (its span in the query set's view). The run
is the top k of results.json's per_query `retrieved`, scored k, k-1, ..., 1 so that a
toolkit that ranks by score keeps chunkeval's order.

Relevance is graded by the chunk's own share of the gold: the coverage that chunk alone
holds (the gold shingles of its text, or for positional gold its gold characters; only a
chunk of the gold document counts), as scoring.score measures it:

    relevance = 0 when the share is 0, else max(1, floor(3 * share + 1/2))

(3 from five sixths of the gold, 2 from a half, 1 for any share above 0), so relevance >= 1
is exactly "holds any gold", the rule of chunkeval's MRR: MRR@k from
these files is chunkeval's mrr_at_k. (nDCG differs: chunkeval's gains are the coverage
each chunk adds, and its ideal holds the whole gold at rank 1.)

Judgements are pooled per strategy and query set: every chunk some retriever put in that
strategy's top k, relevant or not, so that a query whose chunks hold no gold still counts
(as 0). Strategies do not share qrels: their chunks are different documents, and a span
may carry another text under another strategy (a heading prefix).

For a corpus with pages (PDF) each strategy folder also holds page-level files: a document
is "doc#page", the qrels are each query's gold pages (relevance 1), and the run lists the
pages of the top k chunks, a page scored by the best rank of a chunk on it - the page hit@k
of results.json is the share of queries whose run holds a relevant page.

The gold comes from `chunkeval corpus info --dump`: the query sets' views and queries, each
set checked against the fingerprint results.json recorded.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import defaultdict
from pathlib import Path

from .errors import InputError
from .model import Chunk, Corpus, Document, Query, QuerySet
from .results import Result, Results
from .store import atomic_write

FORMATS = ("trec", "ranx")
GRADES = 3


def relevance(share: float) -> int:
    return 0 if share <= 0 else max(1, math.floor(GRADES * share + 0.5))


def read_dump(path: str | os.PathLike) -> dict[str, QuerySet]:
    """The query sets of a `corpus info --dump` file, by name, with their views."""
    views: dict[str, list[Document]] = defaultdict(list)
    asked: dict[str, list[Query]] = defaultdict(list)
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise InputError(str(path), f"cannot read it: {e.strerror or e}") from None
    for n, line in enumerate(lines, 1):
        try:
            row = json.loads(line)
            if row["type"] == "document" and "set" in row:
                views[row["set"]].append(Document.from_json(row))
            elif row["type"] == "query":
                asked[row["set"]].append(Query(
                    row["id"], row["query"], row["doc"], row["answer"],
                    tuple(row.get("answers", ())), tuple(tuple(s) for s in row.get("spans", ())),
                    tuple(row.get("pages", ()))))
        except (ValueError, KeyError, TypeError) as e:
            raise InputError(f"{path}:{n}", f"not a line of `chunkeval corpus info --dump` "
                                            f"({e})") from None
    return {name: QuerySet(name, tuple(qs), Corpus(name, tuple(views[name])))
            for name, qs in asked.items()}


def _checked(results: Results, sets: dict[str, QuerySet], where: str) -> None:
    for name in {r.query_set for r in results.results}:
        recorded = results.query_sets.get(name)
        qs = sets.get(name)
        if qs is None:
            raise InputError(where, f"has no query set {name!r}; dump the corpus with the "
                                    "run's settings (chunkeval corpus info --dump)")
        if recorded is not None and recorded.fingerprint != qs.fingerprint:
            raise InputError(where, f"query set {name!r} is not the one the results were "
                                    f"measured on (fingerprint {qs.fingerprint}, results "
                                    f"{recorded.fingerprint}); dump it with the run's settings")


def judgements(results: Results, qs: QuerySet) -> dict[str, list[dict[str, int]]]:
    """strategy -> per query of `qs`, the relevance of every chunk its retrievers ranked in
    the top k."""
    k, s = results.settings.k, results.settings
    view = qs.view
    handed: dict[tuple, int] = {}  # (doc, start, end, text) -> number
    pooled: dict[str, list[dict[str, int]]] = {}  # strategy -> per query: chunk id -> number
    for r in results.results:
        if r.query_set != qs.name:
            continue
        rows = pooled.setdefault(r.strategy, [{} for _ in qs.queries])
        for row, q in zip(rows, r.per_query):
            for doc, a, b, _ in q.retrieved[:k]:
                name = f"{doc}:{a}:{b}"
                text = r.rewritten.get(name)
                if text is None:
                    text = view[doc].text[a:b] if doc in view else ""
                row.setdefault(name, handed.setdefault((doc, a, b, text), len(handed)))
    chunks = [Chunk(doc, a, b, text) for doc, a, b, text in handed]
    asked = [sorted({n for rows in pooled.values() for n in rows[i].values()})
             for i in range(len(qs.queries))]
    import numpy as np  # here, not at import: the command line's parser reads FORMATS

    from . import scoring

    share: list[dict[int, float]] = [{} for _ in qs.queries]
    prepared: dict = {}
    # one chunk a query at a time, each scored alone (k = 1): its own coverage
    for j in range(max((len(a) for a in asked), default=0)):
        column = np.array([[a[j] if j < len(a) else -1] for a in asked], dtype=np.int64)
        scores = scoring.score(qs, chunks, column, k=1, budget=1, budgets=(),
                               shingle=s.shingle, coverage=s.coverage, chunk_index=prepared)
        for i, a in enumerate(asked):
            if j < len(a):
                share[i][a[j]] = float(scores.coverage[i])
    return {strategy: [{name: relevance(share[i][n]) for name, n in rows[i].items()}
                       for i in range(len(qs.queries))]
            for strategy, rows in pooled.items()}


def ranking(result: Result, k: int) -> list[list[str]]:
    return [[f"{d}:{a}:{b}" for d, a, b, _ in q.retrieved[:k]] for q in result.per_query]


def page_ranking(result: Result, view: Corpus, k: int) -> list[dict[str, float]]:
    """Per query, the pages ("doc#page") of the top k chunks, each scored k - (the rank from
    0 of the first chunk on it)."""
    out = []
    for q in result.per_query:
        pages: dict[str, float] = {}
        for i, (d, a, b, _) in enumerate(q.retrieved[:k]):
            for p in (view[d].pages_of(a, b) if d in view else ()):
                pages.setdefault(f"{d}#{p}", float(k - i))
        out.append(pages)
    return out


def _scored(top: list[str], k: int) -> dict[str, float]:
    """k for the first chunk, down by one a rank; a chunk listed twice keeps its first."""
    out: dict[str, float] = {}
    for i, c in enumerate(top):
        out.setdefault(c, float(k - i))
    return out


def _file(name: str) -> str:
    return re.sub(r"[^\w.+-]", "_", name)


def _trec(text: str) -> str:
    """An id as one whitespace-free TREC field."""
    return re.sub(r"[\s%]", lambda m: f"%{ord(m.group()):02X}", text)


def export(results: Results, sets: dict[str, QuerySet], fmt: str, out: str | os.PathLike,
           where: str = "dump") -> list[Path]:
    """Write <out>/<query set>/<strategy>/qrels and one run per retriever; the paths."""
    if fmt not in FORMATS:
        raise InputError(where, f"format {fmt!r}: one of {', '.join(FORMATS)}")
    _checked(results, sets, where)
    k = results.settings.k
    out = Path(out)
    written = []
    for name in dict.fromkeys(r.query_set for r in results.results):
        qs = sets[name]
        ids = [q.id for q in qs.queries]
        for strategy, rows in judgements(results, qs).items():
            folder = out / _file(name) / _file(strategy)
            qrels = {qid: rels for qid, rels in zip(ids, rows) if rels}
            written.append(_write_qrels(folder, qrels, fmt))
            for r in results.results:
                if r.query_set == name and r.strategy == strategy:
                    run = {qid: _scored(top, k) for qid, top in zip(ids, ranking(r, k))
                           if top}
                    written.append(_write_run(folder, r.retriever, run,
                                              f"{strategy}.{r.retriever}", fmt))
            if qs.view.paged:
                written += _pages(results, qs, strategy, folder, fmt)
    return written


def _pages(results: Results, qs: QuerySet, strategy: str, folder: Path, fmt: str) -> list[Path]:
    """The page-level qrels and runs of one strategy (see the module notes)."""
    ids = [q.id for q in qs.queries]
    qrels = {q.id: {f"{q.doc_id}#{p}": 1 for p in q.pages} for q in qs.queries if q.pages}
    if not qrels:
        return []
    written = [_write_qrels(folder, qrels, fmt, "pages-")]
    for r in results.results:
        if r.query_set == qs.name and r.strategy == strategy:
            run = {qid: pages for qid, pages in zip(ids, page_ranking(r, qs.view,
                                                                     results.settings.k))
                   if pages}
            written.append(_write_run(folder, f"pages-{r.retriever}", run,
                                      f"{strategy}.{r.retriever}.pages", fmt))
    return written


def _write_qrels(folder: Path, qrels: dict, fmt: str, prefix: str = "") -> Path:
    if fmt == "ranx":
        return atomic_write(folder / f"{prefix}qrels.json", json.dumps(qrels, ensure_ascii=False))
    lines = [f"{_trec(q)} 0 {_trec(c)} {rel}" for q, rels in qrels.items()
             for c, rel in rels.items()]
    return atomic_write(folder / f"{prefix}qrels.trec", "\n".join(lines) + "\n")


def _write_run(folder: Path, retriever: str, run: dict, tag: str, fmt: str) -> Path:
    if fmt == "ranx":
        return atomic_write(folder / f"{_file(retriever)}.json",
                            json.dumps(run, ensure_ascii=False))
    lines = [f"{_trec(q)} Q0 {_trec(c)} {rank} {score:g} {_trec(tag)}"
             for q, docs in run.items() for rank, (c, score) in enumerate(docs.items(), 1)]
    return atomic_write(folder / f"{_file(retriever)}.trec", "\n".join(lines) + "\n")
