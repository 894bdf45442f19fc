"""Time the stages of one evaluation on a corpus: splitting, index builds and searches.

    python bench/stages.py --repeat 3
    python bench/stages.py --strategies lc-html-header,lc-html-semantic --repeat 3
    python bench/stages.py --repeat 1 --dump before.npz   # every ranking, to compare later
    python bench/stages.py --repeat 1 --compare before.npz

Each repeat is a fresh Evaluation over the same query sets (so nothing is memoised between
repeats), run in this one process as `chunkeval run` does: per strategy and query set, split,
then build and search with each retriever in plan order (a hybrid reuses its parts' indexes).
Prints wall and CPU seconds per stage, the median over repeats, and the load average.
--compare reports every ranking that differs from the dump, with how far its results moved.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import defaultdict

import numpy as np

from chunkeval import strategies
from chunkeval.corpus import load_corpus
from chunkeval.evaluate import Evaluation, default_retrievers


def one_pass(corpus, query_sets, names, rankings=None) -> dict[str, list[float]]:
    """{stage: [wall, cpu]} for one fresh evaluation of `names` over `query_sets`."""
    ev = Evaluation(corpus, query_specs=query_sets)
    ev.analyzer  # resolved once, outside the stages
    spent: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])

    def timed(stage, f, *args):
        w, c = time.perf_counter(), time.process_time()
        out = f(*args)
        spent[stage][0] += time.perf_counter() - w
        spent[stage][1] += time.process_time() - c
        return out

    for name in names:
        family = strategies.get(name).family
        for qs in query_sets:
            timed(f"split {family}", ev.chunked, name, qs.name)
            for r in default_retrievers(name):
                if r not in ("bm25", "lsa", "hybrid"):
                    continue
                timed(f"build {r}", ev.index, name, r, qs.name)
                ranked, _ = timed(f"search {r}", ev.ranking, name, r, qs.name)
                if rankings is not None:
                    rankings[f"{name}|{r}|{qs.name}"] = ranked
            ev.release(name, qs.name)
    return spent


def compare(now: dict[str, np.ndarray], path: str) -> int:
    before = dict(np.load(path))
    moved = 0
    for key in sorted(set(before) | set(now)):
        a, b = before.get(key), now.get(key)
        if a is None or b is None or a.shape != b.shape:
            print(f"  {key}: only in one run or another shape")
            moved += 1
            continue
        rows = np.flatnonzero((a != b).any(axis=1))
        if len(rows):
            moved += 1
            first = [int(np.flatnonzero(a[r] != b[r])[0]) for r in rows]
            print(f"  {key}: {len(rows)} of {len(a)} queries differ, first at rank "
                  f"{min(first) + 1} (median {statistics.median(first) + 1})")
    print(f"rankings compared: {len(now)}, differing: {moved}")
    return 1 if moved else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", default="debian-ja")
    p.add_argument("--strategies", help="comma-separated (default: every registered one)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--dump", metavar="NPZ", help="save every ranking of the last repeat")
    p.add_argument("--compare", metavar="NPZ", help="compare the last repeat's rankings")
    args = p.parse_args()
    corpus = load_corpus(args.corpus)
    query_sets = [Evaluation(corpus).query_set(s) for s in Evaluation(corpus).query_specs]
    names = args.strategies.split(",") if args.strategies else strategies.names()
    print(f"{args.corpus}: {len(names)} strategies, query sets "
          + ", ".join(f"{qs.name} ({len(qs.queries)})" for qs in query_sets))
    runs, rankings = [], {}
    for i in range(args.repeat):
        last = i == args.repeat - 1
        load = os.getloadavg()[0]
        runs.append(one_pass(corpus, query_sets, names,
                             rankings if last and (args.dump or args.compare) else None))
        total = sum(c for _, c in runs[-1].values())
        print(f"repeat {i + 1}: {total:.1f} CPU s in the stages, load average before {load:.2f}",
              flush=True)
    print(f"{'stage':<28}{'wall s':>10}{'CPU s':>10}   (median of {len(runs)})")
    for stage in sorted({s for r in runs for s in r}):
        wall = statistics.median(r.get(stage, [0, 0])[0] for r in runs)
        cpu = statistics.median(r.get(stage, [0, 0])[1] for r in runs)
        print(f"{stage:<28}{wall:>10.2f}{cpu:>10.2f}")
    print(f"load average now: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.dump:
        np.savez_compressed(args.dump, **rankings)
    if args.compare:
        return compare(rankings, args.compare)
    return 0


if __name__ == "__main__":
    sys.exit(main())
