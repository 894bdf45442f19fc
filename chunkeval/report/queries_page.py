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
from .html import CSS
from .svg import declare_language, escape
from .view import View

TEXT_BUDGET = 4_000_000  # characters of document text a page may carry
ROW_BUDGET = 250_000  # query rows over all cases
AFFIX_MAX = 2_000  # characters a rewritten chunk may add around its slice and still be shown
FILE = "queries.html"


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
        return declare_language(PAGE.format(title=escape(self.title), css=CSS + PAGE_CSS,
                                            data=data, js=JS))


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


PAGE_CSS = """
body { max-width: none; margin: 1em 2em; }
.controls { display: flex; flex-wrap: wrap; gap: 0.6em 1.2em; align-items: center;
            margin: 0.8em 0; }
.controls label { font-size: 0.9em; color: #444; }
#queries { width: 100%; }
#queries th[data-sort] { cursor: pointer; user-select: none; white-space: nowrap; }
#queries th[aria-sort=ascending]::after { content: " ▲"; }
#queries th[aria-sort=descending]::after { content: " ▼"; }
#queries tbody tr.q { cursor: pointer; }
#queries tbody tr.q:hover { background: #f3f7fc; }
#queries tbody tr.open { background: #eaf1fb; }
td.worse { color: #b71c1c; } td.better { color: #1b5e20; }
tr.detail > td { background: #fafafa; padding: 0.6em 1em 1em; }
.sides { display: flex; gap: 1.5em; } .sides > div { flex: 1 1 0; min-width: 0; }
.gold, .chunk { white-space: pre-wrap; overflow-wrap: anywhere; max-height: 18em;
                overflow: auto; border: 1px solid #ddd; background: #fff; padding: 0.4em 0.6em;
                font-size: 0.9em; }
.chunk.other { color: #777; }
ol.chunks { padding-left: 1.6em; } ol.chunks li { margin-bottom: 0.8em; }
.meta { font-size: 0.82em; color: #555; margin-bottom: 0.2em; }
.flag { color: #8a5a00; }
mark { background: #ffe066; color: inherit; }
.note { color: #8a5a00; }
#facts p { font-size: 0.9em; color: #444; margin: 0.3em 0; }
"""

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{css}</style>
</head>
<body>
<h1>{title}</h1>
<div id="facts"></div>
<div class="controls">
<label>case <select id="case"></select></label>
<label>query set <select id="set"><option value="">all</option></select></label>
<label>document <select id="doc"><option value="">all</option></select></label>
<label>search <input id="search" type="search" placeholder="query text or id"></label>
<label>change <select id="change"><option value="">any</option><option>worse</option>
<option>better</option><option>same</option></select></label>
<span id="count"></span>
</div>
<table id="queries"><thead><tr>
<th data-sort="id">id</th><th>query set</th><th data-sort="doc">document</th><th>query</th>
<th class="n" data-sort="before" id="before-head">before</th>
<th class="n" data-sort="coverage">coverage</th><th class="n" data-sort="change">change</th>
</tr></thead><tbody></tbody></table>
<script type="application/json" id="data">{data}</script>
<script>{js}</script>
</body>
</html>
"""

# Rendered in the browser: the rows of one case at a time, a row's chunks when opened.
JS = r"""
(function () {
"use strict";
var D = JSON.parse(document.getElementById("data").textContent);
var $ = function (id) { return document.getElementById(id); };
var SPACE = /\s/u;
var state = { pair: null, set: "", doc: "", search: "", change: "",
              sort: null, dir: 1, open: new Set() };

function el(tag, cls, text) {
  var e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// A document of a set as an array of characters (code points, as the offsets count them).
var docCache = new Map();
function docChars(si, d) {
  var key = si + ":" + d, chars = docCache.get(key);
  if (!chars) {
    chars = [];
    (D.sets[si].text[d] || []).forEach(function (part) {
      if (part >= 0) { for (var ch of D.strings[part]) chars.push(ch); }
      else { for (var i = 0; i < -part; i++) chars.push(""); }
    });
    docCache.set(key, chars);
  }
  return chars;
}

// The gold as the shingle rule sees it: whitespace-free shingles, short golds whole.
function goldShingles(q) {
  if (q.shingles) return q.shingles;
  var n = D.shingle, set = new Set(), shorts = [];
  q[3].forEach(function (g) {
    var bare = Array.from(D.strings[g]).filter(function (c) { return !SPACE.test(c); });
    if (bare.length < n) { if (bare.length) shorts.push(bare); return; }
    for (var i = 0; i + n <= bare.length; i++) set.add(bare.slice(i, i + n).join(""));
  });
  q.shingles = { set: set, shorts: shorts };
  return q.shingles;
}

// Which characters of a chunk are gold: by position for positional gold in a chunk that is
// its slice, else the characters of the gold shingles the chunk's text holds.
function goldMarks(q, chars, placed, start) {
  var marks = new Array(chars.length).fill(false);
  if (q[4].length && placed) {
    q[4].forEach(function (s) {
      for (var p = Math.max(s[0], start); p < Math.min(s[1], start + chars.length); p++)
        marks[p - start] = true;
    });
    return marks;
  }
  var g = goldShingles(q), n = D.shingle, bare = [], at = [];
  chars.forEach(function (c, i) { if (c && !SPACE.test(c)) { bare.push(c); at.push(i); } });
  for (var i = 0; i + n <= bare.length; i++) {
    if (g.set.has(bare.slice(i, i + n).join("")))
      for (var j = i; j < i + n; j++) marks[at[j]] = true;
  }
  g.shorts.forEach(function (s) {
    for (var i = 0; i + s.length <= bare.length; i++) {
      var hit = true;
      for (var j = 0; j < s.length && hit; j++) hit = bare[i + j] === s[j];
      if (hit) for (var j2 = 0; j2 < s.length; j2++) marks[at[i + j2]] = true;
    }
  });
  // whitespace between two marked characters is inside the gold's run: marked too
  for (var m = 1; m < at.length; m++) {
    if (marks[at[m - 1]] && marks[at[m]]) for (var p = at[m - 1] + 1; p < at[m]; p++) marks[p] = true;
  }
  return marks;
}

function markedText(chars, marks) {
  var out = el("div", "chunk"), run = "", marked = false;
  function flush() {
    if (!run) return;
    out.appendChild(marked ? el("mark", null, run) : document.createTextNode(run));
    run = "";
  }
  chars.forEach(function (c, i) {
    if (marks[i] !== marked) { flush(); marked = marks[i]; }
    run += c;
  });
  flush();
  return out;
}

function pageText(pages) {
  return (pages.length > 1 ? "pages " : "page ") + (pages.length > 2 && pages[pages.length - 1]
      - pages[0] === pages.length - 1 ? pages[0] + "–" + pages[pages.length - 1]
      : pages.join(", "));
}

function chunkItem(si, q, number, rank) {
  var c = D.sets[si].chunks[number], doc = D.sets[si].docs[c[0]];
  var li = el("li");
  var slice = docChars(si, c[0]).slice(c[1], c[2]);
  var rewritten = c.length > 3, placed = !rewritten;
  var chars = c.length === 5 ? Array.from(c[3]).concat(slice, Array.from(c[4])) : slice;
  var same = c[0] === q[2];
  var marks = same ? goldMarks(q, chars, placed, c[1]) : [];
  var held = marks.filter(Boolean).length;
  var pages = D.sets[si].pages ? D.sets[si].pages[number] : [];
  var meta = el("div", "meta", "#" + rank + " " + doc + ":" + c[1] + ":" + c[2] + " · " +
                (pages.length ? pageText(pages) + " · " : "") + (c[2] - c[1]) + " chars · " +
                (same ? held + " gold characters" : "another document"));
  if (c.length === 4) meta.appendChild(el("span", "flag",
      " · its handed text is rewritten; shown as its slice"));
  else if (rewritten) meta.appendChild(el("span", "flag", " · slice with the text it adds"));
  li.appendChild(meta);
  var text = markedText(chars, marks);
  if (!same) text.classList.add("other");
  li.appendChild(text);
  return li;
}

function side(title, si, q, numbers, note) {
  var box = el("div");
  box.appendChild(el("h4", null, title));
  if (note) box.appendChild(el("p", "note", note));
  var list = el("ol", "chunks");
  numbers.forEach(function (n, i) { list.appendChild(chunkItem(si, q, n, i + 1)); });
  if (!numbers.length) box.appendChild(el("p", "note", "no chunk"));
  box.appendChild(list);
  return box;
}

function beforeOf(c) {
  if (c.before) return c.before;
  if (c.ref !== undefined) return D.cases[c.ref].now;
  return null;
}

function beforeTitle(c) {
  if (c.ref !== undefined) { var r = D.cases[c.ref]; return "before: " + r.s + " · " + r.r; }
  return "before: " + (D.compared || "");
}

function detail(row) {
  var c = D.cases[row.ci], si = c.set, q = D.sets[si].queries[row.qi];
  var td = el("td");
  td.colSpan = 7;
  var asked = el("p");
  asked.appendChild(el("strong", null, "query: "));
  asked.appendChild(document.createTextNode(q[1] + "  (" + q[0] + ")"));
  td.appendChild(asked);
  var where = q[4].length ? " (positions " + q[4].map(function (s) {
      return s[0] + "–" + s[1]; }).join(", ") + ")" : "";
  if (q.length > 5) where += " on " + pageText(q[5]);
  td.appendChild(el("p")).appendChild(el("strong", null, "gold in " +
      (D.sets[si].docs[q[2]] || "?") + where + ":"));
  td.appendChild(el("div", "gold", q[3].map(function (g) { return D.strings[g]; })
                                      .join("\n…\n")));
  var sides = el("div", "sides");
  sides.appendChild(side("now: " + c.s + " · " + c.r + " (top " + D.k + ")", si, q,
                         c.now.top[row.qi]));
  var b = beforeOf(c);
  if (b) sides.appendChild(side(beforeTitle(c), si, q, b.top[row.qi],
      b.firstOnly ? "a baseline keeps only the chunk that held the most gold" : null));
  td.appendChild(sides);
  var tr = el("tr", "detail");
  tr.appendChild(td);
  return tr;
}

var pairs = [];
var rowCache = new Map();
function rowsOf(pair) {
  if (rowCache.has(pair)) return rowCache.get(pair);
  var rows = [];
  D.cases.forEach(function (c, ci) {
    if (c.s + " · " + c.r !== pair) return;
    var s = D.sets[c.set], b = beforeOf(c);
    s.queries.forEach(function (q, qi) {
      var now = c.now.cov[qi], before = b ? b.cov[qi] : null;
      rows.push({ ci: ci, qi: qi, key: ci + "/" + qi, id: q[0], text: q[1],
                  set: s.name, doc: s.docs[q[2]] || "", now: now, before: before,
                  change: before === null ? null : now - before, order: rows.length });
    });
  });
  rowCache.set(pair, rows);
  return rows;
}

function pct(v) { return v === null ? "–" : (v / 100).toFixed(1); }

function shown() {
  var needle = state.search.toLowerCase();
  var rows = rowsOf(state.pair).filter(function (r) {
    if (state.set && r.set !== state.set) return false;
    if (state.doc && r.doc !== state.doc) return false;
    if (needle && r.text.toLowerCase().indexOf(needle) < 0 &&
        r.id.toLowerCase().indexOf(needle) < 0) return false;
    if (state.change === "worse") return r.change !== null && r.change < 0;
    if (state.change === "better") return r.change !== null && r.change > 0;
    if (state.change === "same") return r.change === 0;
    return true;
  });
  var key = state.sort, dir = state.dir;
  if (key) {
    var value = { id: function (r) { return r.id; }, doc: function (r) { return r.doc; },
                  coverage: function (r) { return r.now; },
                  before: function (r) { return r.before; },
                  change: function (r) { return r.change; } }[key];
    rows = rows.slice().sort(function (x, y) {
      var a = value(x), b = value(y);
      if (a === b) return x.order - y.order;
      if (a === null) return 1;
      if (b === null) return -1;
      return (a < b ? -1 : 1) * dir;
    });
  }
  return rows;
}

function render() {
  var body = document.querySelector("#queries tbody");
  var rows = shown(), all = rowsOf(state.pair).length;
  body.textContent = "";
  var fragment = document.createDocumentFragment();
  rows.forEach(function (r) {
    var tr = el("tr", "q");
    tr.dataset.key = r.key;
    var cls = r.change === null || r.change === 0 ? "n" : r.change < 0 ? "n worse" : "n better";
    [[r.id, ""], [r.set, ""], [r.doc, ""], [r.text, ""], [pct(r.before), "n"],
     [pct(r.now), "n"], [r.change === null ? "–" : (r.change > 0 ? "+" : "") + pct(r.change),
                        cls]]
      .forEach(function (cell) { tr.appendChild(el("td", cell[1], cell[0])); });
    tr.addEventListener("click", function () {
      if (state.open.has(r.key)) state.open.delete(r.key); else state.open.add(r.key);
      render();
    });
    fragment.appendChild(tr);
    if (state.open.has(r.key)) { tr.classList.add("open"); fragment.appendChild(detail(r)); }
  });
  body.appendChild(fragment);
  $("count").textContent = rows.length + " of " + all + " queries";
  document.querySelectorAll("#queries th[data-sort]").forEach(function (th) {
    if (th.dataset.sort === state.sort)
      th.setAttribute("aria-sort", state.dir > 0 ? "ascending" : "descending");
    else th.removeAttribute("aria-sort");
  });
}

function option(select, value, text) {
  var o = el("option", null, text === undefined ? value : text);
  o.value = value;
  select.appendChild(o);
}

function start() {
  var facts = $("facts");
  facts.appendChild(el("p", null, D.cases.length + " cases (strategy · retriever · query " +
      "set) · coverage of the gold by the top " + D.k + " chunks, in points · before: " +
      (D.compared || "none") + (D.compared === "baseline" ? "" :
      ", same retriever and query set")));
  facts.appendChild(el("p", null, "A row opens to its chunks with the gold's characters " +
      "marked: those of the gold's " + D.shingle + "-character shingles the chunk holds, " +
      "or for positional gold the gold positions inside the chunk's range. Only chunks of " +
      "the gold document count."));
  D.notes.forEach(function (n) { facts.appendChild(el("p", "note", n)); });
  D.cases.forEach(function (c) {
    var pair = c.s + " · " + c.r;
    if (pairs.indexOf(pair) < 0) { pairs.push(pair); option($("case"), pair); }
  });
  D.sets.forEach(function (s) { option($("set"), s.name); });
  var docs = new Set();
  D.sets.forEach(function (s) { s.queries.forEach(function (q) { docs.add(s.docs[q[2]]); }); });
  Array.from(docs).sort().forEach(function (d) { if (d) option($("doc"), d); });
  $("before-head").textContent = D.compared ? "before" : "–";
  var compared = D.cases.filter(function (c) { return beforeOf(c); })[0] || D.cases[0];
  state.pair = compared ? compared.s + " · " + compared.r : null;
  if (compared) $("case").value = state.pair;
  // a link may name the case, the set, a search and a query to open: #case=...&q=...
  var wanted = new URLSearchParams(location.hash.slice(1));
  if (pairs.indexOf(wanted.get("case")) >= 0) state.pair = $("case").value = wanted.get("case");
  ["set", "search"].forEach(function (name) {
    if (wanted.get(name)) state[name] = $(name).value = wanted.get(name);
  });
  if (D.compared === "baseline") { state.sort = "change"; state.dir = 1; }
  $("case").addEventListener("change", function (e) { state.pair = e.target.value; render(); });
  [["set", "change"], ["doc", "change"], ["change", "change"], ["search", "input"]]
    .forEach(function (x) {
      $(x[0]).addEventListener(x[1], function (e) { state[x[0]] = e.target.value; render(); });
    });
  document.querySelectorAll("#queries th[data-sort]").forEach(function (th) {
    th.addEventListener("click", function () {
      if (state.sort === th.dataset.sort) state.dir = -state.dir;
      else { state.sort = th.dataset.sort; state.dir = 1; }
      render();
    });
  });
  if (state.pair && wanted.get("q")) rowsOf(state.pair).forEach(function (r) {
    if (r.id === wanted.get("q")) state.open.add(r.key);
  });
  if (state.pair) render();
  var opened = document.querySelector("#queries tr.open");
  if (opened && opened.getBoundingClientRect().top > innerHeight / 2) opened.scrollIntoView();
}

start();
})();
"""
