"""The semantic chunkers against fixed-400 and structure-400: retrieval, chunk sizes and the
cost of chunking with an empty and a filled sentence-vector cache.

    python bench/semantic.py run OUT/debian-ja --corpus debian-ja
    python bench/semantic.py run OUT/chroma --corpus CORPUS_DIR --queries QUESTIONS.jsonl
    python bench/semantic.py table OUT/debian-ja OUT/chroma > table.md

    python bench/semantic.py split OUT/split/debian-ja --corpus debian-ja
    python bench/semantic.py cuts OUT/split/debian-ja --corpus debian-ja

`split` times the chunking alone, in one process, with a cache of its own under OUT: each
semantic strategy over the whole corpus with no sentence vector cached (cold), then again
with a new cache object (warm: the vectors read from disk, as a new process would); wall
and CPU seconds (all threads), so that a busy machine shows as wall above CPU. `cuts` then
reads that cache to count how the chunks were cut.

`run` makes a cache of its own under OUT (the parsed corpora, downloaded packages and the
retrievers' chunk vectors of $CHUNKEVAL_CACHE, but no result and no sentence or piece
vector), then runs `chunkeval run` twice in it, one process each: `cold` (every sentence
window and piece is embedded) and `warm` (the same run again: results come from the result
cache, and the chunking from the embedding cache). The chunking seconds of each are in its
results.json (`seconds.split`, wall); the run's wall and CPU seconds (all threads and
children) in OUT/times.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

STRATEGIES = ("fixed-400", "structure-400", "semantic-kamradt-p95-400",
              "semantic-kamradt-p95-800", "semantic-cluster-400", "semantic-cluster-800")
RETRIEVERS = ("bm25", "use", "hybrid-use")
PIECES = "+pieces"


def source_cache() -> Path:
    from chunkeval.store import cache_root
    return cache_root()


def cold_cache(source: Path, dest: Path) -> None:
    """A copy of `source` without results and without semantic chunkers' vectors."""
    for part in ("corpus", "debs", "embeddings"):
        if (source / part).is_dir():
            shutil.copytree(source / part, dest / part, dirs_exist_ok=True,
                            ignore=lambda d, names: [n for n in names if n.endswith(PIECES)])


def run(out: Path, extra: list[str], jobs: int) -> None:
    cache = out / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    cold_cache(source_cache(), cache)
    env = {**os.environ, "CHUNKEVAL_CACHE": str(cache)}
    times = {}
    for label in ("cold", "warm"):
        cmd = [sys.executable, "-m", "chunkeval.cli", "run", *extra,
               "--strategies", ",".join(STRATEGIES), "--retrievers", ",".join(RETRIEVERS),
               "--jobs", str(jobs), "--out", str(out / label)]
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        if os.waitstatus_to_exitcode(status):
            raise SystemExit(f"{label} run failed: {' '.join(cmd)}")
        times[label] = round(time.perf_counter() - started, 1)
        times[f"{label}_cpu"] = round(usage.ru_utime + usage.ru_stime, 1)
        times[f"{label}_load"] = round(os.getloadavg()[0], 2)
        print(label, times[label], "s", file=sys.stderr)
    (out / "times.json").write_text(json.dumps({"command": extra, "jobs": jobs, **times}))


def split(out: Path, corpus_name: str) -> None:
    cache = out / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    cold_cache(source_cache(), cache)
    os.environ["CHUNKEVAL_CACHE"] = str(cache)
    from chunkeval import strategies
    from chunkeval.corpus import load_corpus
    from chunkeval.strategies import semantic
    corpus = load_corpus(corpus_name)
    semantic.unit_vectors("use", ["a sentence", "another"])  # the model loaded, untimed
    rows = []
    for name in STRATEGIES[2:]:
        strategy = strategies.get(name)
        for label in ("cold", "warm"):
            semantic._CACHES.clear()
            wall, cpu = time.perf_counter(), time.process_time()
            chunks = sum(len(strategy.split(doc)) for doc in corpus.documents)
            rows.append({"strategy": name, "cache": label, "chunks": chunks,
                         "wall": round(time.perf_counter() - wall, 1),
                         "cpu": round(time.process_time() - cpu, 1)})
            print(rows[-1], file=sys.stderr)
    (out / "split.json").write_text(json.dumps({"corpus": corpus_name,
                                                "characters": sum(len(d.text) for d in
                                                                  corpus.documents),
                                                "rows": rows}, indent=1))


def cuts(out: Path, corpus_name: str) -> None:
    """How many of the Kamradt chunkers' boundaries are the percentile's breakpoints (the
    rest are the size ceiling's), and how many pieces the cluster chunkers' groups hold;
    on the cache `split` filled."""
    os.environ["CHUNKEVAL_CACHE"] = str(out / "cache")
    import numpy as np
    from chunkeval.corpus import load_corpus
    from chunkeval.strategies import semantic
    from chunkeval.strategies.recursive import split_spans
    corpus = load_corpus(corpus_name)
    found = {}
    for size in (400, 800):
        breaks = boundaries = 0
        for doc in corpus.documents:
            text = doc.text
            units = semantic._at_most(text, semantic.sentences(text), size)
            n = len(units)
            if n < 2:
                continue
            v = semantic.unit_vectors("use", [text[units[max(0, i - 1)][0]:
                                                   units[min(n - 1, i + 1)][1]]
                                              for i in range(n)])
            distance = np.round(1.0 - np.sum(v[:-1] * v[1:], axis=1), 6)
            breaks += int(np.sum(distance > np.percentile(distance, 95)))
            boundaries += len(semantic.kamradt_spans(text, size)) - 1
        pieces = sum(len(split_spans(d.text, semantic.PIECE)) for d in corpus.documents
                     if d.text.strip())
        groups = sum(len(semantic.cluster_spans(d.text, size)) for d in corpus.documents)
        found[size] = {"kamradt_boundaries": boundaries, "at_breakpoints": breaks,
                       "cluster_groups": groups, "pieces": pieces}
    (out / "cuts.json").write_text(json.dumps(found, indent=1))
    print(json.dumps(found), file=sys.stderr)


def split_table(outs: list[Path]) -> str:
    lines = ["| corpus | strategy | cold: wall s | cold: CPU s | warm: wall s | warm: CPU s "
             "| shape |", "|---|---|---:|---:|---:|---:|---|"]
    for out in outs:
        doc = json.loads((out / "split.json").read_text(encoding="utf-8"))
        by = {(r["strategy"], r["cache"]): r for r in doc["rows"]}
        for name in STRATEGIES[2:]:
            c, w = by[(name, "cold")], by[(name, "warm")]
            shape = ""
            if (out / "cuts.json").is_file():
                size = name.rsplit("-", 1)[1]
                k = json.loads((out / "cuts.json").read_text(encoding="utf-8"))[size]
                shape = (f"{k['at_breakpoints'] / k['kamradt_boundaries'] * 100:.0f}% of "
                         "boundaries at breakpoints" if "kamradt" in name else
                         f"{k['pieces'] / k['cluster_groups']:.1f} pieces a chunk")
            lines.append(f"| {out.name} ({doc['characters'] / 1e6:.2f}M chars) | {name} | "
                         f"{c['wall']} | {c['cpu']} | {w['wall']} | {w['cpu']} | {shape} |")
    return "\n".join(lines) + "\n"


def table(outs: list[Path]) -> str:
    lines = ["| corpus, set | strategy | chunks | mean len | "
             + " | ".join(f"R@5 {r}" for r in RETRIEVERS) + " | "
             + " | ".join(f"budget {r}" for r in RETRIEVERS) + " |",
             "|---|---|---:|---:|" + "---:|" * 2 * len(RETRIEVERS)]
    costs = ["| corpus | strategy | split s, cold | split s, warm |", "|---|---|---:|---:|"]
    for out in outs:
        cold = json.loads((out / "cold" / "results.json").read_text(encoding="utf-8"))
        warm = json.loads((out / "warm" / "results.json").read_text(encoding="utf-8"))
        corpus = out.name
        rows = {(r["query_set"], r["strategy"], r["retriever"]): r for r in cold["results"]}
        warm_rows = {(r["query_set"], r["strategy"]): r for r in warm["results"]}
        sets = sorted({k[0] for k in rows})
        for qs in sets:
            n = cold["query_sets"][qs]["queries"]
            for s in STRATEGIES:
                some = rows[(qs, s, RETRIEVERS[0])]
                cells = [f"{rows[(qs, s, r)]['metrics'][m]['value'] * 100:.1f}"
                         for m in ("recall_at_k", "budget_recall") for r in RETRIEVERS]
                lines.append(f"| {corpus} {qs} ({n}) | {s} | {some['chunks']['count']} | "
                             f"{some['chunks']['mean_len']:.0f} | " + " | ".join(cells) + " |")
        for s in STRATEGIES:
            split = [sum(rows[(qs, s, RETRIEVERS[0])]["seconds"]["split"] for qs in sets),
                     sum(warm_rows[(qs, s)]["seconds"]["split"] for qs in sets)]
            costs.append(f"| {corpus} | {s} | {split[0]:.1f} | {split[1]:.1f} |")
        times = json.loads((out / "times.json").read_text(encoding="utf-8"))
        costs.append(f"| {corpus} | whole run: wall | {times['cold']:.0f} | {times['warm']:.0f} |")
        if "cold_cpu" in times:
            costs.append(f"| {corpus} | whole run: CPU | {times['cold_cpu']:.0f} | "
                         f"{times['warm_cpu']:.0f} |")
    return "\n".join(lines) + "\n\n" + "\n".join(costs) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    r = sub.add_parser("run")
    r.add_argument("out", type=Path)
    r.add_argument("--corpus", required=True)
    r.add_argument("--queries")
    r.add_argument("--jobs", type=int, default=1)
    sp = sub.add_parser("split")
    sp.add_argument("out", type=Path)
    sp.add_argument("--corpus", required=True)
    c = sub.add_parser("cuts")
    c.add_argument("out", type=Path)
    c.add_argument("--corpus", required=True)
    t = sub.add_parser("table")
    t.add_argument("outs", type=Path, nargs="+")
    args = p.parse_args()
    if args.what == "run":
        extra = ["--corpus", args.corpus] + (["--queries", args.queries] if args.queries else [])
        run(args.out, extra, args.jobs)
    elif args.what == "split":
        split(args.out, args.corpus)
    elif args.what == "cuts":
        cuts(args.out, args.corpus)
    else:
        runs = [o for o in args.outs if (o / "times.json").is_file()]
        splits = [o for o in args.outs if (o / "split.json").is_file()]
        print((table(runs) if runs else "") + ("\n" if runs and splits else "")
              + (split_table(splits) if splits else ""), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
