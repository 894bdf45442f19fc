"""The report stage: a terminal table, report.md and a self-contained report.html.

Input is the results document `chunkeval run` writes (results.json). The HTML needs no
network and no JavaScript: styles are inline and the plots are SVG markup written here.
"""

from __future__ import annotations

import html
import math
import os
import shutil
import textwrap
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from .cache import atomic_write
from .config import BUILTIN_CORPORA
from .findings import Finding, findings, paired_difference, per_query, query_set_names

RETRIEVER_ORDER = ("bm25", "lsa", "hybrid", "use", "hybrid-use")
REFERENCE = "fixed-400"  # paired differences are taken against this strategy when present
# Budget-curve lines: the seed's contrasts first, then the best of the rest.
CURVE_PICKS = ("fixed-200", "fixed-1600", "recursive-400-ov40", "structure-400+prefix",
               "heading-h2", "parent-child-r200-s800")
CURVE_LINES = 6
# Okabe-Ito colours: distinguishable with the common colour-vision deficiencies.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000",
           "#999999")
FONT = ('system-ui, -apple-system, "Segoe UI", "Hiragino Sans", "Noto Sans CJK JP", '
        '"Yu Gothic", sans-serif')


# --- reading the document ---------------------------------------------------------------

def checked(results: dict) -> "_Doc":
    """The results document, validated (ValueError naming what is wrong) and indexed by
    (query set, strategy, retriever)."""
    return _Doc(results)


class _Doc:
    """The results document, checked once and indexed by (query set, strategy, retriever)."""

    def __init__(self, results: dict):
        if not isinstance(results, dict) or not isinstance(results.get("results"), list):
            raise ValueError("results document: expected an object with a 'results' list")
        self.raw = results
        self.memo: dict = {}  # bootstrap results, shared by the Markdown and HTML pages
        self.settings = results.get("settings") or {}
        self.k = self.settings.get("k", 5)
        self.budget = self.settings.get("budget", 2000)
        length = self.settings.get("length", "chars")  # the unit of budgets and lengths
        self.unit = "chars" if length == "chars" else f"units of {length}"
        self.rows: dict[tuple[str, str, str], dict] = {}
        for i, row in enumerate(results["results"]):
            if not isinstance(row, dict):
                raise ValueError(f"results document: results[{i}] is not an object")
            for key in ("strategy", "retriever", "query_set"):
                if not isinstance(row.get(key), str):
                    raise ValueError(f"results document: results[{i}] has no {key!r}")
            self.rows.setdefault((row["query_set"], row["strategy"], row["retriever"]), row)
        self.query_sets = [q for q in query_set_names(results)
                           if any(key[0] == q for key in self.rows)]

    def check_query_set(self, query_set: str | None) -> list[str]:
        if query_set is None:
            return self.query_sets
        if query_set not in self.query_sets:
            raise ValueError(f"unknown query set {query_set!r}; the results have: "
                             f"{', '.join(self.query_sets) or 'none'}")
        return [query_set]

    def strategies(self, qs: str) -> list[str]:
        """The document's declared order, then any strategy only seen in the results."""
        present = [s for (q, s, _) in self.rows if q == qs]
        order = [s for s in (self.raw.get("strategies") or {}) if s in present]
        for s in present:
            if s not in order:
                order.append(s)
        return order

    def retrievers(self, qs: str) -> list[str]:
        present = []
        for (q, _, r) in self.rows:
            if q == qs and r not in present:
                present.append(r)
        return sorted(present, key=lambda r: (RETRIEVER_ORDER.index(r)
                                              if r in RETRIEVER_ORDER else len(RETRIEVER_ORDER)))

    def row(self, qs: str, strategy: str, retriever: str) -> dict | None:
        return self.rows.get((qs, strategy, retriever))

    def chunk_row(self, qs: str, strategy: str) -> dict:
        """Chunk statistics and cut rate do not depend on the retriever: any row will do."""
        for r in self.retrievers(qs):
            if (row := self.row(qs, strategy, r)) is not None:
                return row
        return {}

    @property
    def seed_query_sets(self) -> list[str]:
        """The seed's findings are claims about its own corpus: checked on the built-in one
        only, never in reports on a user's corpus."""
        name = (self.raw.get("corpus") or {}).get("name")
        return self.query_sets if name in BUILTIN_CORPORA else []

    def findings(self, qs: str) -> list[Finding]:
        if ("findings", qs) not in self.memo:
            self.memo[("findings", qs)] = findings(self.raw, qs)
        return self.memo[("findings", qs)]

    def queries(self, qs: str) -> int | None:
        return ((self.raw.get("query_sets") or {}).get(qs) or {}).get("queries")

    def family(self, strategy: str) -> str:
        return ((self.raw.get("strategies") or {}).get(strategy) or {}).get("family", "")

    def budgets(self, qs: str) -> list[int]:
        seen = {int(b) for row in self.rows.values() if row["query_set"] == qs
                for b in (row.get("budget_curve") or {})}
        return sorted(seen)


def _metric(row: dict | None, name: str) -> dict:
    m = ((row or {}).get("metrics") or {}).get(name)
    return m if isinstance(m, dict) else ({"value": m} if m is not None else {})


def _pct(m: dict, *, se: bool = True, sep: str = "±") -> str:
    if m.get("value") is None:
        return "-"
    text = f"{100 * m['value']:.1f}"
    if se and m.get("se") is not None:
        text += f"{sep}{100 * m['se']:.1f}"
    return text


def _int(v) -> str:
    return "-" if v is None else f"{v:,.0f}"


def _chars(b) -> str:
    return f"{b:,}"


def _differences(doc: _Doc, qs: str, retriever: str) -> tuple[str | None, dict]:
    """Paired bootstrap differences of every strategy against the reference strategy."""
    key = (qs, retriever)
    if key not in doc.memo:
        doc.memo[key] = _paired_to_reference(doc, qs, retriever)
    return doc.memo[key]


def _paired_to_reference(doc: _Doc, qs: str, retriever: str) -> tuple[str | None, dict]:
    strategies = doc.strategies(qs)
    ref = REFERENCE if REFERENCE in strategies else (strategies[0] if strategies else None)
    ref_row = doc.row(qs, ref, retriever) if ref else None
    if ref_row is None:
        return ref, {}
    seed = int(doc.settings.get("seed", 0) or 0)
    out = {}
    for s in strategies:
        row = doc.row(qs, s, retriever)
        if s == ref or row is None:
            continue
        out[s] = {key: paired_difference(per_query(row, key), per_query(ref_row, key), seed=seed)
                  for key in ("coverage", "budget_coverage")}
    return ref, out


def _diff_text(d: dict | None) -> str:
    if not d:
        return "-"
    return f"{100 * d['diff']:+.1f} [{100 * d['lo']:+.1f}, {100 * d['hi']:+.1f}]"


# --- terminal table -----------------------------------------------------------------------

def _cells(text: str) -> int:
    """Terminal columns a string takes: East Asian wide characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else
               0 if unicodedata.combining(c) else 1 for c in text)


def _pad(text: str, width: int, align: str) -> str:
    gap = " " * max(0, width - _cells(text))
    return text + gap if align == "<" else gap + text


@dataclass
class _Col:
    header: str
    cells: list[str]
    align: str = ">"

    @property
    def width(self) -> int:
        return max([_cells(self.header)] + [_cells(c) for c in self.cells])


def _group_width(cols: list[_Col]) -> int:
    return sum(c.width for c in cols) + 2 * (len(cols) - 1)


def _render(groups: list[tuple[str, list[_Col]]]) -> list[str]:
    n = len(groups[0][1][0].cells)
    titles, headers, rules = [], [], []
    lines = [[] for _ in range(n)]
    for title, cols in groups:
        w = _group_width(cols)
        titles.append(_pad(f" {title} ".center(w, "-") if title else "", w, "<"))
        headers.append("  ".join(_pad(c.header, c.width, c.align) for c in cols))
        rules.append("-" * w)
        for i in range(n):
            lines[i].append("  ".join(_pad(c.cells[i], c.width, c.align) for c in cols))
    sep = "   "
    return [sep.join(x).rstrip() for x in [titles, headers, rules] + lines]


def _terminal_width() -> int:
    return shutil.get_terminal_size((120, 24)).columns


def format_table(results: dict, *, query_set: str | None = None, width: int | None = None) -> str:
    """A plain-text table per query set, one row per strategy; percent with ±1 SE.

    Retriever groups that do not fit in `width` columns (default: the terminal's) move to
    a second table below, so no line wraps.
    """
    doc = _Doc(results)
    width = width or _terminal_width()
    out: list[str] = []
    for qs in doc.check_query_set(query_set):
        strategies = doc.strategies(qs)
        n = doc.queries(qs)
        out.append(f"{qs}" + (f" ({n:,} queries)" if n is not None else "")
                   + f"  k={doc.k}  budget {_chars(doc.budget)} {doc.unit}  [% ±SE]")
        rows = [doc.chunk_row(qs, s) for s in strategies]
        left = [_Col("strategy", list(strategies), "<"),
                _Col("cut", [_pct(_metric(r, "cut_rate"), se=False) for r in rows]),
                _Col("chunks", [_int((r.get("chunks") or {}).get("count")) for r in rows]),
                _Col("mean", [_int((r.get("chunks") or {}).get("mean_len")) for r in rows])]
        groups = []
        for ret in doc.retrievers(qs):
            rr = [doc.row(qs, s, ret) for s in strategies]
            groups.append((ret, [
                _Col(f"R@{doc.k}", [_pct(_metric(r, "recall_at_k")) for r in rr]),
                _Col(f"B@{doc.budget}", [_pct(_metric(r, "budget_recall")) for r in rr]),
                _Col("hit", [_pct(_metric(r, "doc_hit_at_k"), se=False) for r in rr]),
                _Col("cpl", [_pct(_metric(r, "complete_rate"), se=False) for r in rr])]))
        # Pack retriever groups into as few tables as fit the width.
        parts: list[list] = []
        used = width + 1
        for g in groups:
            w = 3 + _group_width(g[1])
            if parts and used + w <= width:
                parts[-1].append(g)
                used += w
            else:
                parts.append([g])
                used = _group_width(left) + w
        for part in parts or [[]]:
            out.extend(_render([("", left)] + part))
            out.append("")
    legend = (f"R@{doc.k} = Recall@{doc.k}; B@{doc.budget} = budget recall at "
              f"{_chars(doc.budget)} {doc.unit}; hit = doc hit@{doc.k}; cpl = complete rate; "
              f"cut = cut rate of table/pre blocks; mean = mean chunk length ({doc.unit}).")
    out.extend(textwrap.wrap(legend, width=max(40, width)))
    return "\n".join(out)


# --- Markdown -----------------------------------------------------------------------------

def _md(text) -> str:
    """Escape Markdown so any strategy name shows as written.

    `<` is escaped only where it could open an HTML tag, so "a < b" stays readable.
    """
    text = str(text)
    out = []
    for c, after in zip(text, text[1:] + " "):
        opens_tag = c == "<" and ((after.isascii() and after.isalpha()) or after in "/!?")
        out.append("\\" + c if c in "\\`*_[]|" or opens_tag else c)
    return "".join(out)


def _md_table(header: list[str], rows: list[list[str]], align: list[str]) -> list[str]:
    marks = {"<": ":--", ">": "--:"}
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(marks[a] for a in align) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines + [""]


def _header_facts(doc: _Doc) -> list[str]:
    corpus = doc.raw.get("corpus") or {}
    s = doc.settings
    facts = []
    if corpus:
        facts.append(f"corpus {corpus.get('name', '?')} ({_int(corpus.get('documents'))} documents, "
                     f"{_int(corpus.get('chars'))} chars, fingerprint {corpus.get('fingerprint', '?')})")
    bits = [f"k = {doc.k}", f"budget = {_chars(doc.budget)} {doc.unit}"]
    if s.get("budgets"):
        bits.append("budget curve " + ", ".join(_chars(b) for b in s["budgets"]))
    if s.get("shingle") is not None:
        bits.append(f"shingle = {s['shingle']}")
    if s.get("complete_at") is not None:
        bits.append(f"complete at coverage ≥ {100 * s['complete_at']:.0f}%")
    if s.get("seed") is not None:
        bits.append(f"seed = {s['seed']}")
    facts.append("settings: " + ", ".join(bits))
    sets = [f"{q} ({_int(doc.queries(q))} queries)" for q in doc.query_sets]
    facts.append("query sets: " + ", ".join(sets))
    rets = doc.raw.get("retrievers")
    if isinstance(rets, dict) and rets:
        facts.append("retrievers: " + ", ".join(
            f"{n} {r.get('version', '?')}" if isinstance(r, dict) else str(n)
            for n, r in rets.items()) + (f"; analyzer {doc.raw['analyzer']}"
                                         if doc.raw.get("analyzer") else ""))
    emb = doc.raw.get("embeddings")
    if isinstance(emb, dict) and (emb.get("embedded") or emb.get("cached")):
        facts.append(f"embeddings: {_int(emb.get('embedded'))} texts embedded, "
                     f"{_int(emb.get('cached'))} from the cache")
    if doc.raw.get("chunkeval"):
        facts.append(f"chunkeval {doc.raw['chunkeval']}")
    return facts


def _reading_note(doc: _Doc) -> list[str]:
    return [
        f"Values are percentages. Recall@{doc.k} is the mean share of the answer's 8-char "
        f"shingles found in the top {doc.k} chunks from the answer's document; budget recall "
        f"takes chunks from the top while their total stays within {_chars(doc.budget)} "
        f"{doc.unit} (the first is always taken). Complete = share of queries with coverage at the "
        f"completion threshold; doc hit = the answer's document appears in the top {doc.k}; "
        "cut rate = share of table and pre blocks with a chunk boundary inside them.",
        "`±` is one standard error of the mean over the queries. Two methods whose values are "
        "a couple of SEs apart may still differ reliably, because they are measured on the same "
        "queries: the Δ columns give the paired difference to the reference strategy with a "
        "95% bootstrap interval over queries. An interval that contains 0 shows no difference; "
        "one that excludes 0 does.",
    ]


def _finding_lines(items: list[Finding]) -> list[str]:
    return [f"- **{_md(f.name)}** — {f.verdict}. {_md(f.summary)}" for f in items]


def render_markdown(results: dict | _Doc) -> str:
    doc = results if isinstance(results, _Doc) else _Doc(results)
    corpus = (doc.raw.get("corpus") or {}).get("name", "")
    out = [f"# chunkeval report{' — ' + _md(corpus) if corpus else ''}", ""]
    out += [f"- {_md(f)}" for f in _header_facts(doc)] + [""]
    out += ["## How to read this", ""]
    for para in _reading_note(doc):
        out += [para, ""]
    for qs in doc.seed_query_sets:
        out += [f"## Findings of the seed, checked on {_md(qs)}", ""]
        out += _finding_lines(doc.findings(qs)) + [""]
    for qs in doc.query_sets:
        out += _md_query_set(doc, qs)
    return "\n".join(out).rstrip() + "\n"


def _chunk_cells(doc: _Doc, qs: str, s: str) -> list[str]:
    row = doc.chunk_row(qs, s)
    ch = row.get("chunks") or {}
    ov = ch.get("overlap") or {}
    cut = _metric(row, "cut_rate")
    cut_text = _pct(cut, se=False)
    if cut.get("blocks") is not None and cut.get("cut") is not None:
        cut_text += f" ({cut['cut']:,}/{cut['blocks']:,})"
    overlap = "-"
    if ov.get("boundaries") is not None:
        overlap = f"{_int(ov.get('zero'))}/{_int(ov['boundaries'])}"
        if ov.get("mean") is not None:
            overlap += f", mean {ov['mean']:.1f}, max {_int(ov.get('max'))}"
    secs = row.get("seconds") or {}
    split = "-" if secs.get("split") is None else f"{secs['split']:.2f}"
    return [_int(ch.get("count")), _int(ch.get("mean_len")), _int(ch.get("max_len")),
            _int(ch.get("under_30")), cut_text, overlap, split]


CHUNK_HEADER = ["strategy", "family", "chunks", "mean len", "max len", "< 30 chars", "cut rate",
                "zero-overlap boundaries", "split s"]


def _retriever_header(doc: _Doc, ref: str | None) -> list[str]:
    return ["strategy", f"R@{doc.k}", f"budget recall @{_chars(doc.budget)}", "complete",
            f"doc hit@{doc.k}", "precision", "IoU", f"MRR@{doc.k}", f"nDCG@{doc.k}",
            f"Δ R@{doc.k} vs {ref}",
            f"Δ budget vs {ref}"]


def _retriever_cells(doc: _Doc, qs: str, s: str, ret: str, diffs: dict) -> list[str] | None:
    row = doc.row(qs, s, ret)
    if row is None:
        return None
    d = diffs.get(s) or {}
    return [_pct(_metric(row, "recall_at_k"), sep=" ± "),
            _pct(_metric(row, "budget_recall"), sep=" ± "),
            _pct(_metric(row, "complete_rate"), sep=" ± "),
            _pct(_metric(row, "doc_hit_at_k"), sep=" ± "),
            _pct(_metric(row, "precision"), sep=" ± "),
            _pct(_metric(row, "iou"), sep=" ± "),
            _pct(_metric(row, "mrr_at_k"), sep=" ± "),
            _pct(_metric(row, "ndcg_at_k"), sep=" ± "),
            _diff_text(d.get("coverage")), _diff_text(d.get("budget_coverage"))]


def _curve_cells(doc: _Doc, qs: str, s: str, ret: str, budgets: list[int]) -> list[str] | None:
    row = doc.row(qs, s, ret)
    if row is None or not row.get("budget_curve"):
        return None
    curve = row["budget_curve"]
    return [_pct(curve.get(str(b)) or {}, se=False) for b in budgets]


def _md_query_set(doc: _Doc, qs: str) -> list[str]:
    strategies = doc.strategies(qs)
    out = [f"## {_md(qs)}" + (f" ({_int(doc.queries(qs))} queries)" if doc.queries(qs) else ""),
           "", "### Chunks", ""]
    out += _md_table(CHUNK_HEADER,
                     [[_md(s), _md(doc.family(s))] + _chunk_cells(doc, qs, s) for s in strategies],
                     ["<", "<"] + [">"] * 7)
    budgets = doc.budgets(qs)
    for ret in doc.retrievers(qs):
        ref, diffs = _differences(doc, qs, ret)
        rows = [[_md(s)] + cells for s in strategies
                if (cells := _retriever_cells(doc, qs, s, ret, diffs))]
        out += [f"### {_md(ret)}", ""]
        out += _md_table([_md(h) for h in _retriever_header(doc, ref)], rows, ["<"] + [">"] * 10)
        curve_rows = [[_md(s)] + cells for s in strategies
                      if (cells := _curve_cells(doc, qs, s, ret, budgets))]
        if curve_rows:
            out += [f"Budget recall by context budget ({_md(ret)}, {doc.unit}):", ""]
            out += _md_table(["strategy"] + [_chars(b) for b in budgets], curve_rows,
                             ["<"] + [">"] * len(budgets))
    return out


# --- SVG plots ----------------------------------------------------------------------------

def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _text_width(text: str, size: float) -> float:
    return sum(size * (1.0 if unicodedata.east_asian_width(c) in "WF" else 0.58) for c in text)


def _nice_step(span: float, ticks: int = 5) -> float:
    raw = span / max(1, ticks)
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    for m in (1, 2, 2.5, 5, 10):
        if m * mag >= raw:
            return m * mag
    return 10 * mag


def _pct_axis(values: list[float]) -> tuple[float, list[float]]:
    """A 0-based share axis up to a round value just above the data."""
    top = max([v for v in values if v is not None] + [0.05])
    step = _nice_step(top, 5)
    hi = step * math.ceil(top * 1.02 / step)
    return hi, [i * step for i in range(int(round(hi / step)) + 1)]


def _log_ticks(lo: float, hi: float) -> list[float]:
    ticks = []
    for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        for m in (1, 2, 5):
            v = m * 10 ** e
            if lo <= v <= hi:
                ticks.append(v)
    return ticks


def _log_bounds(lo: float, hi: float) -> tuple[float, float]:
    """Widen [lo, hi] to the 1-2-5 ticks around it, so both ends carry a tick label."""
    steps = [m * 10 ** e for e in range(0, 8) for m in (1, 2, 5)]
    return (max([v for v in steps if v <= lo] or [lo]), min([v for v in steps if v >= hi] or [hi]))


class _Svg:
    def __init__(self, width: int, height: int, title: str):
        self.width, self.height, self.title = width, height, title
        self.items: list[str] = []

    def add(self, markup: str) -> None:
        self.items.append(markup)

    def text(self, x, y, s, *, size=12, anchor="start", weight="normal", fill="#222",
             rotate: float | None = None, halo: bool = False) -> None:
        rot = f' transform="rotate({rotate:g} {x:.1f} {y:.1f})"' if rotate is not None else ""
        # A white outline under the glyphs keeps a label legible where it crosses a line.
        out = ' stroke="#fff" stroke-width="3" paint-order="stroke"' if halo else ""
        self.add(f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
                 f'font-weight="{weight}" fill="{fill}"{rot}{out}>{_e(s)}</text>')

    def line(self, x1, y1, x2, y2, *, stroke="#888", width=1.0, dash: str | None = None) -> None:
        d = f' stroke-dasharray="{dash}"' if dash else ""
        self.add(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
                 f'stroke="{stroke}" stroke-width="{width}"{d}/>')

    def circle(self, x, y, r, *, fill, stroke=None) -> None:
        s = f' stroke="{stroke}" stroke-width="1.5"' if stroke else ""
        self.add(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r}" fill="{fill}"{s}/>')

    def rect(self, x, y, w, h, *, fill, stroke=None) -> None:
        s = f' stroke="{stroke}"' if stroke else ""
        self.add(f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(0, w):.1f}" height="{h:.1f}" '
                 f'fill="{fill}"{s}/>')

    def polyline(self, points, *, stroke, width=2.0) -> None:
        pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        self.add(f'<polyline points="{pts}" fill="none" stroke="{stroke}" stroke-width="{width}"/>')

    def markup(self) -> str:
        body = "\n".join(self.items)
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" '
                f'height="{self.height}" viewBox="0 0 {self.width} {self.height}" role="img" '
                f'font-family="{_e(FONT)}">\n<title>{_e(self.title)}</title>\n'
                f'<rect width="100%" height="100%" fill="#fff"/>\n{body}\n</svg>')


@dataclass
class _Frame:
    """A plot area inside an SVG with its axes' value ranges."""

    x0: float
    y0: float
    x1: float
    y1: float
    xlo: float
    xhi: float
    yhi: float
    xlog: bool = False

    def x(self, v: float) -> float:
        if self.xlog:
            t = (math.log(v) - math.log(self.xlo)) / (math.log(self.xhi) - math.log(self.xlo))
        else:
            t = (v - self.xlo) / ((self.xhi - self.xlo) or 1)
        return self.x0 + t * (self.x1 - self.x0)

    def y(self, v: float) -> float:
        return self.y1 - (v / (self.yhi or 1)) * (self.y1 - self.y0)


def _axes(svg: _Svg, f: _Frame, xticks, yticks, xlabel: str, ylabel: str,
          xfmt=lambda v: f"{v:,.0f}") -> None:
    for v in yticks:
        y = f.y(v)
        svg.line(f.x0, y, f.x1, y, stroke="#e3e3e3")
        svg.text(f.x0 - 6, y + 4, f"{100 * v:.0f}%", size=11, anchor="end", fill="#444")
    for v in xticks:
        x = f.x(v)
        svg.line(x, f.y1, x, f.y1 + 5, stroke="#666")
        svg.text(x, f.y1 + 18, xfmt(v), size=11, anchor="middle", fill="#444")
    svg.line(f.x0, f.y1, f.x1, f.y1, stroke="#444")
    svg.line(f.x0, f.y0, f.x0, f.y1, stroke="#444")
    svg.text((f.x0 + f.x1) / 2, f.y1 + 36, xlabel, size=12, anchor="middle")
    svg.text(f.x0 - 44, (f.y0 + f.y1) / 2, ylabel, size=12, anchor="middle",
             rotate=-90)


def _no_data(svg: _Svg, message: str) -> str:
    svg.text(svg.width / 2, svg.height / 2, message, size=14, anchor="middle", fill="#666")
    return svg.markup()


def _place_labels(svg: _Svg, points: list[tuple[float, float, str]], bounds: _Frame,
                  markers: list[tuple[float, float]] = ()) -> None:
    """Label points without covering other labels or markers: try beside the point, then
    step up and down; a label moved away from its point gets a thin leader line."""
    taken = [(x - 5, y - 5, x + 5, y + 5) for x, y in markers]
    size = 11
    for x, y, label in sorted(points, key=lambda p: (p[0], p[1])):
        w = _text_width(label, size)
        placed = None
        for dy in [0] + [d * sign for d in range(13, 13 * 10, 13) for sign in (-1, 1)]:
            for side in (1, -1):
                lx = x + 7 if side > 0 else x - 7 - w
                ly = y + 4 + dy
                box = (lx - 1, ly - size, lx + w + 1, ly + 3)
                inside = box[0] >= bounds.x0 and box[2] <= bounds.x1 + 150 and \
                    box[1] >= bounds.y0 - 4 and box[3] <= bounds.y1
                if inside and not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3]
                                      and b[1] < box[3] for b in taken):
                    placed = (lx, ly, box, side)
                    break
            if placed:
                break
        if placed is None:
            continue  # crowded out: the tables carry every value
        lx, ly, box, side = placed
        taken.append(box)
        if abs(ly - 4 - y) > 6:
            svg.line(x, y, lx if side > 0 else lx + w, ly - 4, stroke="#bbb", width=0.8)
        svg.text(lx, ly, label, size=size, fill="#333", halo=True)


def plot_recall_vs_length(doc: _Doc, qs: str) -> str:
    retrievers = doc.retrievers(qs)
    panel_h, top, width = 330, 64, 1080
    svg = _Svg(width, top + panel_h * max(1, len(retrievers)) + 10,
               f"Recall against mean chunk length ({qs})")
    svg.text(20, 24, f"Recall@{doc.k} and budget recall against mean chunk length — {qs}",
             size=16, weight="bold")
    svg.circle(30, 46, 5, fill=PALETTE[0])
    svg.text(40, 50, f"Recall@{doc.k}", size=12)
    svg.circle(140, 46, 5, fill="#fff", stroke=PALETTE[3])
    svg.text(150, 50, f"budget recall @{_chars(doc.budget)} {doc.unit}", size=12)
    lengths = {s: (doc.chunk_row(qs, s).get("chunks") or {}).get("mean_len")
               for s in doc.strategies(qs)}
    lengths = {s: float(v) for s, v in lengths.items() if v}
    if not lengths or not retrievers:
        return _no_data(svg, "no chunk lengths in the results")
    xlo, xhi = _log_bounds(min(lengths.values()) / 1.15, max(lengths.values()) * 1.15)
    values = [_metric(doc.row(qs, s, r), m).get("value") for s in lengths for r in retrievers
              for m in ("recall_at_k", "budget_recall")]
    yhi, yticks = _pct_axis(values)
    for i, ret in enumerate(retrievers):
        y0 = top + i * panel_h + 24
        f = _Frame(90, y0, width - 190, y0 + panel_h - 80, xlo, xhi, yhi, xlog=True)
        svg.text(f.x0, y0 - 8, ret, size=14, weight="bold")
        _axes(svg, f, _log_ticks(xlo, xhi), yticks, f"mean chunk length ({doc.unit}, log scale)",
              "recall")
        labels, markers = [], []
        for s, length in lengths.items():
            row = doc.row(qs, s, ret)
            r = _metric(row, "recall_at_k").get("value")
            b = _metric(row, "budget_recall").get("value")
            x = f.x(length)
            ys = [f.y(v) for v in (r, b) if v is not None]
            if not ys:
                continue
            if len(ys) == 2:
                svg.line(x, ys[0], x, ys[1], stroke="#999", width=1.2)
            if r is not None:
                svg.circle(x, f.y(r), 4.5, fill=PALETTE[0])
            if b is not None:
                svg.circle(x, f.y(b), 4.5, fill="none", stroke=PALETTE[3])
            labels.append((x, min(ys), s))
            markers += [(x, y) for y in ys]
        _place_labels(svg, labels, f, markers)
    return svg.markup()


def _curve_strategies(doc: _Doc, qs: str) -> list[str]:
    have = [s for s in doc.strategies(qs)
            if any((doc.row(qs, s, r) or {}).get("budget_curve") for r in doc.retrievers(qs))]
    picks = [s for s in CURVE_PICKS if s in have]
    first = doc.retrievers(qs)[0] if doc.retrievers(qs) else None
    rest = sorted((s for s in have if s not in picks),
                  key=lambda s: -(_metric(doc.row(qs, s, first), "budget_recall").get("value") or 0))
    return (picks + rest)[:CURVE_LINES]


def plot_budget_curves(doc: _Doc, qs: str) -> str:
    retrievers = doc.retrievers(qs)
    chosen = _curve_strategies(doc, qs)
    budgets = doc.budgets(qs)
    width, top = 1080, 40
    panel_w = (width - 40) / max(1, len(retrievers))
    legend_rows = math.ceil(len(chosen) / 3) if chosen else 0
    height = top + 330 + 20 * legend_rows + 20
    svg = _Svg(width, height, f"Recall against context budget ({qs})")
    svg.text(20, 24, f"Budget recall against context budget — {qs}", size=16, weight="bold")
    if not chosen or len(budgets) < 2:
        return _no_data(svg, "no budget curves in the results")
    values = [(_curve(doc.row(qs, s, r)).get(b) or {}).get("value")
              for s in chosen for r in retrievers for b in budgets]
    yhi, yticks = _pct_axis(values)
    for i, ret in enumerate(retrievers):
        x0 = 20 + i * panel_w + 70
        f = _Frame(x0, top + 30, x0 + panel_w - 100, top + 270, budgets[0], budgets[-1], yhi)
        svg.text(f.x0, f.y0 - 10, ret, size=14, weight="bold")
        _axes(svg, f, budgets, yticks, f"context budget ({doc.unit})", "budget recall",
              xfmt=lambda v: f"{v / 1000:g}k" if v >= 1000 else f"{v:g}")
        if budgets[0] <= doc.budget <= budgets[-1]:
            svg.line(f.x(doc.budget), f.y0, f.x(doc.budget), f.y1, stroke="#aaa", dash="4 3")
        for j, s in enumerate(chosen):
            curve = _curve(doc.row(qs, s, ret))
            pts = [(f.x(b), f.y(curve[b]["value"])) for b in budgets
                   if (curve.get(b) or {}).get("value") is not None]
            colour = PALETTE[j % len(PALETTE)]
            if len(pts) > 1:
                svg.polyline(pts, stroke=colour)
            for x, y in pts:
                svg.circle(x, y, 3, fill=colour)
    ly = top + 330
    for j, s in enumerate(chosen):
        x = 90 + (j % 3) * 330
        y = ly + (j // 3) * 20
        svg.line(x, y - 4, x + 24, y - 4, stroke=PALETTE[j % len(PALETTE)], width=3)
        svg.text(x + 30, y, s, size=12)
    return svg.markup()


def _curve(row: dict | None) -> dict[int, dict]:
    return {int(b): (m if isinstance(m, dict) else {"value": m})
            for b, m in ((row or {}).get("budget_curve") or {}).items()}


def plot_cut_rate(doc: _Doc, qs: str) -> str:
    rates = [(s, _metric(doc.chunk_row(qs, s), "cut_rate")) for s in doc.strategies(qs)]
    rates = [(s, m) for s, m in rates if m.get("value") is not None]
    rates.sort(key=lambda sm: -sm[1]["value"])
    width, top, bar, gap = 1080, 50, 18, 6
    label_w = max([_text_width(s, 12) for s, _ in rates] + [60]) + 16
    height = top + len(rates) * (bar + gap) + 60
    svg = _Svg(width, max(height, 140), f"Cut rate per strategy ({qs})")
    svg.text(20, 24, f"Cut rate: table and pre blocks with a chunk boundary inside — {qs}",
             size=16, weight="bold")
    if not rates:
        return _no_data(svg, "no cut rates in the results")
    hi, ticks = _pct_axis([m["value"] for _, m in rates])
    f = _Frame(20 + label_w, top, width - 140, top + len(rates) * (bar + gap), 0, hi, 1)
    for v in ticks:
        x = f.x(v)
        svg.line(x, f.y0, x, f.y1, stroke="#e3e3e3")
        svg.text(x, f.y1 + 18, f"{100 * v:.0f}%", size=11, anchor="middle", fill="#444")
    svg.line(f.x0, f.y1, f.x1, f.y1, stroke="#444")
    svg.line(f.x0, f.y0, f.x0, f.y1, stroke="#444")
    svg.text((f.x0 + f.x1) / 2, f.y1 + 38, "share of table/pre blocks cut", size=12,
             anchor="middle")
    for i, (s, m) in enumerate(rates):
        y = top + i * (bar + gap) + gap / 2
        svg.text(f.x0 - 8, y + bar - 5, s, size=12, anchor="end")
        svg.rect(f.x0, y, f.x(m["value"]) - f.x0, bar, fill=PALETTE[0])
        note = f"{100 * m['value']:.1f}%"
        if m.get("cut") is not None and m.get("blocks") is not None:
            note += f" ({m['cut']:,}/{m['blocks']:,})"
        svg.text(f.x(m["value"]) + 6, y + bar - 5, note, size=11, fill="#333")
    return svg.markup()


# --- HTML ---------------------------------------------------------------------------------

CSS = """
body { font-family: %s; color: #222; max-width: 1120px; margin: 2em auto; padding: 0 1em;
       line-height: 1.45; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.6em 0 1.4em; font-size: 0.88em;
        font-variant-numeric: tabular-nums; }
th, td { padding: 3px 8px; border-bottom: 1px solid #e6e6e6; }
th { background: #f4f4f4; text-align: left; }
th.n, td.n { text-align: right; }
td.n, td:first-child { white-space: nowrap; }
ul.facts { color: #444; }
.finding { margin: 0.5em 0; }
.badge { display: inline-block; padding: 0 0.5em; border-radius: 3px; font-size: 0.85em;
         font-weight: bold; color: #fff; }
.holds { background: #2e7d32; } .fails { background: #c62828; } .na { background: #777; }
figure { margin: 1em 0 2em; } figcaption { color: #555; font-size: 0.9em; } svg { max-width: 100%%; height: auto; }
details summary { cursor: pointer; color: #0b5394; }
""" % FONT


def _html_table(header: list[str], rows: list[list[str]], numeric_from: int) -> str:
    head = "".join(f'<th class="n">{_e(h)}</th>' if i >= numeric_from else f"<th>{_e(h)}</th>"
                   for i, h in enumerate(header))
    body = []
    for r in rows:
        cells = "".join(f'<td class="n">{_e(c)}</td>' if i >= numeric_from else f"<td>{_e(c)}</td>"
                        for i, c in enumerate(r))
        body.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _html_findings(items: list[Finding]) -> str:
    out = []
    for f in items:
        cls = {True: "holds", False: "fails", None: "na"}[f.holds]
        out.append(f'<p class="finding"><span class="badge {cls}">{_e(f.verdict)}</span> '
                   f"<strong>{_e(f.name)}</strong> — {_e(f.summary)}</p>")
    return "\n".join(out)


def render_html(results: dict | _Doc) -> str:
    doc = results if isinstance(results, _Doc) else _Doc(results)
    corpus = (doc.raw.get("corpus") or {}).get("name", "")
    title = "chunkeval report" + (f" — {corpus}" if corpus else "")
    parts = ['<!DOCTYPE html>', '<html lang="en">', "<head>", '<meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{_e(title)}</title>", f"<style>{CSS}</style>", "</head>", "<body>",
             f"<h1>{_e(title)}</h1>",
             '<ul class="facts">' + "".join(f"<li>{_e(f)}</li>" for f in _header_facts(doc))
             + "</ul>", "<h2>How to read this</h2>"]
    parts += [f"<p>{_e(p).replace('`', '')}</p>" for p in _reading_note(doc)]
    for qs in doc.seed_query_sets:
        parts += [f"<h2>Findings of the seed, checked on {_e(qs)}</h2>",
                  _html_findings(doc.findings(qs))]
    for qs in doc.query_sets:
        parts += _html_query_set(doc, qs)
    parts += ["</body>", "</html>"]
    return "\n".join(parts) + "\n"


def _html_query_set(doc: _Doc, qs: str) -> list[str]:
    strategies = doc.strategies(qs)
    n = doc.queries(qs)
    out = [f"<h2>{_e(qs)}" + (f" ({_int(n)} queries)" if n else "") + "</h2>"]
    captions = (
        f"Each strategy is a vertical pair at its mean chunk length: filled = Recall@{doc.k}, "
        f"open = budget recall at {_chars(doc.budget)} {doc.unit}. Labels that do not fit "
        "are left out; the tables below have every value.",
        f"Up to {CURVE_LINES} strategies; the dashed line marks the run's budget "
        f"({_chars(doc.budget)} {doc.unit}).",
        "Share of table and pre blocks with a chunk boundary strictly inside them "
        "(cut / blocks).")
    for plot, caption in zip((plot_recall_vs_length, plot_budget_curves, plot_cut_rate), captions):
        out.append(f"<figure>{plot(doc, qs)}<figcaption>{_e(caption)}</figcaption></figure>")
    out.append("<h3>Chunks</h3>")
    out.append(_html_table(CHUNK_HEADER, [[s, doc.family(s)] + _chunk_cells(doc, qs, s)
                                          for s in strategies], 2))
    budgets = doc.budgets(qs)
    for ret in doc.retrievers(qs):
        ref, diffs = _differences(doc, qs, ret)
        rows = [[s] + cells for s in strategies
                if (cells := _retriever_cells(doc, qs, s, ret, diffs))]
        out += [f"<h3>{_e(ret)}</h3>", _html_table(_retriever_header(doc, ref), rows, 1)]
        curve_rows = [[s] + cells for s in strategies
                      if (cells := _curve_cells(doc, qs, s, ret, budgets))]
        if curve_rows:
            out.append(f"<details><summary>Budget recall by context budget ({_e(ret)})</summary>"
                       + _html_table(["strategy"] + [_chars(b) for b in budgets],
                                     curve_rows, 1) + "</details>")
    return out


# --- writing ------------------------------------------------------------------------------

def write_markdown(results: dict, path: str | os.PathLike) -> Path:
    return atomic_write(path, render_markdown(results))


def write_html(results: dict, path: str | os.PathLike) -> Path:
    return atomic_write(path, render_html(results))


def write_reports(results: dict, out_dir: str | os.PathLike) -> dict[str, Path]:
    """Write report.md and report.html into out_dir.

    Both are rendered before either is written, so bad input leaves the old pair intact.
    """
    out = Path(out_dir)
    doc = _Doc(results)
    markdown, page = render_markdown(doc), render_html(doc)
    return {"markdown": atomic_write(out / "report.md", markdown),
            "html": atomic_write(out / "report.html", page)}


def render_comparison_html(rows: list[dict], title: str = "chunkeval: this run against the baseline") -> str:
    """The plugin's rows (verdicts and per-query comparison per case) as one HTML page: per
    case its verdicts, then every query, worst loss first, coverage in points."""
    parts = ['<!DOCTYPE html>', '<html lang="en">', "<head>", '<meta charset="utf-8">',
             f"<title>{_e(title)}</title>", f"<style>{CSS}</style>", "</head>", "<body>",
             f"<h1>{_e(title)}</h1>"]
    for r in sorted(rows, key=lambda r: (r["query_set"], r["strategy"], r["retriever"] or "")):
        if "verdicts" not in r:
            continue
        worst = "regressed" if any(v["status"] == "regressed" for v in r["verdicts"]) else "ok"
        parts.append(f"<h2>{_e(r['strategy'])} · {_e(r['retriever'])} · {_e(r['query_set'])}"
                     f" — {worst}</h2>")
        parts.append("<table><tr><th>metric</th><th>baseline</th><th>now</th><th>diff</th>"
                     "<th>interval</th><th>gated</th><th>verdict</th></tr>")
        for v in r["verdicts"]:
            parts.append(f"<tr><td>{_e(v['metric'])}</td><td>{v['baseline'] * 100:.1f}</td>"
                         f"<td>{v['value'] * 100:.1f}</td><td>{v['diff'] * 100:+.1f}</td>"
                         f"<td>[{v['low'] * 100:+.1f}, {v['high'] * 100:+.1f}]</td>"
                         f"<td>{'yes' if v.get('gated', True) else 'no'}</td>"
                         f"<td>{_e(v['status'])}</td></tr>")
        parts.append("</table>")
        queries = r.get("per_query") or []
        if queries:
            parts.append(f"<details><summary>{len(queries)} queries, worst loss first"
                         "</summary><table><tr><th>query</th><th>gold</th><th>before</th>"
                         "<th>now</th><th>change</th><th>first chunk before</th>"
                         "<th>first chunk now</th></tr>")
            for q in queries:
                parts.append(f"<tr><td>{_e(q['query'])}</td><td>{_e(q['doc'])}</td>"
                             f"<td>{q['before'] * 100:.1f}</td><td>{q['now'] * 100:.1f}</td>"
                             f"<td>{q['change'] * 100:+.1f}</td><td>{_e(q['first_before'] or '-')}"
                             f"</td><td>{_e(q['first_now'] or '-')}</td></tr>")
            parts.append("</table></details>")
    parts += ["</body>", "</html>"]
    return "\n".join(parts) + "\n"
