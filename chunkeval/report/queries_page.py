"""queries.html: every query of every case on one page, to see why a number moved.

A case is a strategy with a retriever on a query set. The page lists its queries (coverage
now, coverage before and the change), sortable and filterable, and a row opens to show the
query, its gold and the chunks retrieved, the gold's characters marked. `chunkeval run`
compares each case with the reference strategy on the same retriever and set; the pytest
page (`<html stem>-queries.html`) with the baseline.

Size: a run's chunks repeat across strategies, retrievers and queries, so no chunk text is
stored. A chunk is [document, start, end] into its query set's view; the view's documents
are stored once, cut at their block boundaries, keeping only the pieces some shown chunk or
positional gold touches, each distinct piece once for the whole page (the query sets'
views share most of their text). A chunk whose handed text is not its slice keeps only
what it adds around the slice (a heading prefix, a repeated table header); one that
rewrote the slice itself (LangChain's output) is shown as its slice and flagged. Cases past
TEXT_BUDGET characters of text or ROW_BUDGET query rows are left out, and the page says so.
"""

from __future__ import annotations

import bisect
import json
import os
from pathlib import Path
from typing import Iterable

from ..model import QuerySet
from ..results import Result, Results, Settings, span_of
from ..store import atomic_write
from ..strategies.defaults import REFERENCE
from .html import CSS, asset
from .svg import declare_language, escape
from .view import View

TEXT_BUDGET = 4_000_000  # characters of document text a page may carry
ROW_BUDGET = 250_000  # query rows over all cases
AFFIX_MAX = 2_000  # characters a rewritten chunk may add around its slice and still be shown
FILE = "queries.html"


# The page's skeleton, its own style (after the report's) and its script, which renders in
# the browser the rows of one case at a time and a row's chunks when opened: package data.
PAGE = asset("queries.html")
PAGE_CSS = asset("queries.css")
JS = asset("queries.js")


def sibling(html_path: str | os.PathLike) -> Path:
    """The pytest page next to the `html` setting's page: report.html -> report-queries.html."""
    path = Path(html_path)
    return path.with_name(f"{path.stem}-queries.html")


def retrieved(result: Result, view, k: int) -> dict:
    """What the page needs of one result: per query its coverage and top k spans, and, for
    each rewritten chunk among them, what it adds around its slice ([prefix, suffix]; None
    when the text is not the slice with something around it)."""
    top = [[s[:3] for s in q.retrieved[:k]] for q in result.per_query]
    used = {f"{d}:{a}:{b}" for row in top for d, a, b in row}
    affixes = {}
    for key, text in result.rewritten.items():
        if key in used:
            doc, a, b = span_of(key)
            affixes[key] = _affix(view[doc].text[a:b] if doc in view else "", text)
    return {"coverage": [q.coverage for q in result.per_query], "top": top,
            "affixes": affixes}


def _affix(piece: str, text: str) -> list[str] | None:
    at = text.find(piece) if piece else -1
    if at < 0 or len(text) - len(piece) > AFFIX_MAX:
        return None
    return [text[:at], text[at + len(piece):]]


class Page:
    """The page's data, case by case, within the budgets."""

    def __init__(self, query_sets: Iterable[QuerySet], settings: Settings, title: str,
                 compared: str | None):
        self.title, self.compared = title, compared
        self.settings = settings
        self.strings: dict[str, int] = {}
        self.text_chars = self.rows = 0
        self.cases: list[dict] = []
        self.left_out: list[str] = []
        self.sets: dict[str, _Set] = {}
        for qs in query_sets:
            self.sets.setdefault(qs.name, _Set(qs, self))

    def add(self, strategy: str, retriever: str, query_set: str, now: dict,
            before: dict | None = None, ref: int | None = None) -> int | None:
        """Add a case; its index, or None when the set is unknown or a budget is spent."""
        name = f"{strategy} · {retriever} · {query_set}"
        s = self.sets.get(query_set)
        if s is None or len(now["top"]) != len(s.qs.queries):
            return None
        sides = [x for x in (now, before) if x]
        spans = [(d, a, b) for side in sides for row in side["top"] for d, a, b in row]
        cost = s.cost(spans)
        if self.text_chars + cost > TEXT_BUDGET or self.rows + len(now["top"]) > ROW_BUDGET:
            self.left_out.append(name)
            return None
        self.text_chars += cost
        self.rows += len(now["top"])
        s.need(spans)
        case = {"s": strategy, "r": retriever, "set": s.index, "now": s.side(now)}
        if before:
            case["before"] = s.side(before)
        if ref is not None:
            case["ref"] = ref
        self.cases.append(case)
        return len(self.cases) - 1

    def string(self, text: str) -> int:
        if text not in self.strings:
            self.strings[text] = len(self.strings)
        return self.strings[text]

    def data(self) -> dict:
        notes = []
        if self.left_out:
            notes.append(f"{len(self.left_out)} case(s) left out to keep the page small "
                         f"(at most {TEXT_BUDGET:,} characters of text and {ROW_BUDGET:,} "
                         f"query rows): {', '.join(self.left_out)}")
        sets = [s.data() for s in self.sets.values()]  # texts first: they fill `strings`
        return {"title": self.title, "k": self.settings.k, "shingle": self.settings.shingle,
                "compared": self.compared, "notes": notes, "sets": sets,
                "cases": self.cases, "strings": list(self.strings)}

    def render(self) -> str:
        data = json.dumps(self.data(), ensure_ascii=False, separators=(",", ":"))
        # the documents' text may hold "</script>" or "<!--": no "<" may reach the parser
        data = data.replace("<", "\\u003c")
        return declare_language(PAGE.format(title=escape(self.title), css=CSS,
                                            page_css=PAGE_CSS, data=data, js=JS))


class _Set:
    """One query set: its queries, its view's documents cut into pieces, its chunks."""

    def __init__(self, qs: QuerySet, page: Page):
        self.qs, self.page = qs, page
        self.index = len(page.sets)
        self.docs = [d.id for d in qs.view.documents]
        self.number = {d: i for i, d in enumerate(self.docs)}
        self.cuts: dict[str, list[int]] = {}
        for d in qs.view.documents:
            points = {0, len(d.text)} | {p for b in d.blocks for p in (b.start, b.end)}
            self.cuts[d.id] = sorted(p for p in points if 0 <= p <= len(d.text))
        self.needed: dict[str, set[int]] = {}
        self.spans: set[tuple[str, int, int]] = set()  # those whose pieces are needed
        self.chunks: dict[tuple, int] = {}
        gold = [(q.doc_id, a, b) for q in qs.queries for a, b in q.spans]
        page.text_chars += self.cost(gold)
        self.need(gold)

    def _pieces(self, doc: str, a: int, b: int) -> range:
        cuts = self.cuts.get(doc)
        if not cuts or a >= cuts[-1]:
            return range(0)
        first = max(0, bisect.bisect_right(cuts, a) - 1)
        last = max(first + 1, bisect.bisect_left(cuts, b))
        return range(first, min(last, len(cuts) - 1))

    def cost(self, spans: list[tuple[str, int, int]]) -> int:
        """Characters of text the spans add to the page."""
        new: dict[str, set[int]] = {}
        for d, a, b in set(spans) - self.spans:  # a case's chunks recur across its queries
            have = self.needed.get(d, ())
            new.setdefault(d, set()).update(i for i in self._pieces(d, a, b) if i not in have)
        return sum(self.cuts[d][i + 1] - self.cuts[d][i] for d, ids in new.items() for i in ids)

    def need(self, spans: list[tuple[str, int, int]]) -> None:
        for d, a, b in set(spans) - self.spans:
            self.needed.setdefault(d, set()).update(self._pieces(d, a, b))
        self.spans.update(spans)

    def chunk(self, doc: str, a: int, b: int, affix) -> int:
        """A chunk's number: [doc, start, end], then [prefix, suffix] around the slice, or
        null for a text that is not the slice with something around it."""
        key = (doc, a, b, tuple(affix) if isinstance(affix, list) else affix)
        if key not in self.chunks:
            self.chunks[key] = len(self.chunks)
        return self.chunks[key]

    def side(self, side: dict) -> dict:
        affixes = side.get("affixes") or {}
        top = []
        for row in side["top"]:
            numbers = []
            for d, a, b in row:
                key = f"{d}:{a}:{b}"
                if d not in self.number:  # outside the view: listed, with no text
                    self.number[d] = len(self.docs)
                    self.docs.append(d)
                numbers.append(self.chunk(d, a, b, affixes[key] if key in affixes else False))
            top.append(numbers)
        out = {"cov": [round(c * 10_000) for c in side["coverage"]], "top": top}
        if side.get("first_only"):
            out["firstOnly"] = True
        return out

    def data(self) -> dict:
        view = self.qs.view
        texts = []
        for d in self.docs:
            if d not in view:
                texts.append([])
                continue
            text, cuts, needed = view[d].text, self.cuts[d], self.needed.get(d, set())
            parts: list[int] = []
            for i in range(len(cuts) - 1):
                a, b = cuts[i], cuts[i + 1]
                if i in needed:
                    parts.append(self.page.string(text[a:b]))
                elif parts and parts[-1] < 0:  # skipped: its length in characters
                    parts[-1] -= b - a
                else:
                    parts.append(a - b)
            texts.append(parts)
        queries = [[q.id, q.text, self.number[q.doc_id] if q.doc_id in self.number else -1,
                    [self.page.string(g) for g in q.golds], [list(s) for s in q.spans]]
                   + ([list(q.pages)] if q.pages else [])
                   for q in self.qs.queries]
        chunks = [[self.number[d], a, b] + ([] if affix is False else
                                           [None] if affix is None else list(affix))
                  for d, a, b, affix in self.chunks]
        out = {"name": self.qs.name, "docs": self.docs, "text": texts, "queries": queries,
               "chunks": chunks}
        if getattr(view, "paged", False):  # a PDF chunk's pages, from its offsets
            out["pages"] = [list(view[d].pages_of(a, b)) if d in view else []
                            for d, a, b, _ in self.chunks]
        return out


# -- the two pages ---------------------------------------------------------------------------
def write_run_page(results: Results, query_sets: Iterable[QuerySet],
                   out_dir: str | os.PathLike) -> Path:
    """queries.html for a run: each case against the reference strategy (same retriever and
    query set), as the report's Δ columns."""
    return atomic_write(Path(out_dir) / FILE, render_run_page(results, query_sets))


def render_run_page(results: Results, query_sets: Iterable[QuerySet]) -> str:
    """The text of write_run_page's queries.html."""
    view = View(results)
    k = results.settings.k
    title = f"chunkeval: every query — {results.corpus.name}"
    ref_name = REFERENCE[0]
    page = Page(query_sets, results.settings, title, f"{ref_name} (reference)")
    views = {name: s.qs.view for name, s in page.sets.items()}
    for qs in view.query_sets:
        if qs not in views:
            continue
        strategies = view.strategies(qs)
        if ref_name in strategies:  # the reference first: every other case points at it
            strategies = [ref_name] + [s for s in strategies if s != ref_name]
        refs: dict[str, int | None] = {}
        for s in strategies:
            for r in view.retrievers(qs):
                row = view.row(qs, s, r)
                if row is None:
                    continue
                i = page.add(s, r, qs, retrieved(row, views[qs], k),
                             ref=None if s == ref_name else refs.get(r))
                if s == ref_name:
                    refs[r] = i
    return page.render()


def write_baseline_page(rows: list[dict], query_sets: Iterable[QuerySet], settings: Settings,
                        path: str | os.PathLike) -> Path:
    """The pytest page: each case now and, where a baseline was compared, before (the
    baseline keeps each query's coverage and the chunk that held the most gold only)."""
    page = Page(query_sets, settings, "chunkeval: every query, this run against the baseline",
                "baseline")
    for row in sorted(rows, key=lambda r: (r["query_set"], r["strategy"], r["retriever"])):
        if "retrieved" not in row:
            continue
        before = None
        if row.get("per_query"):
            by_id = {q["id"]: q for q in row["per_query"]}
            s = page.sets.get(row["query_set"])
            old = [by_id.get(q.id) for q in s.qs.queries] if s else []
            if old and all(old):
                before = {"coverage": [q["before"] for q in old], "first_only": True,
                          "top": [[list(span_of(q["best_before"]))] if q["best_before"] else []
                                  for q in old]}
        page.add(row["strategy"], row["retriever"], row["query_set"], row["retrieved"],
                 before=before)
    return atomic_write(path, page.render())
