"""The semantic chunkers on a topic-word embedding (no model): Kamradt's breakpoints fall at
the topic shifts, the cluster chunker's dynamic programme finds the planted clusters within
its size, both keep the splitter contract, and a second chunking embeds nothing."""

import itertools
import json
import sys
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given

from chunkeval import retrieval, strategies
from chunkeval.cli import main
from chunkeval.errors import ConfigError
from chunkeval.invariants import check, contract
from chunkeval.model import Document, Part
from chunkeval.registry import Components
from chunkeval.strategies import semantic
from chunkeval.testing import assert_keeps_invariants, documents

# Each topic is told by its words, in English and Japanese; a text's vector counts them.
TOPICS = {"cat": ("cat", "猫"), "rocket": ("rocket", "ロケット"), "bread": ("bread", "パン")}
CALLS: list[int] = []


def topic_embed(texts):
    CALLS.append(len(texts))
    out = np.full((len(texts), len(TOPICS) + 1), 0.0, dtype=np.float32)
    out[:, -1] = 0.05  # never a zero vector
    for i, t in enumerate(texts):
        low = t.lower()
        for k, words in enumerate(TOPICS.values()):
            out[i, k] = sum(low.count(w) for w in words)
    return out


@pytest.fixture(scope="module", autouse=True)
def topics_retriever(tmp_path_factory):
    """The fake model as a registered embedding retriever, over a cache of this module's."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CHUNKEVAL_CACHE", str(tmp_path_factory.mktemp("semantic") / "cache"))
        retrieval.register(retrieval.Retriever("topics", "1", embed=topic_embed), replace=True)
        yield
        retrieval.unregister("topics")


EN = {"cat": ["The cat sleeps on the warm sofa all day.", "A cat purrs when it is happy.",
              "Every cat likes a quiet corner.", "The old cat chases a ball of wool."],
      "rocket": ["The rocket lifts off at dawn.", "A rocket needs a lot of fuel.",
                 "The rocket reaches orbit in minutes.", "Each rocket stage falls away."],
      "bread": ["Bread rises overnight in a warm kitchen.", "Fresh bread smells of yeast.",
                "The bread crust turns golden.", "We slice the bread while it is warm."]}
JA = {"cat": ["猫は一日中ソファで眠ります。", "猫は機嫌がよいと喉を鳴らします！", "どの猫も静かな隅が好きですか？"],
      "rocket": ["ロケットは夜明けに打ち上げられます。", "ロケットには多くの燃料が要ります。",
                 "ロケットは数分で軌道に達します！"],
      "bread": ["パンは暖かい台所で一晩かけて膨らみます。", "焼きたてのパンは酵母の香りがします。",
                "パンの皮は黄金色になります。"]}


def doc_of(paragraphs: list[str], id: str = "d.html") -> Document:
    return Document.from_parts(id, "T", [Part("paragraph", p, ("T", "", "")) for p in paragraphs])


def topic_document(sentences: dict[str, list[str]], repeat: int, sep: str = " ") -> Document:
    """One paragraph per topic, its sentences `repeat` times over."""
    return doc_of([sep.join(s * repeat) for s in sentences.values()])


def chunk_topics(chunks) -> list[set[str]]:
    return [{t for t, words in TOPICS.items() if any(w in c.text.lower() for w in words)}
            for c in chunks]


# -- sentences ------------------------------------------------------------------------------

def test_sentences_end_at_japanese_and_english_marks():
    text = ("猫は眠ります。本当に？「はい！」と答えた。\n\n"
            "It works. Does it? Yes! Version 3.14 is in setup.py now.\n"
            "6.1. Build the package")
    got = [text[s:e] for s, e in semantic.sentences(text)]
    assert got == ["猫は眠ります。", "本当に？", "「はい！」と答えた。", "It works.", "Does it?",
                   "Yes!", "Version 3.14 is in setup.py now.", "6.1. Build the package"]


# -- Kamradt's breakpoints ------------------------------------------------------------------

@pytest.mark.parametrize("sentences, sep", [(EN, " "), (JA, "")], ids=["en", "ja"])
def test_breakpoints_fall_at_the_topic_shifts(sentences, sep):
    doc = topic_document(sentences, repeat=3, sep=sep)
    strategy = semantic.kamradt(5000, retriever="topics")
    chunks = strategy.split(doc)
    assert chunk_topics(chunks) == [{"cat"}, {"rocket"}, {"bread"}]
    assert [c.text for c in chunks] == [doc.block_text(b) for b in doc.blocks]


def test_the_95th_percentile_cuts_once_between_two_long_topics():
    doc = doc_of([" ".join(EN["cat"] * 4) + " " + " ".join(EN["rocket"] * 4)])
    chunks = semantic.kamradt(5000, retriever="topics").split(doc)
    assert chunk_topics(chunks) == [{"cat"}, {"rocket"}]


def test_the_ceiling_cuts_an_overlong_topic_at_its_largest_distance():
    doc = topic_document(EN, repeat=3)
    strategy = semantic.kamradt(200, retriever="topics")
    chunks = strategy.split(doc)
    assert max(len(c.text) for c in chunks) <= 200
    assert all(len(t) == 1 for t in chunk_topics(chunks))  # no chunk spans a shift
    assert contract(strategy, doc, chunks) is None and check(strategy, doc) == []


def test_a_sentence_over_the_size_is_cut_to_fit():
    doc = doc_of(["cat " * 300 + "rocket. The rocket flies."])
    strategy = semantic.kamradt(100, retriever="topics")
    chunks = strategy.split(doc)
    assert max(len(c.text) for c in chunks) <= 100 and check(strategy, doc) == []


# -- the cluster chunker --------------------------------------------------------------------

def planted(sizes: dict[str, int]) -> Document:
    """A paragraph a piece (30-49 chars, so the 50-char splitter keeps each whole), the
    topics in runs of the given lengths."""
    return doc_of([EN[t][i % len(EN[t])][:49] for t, n in sizes.items() for i in range(n)])


def test_the_dynamic_programme_finds_the_planted_clusters():
    doc = planted({"cat": 4, "rocket": 3, "bread": 5})
    chunks = semantic.cluster(400, retriever="topics").split(doc)
    assert chunk_topics(chunks) == [{"cat"}, {"rocket"}, {"bread"}]
    assert [c.text.count("\n\n") + 1 for c in chunks] == [4, 3, 5]


def test_clusters_keep_the_maximum_size():
    doc = planted({"cat": 4, "rocket": 3, "bread": 5})
    strategy = semantic.cluster(100, retriever="topics")
    chunks = strategy.split(doc)
    assert max(len(c.text) for c in chunks) <= 100
    assert all(len(t) == 1 for t in chunk_topics(chunks))
    assert contract(strategy, doc, chunks) is None and check(strategy, doc) == []


def _reward(v, groups):
    sims = v @ v.T
    n = len(v)
    mean = (sims.sum() - np.trace(sims)) / (n * (n - 1))
    return sum(sims[i:j, i:j].sum() - np.trace(sims[i:j, i:j]) - mean * (j - i) * (j - i - 1)
               for i, j in groups)


def test_the_dynamic_programme_is_optimal():
    """Against every segmentation of a few random pieces."""
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(2, 9))
        v = rng.normal(size=(n, 4))
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        lengths = rng.integers(5, 30, size=n)
        ends = np.cumsum(lengths + 1) - 1
        starts = ends - lengths
        size = int(rng.integers(30, 90))
        found = semantic.best_groups(v, list(starts), list(ends), size)
        assert [g[0] for g in found] == [0] + [g[1] for g in found[:-1]] and found[-1][1] == n
        assert all(ends[j - 1] - starts[i] <= size or j - i == 1 for i, j in found)
        best = -np.inf
        for cuts in itertools.product([0, 1], repeat=n - 1):
            bounds = [0] + [k + 1 for k, c in enumerate(cuts) if c] + [n]
            groups = list(zip(bounds, bounds[1:]))
            if all(ends[j - 1] - starts[i] <= size or j - i == 1 for i, j in groups):
                best = max(best, _reward(v, groups))
        assert _reward(v, found) == pytest.approx(best, abs=1e-5)


# -- the contract, the cache, the registry ----------------------------------------------------

@contextmanager
def a_new_run(**how):
    """What a new process sees: nothing the last run kept in memory, the model registered
    again (`how`: as it was)."""
    topics = retrieval.get("topics")
    with Components().used():
        retrieval.register(topics, **how)
        yield


STRATEGIES = [semantic.kamradt(300, retriever="topics"), semantic.cluster(200, retriever="topics")]


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: s.name)
@given(doc=documents())
def test_invariants_on_generated_documents(strategy, doc):
    assert_keeps_invariants(strategy, doc)


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: s.name)
def test_a_second_chunking_embeds_nothing(strategy):
    doc = topic_document(JA, repeat=2, sep="")
    doc = Document(f"{strategy.name}.html", doc.title, doc.text, doc.blocks)
    first = strategy.split(doc)
    assert sum(CALLS) > 0
    CALLS.clear()
    assert strategy.split(doc) == first and CALLS == []
    # a new process: `topics` is a model from outside, known only by what it computes, so its
    # vectors were kept in memory, not on disk: embedded again, to the same chunks
    with a_new_run():
        assert strategy.split(doc) == first and sum(CALLS) > 0
    # what the new run kept went with it; this run's vectors are still here
    CALLS.clear()
    assert strategy.split(doc) == first and CALLS == []


def test_the_vectors_of_a_built_in_model_are_kept_on_disk():
    """A model chunkeval ships is keyed by its version: a new process reads its vectors."""
    from chunkeval.retrieval import registry
    registry.current().register(registry.get("topics"), replace=True, builtin=True)
    strategy = semantic.kamradt(250, retriever="topics")
    doc = topic_document(JA, repeat=2, sep="")
    first = strategy.split(doc)
    assert sum(CALLS) > 0
    CALLS.clear()
    with a_new_run(builtin=True):  # the vectors are on disk
        assert strategy.split(doc) == first and CALLS == []


def test_names_and_the_model_they_need():
    assert STRATEGIES[0].name == "semantic-kamradt-p95-300@topics"
    assert STRATEGIES[1].name == "semantic-cluster-200@topics"
    assert semantic.kamradt(800).name == "semantic-kamradt-p95-800"
    with pytest.raises(ConfigError, match="embedding retriever"):
        semantic.kamradt(400, retriever="bm25").split(doc_of(["One. Two. Three."]))
    assert not semantic.installed("no-such-model")
    missing = lambda texts: np.zeros((len(texts), 2))  # noqa: E731
    missing.available = False
    retrieval.register(retrieval.Retriever("not-installed", "1", embed=missing))
    try:
        assert not semantic.installed("not-installed")
    finally:
        retrieval.unregister("not-installed")


def test_builtins_run_only_when_named():
    named = set(strategies.names(all=True)) - set(strategies.names())
    assert named == {s.name for s in strategies.NAMED_ONLY} | set(strategies.MISSING)
    if semantic.installed():
        assert {"semantic-kamradt-p95-800", "semantic-cluster-400"} <= named
        assert strategies.is_builtin("semantic-cluster-400")


SPLITTER = '''\
from chunkeval.strategies.semantic import cluster, kamradt

semantic = [kamradt(800, retriever="topics"), cluster(400, retriever="topics")]
'''
RETRIEVER = '''\
import numpy as np


def embed(texts):
    out = np.full((len(texts), 3), 0.05, dtype=np.float32)
    for i, t in enumerate(texts):
        out[i, 0], out[i, 1] = t.count("backup"), t.count("network")
    return out


embed.retriever_name = "topics"
'''


def test_a_project_builds_them_on_its_own_retriever(tmp_path, monkeypatch, manuals):
    corpus = manuals(folder="guide")
    (tmp_path / "mysplit.py").write_text(SPLITTER, encoding="utf-8")
    (tmp_path / "myret.py").write_text(RETRIEVER, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "out"
    try:
        assert main(["run", "--corpus", str(corpus), "--queries", "section-titles",
                     "--splitter", "mysplit:semantic", "--retriever", "myret:embed",
                     "--strategies", "semantic-cluster-400@topics,semantic-kamradt-p95-800@topics",
                     "--retrievers", "bm25", "--jobs", "1", "--out", str(out)]) == 0
    finally:
        for name in ("semantic-cluster-400@topics", "semantic-kamradt-p95-800@topics"):
            strategies.unregister(name)
        retrieval.register(retrieval.Retriever("topics", "1", embed=topic_embed), replace=True)
        for module in ("mysplit", "myret"):
            sys.modules.pop(module, None)
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert {r["strategy"] for r in doc["results"]} == {"semantic-cluster-400@topics",
                                                       "semantic-kamradt-p95-800@topics"}
    assert not doc.get("failed")
    # the chunkers' embeddings are counted, though bm25 embeds nothing
    assert all(r["embeddings"]["embedded"] > 0 for r in doc["results"])


def test_no_disk_for_one_evaluation_is_not_no_disk_for_another_thread():
    """Two evaluations in two threads, one without the cache: the switch of one is not seen
    by the other, whichever ends first."""
    import threading

    from chunkeval.strategies.semantic import _ON_DISK, vectors_on_disk
    entered, leave, seen = threading.Event(), threading.Event(), []

    def cached():
        with vectors_on_disk(True):
            entered.set()
            leave.wait(5)
            seen.append(_ON_DISK.get())

    other = threading.Thread(target=cached)
    other.start()
    entered.wait(5)
    with vectors_on_disk(False):
        leave.set()
        other.join(5)  # the cached one ends first
        assert _ON_DISK.get() is False
    assert seen == [True] and _ON_DISK.get() is True


def test_an_evaluation_hands_the_chunker_its_embedding_function(cache_dir):
    """The model is a retriever handed to the evaluation only, never registered: the chunker
    embeds with what the evaluation gives it, kept in the evaluation's memory (its cache is
    off), and counted in the results."""
    from chunkeval.evaluate import Evaluation
    from chunkeval.model import Corpus
    from chunkeval.results import Settings

    words = retrieval.Retriever("topic-words", "1", embed=topic_embed)
    strategy = semantic.kamradt(250, retriever="topic-words")
    doc = topic_document(EN, repeat=2)
    corpus = Corpus("topics", (doc,))
    evaluation = Evaluation(corpus, Settings(), ["section-titles"], result_cache=False,
                            embedding_cache=False, retrievers=[words])
    assert "topic-words" not in retrieval.names(all=True)
    CALLS.clear()
    chunked = evaluation.chunked(strategy, "section-titles")
    embedded = sum(CALLS)
    assert embedded > 0 and evaluation._embedding_counts()[0] == embedded
    assert not (cache_dir / "embeddings").exists()
    assert [(c.start, c.end) for c in chunked.handed] == [
        (c.start, c.end) for c in semantic.kamradt(250, retriever="topics").split(doc)]
