"""The retriever registry, outside retrievers (CLI and pytest), the embedding cache, the
analyzers and the `use` model on real sentences."""

import hashlib
import json
import shutil
import sys
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from chunkeval import retrieval
from chunkeval.errors import (BaselineError, ConfigError, ContractError, StrategyFailed,
                              UnknownName)
from chunkeval.gate.baselines import check_same_retriever
from chunkeval.gate.entry import BaselineEntry
from chunkeval.retrieval import analyzers
from chunkeval.retrieval import embedding as embeddings
from chunkeval.retrieval.lexical import BM25Index
from helpers import NO_LANGSMITH, a_result, import_what_inner_runs_import
from chunkeval.cli import main
from chunkeval.retrieval.embedding import EmbeddingCache

import_what_inner_runs_import()  # test_pytest_registers_an_outside_retriever runs in-process

# A small deterministic embedding function: letter counts, so a text is closest to itself.
MYEMBED = '''\
import numpy as np

CALLS = []


def embed(texts):
    CALLS.append(len(texts))
    out = np.zeros((len(texts), 27), dtype=np.float32)
    for i, t in enumerate(texts):
        for ch in t.lower():
            out[i, ord(ch) - 97 if "a" <= ch <= "z" else 26] += 1
    return out


embed.retriever_name = "letters"
embed.version = "{version}"
'''

TOPICS = ["install", "configure", "upgrade", "backup", "network", "printing"]

pytest_plugins = ["pytester"]


@pytest.fixture
def outside(tmp_path, monkeypatch, cache_dir):
    """An outside directory holding mymod.py and a small English corpus, as the cwd."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # mymod.py is rewritten at once
    (tmp_path / "mymod.py").write_text(MYEMBED.format(version="1"), encoding="utf-8")
    docs = tmp_path / "docs"
    docs.mkdir()
    for d in range(2):
        body = "".join(f"<h2>Working with {t}</h2>" + "".join(
            f"<p>To handle {t} in step {p}, open the {t} panel and confirm option {p}.</p>"
            for p in range(3)) for t in TOPICS[d * 3:d * 3 + 3])
        (docs / f"part{d}.html").write_text(
            f"<html><head><title>Part {d}</title></head><body><h1>Part {d}</h1>{body}"
            "</body></html>", encoding="utf-8")
    yield tmp_path
    sys.modules.pop("mymod", None)
    retrieval.unregister("letters")


# -- registry ------------------------------------------------------------------------------

def test_builtins_are_registered_and_unknown_names_list_them():
    assert {"bm25", "lsa", "hybrid", "use", "hybrid-use"} <= set(retrieval.names(all=True))
    assert retrieval.get("hybrid-use").fuses == ("bm25", "use")
    assert retrieval.get("hybrid-use").full_version == f"1(1+{retrieval.get('use').version})"
    with pytest.raises(UnknownName, match="unknown retriever 'dense'; known: bm25, lsa"):
        retrieval.get("dense")


def test_a_retriever_has_exactly_one_shape():
    with pytest.raises(ConfigError, match="exactly one of embed, build or fuses"):
        retrieval.Retriever("x", "1")
    with pytest.raises(ConfigError, match="exactly one"):
        retrieval.Retriever("x", "1", embed=lambda t: t, fuses=("bm25", "lsa"))


def test_a_build_retriever_gets_its_own_index_and_a_bad_one_is_named():
    class Reversed:
        def __init__(self, texts):
            self.n = len(texts)

        def __len__(self):
            return self.n

        def search(self, queries, k):
            return np.tile(np.arange(self.n)[::-1][:k], (len(queries), 1))

    r = retrieval.Retriever("reversed", "2", build=Reversed)
    assert retrieval.build_index(r, ["a", "b", "c"]).search(["q"], 2).tolist() == [[2, 1]]
    bad = retrieval.Retriever("bad", "1", build=lambda texts: object())
    with pytest.raises(ContractError, match="retriever 'bad': build\\(\\) returned object"):
        retrieval.build_index(bad, ["a"])


def test_outside_retrievers_import_from_the_project_folder(outside):
    from chunkeval import config
    from chunkeval.session import Session
    session = Session(config.load(command_line={"outside_retrievers": ["mymod:embed"]}))
    assert session.retrievers == {"mymod:embed": ["letters"]}
    r = retrieval.get("letters")
    assert (r.name, r.version) == ("letters", "1")
    texts = ["apt install", "zzz", "backup the disk"]
    assert retrieval.build_index("letters", texts).search(["backup disk"], 1).tolist() == [[2]]
    with pytest.raises(ConfigError, match="has no attribute 'nope'"):
        retrieval.load_retriever("mymod:nope")
    with pytest.raises(ConfigError, match="expected 'module:attribute'"):
        retrieval.load_retriever("mymod")


def test_a_bad_embedding_shape_is_a_clear_error(cache_dir):
    cache = EmbeddingCache("broken", "1")
    with pytest.raises(ContractError, match=r"shape \(2,\) for 2 texts"):
        cache.embed(["a", "b"], lambda texts: np.zeros(len(texts)))


# -- the embedding cache -------------------------------------------------------------------

def test_cache_embeds_each_text_once_across_instances(cache_dir):
    calls = []

    def fn(texts):
        calls.append(list(texts))
        return np.array([[len(t), t.count("a")] for t in texts], dtype=np.float32)

    first = EmbeddingCache("f", "1")
    v = first.embed(["a", "bb", "a", "ccc"], fn, batch_size=2)
    assert v.tolist() == [[1, 1], [2, 0], [1, 1], [3, 0]]
    assert (first.misses, first.hits) == (3, 1) and sum(map(len, calls)) == 3
    calls.clear()
    again = EmbeddingCache("f", "1")  # a new run: everything from disk
    assert again.embed(["ccc", "a"], fn).tolist() == [[3, 0], [1, 1]]
    assert (again.misses, again.hits, calls) == (0, 2, [])
    assert again.embed(["a", "dddd"], fn).tolist() == [[1, 1], [4, 0]]
    assert calls == [["dddd"]]  # only the new text
    # another version of the retriever shares nothing
    other = EmbeddingCache("f", "2")
    other.embed(["a"], fn)
    assert other.misses == 1


def test_a_damaged_shard_is_embedded_again_and_the_cache_is_bounded(cache_dir, monkeypatch):
    fn = lambda texts: np.ones((len(texts), 4), dtype=np.float32)  # noqa: E731
    EmbeddingCache("g", "1").embed(["x", "y"], fn)
    [shard] = list(cache_dir.rglob("*.npz"))
    shard.write_bytes(b"not a zip")
    c = EmbeddingCache("g", "1")
    c.embed(["x"], fn)
    assert c.misses == 1
    monkeypatch.setenv(embeddings.LIMIT_VAR, "0")  # every write prunes down to nothing
    EmbeddingCache("g", "1").embed(["z"], fn)
    assert embeddings.usage() == (0, 0)
    EmbeddingCache("g", "1").embed(["w"], fn)  # still works when the files went away
    monkeypatch.delenv(embeddings.LIMIT_VAR)
    EmbeddingCache("g", "1").embed(["v"], fn)
    assert embeddings.usage()[0] == 1
    assert embeddings.clear()[0] > 0 and embeddings.usage() == (0, 0)


def _run(outside, out, *args):
    return main(["run", "--corpus", str(outside / "docs"), "--queries", "section-titles",
                 "--jobs", "1", "--out", str(out), *args])


def test_cli_outside_retriever_and_cache_hits(outside, capsys):
    args = ["--retriever", "mymod:embed", "--retrievers", "letters,bm25",
            "--strategies", "fixed-200,structure-400"]
    assert _run(outside, outside / "out", *args) == 0
    printed = capsys.readouterr().out
    assert "letters" in printed and "texts embedded" in printed
    doc = json.loads((outside / "out" / "results.json").read_text(encoding="utf-8"))
    code = hashlib.sha256((outside / "mymod.py").read_bytes()).hexdigest()
    described = doc["retrievers"]["letters"]
    # an outside retriever's source; it declares no cache key
    assert described == {"name": "letters", "version": "1", "shape": "embed", "code": code}
    rows = [r for r in doc["results"] if r["retriever"] == "letters"]
    assert len(rows) == 2 and all(r["retriever_version"] == "1" for r in rows)
    assert doc["analyzer"] == "word+stem"
    assert doc["embeddings"]["embedded"] > 0
    assert "letters" in (outside / "out" / "report.md").read_text(encoding="utf-8")

    # a second run reuses bm25's results; `letters` declares no cache key: it is run again
    sys.modules.pop("mymod", None)
    assert _run(outside, outside / "out1", *args) == 0
    capsys.readouterr()
    again = json.loads((outside / "out1" / "results.json").read_text(encoding="utf-8"))
    assert again["embeddings"] == doc["embeddings"]
    assert {r["retriever"]: r["reused"] for r in again["results"]} == {"letters": False,
                                                                      "bm25": True}
    # declared, it is kept: the next run reuses every result, no embedding even looked up
    with open(outside / "mymod.py", "a", encoding="utf-8") as f:
        f.write('embed.cache_key = "letters-1"\n')
    for out in ("kept1", "kept2"):
        sys.modules.pop("mymod", None)
        assert _run(outside, outside / out, *args) == 0
    reused = json.loads((outside / "kept2" / "results.json").read_text(encoding="utf-8"))
    assert reused["retrievers"]["letters"]["cache_key"] == "letters-1"
    assert reused["embeddings"] == {"embedded": 0, "cached": 0}
    assert reused["result_cache"]["evaluated"] == 0

    # evaluated again (result cache off): nothing embedded, every text from the cache
    args.append("--no-result-cache")
    assert _run(outside, outside / "out2", *args) == 0
    assert "embeddings: 0 texts embedded" in capsys.readouterr().out
    again = json.loads((outside / "out2" / "results.json").read_text(encoding="utf-8"))
    assert again["embeddings"] == {"embedded": 0, "cached": doc["embeddings"]["embedded"]
                                   + doc["embeddings"]["cached"]}

    # a changed strategy embeds only its new chunk texts: fixed-200 is unchanged, fixed-400
    # shares no chunk with it on these pages
    assert _run(outside, outside / "out3", "--retriever", "mymod:embed", "--retrievers",
                "letters", "--strategies", "fixed-200,fixed-400", "--no-result-cache") == 0
    third = json.loads((outside / "out3" / "results.json").read_text(encoding="utf-8"))
    by = {r["strategy"]: r["embeddings"] for r in third["results"]}
    assert by["fixed-200"]["embedded"] == 0
    assert by["fixed-400"]["embedded"] == third["results"][1]["chunks"]["count"]


def test_cli_bad_retriever_is_a_message(outside, capsys):
    assert _run(outside, outside / "o", "--retriever", "nomod:embed") == 2
    assert "cannot import 'nomod'" in capsys.readouterr().err
    assert _run(outside, outside / "o", "--retrievers", "dense") == 2
    assert "unknown retriever 'dense'" in capsys.readouterr().err
    assert _run(outside, outside / "o", "--analyzer", "trigram") == 2
    assert "unknown analyzer 'trigram'" in capsys.readouterr().err


def test_pytest_registers_an_outside_retriever(outside, pytester, monkeypatch):
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    pytester.makeini("[pytest]\nchunkeval_outside_retrievers = mymod:embed\n")
    shutil.copytree(outside / "docs", pytester.path / "docs")
    mymod = pytester.path / "mymod.py"
    shutil.copy(outside / "mymod.py", mymod)
    pytester.makepyfile(test_outside_retriever_metrics="def test_recall(chunkeval, retrieval_case):\n"
                                     "    chunkeval.check_retrieval(retrieval_case)\n")
    args = ["test_outside_retriever_metrics.py", "-W", "ignore::pytest.PytestAssertRewriteWarning",
            "-p", "no:cacheprovider", *NO_LANGSMITH, "--chunkeval-corpus", "docs",
            "--chunkeval-query-sets", "section-titles", "--chunkeval-strategies", "fixed-200",
            "--chunkeval-retrievers", "letters"]
    result = pytester.runpytest_inprocess(*args, "--update-baselines")
    assert result.ret == 0, result.stdout.str()
    baseline = json.loads((pytester.path / "baselines" / "docs.json").read_text())
    [entry] = baseline["entries"].values()
    assert entry["retriever_version"] == "1" and entry["analyzer"] == "word+stem"
    assert pytester.runpytest_inprocess(*args).ret == 0
    # another version of the same retriever is not compared
    sys.modules.pop("mymod", None)
    mymod.write_text(MYEMBED.format(version="2"), encoding="utf-8")
    result = pytester.runpytest_inprocess(*args)
    assert result.ret == 6  # no comparison could be made (EXIT_NOT_COMPARED)
    result.stdout.fnmatch_lines(["*recorded with retriever_version '1', this run has '2'*"])


def test_baselines_refuse_another_analyzer():
    result = a_result([1.0], retriever_version="1", analyzer="char2")
    entry = BaselineEntry.from_result(result, 0.8)
    assert entry.analyzer == "char2"
    check_same_retriever(result, entry, "b.json")
    with pytest.raises(BaselineError, match="b.json: .*analyzer 'char2', this run has 'word'"):
        check_same_retriever(replace(result, analyzer="word"), entry, "b.json")


# -- analyzers -----------------------------------------------------------------------------

def test_the_analyzer_follows_the_language():
    assert analyzers.resolve("auto", ["パッケージを更新する方法は次のとおりです。"]) == "char2"
    assert analyzers.resolve("auto", ["How do I upgrade my packages?"]) == "word+stem"
    assert analyzers.resolve("word", ["日本語"]) == "word"
    with pytest.raises(UnknownName, match="unknown analyzer 'x'; known: auto, char2"):
        analyzers.resolve("x", [])


def test_word_analyzers_lowercase_and_stem():
    vocab, tf, lengths = analyzers.fit_words(["Packages and PACKAGING", "the package"],
                                             stem=True)
    assert vocab.terms() == ["and", "packag", "the"] and lengths.tolist() == [3, 2]
    assert tf.toarray().tolist() == [[1, 0], [2, 1], [0, 1]]
    plain, _, _ = analyzers.fit_words(["Packages package"])
    assert plain.terms() == ["package", "packages"]
    # LSA keeps at most (texts - 1) dimensions. Three texts with no word in common have three
    # equal singular values, and which two an SVD keeps is arbitrary; the repeated text makes
    # the kept dimensions span every text, so the ranking does not depend on that choice.
    texts = ["Upgrading the kernel", "Installing packages with apt", "Printer setup",
             "Upgrading the kernel"]
    for name in ("word", "word+stem"):
        for r in ("bm25", "lsa"):
            ranked = retrieval.build_index(r, texts, analyzer=name).search(
                ["how to INSTALL packages", "printer"], 1)
            assert ranked.tolist() == [[1], [2]], (name, r)
    # stemming lets "upgrade" meet "Upgrading"; plain words do not
    assert retrieval.build_index("bm25", texts, analyzer="word+stem").search(
        ["upgrade"], 1).tolist() == [[0]]
    assert BM25Index(texts, analyzer="word").scores(["upgrade"]).max() == 0


# -- the use model -------------------------------------------------------------------------

def test_use_ranks_paraphrases_above_unrelated_sentences(cache_dir):
    chunks = ["To install a package, run apt install followed by its name.",
              "The kernel version is shown by uname -r.",
              "パッケージをインストールするには apt install を実行します。",
              "東京は日本の首都です。",
              "Backups of the home directory should be made every day."]
    queries = ["How do I install software packages?",
               "日本の首都はどこですか",
               "ソフトウェアを導入する方法",
               "Which command prints the Linux kernel release?"]
    index = retrieval.build_index("use", chunks, cache=EmbeddingCache("use", "t"))
    top2 = index.search(queries, 2).tolist()
    assert set(top2[0]) == {0, 2}  # English question: both the English and Japanese answer
    assert top2[1][0] == 3
    assert top2[2][0] in (0, 2)
    assert top2[3][0] == 1


@pytest.mark.parametrize("ids, said", [
    ("float", "float64 of shape"), ("too high", "int64 of shape"), ("one row", "of shape"),
    ("twice", "a chunk id twice for query 1"), ("gap", "a chunk id after -1 padding"),
    ("none", None)])
def test_a_ranking_that_breaks_the_index_contract_is_named(ids, said):
    from chunkeval.evaluate import Evaluation
    from helpers import tiny_corpus

    class Odd:
        def __init__(self, texts):
            self.n = len(texts)

        def __len__(self):
            return self.n

        def search(self, queries, k):
            ranked = np.full((len(queries), k), -1, dtype=np.int64)
            ranked[:, :min(k, self.n)] = np.arange(min(k, self.n))  # a valid ranking, then:
            if ids == "twice":
                ranked[1, 1] = ranked[1, 0]
            elif ids == "gap":
                ranked[0, 0] = -1
            elif ids == "float":
                return ranked.astype(float)
            elif ids == "too high":
                return ranked + self.n
            elif ids == "one row":
                return ranked[:1]
            return ranked

    retrieval.register(retrieval.Retriever("odd", "1", build=Odd), replace=True)
    try:
        evaluation = Evaluation(tiny_corpus(), query_specs=["section-titles"],
                                result_cache=False)
        if said is None:  # the valid ranking the others break is scored
            assert evaluation.result("fixed-200", "odd", "section-titles").retriever == "odd"
            return
        with pytest.raises(StrategyFailed, match="retriever 'odd' failed: search\\(\\) "
                                                 f"returned.*{said}"):
            evaluation.result("fixed-200", "odd", "section-titles")
    finally:
        retrieval.unregister("odd")


def test_a_splitter_that_returns_no_chunks_list_is_named():
    from chunkeval import strategies
    from chunkeval.evaluate import Evaluation
    from helpers import tiny_corpus

    strategies.register(strategies.Strategy("texts", "x", lambda doc: [doc.text]), replace=True)
    try:
        evaluation = Evaluation(tiny_corpus(), query_specs=["section-titles"])
        with pytest.raises(StrategyFailed, match="strategy 'texts' failed on m0.html: split\\(\\) "
                                                 "returned a list holding a str"):
            evaluation.chunked("texts", "section-titles")
    finally:
        strategies.unregister("texts")


@given(st.lists(st.text(alphabet=st.one_of(
    st.characters(max_codepoint=0x7f), st.characters(min_codepoint=0x80, max_codepoint=0x3100),
    st.sampled_from("日本語カタカナｱｲｳ한국어①²Ⅻ½ー・_")), max_size=80), max_size=4))
def test_the_cjk_share_is_the_share_its_character_classes_define(texts):
    import re
    letters = sum(len(re.findall(r"[^\W\d_]", t)) for t in texts)
    cjk = sum(len(analyzers._CJK.findall(t)) for t in texts)
    assert analyzers.cjk_share(texts) == (cjk / letters if letters else 0.0)
