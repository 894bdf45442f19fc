"""What checking the splitter contract on every document costs: the chunking of every
strategy on every query set's view of a corpus, with the check and without it (the same
process, alternating, CPU seconds, medians of several rounds).

    python bench/contract.py [--corpus debian-ja] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

from chunkeval import invariants, strategies
from chunkeval.corpus import load_corpus
from chunkeval.evaluate import Evaluation


def chunk_all(evaluation: Evaluation) -> float:
    t0 = time.process_time()
    for spec in evaluation.query_specs:
        for name in strategies.names():
            evaluation.chunked(name, spec)
            evaluation.release(name, spec)
    return time.process_time() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="debian-ja")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    evaluation = Evaluation(load_corpus(args.corpus))
    for spec in evaluation.query_specs:
        evaluation.query_set(spec)
    chunk_all(evaluation)  # warm: LangChain's imports, the views
    checked, unchecked = [], []
    real = invariants.contract
    for _ in range(args.repeat):
        checked.append(chunk_all(evaluation))
        invariants.contract = lambda *a: None
        try:
            unchecked.append(chunk_all(evaluation))
        finally:
            invariants.contract = real
    a, b = statistics.median(checked), statistics.median(unchecked)
    print(f"{args.corpus}: {len(strategies.names())} strategies x "
          f"{len(evaluation.query_specs)} views, CPU s median of {args.repeat}: "
          f"with the contract {a:.2f}, without {b:.2f} (+{a - b:.2f} s, x{a / b:.2f})")


if __name__ == "__main__":
    main()
