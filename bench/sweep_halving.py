"""A 200-configuration sweep with and without successive halving: time, and whether the
recommendation is the same.

The grid: sizes 100-2,000 (step 100) x overlaps 0, 10, 20, 30, 40% x two families (fixed,
recursive), one `chunkeval sweep` per family, BM25, the section-titles questions of the default
corpus. Each run starts from a cache of its own holding only the parsed corpus (copied from
$CHUNKEVAL_CACHE or ~/.cache/chunkeval): every configuration is chunked and evaluated
afresh, and a configuration that goes on to a later rung reads its chunks back from the chunk
cache, as in a first sweep of a project. Rounds alternate: without, with, with, without, ...

    python bench/sweep_halving.py --rounds 2 --out bench/results/sweep-halving.md
    python bench/sweep_halving.py --rounds 1 --families fixed   # one family: 100 configurations
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

FAMILIES = ("fixed", "recursive")
GRID = ["--size", "100:2000:100", "--overlap", "0,0.1,0.2,0.3,0.4"]


SHARED = Path(os.environ.get("CHUNKEVAL_CACHE", Path.home() / ".cache" / "chunkeval"))


def sweep(family: str, halving: str, out: Path, no_result_cache: bool) -> tuple[float, dict]:
    own = out.parent / f"{out.name}-cache"
    for part in ("corpus", "debs"):  # the parsed corpus and its downloads, nothing evaluated
        shutil.copytree(SHARED / part, own / part)
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "chunkeval", "sweep", "--strategy", family, *GRID,
         "--retrievers", "bm25", "--queries", "section-titles", "--yes",
         "--halving", halving, "--out", str(out)]
        + (["--no-result-cache"] if no_result_cache else []),
        capture_output=True, text=True, env={**os.environ, "CHUNKEVAL_CACHE": str(own)})
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(done.stdout + done.stderr)
    return seconds, json.loads((out / "sweep.json").read_text(encoding="utf-8"))


def picked(data: dict, margin: float) -> str:
    """The best and the recommendation (or the verdict) at `margin`, by the sweep's rule on the
    configurations judged on every query (the finalists, when halved)."""
    from chunkeval.sweep import METRICS, compare, recommend
    s = data["settings"]
    handed = "handed_at_k" if s["metric"] == "recall_at_k" else "handed_in_budget"
    configs = [c for c in data["configurations"] if not c["against"]]
    series = {c["strategy"]: np.array(c["per_query"][METRICS[s["metric"]]]) for c in configs}
    costs = {c["strategy"]: (c["chunks"]["count"], c[handed], c["cut_rate"]["value"])
             for c in configs}
    every = np.ones(len(next(iter(series.values()))), dtype=bool)
    best, comparisons, _ = compare(series, costs, every, every, s["alpha"], margin)
    return f"best {best}, recommended {recommend(best, comparisons, costs) or 'none'}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--no-result-cache", action="store_true",
                    help="nothing stored either: a configuration going on to a later rung is "
                         "chunked again")
    ap.add_argument("--families", default=",".join(FAMILIES),
                    help="the families swept, comma-separated (default: fixed,recursive)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    families = [f for f in args.families.split(",") if f]
    times: dict[tuple[str, str], list[float]] = {}
    seen: dict[tuple[str, str], dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            order = ("off", "on") if r % 2 == 0 else ("on", "off")
            for mode in order:
                for family in families:
                    s, data = sweep(family, mode, Path(tmp) / f"{family}-{mode}-{r}",
                                    args.no_result_cache)
                    times.setdefault((family, mode), []).append(s)
                    seen[(family, mode)] = data
                    shutil.rmtree(Path(tmp) / f"{family}-{mode}-{r}-cache")
                    print(f"round {r + 1} {family} halving {mode}: {s:.1f} s", flush=True)
    load = os.getloadavg()
    lines = ["# A 200-configuration sweep with and without successive halving", "",
             f"Grid: sizes 100–2,000 (step 100) × overlap 0, 10, 20, 30, 40% × {{"
             f"{', '.join(families)}}} = 100 configurations per family (one sweep per "
             f"family), BM25, section-titles of the default corpus, each run from a cache "
             f"holding only the parsed corpus"
             + (", with `--no-result-cache` (a finalist is chunked again at each rung). "
                if args.no_result_cache else ". ")
             + f"{args.rounds} alternating round(s); load average at the "
             f"end {load[0]:.1f} on 2 cores (other jobs running).", "",
             "| family | without halving (s, median) | with halving (s, median) | ratio | "
             "rungs (queries: evaluated → kept) | margin | without | with | same |",
             "|---|---:|---:|---:|---|---:|---|---|---|"]
    total = {"off": 0.0, "on": 0.0}
    for family in families:
        off, on = (statistics.median(times[(family, m)]) for m in ("off", "on"))
        total["off"] += off
        total["on"] += on
        rungs = "; ".join(f"{x['queries']}: {x['evaluated']} → {x['kept']}"
                          for x in seen[(family, "on")]["rungs"])
        for margin in (0.02, 0.05):
            a, b = picked(seen[(family, "off")], margin), picked(seen[(family, "on")], margin)
            lines.append(f"| {family} | {off:.1f} | {on:.1f} | {on / off:.2f} | {rungs} | "
                         f"{margin * 100:g} | {a} | {b} | {'yes' if a == b else 'no'} |")
    lines += ["", f"All families: {total['off']:.1f} s without, {total['on']:.1f} s with "
              f"halving ({total['on'] / total['off']:.2f} of the time). Runs (s): "
              + "; ".join(f"{f} {m}: {', '.join(f'{x:.1f}' for x in v)}"
                          for (f, m), v in times.items()) + "."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
