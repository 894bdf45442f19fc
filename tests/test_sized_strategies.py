"""The size-based families sized by the configured length (fixed-400t, recursive-400t-ov40t,
structure-400t): names, windows found on the text, the invariants in that unit, and the names
wherever a strategy is named. The unit here is a word count written below."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chunkeval import config, executors, strategies
from chunkeval.cli import main
from chunkeval.errors import ConfigError, UnknownName
from chunkeval.registry import Components
from chunkeval.invariants import contract
from chunkeval.model import Document, Part
from chunkeval.session import Session
from chunkeval.strategies.fixed import fixed_windows, measured_windows
from chunkeval.strategies.recursive import split_spans, tracked_spans
from chunkeval.strategies.structure import structure_chunks
from chunkeval.testing import assert_keeps_invariants, documents

from helpers import langchain_splitter, tiny_corpus


def words(text: str) -> int:
    return len(text.split())


WORDS = f"{__name__}:words"
SIZED = ["fixed-12t", "fixed-12t-ov4t", "recursive-12t", "recursive-12t-ov4t", "structure-12t",
         "structure-12t+prefix"]


@pytest.fixture(autouse=True)
def registry():
    """Words as the unit for the test; after it, characters and the registry as it was."""
    before = set(strategies.names())
    strategies.size_by(WORDS, lambda: words)
    yield
    strategies.size_by("chars")
    for name in set(strategies.names()) - before:
        strategies.unregister(name)


def test_names_say_the_unit_and_params_record_it():
    made = {name: strategies.get(name) for name in SIZED}
    assert [s.family for s in made.values()] == ["fixed", "fixed", "recursive", "recursive",
                                                 "structure", "prefix"]
    assert made["fixed-12t-ov4t"].params == {"size": 12, "overlap": 4, "unit": WORDS}
    assert made["structure-12t"].params == {"size": 12, "cut": 3, "unit": WORDS}
    assert all(s.name == name and s.params["unit"] == WORDS for name, s in made.items())
    assert set(SIZED) <= set(strategies.names())
    # the names in characters keep their strategies and params
    assert strategies.get("fixed-400").params == {"size": 400, "overlap": 0}


@pytest.mark.parametrize("name", ["fixed-12t-ov0t", "structure-12t-ov4t", "fixed-012t",
                                  "fixed-12t-ov4", "recursive-12t+prefix", "fixed-0t",
                                  "heading-12t"])
def test_other_spellings_are_unknown_names(name):
    with pytest.raises(UnknownName):
        strategies.get(name)


def test_with_the_length_in_characters_a_t_name_says_what_to_set():
    strategies.size_by("chars")
    with pytest.raises(ConfigError, match=r"'recursive-12t-ov4t' is sized in units of the "
                                          r"`length` setting, which is chars: set length "
                                          r"\(--length MODULE:ATTR\), or name 'recursive-12-ov4'"):
        strategies.get("recursive-12t-ov4t")


def test_another_length_makes_them_again():
    first = strategies.get("fixed-12t")
    strategies.size_by(f"{__name__}:twice", lambda: twice)
    assert "fixed-12t" not in strategies.names()
    again = strategies.get("fixed-12t")
    assert again is not first and again.params["unit"] == f"{__name__}:twice"


def twice(text: str) -> int:
    return 2 * len(text.split())


@pytest.mark.parametrize("name", SIZED)
@given(doc=documents())
def test_sized_strategies_keep_their_invariants_in_words(name, doc):
    assert_keeps_invariants(strategies.get(name), doc)


def test_chunks_are_sized_in_words_not_characters():
    doc = tiny_corpus().documents[0]
    for name in SIZED:
        s = strategies.get(name)
        chunks = s.split(doc)
        assert contract(s, doc, chunks) is None
        assert max(words(c.text) for c in chunks) <= 12
        assert max(len(c.text) for c in chunks) > 12  # so not characters
    windows = strategies.get("fixed-12t-ov4t").split(doc)
    assert all(words(doc.text[b.start:a.end]) <= 4 for a, b in zip(windows, windows[1:]))
    assert any(a.end > b.start for a, b in zip(windows, windows[1:]))


# -- in characters, the measured code paths give the chunks of the character ones ----------

texts = documents().map(lambda d: d.text)


@given(text=texts, size=st.integers(1, 300), share=st.floats(0, 0.9))
def test_windows_measured_with_len_are_the_character_windows(text, size, share):
    overlap = int(size * share)
    doc = Document("d", "d", text, ())
    assert measured_windows(text, size, overlap, len) == \
        [(c.start, c.end) for c in fixed_windows(doc, size, overlap)]


@given(text=texts, size=st.integers(20, 300), share=st.floats(0, 0.5))
def test_recursive_spans_measured_with_len_are_the_character_spans(text, size, share):
    overlap = int(size * share)
    assert split_spans(text, size, overlap, length=len) == split_spans(text, size, overlap)


@given(text=texts, size=st.integers(3, 40), share=st.floats(0, 0.5))
def test_recursive_spans_in_words_are_langchains_chunks_in_words(text, size, share):
    overlap = int(size * share)
    seps = ["\n\n", "\n", ". ", " ", ""]
    spans = tracked_spans(text, size, overlap, separators=seps, length=words)
    assert [text[s:e] for s, e in spans] == langchain_splitter(
        size, overlap, tuple(seps), words).split_text(text)


@given(doc=documents(), size=st.integers(20, 600))
def test_structure_measured_with_len_is_structure_in_characters(doc, size):
    assert structure_chunks(doc, size, len) == structure_chunks(doc, size)


def test_a_table_piece_counts_its_repeated_header():
    rows = ("name | value",) + tuple(f"key{i} | one two three" for i in range(6))
    doc = Document.from_parts("t.html", "T", [Part("table", "\n".join(rows), ("T", "", ""),
                                                   rows, 1)])
    pieces = strategies.get("structure-12t").split(doc)
    assert len(pieces) == 6 and all(words(c.text) <= 12 for c in pieces)
    assert all(c.text.startswith("name | value\n") for c in pieces[1:])


# -- wherever a strategy is named ----------------------------------------------------------

def test_a_session_makes_the_names_it_is_given_with_its_length(tmp_path, monkeypatch):
    (tmp_path / "docs").mkdir()
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.chunkeval]\ncorpus = "docs"\nlength = "{WORDS}"\n'
        'reference = ["fixed-12t", "structure-12t+prefix"]\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    strategies.size_by("chars")
    session = Session(config.load())
    assert session.strategies == ["fixed-12t", "structure-12t+prefix"]
    assert strategies.get("fixed-12t").params["unit"] == WORDS
    with pytest.raises(ConfigError, match=r"^option --strategies: strategy 'fixed-12t' is sized"):
        Session(config.load(command_line={"strategies": ["fixed-12t"], "length": "chars"})
                ).strategies


def test_a_worker_process_makes_them_with_the_length_it_is_given():
    strategies.size_by("chars")
    executors.load_again((("length", WORDS, "."),))
    assert strategies.get("recursive-12t").params["unit"] == WORDS


def test_run_sizes_by_the_length_option(docs, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["run", "--corpus", str(docs), "--queries", "section-titles", "--length", WORDS,
                 "--strategies", "fixed-60t,structure-60t,fixed-400", "--retrievers", "bm25",
                 "--out", str(out)]) == 0
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert doc["strategies"]["fixed-60t"]["params"] == {"size": 60, "overlap": 0, "unit": WORDS}
    assert {r["strategy"] for r in doc["results"]} == {"fixed-60t", "structure-60t", "fixed-400"}
    means = {r["strategy"]: r["chunks"]["mean_len"] for r in doc["results"]}
    assert means["fixed-60t"] <= 60 and means["structure-60t"] <= 60  # in words, as sized
    assert "fixed-60t" in capsys.readouterr().out


def test_a_run_s_length_goes_with_the_run():
    # a second session in the same process (an in-process pytest run, a command after
    # another) must not size "t" names by the first one's length
    def words_of(text: str) -> int:
        return len(text.split())

    with Components().used():
        strategies.size_by("team:words", lambda: words_of)
        assert strategies.get("fixed-12t").params["unit"] == "team:words"
    with Components().used():
        with pytest.raises(ConfigError, match="is sized in units of the `length` setting"):
            strategies.get("fixed-12t")
