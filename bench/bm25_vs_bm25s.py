"""Time chunkeval's BM25 against bm25s on the same tokens: whole runs (index + all queries).

    python bench/bm25_vs_bm25s.py [--chunks 20000] [--queries 800] [--runs 5]

Each library runs in its own process so that its peak memory (ru_maxrss) is its own. bm25s
gets the character 2-gram lists ready-made (its timed run starts from tokens); chunkeval
starts from the raw texts, so its time includes tokenising. Both score every query with its
2-grams counted as often as they occur and return the top 10.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

CHUNK_CHARS = 300
QUERY_CHARS = (20, 60)
TOP = 10

_KANA = [chr(c) for c in range(0x3041, 0x3094)] + [chr(c) for c in range(0x30A1, 0x30F7)]
_KANJI = [chr(c) for c in range(0x4E00, 0x4E00 + 1200)]
_ASCII = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-")


def synthetic_corpus(n_chunks: int = 20000, *, seed: int = 0) -> list[str]:
    """Deterministic text-like chunks of about 300 chars: Zipf-distributed words built
    from kana, kanji and ASCII, with punctuation and spaces between some of them."""
    rng = np.random.default_rng(seed)
    alphabet = np.array(_KANA + _KANJI + _ASCII)
    char_p = 1.0 / np.arange(1, len(alphabet) + 1) ** 0.9
    rng.shuffle(char_p)
    char_p /= char_p.sum()
    words = ["".join(rng.choice(alphabet, size=rng.integers(1, 6), p=char_p))
             for _ in range(8000)]
    for rank, mark in zip((8, 12, 20, 30, 45, 60, 80), ("、", "。", " ", "\n", ": ", "（", "）")):
        words.insert(rank, mark)  # punctuation about as common as in prose
    words = np.array(words)
    word_p = 1.0 / np.arange(1, len(words) + 1) ** 1.05
    word_p /= word_p.sum()
    picks = rng.choice(len(words), size=(n_chunks, CHUNK_CHARS // 2), p=word_p)
    return ["".join(words[row])[:CHUNK_CHARS] for row in picks]


def synthetic_queries(corpus: list[str], n_queries: int = 800, *, seed: int = 1) -> list[str]:
    """A window of a random chunk (so some chunk is relevant) with its ends trimmed."""
    rng = np.random.default_rng(seed)
    out = []
    for doc in rng.integers(0, len(corpus), size=n_queries):
        text = corpus[doc]
        size = int(rng.integers(*QUERY_CHARS))
        start = int(rng.integers(0, max(1, len(text) - size)))
        out.append(text[start:start + size])
    return out


def bigram_tokens(texts: list[str]) -> list[list[str]]:
    """The 2-grams CountVectorizer(analyzer="char", ngram_range=(2, 2)) makes, as lists."""
    from sklearn.feature_extraction.text import CountVectorizer

    analyze = CountVectorizer(analyzer="char", ngram_range=(2, 2), lowercase=False).build_analyzer()
    return [analyze(t) for t in texts]


def run_chunkeval(corpus: list[str], queries: list[str]) -> np.ndarray:
    from chunkeval.retrieval.lexical import BM25Index

    return BM25Index(corpus, analyzer="char2").search(queries, TOP)  # bm25s gets 2-grams too


def run_bm25s(corpus_tokens: list[list[str]], query_tokens: list[list[str]]) -> np.ndarray:
    import bm25s

    retriever = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
    retriever.index(corpus_tokens, show_progress=False)
    ids, _ = retriever.retrieve(query_tokens, k=TOP, show_progress=False)
    return ids


def _one(library: str, n_chunks: int, n_queries: int, runs: int) -> dict:
    corpus = synthetic_corpus(n_chunks)
    queries = synthetic_queries(corpus, n_queries)
    if library == "bm25s":
        corpus_tokens, query_tokens = bigram_tokens(corpus), bigram_tokens(queries)
        job = lambda: run_bm25s(corpus_tokens, query_tokens)  # noqa: E731
    else:
        job = lambda: run_chunkeval(corpus, queries)  # noqa: E731
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        job()
        times.append(time.perf_counter() - started)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return {"library": library, "median_s": statistics.median(times), "runs_s": times,
            "peak_mb": peak_mb}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--chunks", type=int, default=20000)
    p.add_argument("--queries", type=int, default=800)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--one", choices=("chunkeval", "bm25s"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        print(json.dumps(_one(args.one, args.chunks, args.queries, args.runs)))
        return 0
    results = {}
    for library in ("chunkeval", "bm25s"):
        cmd = [sys.executable, __file__, "--one", library, "--chunks", str(args.chunks),
               "--queries", str(args.queries), "--runs", str(args.runs)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            print(done.stderr, file=sys.stderr)
            return done.returncode
        results[library] = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"{args.chunks} chunks x {CHUNK_CHARS} chars, {args.queries} queries, top {TOP}, "
          f"median of {args.runs} whole runs (index + all queries)")
    for library, r in results.items():
        runs = ", ".join(f"{t:.3f}" for t in r["runs_s"])
        print(f"  {library:<10} {r['median_s']:8.3f} s   peak {r['peak_mb']:7.0f} MB   ({runs})")
    ratio = results["bm25s"]["median_s"] / results["chunkeval"]["median_s"]
    print(f"  bm25s / chunkeval = {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
