"""How time and memory grow with the corpus: the default corpus repeated N times.

Each size runs in its own process so that its peak memory is its own. Documents are
duplicated under new ids ("copy-2/<id>", ...), so every copy is chunked, indexed and searched;
the queries are those of the base corpus, their answers now present n times.

    python bench/scale.py --sizes 1,3,9 --strategies fixed-400,structure-800
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time


def child(n: int, names: list[str], rets: list[str]) -> dict:
    from dataclasses import replace

    from chunkeval.corpus import load_corpus
    from chunkeval.evaluate import Evaluation
    from chunkeval.model import Corpus, QuerySet
    from chunkeval.queries import build_query_set

    base = load_corpus("debian-ja")
    t0 = time.perf_counter()
    # The query sets of the base corpus, measured on their views repeated n times: the
    # queries stay the same and every copy of their answers competes in the index.
    sets = []
    for spec in Evaluation(base).query_specs:
        qs = build_query_set(base, spec)
        docs = [d if i == 0 else replace(d, id=f"copy-{i + 1}/{d.id}")
                for i in range(n) for d in qs.view.documents]
        sets.append(QuerySet(qs.name, qs.queries, Corpus(f"{qs.view.name}-x{n}", tuple(docs))))
    corpus = sets[0].view
    evaluation = Evaluation(corpus, query_specs=sets)
    specs = evaluation.query_specs
    t1 = time.perf_counter()
    doc = evaluation.run(names, rets, progress=False)
    t2 = time.perf_counter()
    phases = {"split": 0.0, "index": 0.0, "search": 0.0}
    for r in doc.results:
        for k in phases:
            phases[k] += getattr(r.seconds, k)
    return {"copies": n, "documents": len(corpus), "chars": corpus.chars,
            "queries": {s: len(evaluation.query_set(s)) for s in specs},
            "query_sets_s": round(t1 - t0, 2), "evaluate_s": round(t2 - t1, 2),
            "phases_s": {k: round(v, 2) for k, v in phases.items()},
            "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1,3,9", help="copies of the corpus (default 1,3,9)")
    p.add_argument("--strategies", default="fixed-400,recursive-400-ov40,structure-800,parent-child-r200-s800")
    p.add_argument("--retrievers", default="bm25,lsa")
    p.add_argument("--child", type=int, help=argparse.SUPPRESS)
    a = p.parse_args()
    names, rets = a.strategies.split(","), a.retrievers.split(",")
    if a.child:
        print(json.dumps(child(a.child, names, rets)))
        return 0
    rows = []
    for n in [int(x) for x in a.sizes.split(",")]:
        out = subprocess.run([sys.executable, __file__, "--child", str(n), "--strategies",
                              a.strategies, "--retrievers", a.retrievers],
                             capture_output=True, text=True, check=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        r = rows[-1]
        print(f"x{n}: {r['documents']} docs, {r['chars']:,} chars, queries {r['queries']}, "
              f"query sets {r['query_sets_s']} s, evaluate {r['evaluate_s']} s "
              f"{r['phases_s']}, peak {r['peak_mb']} MB", flush=True)
    first = rows[0]
    for r in rows[1:]:
        print(f"x{r['copies']} vs x{first['copies']}: chars x{r['chars'] / first['chars']:.1f}, "
              f"time x{r['evaluate_s'] / first['evaluate_s']:.1f}, "
              f"memory x{r['peak_mb'] / first['peak_mb']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
