"""report.html: the whole report as one self-contained page (inline styles, SVG plots)."""

from __future__ import annotations

from importlib import resources
from string import Template

from .findings import Finding
from .svg import CURVE_LINES, FONT, declare_language, escape, plot_budget_curves, plot_cut_rate, plot_recall_vs_length
from .view import (CHUNK_HEADER, EVERY_QUERY, NOT_SCORED, View, chars, chunk_cells, corpus_language,
                   curve_cells, failure_lines, header_facts, integer, reading_note, retriever_cells,
                   retriever_header)


def asset(name: str) -> str:
    """A file of report/assets/: the pages' style, skeletons and script, kept as package data."""
    return (resources.files(__package__) / "assets" / name).read_text(encoding="utf-8")


# The report's style; the queries page puts its own after it.
CSS = Template(asset("report.css")).substitute(font=FONT)


def _html_table(header: list[str], rows: list[list[str]], numeric_from: int) -> str:
    head = "".join(f'<th class="n">{escape(h)}</th>' if i >= numeric_from else f"<th>{escape(h)}</th>"
                   for i, h in enumerate(header))
    body = []
    for r in rows:
        cells = "".join(f'<td class="n">{escape(c)}</td>' if i >= numeric_from else f"<td>{escape(c)}</td>"
                        for i, c in enumerate(r))
        body.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _html_findings(items: list[Finding]) -> str:
    out = []
    for f in items:
        cls = "noise" if f.within_noise else {True: "holds", False: "fails", None: "na"}[f.holds]
        out.append(f'<p class="finding"><span class="badge {cls}">{escape(f.verdict)}</span> '
                   f"<strong>{escape(f.name)}</strong> — {escape(f.summary)}</p>")
    return "\n".join(out)


def render_html(doc: View) -> str:
    corpus = doc.results.corpus.name
    title = "chunkeval report" + (f" — {corpus}" if corpus else "")
    parts = ['<!DOCTYPE html>', '<html lang="en">', "<head>", '<meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{escape(title)}</title>", f"<style>{CSS}</style>", "</head>", "<body>",
             f"<h1>{escape(title)}</h1>",
             '<ul class="facts">' + "".join(f"<li>{escape(f)}</li>" for f in header_facts(doc))
             + "</ul>"]
    if failure_lines(doc):
        parts += [f"<h2>{NOT_SCORED}</h2>", "<ul>" + "".join(
            f"<li>{escape(line)}</li>" for line in failure_lines(doc)) + "</ul>"]
    if doc.queries_page:
        parts += ["<h2>Every query</h2>", f'<p><a href="{escape(doc.queries_page)}">'
                  f"{escape(doc.queries_page)}</a>: {escape(EVERY_QUERY)}.</p>"]
    parts += ["<h2>How to read this</h2>"]
    parts += [f"<p>{escape(p).replace('`', '')}</p>" for p in reading_note(doc)]
    for qs in doc.seed_query_sets:
        parts += [f"<h2>Findings of the seed, checked on {escape(qs)}</h2>",
                  _html_findings(doc.findings(qs))]
    for qs in doc.query_sets:
        parts += _html_query_set(doc, qs)
    parts += ["</body>", "</html>"]
    return declare_language("\n".join(parts) + "\n", corpus_language(corpus))


def _html_query_set(doc: View, qs: str) -> list[str]:
    strategies = doc.strategies(qs)
    n = doc.queries(qs)
    power = doc.power[qs]
    out = [f"<h2>{escape(qs)}" + (f" ({integer(n)} queries)" if n else "")
           + ("" if power.gates else " — not gated") + "</h2>"]
    if not power.gates:
        out.append(f'<p class="not-gated"><strong>Not gated.</strong> '
                   f"{escape(power.reason())}.</p>")
    captions = (
        f"Each strategy is a vertical pair at its mean chunk length: filled = Recall@{doc.k}, "
        f"open = budget recall at {chars(doc.budget)} {doc.unit}. Labels that do not fit "
        "are left out; the tables below have every value.",
        f"Up to {CURVE_LINES} strategies; the dashed line marks the run's budget "
        f"({chars(doc.budget)} {doc.unit}).",
        "Share of table and pre blocks with a chunk boundary strictly inside them "
        "(cut / blocks).")
    for plot, caption in zip((plot_recall_vs_length, plot_budget_curves, plot_cut_rate), captions):
        out.append(f"<figure>{plot(doc, qs)}<figcaption>{escape(caption)}</figcaption></figure>")
    out.append("<h3>Chunks</h3>")
    out.append(_html_table(CHUNK_HEADER, [[s, doc.family(s)] + chunk_cells(doc, qs, s)
                                          for s in strategies], 2))
    budgets = doc.budgets(qs)
    for ret in doc.retrievers(qs):
        ref, diffs = doc.differences(qs, ret)
        rows = [[s] + cells for s in strategies
                if (cells := retriever_cells(doc, qs, s, ret, diffs))]
        out += [f"<h3>{escape(ret)}</h3>", _html_table(retriever_header(doc, ref, qs), rows, 1)]
        curve_rows = [[s] + cells for s in strategies
                      if (cells := curve_cells(doc, qs, s, ret, budgets))]
        if curve_rows:
            out.append(f"<details><summary>Budget recall by context budget ({escape(ret)})</summary>"
                       + _html_table(["strategy"] + [chars(b) for b in budgets],
                                     curve_rows, 1) + "</details>")
    return out

