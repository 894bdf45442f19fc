"""How long each strategy takes to split every document of the corpus (group "split")."""

from __future__ import annotations

import pytest

from chunkeval import strategies

pytestmark = pytest.mark.corpus


def test_split_corpus(benchmark, strategy_name, corpus):
    strategy = strategies.get(strategy_name)
    benchmark.group = "split"
    benchmark.extra_info["strategy"] = strategy_name

    def split_all():
        return sum(len(strategy.split(doc)) for doc in corpus.documents)

    chunks = benchmark(split_all)
    benchmark.extra_info["chunks"] = chunks
    assert chunks > 0 or not corpus.documents
