"""The seed experiment's findings, checked again on a results document.

Each finding is a claim the seed made about its own corpus. Here it is measured on ours
and reported as it comes out: holds, does not hold (with the numbers), or cannot be
measured because a strategy it needs was not run. Nothing is tuned to agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import UnknownName
from ..registry import Registry, current
from ..results import Result, Results
from ..stats import RESAMPLES, SEED, paired_bootstrap

BM25 = "bm25"
SEED_BUDGET = 2000
CUT_RATIO = 3.0
DOUBLE_RANGE = (1.8, 2.2)


@dataclass(frozen=True)
class Finding:
    name: str
    holds: bool | None  # None: not measurable on this document (a strategy is missing)
    summary: str
    details: dict[str, Any] = field(default_factory=dict)
    # holds in the means, but the paired interval includes 0: not shown beyond noise
    within_noise: bool = False

    @property
    def verdict(self) -> str:
        if self.holds and self.within_noise:
            return "within noise"
        return {True: "holds", False: "does not hold", None: "not measurable"}[self.holds]


def findings(results: Results, query_set: str | None = None) -> list[Finding]:
    """Check the seed's four findings on one query set (default: the first one)."""
    names, checks = results.query_set_names, current(FINDINGS)  # the run's
    if query_set is None:
        if not names:
            return [Finding(name, None, "not measurable: the document has no results")
                    for name in checks.names()]
        query_set = names[0]
    elif query_set not in names:
        raise UnknownName("query set", query_set, names)
    view = _View(results, query_set)
    return [checks.get(name)(view, name) for name in checks.names()]


class _View:
    """One query set's rows, looked up by (strategy, retriever)."""

    def __init__(self, results: Results, query_set: str):
        self.query_set = query_set
        self.settings = results.settings
        self.rows: dict[tuple[str, str], Result] = {}
        for row in results.results:
            if row.query_set == query_set:
                self.rows.setdefault((row.strategy, row.retriever), row)

    def row(self, strategy: str, retriever: str | None = None) -> Result | None:
        if retriever is not None:
            return self.rows.get((strategy, retriever))
        # Chunk statistics do not depend on the retriever: prefer BM25's row, take any.
        found = [r for (s, _), r in self.rows.items() if s == strategy]
        return self.rows.get((strategy, BM25)) or (found[0] if found else None)

    def missing(self, strategies: tuple[str, ...], retriever: str | None = None) -> str | None:
        gone = [s for s in strategies if self.row(s, retriever) is None]
        if not gone:
            return None
        where = f"{self.query_set}" + (f", {retriever}" if retriever else "")
        return f"not measurable: {', '.join(gone)} missing from the results ({where})"


def _metric(row: Result | None, name: str) -> float | None:
    return None if row is None else row.value(name)


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def paired_difference(a: dict[str, float], b: dict[str, float], *, resamples: int = RESAMPLES,
                      seed: int = SEED) -> dict | None:
    """Mean of a - b over the queries both have (by id), with a paired bootstrap 95% interval.

    Pairing by query removes the query-to-query spread both methods share, so the
    interval is much narrower than the two standard errors suggest.
    """
    ids = [i for i in a if i in b]
    if not ids:
        return None
    d = paired_bootstrap([a[i] for i in ids], [b[i] for i in ids], resamples=resamples, seed=seed)
    return {"diff": d.diff, "lo": d.low, "hi": d.high, "n": len(ids)}


def describe_interval(d: dict) -> str:
    return (f"{100 * d['diff']:+.1f} points (paired 95% CI {100 * d['lo']:+.1f} to "
            f"{100 * d['hi']:+.1f}, {d['n']} queries)")


# --- the four findings ----------------------------------------------------------------

# name -> its check: check(view, name) -> Finding, in the order the seed made its claims
FINDINGS: Registry[Callable[[_View, str], Finding]] = Registry("finding")


def _finding(name: str, needs: tuple[str, ...], retriever: str | None = None):
    """Registers `check(view, name, *needs)` as the finding `name`. It is called only when
    every strategy it needs has a row (on `retriever` where one is named); else the finding
    is not measurable, and says which are missing."""
    def registered(check):
        def measured(view: _View, name: str) -> Finding:
            gone = view.missing(needs, retriever)
            return Finding(name, None, gone) if gone else check(view, name, *needs)
        FINDINGS.register(measured, name=name, builtin=True)
        return check
    return registered


@_finding("budget-reverses-order", needs=("fixed-200", "fixed-1600"), retriever=BM25)
def budget_reverses_order(view: _View, name: str, small: str, large: str) -> Finding:
    k = view.settings.k
    ladder = [s for s in ("fixed-200", "fixed-400", "fixed-800", "fixed-1600")
              if view.row(s, BM25) is not None]
    recall = {s: _metric(view.row(s, BM25), "recall_at_k") for s in ladder}
    budget, under = _budget_recall(view, ladder)
    if None in (recall[small], recall[large], under[small], under[large]):
        return Finding(name, None, f"not measurable: Recall@{k} or budget recall missing for "
                                   f"{small} or {large} ({view.query_set}, bm25)")
    rises = recall[large] > recall[small]
    reverses = under[small] > under[large]
    steps = " → ".join(_pct(recall[s]) for s in ladder)
    parts = [f"BM25 on {view.query_set}: Recall@{k} {small} {_pct(recall[small])} "
             f"{'<' if rises else '≥'} {large} {_pct(recall[large])} ({steps} over "
             f"{', '.join(ladder)}); budget recall at {budget:,} chars {small} "
             f"{_pct(under[small])} {'>' if reverses else '≤'} {large} {_pct(under[large])}."]
    details: dict[str, Any] = {"query_set": view.query_set, "retriever": BM25, "k": k,
                               "budget": budget, "recall_at_k": recall, "budget_recall": under,
                               "recall_rises": rises, "budget_reverses": reverses}
    crosses = False
    if budget == view.settings.budget:
        d = paired_difference(view.row(small, BM25).values("budget_coverage"),
                              view.row(large, BM25).values("budget_coverage"),
                              seed=view.settings.seed)
        if d:
            details["budget_difference"] = d
            crosses = d["lo"] <= 0 <= d["hi"]
            parts.append(f"{small} − {large} under the budget: {describe_interval(d)}"
                         + ("; the interval includes 0, so the reversal is within noise."
                            if crosses else "."))
    if rises and reverses and crosses:
        parts.append("The means reverse, as in the seed (37.3% vs 18.0% there), but within "
                     "noise: this run does not show the reversal.")
    elif rises and reverses:
        parts.append("The order reverses, as in the seed (37.3% vs 18.0% there).")
    elif not rises:
        parts.append(f"Does not hold: Recall@{k} does not rise from {small} to {large}.")
    else:
        parts.append(f"Does not hold: under the budget {small} does not beat {large} "
                     "(the seed had 37.3% vs 18.0%).")
    return Finding(name, rises and reverses, " ".join(parts), details,
                   within_noise=rises and reverses and crosses)


def _budget_recall(view: _View, strategies: list[str]) -> tuple[int, dict[str, float | None]]:
    """Budget recall at the seed's 2,000 chars: the run's own budget when it is 2,000, else
    the budget curve's point; failing both, the run's budget."""
    rows = {s: view.row(s, BM25) for s in strategies}
    budget = view.settings.budget
    if budget != SEED_BUDGET and all(SEED_BUDGET in r.budget_curve for r in rows.values()):
        return SEED_BUDGET, {s: r.budget_curve[SEED_BUDGET].value for s, r in rows.items()}
    return budget, {s: _metric(r, "budget_recall") for s, r in rows.items()}


@_finding("structure-cuts-fewer", needs=("fixed-400", "structure-800"))
def structure_cuts_fewer(view: _View, name: str, fixed: str, structure: str) -> Finding:
    cut = {s: view.row(s).cut_rate for s in (fixed, structure)}
    rate = {s: c.value for s, c in cut.items()}
    if cut[fixed].blocks == 0:
        return Finding(name, None, "not measurable: the corpus has no table or pre blocks to cut",
                       {"cut_rate": rate})

    def said(s: str) -> str:
        c = cut[s]
        return f"{s} {_pct(rate[s])} ({c.cut} of {c.blocks} table/pre blocks)"

    ratio = rate[fixed] / rate[structure] if rate[structure] > 0 else (
        float("inf") if rate[fixed] > 0 else None)
    holds = ratio is not None and ratio >= CUT_RATIO
    times = "no cuts by either" if ratio is None else (
        "structure-800 cuts none" if ratio == float("inf") else f"{ratio:.1f}×")
    summary = (f"Cut rate {said(fixed)} vs {said(structure)}: {times}. "
               + ("Holds" if holds else f"Does not hold (needs at least {CUT_RATIO:g}×)")
               + "; the seed had 71% vs 7%.")
    return Finding(name, holds, summary,
                   {"query_set": view.query_set, "cut_rate": rate, "ratio": ratio,
                    "threshold": CUT_RATIO})


@_finding("overlap-doubles-chunks", needs=("fixed-400", "fixed-400-ov200"))
def overlap_doubles_chunks(view: _View, name: str, plain: str, overlapped: str) -> Finding:
    count = {s: view.row(s).chunks.count for s in (plain, overlapped)}
    if not count[plain]:
        return Finding(name, None, f"not measurable: chunk counts missing or zero ({view.query_set})",
                       {"count": count})
    ratio = count[overlapped] / count[plain]
    lo, hi = DOUBLE_RANGE
    holds = lo <= ratio <= hi
    summary = (f"{overlapped} has {count[overlapped]:,} chunks, {plain} {count[plain]:,}: "
               f"{ratio:.2f}×. " + ("Holds: 50% overlap about doubles the chunks."
                                   if holds else f"Does not hold (expected {lo}–{hi}×)."))
    return Finding(name, holds, summary,
                   {"query_set": view.query_set, "count": count, "ratio": ratio,
                    "range": list(DOUBLE_RANGE)})


@_finding("recursive-zero-overlap", needs=("recursive-400-ov40",))
def recursive_zero_overlap(view: _View, name: str, strategy: str) -> Finding:
    ov = view.row(strategy).chunks.overlap
    boundaries, zero = ov.boundaries, ov.zero
    if not boundaries:
        return Finding(name, None, f"not measurable: {strategy} has no chunk boundaries "
                                   f"recorded ({view.query_set})", {"overlap": ov.to_json()})
    share = zero / boundaries
    holds = share > 0.5
    extra = f"; mean overlap {ov.mean:.1f}, max {ov.max} chars"
    summary = (f"{strategy}: {zero:,} of {boundaries:,} boundaries ({_pct(share)}) have no "
               f"realised overlap{extra} (asked for 40). "
               + ("Holds: the splitter seldom overlaps." if holds
                  else "Does not hold: most boundaries do overlap.")
               + " The seed had 71 of 84 on one article.")
    return Finding(name, holds, summary,
                   {"query_set": view.query_set, "overlap": ov.to_json(), "zero_share": share})

