"""Time scoring.score on the default matrix: every strategy x both query sets, BM25 rankings,
the set-based reference (exact_sets=True) against the fast path. Medians of --repeat runs.

    python bench/scoring.py --repeat 3 [--strategies fixed-400,heading-h2] [--check]

Each repeat scores every (strategy, query set) from cold: fresh per-chunk caches (as the first
retriever of a run meets them) and, for the fast path, the per-view and per-query-set
precomputation built anew (its time is in the total and also printed on its own).
--check also asserts that both paths give the same numbers.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from chunkeval import scoring, strategies
from chunkeval.corpus import load_corpus
from chunkeval.evaluate import Evaluation


def drop_caches(qs) -> None:
    for owner in (qs, qs.view):
        owner.__dict__.pop("_chunkeval_scoring", None)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", default="debian-ja")
    p.add_argument("--strategies", help="comma-separated (default: all built-in)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--check", action="store_true")
    args = p.parse_args()
    names = args.strategies.split(",") if args.strategies else strategies.names()
    evaluation = Evaluation(load_corpus(args.corpus))
    cases = []
    for spec in evaluation.query_specs:
        qs = evaluation.query_set(spec)
        for name in names:
            handed = evaluation.chunked(name, spec).handed
            ranking, _ = evaluation.ranking(name, "bm25", spec)
            cases.append((qs, handed, ranking))
            evaluation.release(name, spec)
    print(f"{len(cases)} rankings, {sum(len(c[0]) for c in cases)} query rankings",
          file=sys.stderr)
    times: dict[str, list[float]] = {"sets": [], "fast": [], "fast_prep": []}
    for _ in range(args.repeat):
        t0 = time.process_time()
        ref = [scoring.score(qs, h, r, exact_sets=True) for qs, h, r in cases]
        times["sets"].append(time.process_time() - t0)
        for qs, _, _ in cases:
            drop_caches(qs)
        t0 = time.process_time()
        for qs, _, _ in cases:  # the per-view and per-query-set part alone
            scoring.score(qs, [], np.zeros((len(qs), 0), dtype=np.int64))
        times["fast_prep"].append(time.process_time() - t0)
        for qs, _, _ in cases:
            drop_caches(qs)
        t0 = time.process_time()
        fast = [scoring.score(qs, h, r) for qs, h, r in cases]
        times["fast"].append(time.process_time() - t0)
        if args.check:
            for a, b in zip(ref, fast):
                for f in ("coverage", "budget_coverage", "precision", "iou", "rr", "ndcg"):
                    assert np.allclose(getattr(a, f), getattr(b, f), rtol=0, atol=1e-9), f
                assert (a.doc_hit == b.doc_hit).all() and (a.complete == b.complete).all()
                assert a.retrieved == b.retrieved
                for bud in a.curve:
                    assert np.allclose(a.curve[bud], b.curve[bud], rtol=0, atol=1e-9)
    for key, values in times.items():
        print(f"{key:10s} CPU s: median {statistics.median(values):7.2f}  "
              f"runs {' '.join(f'{v:.2f}' for v in values)}")
    print(f"speed-up (sets / fast): {statistics.median(times['sets']) / statistics.median(times['fast']):.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
