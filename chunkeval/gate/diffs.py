"""Per-query comparison of a result with its baseline entry: which queries lost, and what
was retrieved first before and now.

A baseline entry holds its per-query series in the query set's order (the query set's
fingerprint guarantees the order), so rows pair by position.
"""

from __future__ import annotations

from ..model import Corpus, QuerySet
from ..results import BaselineEntry, Result

SHOWN = 5


def _span(span: str | None) -> tuple[str, int, int] | None:
    if not span:
        return None
    doc, start, end = span.rsplit(":", 2)
    return doc, int(start), int(end)


def per_query(result: Result, entry: BaselineEntry, query_set: QuerySet) -> list[dict]:
    """One row a query: text, gold document, coverage before and now, their change, and the
    first retrieved chunk's span ("doc:start:end") before and now. Worst loss first."""
    old = entry.per_query
    before_first = entry.first
    rows = []
    for i, (q, now) in enumerate(zip(query_set.queries, result.per_query)):
        before, after = float(old["coverage"][i]), float(now.coverage)
        rows.append({"id": q.id, "query": q.text, "doc": q.doc_id,
                     "before": round(before, 4), "now": round(after, 4),
                     "change": round(after - before, 4),
                     "budget_before": float(old["budget_coverage"][i]),
                     "budget_now": round(float(now.budget_coverage), 4),
                     "first_before": before_first[i], "first_now": now.first})
    rows.sort(key=lambda row: (row["change"], row["budget_now"] - row["budget_before"]))
    return rows


def abbreviate(text: str, width: int = 48) -> str:
    one = " ".join(text.split())
    return one if len(one) <= width else one[:width - 1] + "…"


def chunk_text(view: Corpus, span: str | None, width: int = 48) -> str:
    """The abbreviated text of a chunk span in the query set's view ("-" when none)."""
    where = _span(span)
    if where is None:
        return "-"
    doc, start, end = where
    try:
        text = view[doc].text[start:end]
    except KeyError:
        return f"{span} (not in the corpus)"
    return f"{doc}:{start}: {abbreviate(text, width)!r}"


def describe(rows: list[dict], view: Corpus, n: int = SHOWN) -> str:
    """The `n` queries that lost most, in points, for a failure message."""
    lost = [r for r in rows if r["change"] < 0][:n]
    if not lost:
        return "no single query lost coverage"
    lines = [f"the {len(lost)} queries that lost most (coverage at k, in points):"]
    for r in lost:
        lines.append(f"  {abbreviate(r['query'], 60)!r} (gold {r['doc']}): "
                     f"{r['before'] * 100:.1f} -> {r['now'] * 100:.1f} ({r['change'] * 100:+.1f})")
        lines.append(f"      first chunk before: {chunk_text(view, r['first_before'])}")
        lines.append(f"      first chunk now:    {chunk_text(view, r['first_now'])}")
    return "\n".join(lines)
