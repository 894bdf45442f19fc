"""Per-query comparison of a result with its baseline entry: which queries lost, and what
was retrieved first before and now.

A baseline entry holds its per-query series in the query set's order (the query set's
fingerprint guarantees the order), so rows pair by position.
"""

from __future__ import annotations

from ..model import Block, Corpus, Document, QuerySet
from ..results import Result, span_of
from .entry import BaselineEntry

SHOWN = 5


def per_query(result: Result, entry: BaselineEntry, query_set: QuerySet) -> list[dict]:
    """One row a query: text, gold document, coverage before and now, their change, and the
    span ("doc:start:end") of the chunk that held the most gold before and now (for a
    baseline recorded before that was kept: the first retrieved chunk's before, and
    `best_is_first`). Worst loss first."""
    old = entry.per_query
    before_best, kept = entry.best
    rows = []
    for i, (q, now) in enumerate(zip(query_set.queries, result.per_query)):
        before, after = float(old["coverage"][i]), float(now.coverage)
        rows.append({"id": q.id, "query": q.text, "doc": q.doc_id,
                     "before": round(before, 4), "now": round(after, 4),
                     "change": round(after - before, 4),
                     "budget_before": float(old["budget_coverage"][i]),
                     "budget_now": round(float(now.budget_coverage), 4),
                     "best_before": before_best[i], "best_now": now.best_span,
                     "first_now": now.first} | ({} if kept else {"best_is_first": True}))
    rows.sort(key=lambda row: (row["change"], row["budget_now"] - row["budget_before"]))
    return rows


def abbreviate(text: str, width: int = 48) -> str:
    one = " ".join(text.split())
    return one if len(one) <= width else one[:width - 1] + "…"


def chunk_text(view: Corpus, span: str | None, width: int = 48) -> str:
    """A chunk span in the query set's view: document, range and a short excerpt ("none"
    when no chunk held gold)."""
    if not span:
        return "none of the top k held any of the gold"
    doc, start, end = span_of(span)
    try:
        text = view[doc].text[start:end]
    except KeyError:
        return f"{span} (not in the corpus)"
    return f"{doc} [{start}:{end}] {abbreviate(text, width)!r}"


def describe(rows: list[dict], view: Corpus, n: int = SHOWN) -> str:
    """The `n` queries that lost most, in points, for a failure message: for each, the chunk
    that held the most gold before and the one that holds the most now."""
    lost = [r for r in rows if r["change"] < 0][:n]
    if not lost:
        return "no single query lost coverage"
    lines = [f"the {len(lost)} queries that lost most (coverage at k, in points):"]
    for r in lost:
        lines.append(f"  {abbreviate(r['query'], 60)!r} (gold {r['doc']}): "
                     f"{r['before'] * 100:.1f} -> {r['now'] * 100:.1f} ({r['change'] * 100:+.1f})")
        before = "first chunk before" if r.get("best_is_first") else "most gold before"
        lines.append(f"      {before}: {chunk_text(view, r['best_before'])}")
        same = r["best_now"] is not None and r["best_now"] == r["best_before"]
        lines.append(f"      most gold now:    {chunk_text(view, r['best_now'])}"
                     + (" (the same chunk: the rest of the top k changed)" if same else ""))
    return "\n".join(lines)


def describe_cuts(cuts: list[tuple[Document, Block, list[int]]], n: int = SHOWN) -> str:
    """The cut blocks for a failure message, as a recall failure names its queries: the
    document, the block (kind, offsets, its first words) and the chunk boundaries inside."""
    if not cuts:
        return "no table or pre block is cut"
    docs = sorted({doc.id for doc, _, _ in cuts})
    lines = [f"{len(cuts)} cut block(s) in {len(docs)} document(s)"
             + (f"; the first {n}" if len(cuts) > n else "")
             + " (document, block [start:end], chunk boundaries inside it):"]
    for doc, block, inside in cuts[:n]:
        at = ", ".join(map(str, inside[:5])) + (" …" if len(inside) > 5 else "")
        lines.append(f"  {doc.id} {block.kind} [{block.start}:{block.end}] "
                     f"{abbreviate(doc.block_text(block), 40)!r}: cut at {at}")
    if len(docs) > 1:
        shown = ", ".join(docs[:10]) + (f" and {len(docs) - 10} more" if len(docs) > 10 else "")
        lines.append(f"  documents with cut blocks: {shown}")
    return "\n".join(lines)
