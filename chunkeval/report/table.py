"""The terminal table: one row per strategy, a column group per retriever, percent ±1 SE."""

from __future__ import annotations

import shutil
import textwrap
import unicodedata
from dataclasses import dataclass

from ..metrics import COMPACT, PAGE_METRICS
from ..results import Results
from .view import View, chars, columns, count, failure_lines, integer, paged, pct, stat


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


def _tables(doc: View, qs: str, strategies: list[str], retrievers: list[str],
            width: int) -> list[str]:
    """The rows of `strategies` under the column groups of `retrievers`; groups that do not
    fit in `width` columns move to another table below."""
    rows = [doc.chunk_row(qs, s) for s in strategies]
    left = [_Col("strategy", list(strategies), "<"),
            _Col("cut", [pct(r.cut_rate.value if r else None, se=False) for r in rows]),
            _Col("chunks", [integer(r.chunks.count if r else None) for r in rows]),
            _Col("mean", [integer(r.chunks.mean_len if r else None) for r in rows])]
    groups = []
    for ret in retrievers:
        rr = [doc.row(qs, s, ret) for s in strategies]
        groups.append((ret, [  # the headline metrics with their standard errors
            _Col(m.short_title(doc.k, doc.budget),
                 [(pct if m.rate else count)(stat(r, m.name), se=m.headline) for r in rr])
            for m in columns(doc, qs, COMPACT)]))
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
    out = []
    for part in parts or [[]]:
        out.extend(_render([("", left)] + part))
        out.append("")
    return out


def format_table(results: Results, *, query_set: str | None = None,
                 width: int | None = None) -> str:
    """A plain-text table per query set, one row per strategy; percent with ±1 SE.

    Retriever groups that do not fit in `width` columns (default: the terminal's) move to
    a second table below, so no line wraps.
    """
    doc = View(results)
    width = width or _terminal_width()
    out: list[str] = []
    for qs in doc.check_query_set(query_set):
        strategies = doc.strategies(qs)
        n = doc.queries(qs)
        out.append(f"{qs}" + (f" ({n:,} queries)" if n is not None else "")
                   + f"  k={doc.k}  budget {chars(doc.budget)} {doc.unit}  [% ±SE]")
        # A retriever evaluated on some strategies only (`use` on three) gets a table of
        # those rows, rather than a column of dashes beside every other strategy.
        done = {ret: tuple(s for s in strategies if doc.row(qs, s, ret) is not None)
                for ret in doc.retrievers(qs)}
        evaluated = {s for d in done.values() for s in d}
        by_evaluated: dict[tuple[str, ...], list[str]] = {}
        for ret, d in done.items():  # a strategy no retriever scored stays a row of dashes
            by_evaluated.setdefault(tuple(strategies) if set(d) == evaluated else d,
                                    []).append(ret)
        for shown, retrievers in by_evaluated.items():
            if len(shown) < len(strategies):
                out.append(f"{', '.join(retrievers)}: evaluated on {len(shown)} of "
                           f"{len(evaluated)} strategies; the others are left out of its table")
            out.extend(_tables(doc, qs, list(shown), retrievers, width))
    pages = any(paged(doc, q) for q in doc.check_query_set(query_set))
    legend = "; ".join(
        [f"{m.short_title(doc.k, doc.budget)} = {m.title(doc.k)}"
         + (f" at {chars(doc.budget)} {doc.unit}" if m.in_budget else "")
         for m in COMPACT if pages or m.name not in PAGE_METRICS]
        + ["cut = cut rate of table/pre blocks", f"mean = mean chunk length ({doc.unit})."])
    out.extend(textwrap.wrap(legend, width=max(40, width)))
    out += [f"not scored: {line}" for line in failure_lines(doc)]
    return "\n".join(out)

