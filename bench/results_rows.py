"""How long the per-query rows take to make, write and read: Scores.per_query on 800 queries,
and Results.to_json / Results.from_json of a results.json. A restructuring of the rows (the
metric table) should not slow them; run it on two checkouts, alternating, and compare medians.

    PYTHONPATH=CHECKOUT python bench/results_rows.py RESULTS.json [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from chunkeval.results import Results
from chunkeval.scoring import Scores


def scores(n: int = 800) -> Scores:
    rng = np.random.default_rng(0)
    s = Scores.blank([f"q{i}" for i in range(n)], (), {"complete_at": 0.95})
    for name in ("coverage", "budget_coverage", "rr", "ndcg"):
        getattr(s, name)[:] = rng.random(n)
    s.doc_hit[:] = rng.random(n) > 0.5
    s.retrieved = [[("doc", 0, 400, 400)] * 6 for _ in range(n)]
    return s


def median_ms(f, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    with open(args.results, encoding="utf-8") as f:
        data = json.load(f)
    doc = Results.from_json(data, args.results)
    s = scores()
    rows = sum(len(r.per_query) for r in doc.results)
    print(f"Scores.per_query (800 queries): {median_ms(s.per_query, args.rounds):.1f} ms")
    print(f"Results.from_json ({rows} rows): "
          f"{median_ms(lambda: Results.from_json(data, args.results), args.rounds):.1f} ms")
    print(f"Results.to_json ({rows} rows): {median_ms(doc.to_json, args.rounds):.1f} ms")


if __name__ == "__main__":
    main()
