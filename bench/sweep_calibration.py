"""Is the sweep's recommendation calibrated? Split each query set in half, many times: choose on
one half (the sweep's rule, judged on that half alone), check on the other half: is the
recommendation's mean there within the margin of that half's best? The same splits for the
rule before (the cheapest configuration Holm-Bonferroni cannot separate from the best).

Reads sweep.json files (every configuration's per-query series is in them), so the grid is
evaluated once per corpus:

    chunkeval sweep --strategy fixed --size 100:1600:100 --overlap 0,0.1,0.2 \\
        --retrievers bm25,lsa --out out
    python bench/sweep_calibration.py out/sweep.json --seeds 20 \\
        --out bench/results/sweep-calibration.md
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from chunkeval.stats import holm, paired_test
from chunkeval.sweep import METRICS, MIN_QUESTIONS, compare, recommend


def old_rule(series: dict, costs: dict, part: np.ndarray, alpha: float) -> str:
    """The rule before: the best by its mean on `part`; the cheapest of it and every
    configuration whose Holm-adjusted one-sided p (the best ahead of it) is at least alpha."""
    best = max(series, key=lambda n: (float(series[n][part].mean()),
                                      tuple(-c for c in costs[n])))
    others = [n for n in series if n != best]
    ps = [paired_test(series[n][part], series[best][part])[1] for n in others]
    tied = [n for n, p in zip(others, holm(ps)) if p >= alpha]
    return min([best, *tied], key=lambda n: costs[n])


def one_file(path: Path, seeds: int, margin: float | None = None) -> list[dict]:
    data = json.loads(path.read_text(encoding="utf-8"))
    s = data["settings"]
    metric, alpha, margin = s["metric"], s["alpha"], margin or s["margin"]
    handed = "handed_at_k" if metric == "recall_at_k" else "handed_in_budget"
    rows = []
    pairs = {(c["retriever"], c["query_set"]) for c in data["configurations"]
             if not c["against"]}
    for ret, qs in sorted(pairs):
        configs = [c for c in data["configurations"] if c["retriever"] == ret
                   and c["query_set"] == qs and not c["against"]]
        series = {c["strategy"]: np.array(c["per_query"][METRICS[metric]]) for c in configs}
        costs = {c["strategy"]: (c["chunks"]["count"], c[handed], c["cut_rate"]["value"])
                 for c in configs}
        n = len(next(iter(series.values())))
        if n // 2 < MIN_QUESTIONS:  # a half that small carries no verdict under either rule
            continue
        tally = {"new_within": 0, "new_made": 0, "old_within": 0, "new_short": [],
                 "old_short": [], "unclear": 0, "best_within": 0}
        for seed in range(seeds):
            half = np.zeros(n, dtype=bool)
            half[np.random.default_rng(seed).permutation(n)[: n // 2]] = True
            other = ~half
            top = max(float(x[other].mean()) for x in series.values())
            best, comparisons, _ = compare(series, costs, half, half, alpha, margin)
            # the half's own best, for scale: the other half's best is a maximum of noisy
            # means, so even the true best often falls short of it
            tally["best_within"] += top - float(series[best][other].mean()) <= margin
            new = recommend(best, comparisons, costs)
            old = old_rule(series, costs, half, alpha)
            old_short = top - float(series[old][other].mean())
            tally["old_short"].append(old_short)
            tally["old_within"] += old_short <= margin
            if new is None:
                tally["unclear"] += 1
                continue
            short = top - float(series[new][other].mean())
            tally["new_made"] += 1
            tally["new_short"].append(short)
            tally["new_within"] += short <= margin
        rows.append({"corpus": data["corpus"]["name"], "retriever": ret, "query_set": qs,
                     "queries": n, "configurations": len(series), "metric": metric,
                     "margin": margin, "seeds": seeds, **tally})
    return rows


def _pct(a: int, b: int) -> str:
    return f"{a}/{b} ({a / b * 100:.0f}%)" if b else "–"


def report(rows: list[dict]) -> str:
    out = ["| corpus | retriever | query set | queries (half) | configurations | margin | new "
           "rule: recommended | new: within the margin on the other half | new: median (worst) "
           "shortfall | old rule: within the margin | old: median (worst) shortfall | the "
           "half's best: within the margin |",
           "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        ns, os_ = r["new_short"], r["old_short"]
        new_sf = (f"{np.median(ns) * 100:.1f} ({max(ns) * 100:.1f})" if ns else "–")
        out.append(f"| {r['corpus']} | {r['retriever']} | {r['query_set']} | {r['queries']} "
                   f"({r['queries'] // 2}) | {r['configurations']} | {r['margin'] * 100:g} | "
                   f"{_pct(r['new_made'], r['seeds'])} | {_pct(r['new_within'], r['new_made'])} "
                   f"| {new_sf} | {_pct(r['old_within'], r['seeds'])} | "
                   f"{np.median(os_) * 100:.1f} ({max(os_) * 100:.1f}) | "
                   f"{_pct(r['best_within'], r['seeds'])} |")
    out.append("")
    for margin in sorted({r["margin"] for r in rows}):
        at = [r for r in rows if r["margin"] == margin]
        made = sum(r["new_made"] for r in at)
        within = sum(r["new_within"] for r in at)
        old = sum(r["old_within"] for r in at)
        top = sum(r["best_within"] for r in at)
        splits = sum(r["seeds"] for r in at)
        out.append(f"Margin {margin * 100:g} points, over all: the new rule recommended on "
                   f"{_pct(made, splits)} of the splits and its recommendation was within the "
                   f"margin of the other half's best on {_pct(within, made)}; the old rule's "
                   f"on {_pct(old, splits)}; the half's own best's on {_pct(top, splits)}.")
    out += ["", "Shortfalls in points: the other half's best minus the recommendation there."]
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sweeps", nargs="+", type=Path)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--margins", default="",
                    help="comma-separated margins to judge with (default: the sweep's)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    margins = [float(m) for m in args.margins.split(",") if m.strip()] or [None]
    rows = [r for m in margins for p in args.sweeps for r in one_file(p, args.seeds, m)]
    text = report(rows)
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
