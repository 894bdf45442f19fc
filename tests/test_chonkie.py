"""Chonkie's chunkers as strategies named by a spec: names, params, errors, the contract, and
the spec wherever a strategy is named (command line, pyproject, a pytest option)."""

from __future__ import annotations

import json
import sys

import pytest
from hypothesis import given

chonkie = pytest.importorskip("chonkie")

from chunkeval import config, strategies  # noqa: E402
from chunkeval.cli import main  # noqa: E402
from chunkeval.errors import ConfigError, StrategyFailed  # noqa: E402
from chunkeval.evaluate import Evaluation  # noqa: E402
from chunkeval.invariants import contract  # noqa: E402
from chunkeval.session import Session  # noqa: E402
from chunkeval.strategies import chonkie_specs  # noqa: E402
from chunkeval.testing import assert_keeps_invariants, documents  # noqa: E402

from helpers import tiny_corpus  # noqa: E402

RECURSIVE = 'chonkie:RecursiveChunker(chunk_size=120, tokenizer="character")'
TOKEN = "chonkie:TokenChunker(chunk_size=120, chunk_overlap=20)"
SENTENCE = "chonkie:SentenceChunker(chunk_size=120, chunk_overlap=20)"


@pytest.fixture(autouse=True)
def registry():
    """The registry as it was: whatever a test registers is gone after it."""
    before = set(strategies.names())
    yield
    for name in set(strategies.names()) - before:
        strategies.unregister(name)


def load(spec: str) -> strategies.Strategy:
    [strategy] = strategies.load_splitter(spec)
    return strategy


def test_a_spec_is_a_strategy_of_chonkies_chunks_checked_like_any_splitter():
    s = load(RECURSIVE)
    assert s.name == "chonkie-recursive-120" and strategies.get(s.name) is s
    assert s.family == "chonkie" and s.slices and not s.keeps_structure
    assert s.params == {"chunker": "RecursiveChunker",
                        "arguments": {"chunk_size": 120, "tokenizer": "character"},
                        "chonkie": chonkie_specs._version(chonkie), "size": 120, "overlap": 0}
    for doc in tiny_corpus().documents:
        chunks = s.split(doc)
        assert len(chunks) > 1 and contract(s, doc, chunks) is None
        assert all(c.text == doc.text[c.start:c.end] and len(c.text) <= 120 for c in chunks)
        assert "".join(c.text for c in chunks) == doc.text  # no overlap, nothing dropped


def test_names_tell_argument_lists_apart_and_a_default_makes_no_new_name():
    names = {spec: load(spec).name for spec in (
        RECURSIVE, "chonkie:RecursiveChunker(chunk_size=120)", TOKEN,
        "chonkie:TokenChunker(chunk_size=120)", "chonkie:TokenChunker(chunk_size=120, chunk_overlap=0.25)",
        "chonkie:RecursiveChunker(chunk_size=120, min_characters_per_chunk=5)",
        'chonkie:SentenceChunker(chunk_size=120, delim=[". ", "。"])',
        'chonkie:RecursiveChunker(chunk_size=30, tokenizer="word")')}
    assert list(names.values()) == [
        "chonkie-recursive-120", "chonkie-recursive-120", "chonkie-token-120-ov20",
        "chonkie-token-120", "chonkie-token-120-ov30",
        "chonkie-recursive-120-min_characters_per_chunk=5",
        names['chonkie:SentenceChunker(chunk_size=120, delim=[". ", "。"])'],
        "chonkie-recursive-30-tokenizer=word"]
    # a value that is no plain word shows as a digest: one line, no '|', comma or quote
    sentence = names['chonkie:SentenceChunker(chunk_size=120, delim=[". ", "。"])']
    assert sentence.startswith("chonkie-sentence-120-delim=") and len(sentence) == 35
    assert not any(set(n) & set("|,\"' \n") for n in names.values())


def test_size_and_overlap_are_declared_only_where_they_count_characters():
    assert {k: load(TOKEN).params[k] for k in ("size", "overlap")} == {"size": 120, "overlap": 20}
    sentence = load(SENTENCE).params  # keeps a long sentence whole: no size promised
    assert "size" not in sentence and sentence["overlap"] == 20
    words = load('chonkie:TokenChunker(chunk_size=30, chunk_overlap=5, tokenizer="word")').params
    assert "size" not in words and "overlap" not in words  # 5 words: chars not known
    no_overlap = load('chonkie:RecursiveChunker(chunk_size=30, tokenizer="word")').params
    assert "size" not in no_overlap and no_overlap["overlap"] == 0


@pytest.mark.parametrize("spec", [RECURSIVE, TOKEN, SENTENCE])
@given(doc=documents())
def test_chonkie_chunkers_keep_the_invariants_they_declare(spec, doc):
    assert_keeps_invariants(load(spec), doc)


@pytest.mark.parametrize("spec, said", [
    ("chonkie:NoSuchChunker(chunk_size=100)", "has no chunker 'NoSuchChunker'; it has"),
    ("chonkie:Tokenizer", "has no chunker 'Tokenizer'"),
    ("chonkie:RecursiveChunker(chunk_size=0)", "RecursiveChunker refused its arguments: "
                                               "ValueError: chunk_size must be greater than 0"),
    ("chonkie:TokenChunker(chunk_size=10, chunk_overlap=10)", "TokenChunker refused"),
    ("chonkie:RecursiveChunker(size=100)", "RecursiveChunker refused its arguments: TypeError"),
    ("chonkie:RecursiveChunker(100)", "keyword arguments only"),
    ("chonkie:RecursiveChunker(**{'chunk_size': 100})", "keyword arguments only"),
    ("chonkie:RecursiveChunker(chunk_size=__import__('os').getpid())", "must be a literal"),
    ("chonkie:RecursiveChunker(chunk_size=100, chunk_size=200)", "chunk_size= is given twice"),
    ("chonkie:RecursiveChunker(chunk_size=100", "expected chonkie:ChunkerClass("),
    ("chonkie:chonkie.RecursiveChunker()", "expected chonkie:ChunkerClass("),
    ("chonkie:RecursiveChunker(chunk_size=b'x')", "arguments must be numbers"),
])
def test_a_bad_spec_is_one_line_naming_it(spec, said):
    with pytest.raises(ConfigError) as e:
        strategies.load_splitter(spec)
    message = str(e.value)
    assert message.startswith(f"splitter {spec!r}: ") and said in message
    assert "\n" not in message


def test_without_chonkie_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "chonkie", None)  # import chonkie raises ImportError
    with pytest.raises(ConfigError, match=r"needs chonkie: pip install 'chunkeval\[chonkie\]'$"):
        strategies.load_splitter(RECURSIVE)


def test_offsets_that_do_not_slice_the_text_fail_the_strategy(monkeypatch, cache_dir):
    real = chonkie.TokenChunker.chunk

    def shifted(self, text):
        out = real(self, text)
        for c in out[1:]:
            c.start_index += 1  # the text stays chonkie's, the offsets no longer fit it
        return out

    monkeypatch.setattr(chonkie.TokenChunker, "chunk", shifted)
    s = load(TOKEN)
    evaluation = Evaluation(tiny_corpus(), query_specs=["section-titles"])
    with pytest.raises(StrategyFailed, match=r"break 'slice'.* is not doc\.text"):
        evaluation.chunked(s.name, "section-titles")


def test_the_version_is_part_of_the_strategy_and_changed_chunks_are_evaluated_again(
        monkeypatch, cache_dir):
    first = Evaluation(tiny_corpus(), query_specs=["section-titles"])
    assert not first.result(load(TOKEN).name, "bm25", "section-titles").reused
    again = Evaluation(tiny_corpus(), query_specs=["section-titles"])
    assert again.result(load(TOKEN).name, "bm25", "section-titles").reused  # same chunks

    monkeypatch.setattr(chonkie_specs, "_version", lambda module: "99.0")
    real = chonkie.TokenChunker.chunk
    monkeypatch.setattr(chonkie.TokenChunker, "chunk", lambda self, text: real(self, text)[:-1]
                        if len(real(self, text)) > 1 else real(self, text))
    s = load(TOKEN)
    assert s.params["chonkie"] == "99.0"
    later = Evaluation(tiny_corpus(), query_specs=["section-titles"])
    assert not later.result(s.name, "bm25", "section-titles").reused


def test_run_reports_a_chonkie_spec_next_to_a_builtin(docs, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["run", "--corpus", str(docs), "--queries", "section-titles",
                 "--strategies", f"{TOKEN},fixed-400", "--retrievers", "bm25",
                 "--out", str(out)]) == 0
    assert "chonkie-token-120-ov20" in capsys.readouterr().out
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert doc["strategies"]["chonkie-token-120-ov20"]["family"] == "chonkie"
    assert {r["strategy"] for r in doc["results"]} == {"chonkie-token-120-ov20", "fixed-400"}
    assert "chonkie-token-120-ov20 | chonkie |" in (out / "report.md").read_text(encoding="utf-8")


def test_a_spec_in_pyproject_or_a_pytest_option_stays_one_item(tmp_path, monkeypatch):
    (tmp_path / "docs").mkdir()
    (tmp_path / "pyproject.toml").write_text(
        "[tool.chunkeval]\ncorpus = \"docs\"\n"
        f"splitters = ['{SENTENCE}']\n"
        f"strategies = ['{TOKEN}', '{SENTENCE}', \"fixed-400\"]\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    session = Session(config.load())
    assert session.strategies == ["chonkie-token-120-ov20", "chonkie-sentence-120-ov20",
                                  "fixed-400"]
    # a worker process of its own imports the same specs again
    assert {spec for what, spec, _ in session.modules if what == "splitter"} == {SENTENCE, TOKEN}
    # pytest --chunkeval-strategies: the same comma-separated list as --strategies
    given = config.load(command_line={"strategies": f"{RECURSIVE},fixed-400"},
                        ini=lambda name: None)
    assert given.strategies == (RECURSIVE, "fixed-400")
