"""The `use` encoder with its transient arrays in the heap (after) or mapped afresh by glibc
(before), on the default corpus's real chunk texts, as a pytest-xdist worker runs it.

    python bench/embedding_heap.py [--strategy fixed-400] [--texts 800] [--rounds 3] [--pair]

Each round runs `before` then `after`, each in a fresh process with one BLAS thread (as
under `pytest -n 2`); with --pair two processes of the same kind run at once, as the two
workers do. Prints texts/s, user and system CPU seconds and minor page faults per process,
the medians, and whether every vector of `after` is np.array_equal to `before`'s.
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


def _embed(kind: str, strategy: str, n: int, out: str) -> None:
    os.environ["PYTEST_XDIST_WORKER_COUNT"] = "2"  # one BLAS thread, as in a worker
    from chunkeval import strategies
    from chunkeval.corpus import load_corpus
    from chunkeval.retrieval import neural
    from chunkeval.retrieval.registry import USE_BATCH
    split = strategies.get(strategy).split
    texts = [c.text for d in load_corpus("debian-ja").documents for c in split(d)]
    texts = texts[:n] if n else texts
    if kind == "before":
        neural._arrays_in_heap = contextlib.nullcontext
    neural.use_embed(["warm up"])  # the model loads once
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
    ap.add_argument("--embed", nargs=2, help=argparse.SUPPRESS)  # KIND OUT, in a child
    args = ap.parse_args()
    if args.embed:
        _embed(args.embed[0], args.strategy, args.texts, args.embed[1])
        return
    runs: dict[str, list[dict]] = {"before": [], "after": []}
    same = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for kind in runs:
                outs = [os.path.join(tmp, f"{kind}{i}.npy") for i in range(1 + args.pair)]
                procs = [subprocess.Popen([sys.executable, __file__, "--strategy",
                                           args.strategy, "--texts", str(args.texts),
                                           "--embed", kind, out], stdout=subprocess.PIPE,
                                          text=True) for out in outs]
                for p in procs:
                    row = json.loads(p.communicate()[0].strip().splitlines()[-1])
                    runs[kind].append(row)
                    print(f"round {r + 1} {kind:6s} {row['rate']:6.1f} texts/s  user "
                          f"{row['user']:5.2f} s  sys {row['sys']:4.2f} s  faults "
                          f"{row['faults']:6d}  load {os.getloadavg()[0]:.1f}", flush=True)
            same.append(np.array_equal(np.load(os.path.join(tmp, "before0.npy")),
                                       np.load(os.path.join(tmp, "after0.npy"))))
    for kind, rows in runs.items():
        med = {k: statistics.median(row[k] for row in rows)
               for k in ("rate", "user", "sys", "faults")}
        print(f"{kind:6s} median over {len(rows)}: {med['rate']:.1f} texts/s, user "
              f"{med['user']:.2f} s, sys {med['sys']:.2f} s, CPU {med['user'] + med['sys']:.2f}"
              f" s, {med['faults']:.0f} faults ({rows[0]['texts']} texts)")
    print("vectors np.array_equal before/after in every round:", all(same))


if __name__ == "__main__":
    main()
