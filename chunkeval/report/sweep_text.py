"""What a sweep says: the lines a terminal prints and sweep.md, from the Sweep object (sweep.html
is sweep_page.py's, from sweep.json). The sweep decides; this module only words its verdicts."""

from __future__ import annotations

from ..sweep import Sweep, Verdict, config_lines
from .markdown import md_text as md
from .sweep_page import HALVING_NOTE, pts, rung_dropped, unclear, versus_best


def against_line(v: Verdict) -> str | None:
    a = v.against
    if not a or not v.recommendation:
        return None
    return (f"{v.recommendation['spec']} vs {a['spec']}: {pts(a['diff'])} points "
            f"[{pts(a['low'])}, {pts(a['high'])}]")


def unclear_line(v: Verdict) -> str:
    return unclear(v.to_json())


def _listed(names: list[str], most: int = 12) -> str:
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most
                                      else "")


def summary_lines(sweep: Sweep) -> list[str]:
    """The verdicts as a terminal says them, one block per retriever and set."""
    out = [f"left out: {why}" for why in sweep.refused.values()]
    for v in sweep.verdicts:
        rec = v.recommendation
        held = (f", chosen on {v.chosen_on} queries, judged on {v.judged_on} held out"
                if v.chosen_on != v.judged_on else f", {v.queries} queries")
        out.append(f"{v.retriever} on {v.query_set} ({v.metric}{held}):")
        out.append(f"  best {v.best} {v.best_value * 100:.1f}%: {v.word} (against "
                   f"{len(v.comparisons)} others, margin {v.margin * 100:g} points, "
                   f"family-wise at alpha {v.alpha:g})")
        if v.as_good:
            out.append(f"  as good as the best: {_listed(v.as_good)}")
        if rec is None:
            out.append(f"  no recommendation: {unclear_line(v)}")
            continue
        out.append(f"  recommended: {rec['spec']} = {rec['strategy']} ({rec['chunks']:,} "
                   f"chunks, {rec['handed']:,.0f} handed per query, cut rate "
                   f"{rec['cut_rate'] * 100:.1f}%): {versus_best(rec, v.margin)}")
        if (line := against_line(v)):
            out.append(f"  {line}")
    return out




def halving_lines(sweep: Sweep) -> list[str]:
    """Which configurations successive halving dropped, at which rung, on how many queries,
    and why (each one's bound against the rung's leader)."""
    if not sweep.rungs:
        return []
    out = [HALVING_NOTE, "",
           "| query set | rung | queries | evaluated | kept | dropped |",
           "|---|---:|---:|---:|---:|---|"]
    for i, r in enumerate(sweep.rungs, 1):
        out.append(f"| {md(r['query_set'])} | {i} | {r['queries']} | {r['evaluated']} | "
                   f"{r['kept']} | "
                   f"{md(', '.join(rung_dropped(r))) or 'none'} |")
    return out + [""]


def markdown(sweep: Sweep, adopt: list[str] | None = None) -> str:
    """sweep.md: every name from outside (corpus folder, query set, retriever, strategy)
    escaped as the job summary escapes it, so none becomes an element, a link or a cell."""
    s = sweep.settings
    out = [f"## chunkeval sweep: {md(s['strategy'])} on {md(sweep.corpus['name'])}", "",
           f"{len(sweep.points)} configurations (sizes {s['sizes'][0]}–{s['sizes'][-1]}, "
           f"overlaps {', '.join(f'{o:g}' for o in s['overlaps'])}), retrievers "
           f"{md(', '.join(s['retrievers']))}, top {s['k']}, budget {s['budget']}, metric "
           f"{md(s['metric'])}, margin {s['margin'] * 100:g} points"
           + (f", holdout {s['holdout']:g}" if s["holdout"] else "") + ".",
           "", *[f"Left out: {md(why)}.\n" for why in sweep.refused.values()]]
    out += halving_lines(sweep)
    for v in sweep.verdicts:
        rec = v.recommendation
        out += [f"### {md(v.retriever)} on {md(v.query_set)}, {v.metric}", "",
                f"- best: {md(v.best)} {v.best_value * 100:.1f}% — **{v.word}** (against "
                f"{len(v.comparisons)} others, margin {v.margin * 100:g} points, one-sided "
                f"bounds family-wise at alpha {v.alpha:g}; judged on {v.judged_on} queries)",
                f"- as good as the best: {md(', '.join(v.as_good)) or 'none'}"]
        if rec is None:
            out.append(f"- **no recommendation**: {md(unclear_line(v))}")
        else:
            out.append(f"- **recommended: {md(rec['spec'])}** — {rec['chunks']:,} chunks, "
                       f"{rec['handed']:,.0f} handed per query, cut rate "
                       f"{rec['cut_rate'] * 100:.1f}%; {versus_best(rec, v.margin)}")
        if (line := against_line(v)):
            out.append(f"- {md(line)}")
        out.append("")
        out += ["| configuration | chunks | handed | cut | mean | vs best | family-wise bounds "
                "| as good |", "|---|---:|---:|---:|---:|---:|---|---|"]
        rows = {r.point.name: r for r in sweep.rows[(v.retriever, v.query_set)]}
        best = rows[v.best]
        out.append(f"| {md(v.best)} (best) | {best.chunks:,} | {best.cost(v.metric)[1]:,.0f} | "
                   f"{best.cut * 100:.1f}% | {v.best_value * 100:.1f}% | | | |")
        for c in sorted(v.comparisons, key=lambda c: -c["mean"]):
            r = rows[c["strategy"]]
            out.append(f"| {md(c['strategy'])} | {r.chunks:,} | {r.cost(v.metric)[1]:,.0f} | "
                       f"{r.cut * 100:.1f}% | {c['mean'] * 100:.1f}% | {pts(c['diff'])} | "
                       f"[{pts(c['low'])}, {pts(c['high'])}] | "
                       f"{'**yes**' if c['as_good'] else 'no'} |")
        out.append("")
    lines = config_lines(sweep) if adopt is None else adopt
    if lines:
        out += ["```toml", *lines, "```", ""]
    return "\n".join(out)
