"""The `use` encoder's settings compared on a corpus's real chunk texts, as a pytest-xdist
worker (one BLAS thread) or a single process (two) runs it.

    python bench/embedding_heap.py [--strategy fixed-400[,structure-400...]] [--texts 800]
        [--rounds 3] [--pair] [--kinds mapped heap] [--threads 1] [--corpus debian-ja]

Kinds: `mapped`, the package's own code with glibc mapping its large arrays afresh; `heap`,
the package's own code with the arrays kept in the heap; `passes`, the heap and the token
stages in cache-sized passes (neural_passes.py), each context convolved afresh; `contexts`,
the passes with each token context's rows kept, as chunkeval runs an encoder of one thread.
The texts are each strategy's chunks of every query set's view in turn (each text once, as
the embedding cache embeds them), from chunkeval's own chunking: with several strategies,
the later ones meet the contexts of the earlier. Each round runs every kind in turn, each in a fresh
process; with --pair two processes of the same kind run at once, as the two workers do.
Prints texts/s, user and system CPU seconds and minor page faults per process, the medians,
and whether every vector of each kind is np.array_equal to the first kind's.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


KINDS = ("mapped", "heap", "passes", "contexts")


def _embed(kind: str, args: argparse.Namespace, out: str) -> None:
    if args.threads == 1:
        os.environ["PYTEST_XDIST_WORKER_COUNT"] = "2"  # one BLAS thread, as in a worker
    from chunkeval.corpus import load_corpus
    from chunkeval.evaluate import Evaluation
    from chunkeval.retrieval import neural, neural_passes
    from chunkeval.retrieval.registry import USE_BATCH
    evaluation = Evaluation(load_corpus(args.corpus), result_cache=False, embedding_cache=False)
    texts = list(dict.fromkeys(c.indexed for strategy in args.strategy.split(",")
                               for spec in evaluation.query_specs
                               for c in evaluation.chunked(strategy, spec).searched))
    texts = texts[:args.texts] if args.texts else texts
    if kind == "mapped":
        neural._arrays_in_heap = contextlib.nullcontext
    neural.use_embed(["warm up"])  # the model loads once
    backend = neural._model._model
    vars(backend).pop("_encode_batch", None)  # the package's own micro-batches
    if kind in ("passes", "contexts"):  # on any number of threads (chunkeval: on one)
        neural_passes.bind(backend)
    if kind == "passes":
        neural_passes._convolve_kept = lambda self, flat, lens, starts, idx, out: \
            neural_passes._convolve_all(self, flat, idx, out)
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    vectors = np.concatenate([neural.use_embed(texts[i:i + USE_BATCH])
                              for i in range(0, len(texts), USE_BATCH)])
    wall, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF)
    np.save(out, vectors)
    print(json.dumps({"kind": kind, "texts": len(texts), "rate": len(texts) / wall,
                      "user": r1.ru_utime - r0.ru_utime, "sys": r1.ru_stime - r0.ru_stime,
                      "faults": r1.ru_minflt - r0.ru_minflt}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--strategy", default="fixed-400")
    ap.add_argument("--texts", type=int, default=800, help="0: all of the strategy's chunks")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pair", action="store_true", help="two processes of a kind at once")
    ap.add_argument("--kinds", nargs="+", choices=KINDS, default=["mapped", "heap"])
    ap.add_argument("--threads", type=int, choices=[1, 2], default=1,
                    help="BLAS threads: 1 as a pytest-xdist worker, 2 as a single process")
    ap.add_argument("--corpus", default="debian-ja")
    ap.add_argument("--embed", nargs=2, help=argparse.SUPPRESS)  # KIND OUT, in a child
    args = ap.parse_args()
    if args.embed:
        _embed(args.embed[0], args, args.embed[1])
        return
    runs: dict[str, list[dict]] = {kind: [] for kind in args.kinds}
    same: dict[str, list[bool]] = {kind: [] for kind in args.kinds[1:]}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for kind in runs:
                outs = [os.path.join(tmp, f"{kind}{i}.npy") for i in range(1 + args.pair)]
                procs = [subprocess.Popen([sys.executable, __file__, "--strategy",
                                           args.strategy, "--texts", str(args.texts),
                                           "--threads", str(args.threads), "--corpus",
                                           args.corpus, "--embed", kind, out],
                                          stdout=subprocess.PIPE, text=True) for out in outs]
                for p in procs:
                    row = json.loads(p.communicate()[0].strip().splitlines()[-1])
                    runs[kind].append(row)
                    print(f"round {r + 1} {kind:6s} {row['rate']:6.1f} texts/s  user "
                          f"{row['user']:5.2f} s  sys {row['sys']:4.2f} s  faults "
                          f"{row['faults']:6d}  load {os.getloadavg()[0]:.1f}", flush=True)
            first = np.load(os.path.join(tmp, f"{args.kinds[0]}0.npy"))
            for kind in args.kinds[1:]:
                same[kind].append(np.array_equal(first, np.load(os.path.join(tmp,
                                                                             f"{kind}0.npy"))))
    for kind, rows in runs.items():
        med = {k: statistics.median(row[k] for row in rows)
               for k in ("rate", "user", "sys", "faults")}
        cpu = statistics.median(row["user"] + row["sys"] for row in rows)
        print(f"{kind:6s} median over {len(rows)}: {med['rate']:.1f} texts/s, user "
              f"{med['user']:.2f} s, sys {med['sys']:.2f} s, CPU {cpu:.2f} s "
              f"({1000 * cpu / rows[0]['texts']:.2f} s per 1,000 texts), "
              f"{med['faults']:.0f} faults ({rows[0]['texts']} texts)")
    for kind, equal in same.items():
        print(f"vectors of {kind} np.array_equal to {args.kinds[0]}'s in every round:",
              all(equal))


if __name__ == "__main__":
    main()
