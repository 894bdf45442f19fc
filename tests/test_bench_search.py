"""Speed of BM25 index + search against bm25s on the same 2-gram tokens (group "search").

~20,000 synthetic chunks of 300 chars and 800 queries, from bench/bm25_vs_bm25s.py.
Each round is a whole run: build the index, then search every query. Skipped under
--benchmark-disable (the default run): a round of bm25s alone takes several seconds.
"""

import importlib.util
from functools import cache
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "bm25_vs_bm25s.py"


@cache
def bench():
    # asked for here, not at import: every pytest process collects this module, and bm25s
    # (0.2 s of CPU to import) is wanted only when the benchmarks run
    pytest.importorskip("bm25s")
    spec = importlib.util.spec_from_file_location("bm25_vs_bm25s", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@cache
def workload():
    b = bench()
    corpus = b.synthetic_corpus(20000)
    queries = b.synthetic_queries(corpus, 800)
    return corpus, queries, b.bigram_tokens(corpus), b.bigram_tokens(queries)


def _skip_if_disabled(benchmark):
    if benchmark.disabled:
        pytest.skip("benchmarks disabled (run with --benchmark-enable)")


@pytest.mark.benchmark(group="search")
def test_bm25_chunkeval(benchmark):
    _skip_if_disabled(benchmark)
    corpus, queries, _, _ = workload()
    ranked = benchmark.pedantic(bench().run_chunkeval, args=(corpus, queries),
                                rounds=5, iterations=1, warmup_rounds=1)
    assert ranked.shape == (800, bench().TOP)


@pytest.mark.benchmark(group="search")
def test_bm25_bm25s(benchmark):
    _skip_if_disabled(benchmark)
    corpus, queries, corpus_tokens, query_tokens = workload()
    ranked = benchmark.pedantic(bench().run_bm25s, args=(corpus_tokens, query_tokens),
                                rounds=3, iterations=1)
    ours = bench().run_chunkeval(corpus, queries)
    # same scores up to float32 rounding: the top hit agrees except on near-ties
    assert np.mean(ranked[:, 0] == ours[:, 0]) > 0.99
