"""report.md: the whole report as Markdown tables, for a repository or a review."""

from __future__ import annotations

from ..markdown_text import md_text
from .findings import Finding
from .view import (CHUNK_HEADER, EVERY_QUERY, NOT_SCORED, View, chars, chunk_cells, curve_cells,
                   failure_lines, header_facts, integer, reading_note, retriever_cells,
                   retriever_header)


_md = md_text


def _md_table(header: list[str], rows: list[list[str]], align: list[str]) -> list[str]:
    marks = {"<": ":--", ">": "--:"}
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(marks[a] for a in align) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines + [""]



def _finding_lines(items: list[Finding]) -> list[str]:
    return [f"- **{_md(f.name)}** — {f.verdict}. {_md(f.summary)}" for f in items]


def render_markdown(doc: View) -> str:
    corpus = doc.results.corpus.name
    out = [f"# chunkeval report{' — ' + _md(corpus) if corpus else ''}", ""]
    out += [f"- {_md(f)}" for f in header_facts(doc)] + [""]
    if failure_lines(doc):
        out += [f"## {NOT_SCORED}", ""] + [f"- {_md(line)}" for line in failure_lines(doc)] + [""]
    if doc.queries_page:
        out += ["## Every query", "", f"[{doc.queries_page}]({doc.queries_page}): "
                f"{EVERY_QUERY}.", ""]
    out += ["## How to read this", ""]
    for para in reading_note(doc):
        out += [para, ""]
    for qs in doc.seed_query_sets:
        out += [f"## Findings of the seed, checked on {_md(qs)}", ""]
        out += _finding_lines(doc.findings(qs)) + [""]
    for qs in doc.query_sets:
        out += _md_query_set(doc, qs)
    return "\n".join(out).rstrip() + "\n"



def _md_query_set(doc: View, qs: str) -> list[str]:
    strategies = doc.strategies(qs)
    out = [f"## {_md(qs)}" + (f" ({integer(doc.queries(qs))} queries)" if doc.queries(qs) else "")
           + ("" if doc.power[qs].gates else " — not gated"), ""]
    if not doc.power[qs].gates:
        out += [f"**Not gated.** {_md(doc.power[qs].reason())}.", ""]
    out += ["### Chunks", ""]
    out += _md_table(CHUNK_HEADER,
                     [[_md(s), _md(doc.family(s))] + chunk_cells(doc, qs, s) for s in strategies],
                     ["<", "<"] + [">"] * 7)
    budgets = doc.budgets(qs)
    for ret in doc.retrievers(qs):
        ref, diffs = doc.differences(qs, ret)
        rows = [[_md(s)] + cells for s in strategies
                if (cells := retriever_cells(doc, qs, s, ret, diffs))]
        out += [f"### {_md(ret)}", ""]
        header = retriever_header(doc, ref, qs)
        out += _md_table([_md(h) for h in header], rows, ["<"] + [">"] * (len(header) - 1))
        curve_rows = [[_md(s)] + cells for s in strategies
                      if (cells := curve_cells(doc, qs, s, ret, budgets))]
        if curve_rows:
            out += [f"Budget recall by context budget ({_md(ret)}, {doc.unit}):", ""]
            out += _md_table(["strategy"] + [chars(b) for b in budgets], curve_rows,
                             ["<"] + [">"] * len(budgets))
    return out

