"""Wrong numbers never pass silently: a splitter or retriever that raises or breaks its
contract fails its own results, named in one line, and costs no other strategy."""

import json
import sys

import numpy as np
import pytest

from chunkeval import strategies
from chunkeval.cli import main
from chunkeval.errors import ConfigError, StrategyFailed
from chunkeval.evaluate import Evaluation
from chunkeval.model import Chunk
from chunkeval.results import Results
from chunkeval.retrieval import embedding
from helpers import INNER, NO_LANGSMITH, import_what_inner_runs_import, tiny_corpus

import_what_inner_runs_import()

pytest_plugins = ["pytester"]

SPLITTERS = '''\
from chunkeval import Chunk


def crashy(doc):
    if doc.id == "page03.html":
        return [][0]
    return [Chunk(doc.id, 0, len(doc.text), doc.text)]


def shouting(doc):
    return [Chunk(doc.id, 0, len(doc.text), doc.text.upper())]
'''


@pytest.fixture
def project(docs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    (tmp_path / "mysplit.py").write_text(SPLITTERS, encoding="utf-8")
    yield tmp_path
    sys.modules.pop("mysplit", None)
    for name in ("crashy", "shouting"):
        strategies.unregister(name)


def test_a_failing_splitter_costs_no_other_strategy(project, capsys):
    args = ["run", "--corpus", "docs", "--queries", "section-titles", "--splitter",
            "mysplit:crashy", "--splitter", "mysplit:shouting", "--strategies",
            "mysplit:crashy,fixed-400,mysplit:shouting", "--retrievers", "bm25,lsa",
            "--jobs", "2", "--out", "out"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert ("chunkeval: failed: strategy 'crashy' failed on page03.html: split() raised "
            "IndexError: list index out of range") in err
    assert "strategy 'shouting' failed on page00.html: its chunks break 'slice'" in err
    assert "Traceback" not in err and "mysplit.py" not in err  # one line each
    doc = json.loads((project / "out" / "results.json").read_text(encoding="utf-8"))
    assert {(r["strategy"], r["retriever"]) for r in doc["results"]} == {
        ("fixed-400", "bm25"), ("fixed-400", "lsa")}
    failed = {f["strategy"]: f for f in doc["failed"]}
    assert set(failed) == {"crashy", "shouting"} and failed["crashy"]["document"] == "page03.html"
    assert 'mysplit.py", line 6, in crashy' in failed["crashy"]["detail"]
    report = (project / "out" / "report.md").read_text(encoding="utf-8")
    assert "## Not scored" in report and "crashy" in report
    assert main([*args, "--traceback"]) == 1
    assert 'mysplit.py", line 6, in crashy' in capsys.readouterr().err


def test_a_failing_splitter_is_never_recorded_as_a_baseline(project, pytester):
    (project / "pyproject.toml").write_text(
        '[tool.chunkeval]\ncorpus = "docs"\nquery_sets = ["section-titles"]\n'
        'splitters = ["mysplit:shouting"]\nreference = ["fixed-400"]\nretrievers = ["bm25"]\n',
        encoding="utf-8")
    result = pytester.runpytest_inprocess(*INNER, "--update-baselines", "-p", "no:cacheprovider",
                                           "-p", "no:randomly", *NO_LANGSMITH,
                                           str(project / "pyproject.toml"))
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*strategy 'shouting' failed on page00.html: its chunks break "
                                 "'slice'*", "*baselines NOT recorded for shouting*"])
    # the summary counts what failed before any verdict, not only the cases it judged
    result.stdout.fnmatch_lines(["* test(s) failed without a verdict, left out of the count*"])
    assert "pluggy/_" not in result.stdout.str()  # no frames of pytest's own machinery
    entries = json.loads((project / "baselines" / "docs.json").read_text())["entries"]
    assert set(entries) == {"fixed-400|bm25|section-titles"}



def test_a_query_set_with_no_questions_fails_its_cases_in_one_line(project, pytester):
    (project / "pyproject.toml").write_text(
        '[tool.chunkeval]\ncorpus = "docs"\nquery_sets = ["faq-qa"]\n'
        'reference = ["fixed-400"]\nretrievers = ["bm25"]\n', encoding="utf-8")
    result = pytester.runpytest_inprocess(*INNER, "-p", "no:cacheprovider", "-p", "no:randomly",
                                           *NO_LANGSMITH,
                                           str(project / "pyproject.toml"))
    assert result.ret == 1
    result.stdout.fnmatch_lines(["chunkeval: query set 'faq-qa' has no questions on the "
                                 "corpus 'docs': nothing to score; name another"])
    assert "Traceback" not in result.stdout.str() and "ValueError" not in result.stdout.str()


def test_a_failing_retriever_holds_back_its_own_baselines_only(project, pytester):
    (project / "myret.py").write_text(
        "def down(texts):\n    raise RuntimeError('the model server is down')\n",
        encoding="utf-8")
    (project / "pyproject.toml").write_text(
        '[tool.chunkeval]\ncorpus = "docs"\nquery_sets = ["section-titles"]\n'
        'reference = ["fixed-400"]\nretrievers = ["bm25", "myret:down"]\n', encoding="utf-8")
    result = pytester.runpytest_inprocess(*INNER, "--update-baselines", "-p", "no:cacheprovider",
                                           "-p", "no:randomly", *NO_LANGSMITH,
                                           str(project / "pyproject.toml"))
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*strategy 'fixed-400', retriever 'down' failed: "
                                 "RuntimeError: the model server is down*",
                                 "*baselines NOT recorded for fixed-400 with down*"])
    entries = json.loads((project / "baselines" / "docs.json").read_text())["entries"]
    assert set(entries) == {"fixed-400|bm25|section-titles"}

def _windows(doc, bad=None):
    chunks = [Chunk(doc.id, s, min(s + 100, len(doc.text)), doc.text[s:s + 100])
              for s in range(0, len(doc.text), 100)]
    c = chunks[1]
    if bad == "past the end":
        chunks[-1] = Chunk(doc.id, chunks[-1].start, len(doc.text) + 5, chunks[-1].text)
    elif bad == "negative start":
        chunks[0] = Chunk(doc.id, -50, chunks[0].end, chunks[0].text)
    elif bad == "start after end":
        chunks[1] = Chunk(doc.id, c.end, c.start, "")
    elif bad == "overlap":
        chunks[1] = Chunk(doc.id, c.start - 10, c.end, doc.text[c.start - 10:c.end])
    elif bad == "another document":
        chunks[1] = Chunk("someother.md", c.start, c.end, c.text)
    elif bad == "no chunks":
        chunks = []
    elif bad == "rewritten":
        chunks[1] = Chunk(doc.id, c.start, c.end, "HEADER " + c.text)
    elif bad == "float offsets":
        chunks[1] = Chunk(doc.id, float(c.start), c.end, c.text)
    elif bad == "parent past the end":
        parent = Chunk(doc.id, 0, len(doc.text) + 9, doc.text)
        chunks = [Chunk(x.doc_id, x.start, x.end, x.text, parent=parent) for x in chunks]
    return chunks


@pytest.mark.parametrize("bad, broke", [
    ("past the end", "'ordered'"), ("negative start", "'ordered'"),
    ("start after end", "'ordered'"), ("overlap", "'overlap'"),
    ("another document", "names document 'someother.md'"), ("no chunks", "no chunk for"),
    ("rewritten", "'slice'"), ("float offsets", "'types': #1 has offsets 100.0, 200"),
    ("parent past the end", "'parent': a parent chunk \\[0,")])
def test_every_break_of_the_contract_fails_the_strategy_naming_the_document(bad, broke):
    split = strategies.Strategy("broken", "external", lambda doc: _windows(doc, bad),
                                {"size": 100, "overlap": 0})
    strategies.register(split, replace=True)
    try:
        evaluation = Evaluation(tiny_corpus(), query_specs=["section-titles"],
                                result_cache=False)
        with pytest.raises(StrategyFailed, match=f"strategy 'broken' failed on m0.html: .*{broke}"):
            evaluation.chunked("broken", "section-titles")
        # asked again (another retriever's test), the same failure without splitting again
        with pytest.raises(StrategyFailed):
            evaluation.result("broken", "bm25", "section-titles")
        outcome = evaluation.run_task(("section-titles", "broken"), ["bm25", "lsa"])
        assert [o.retriever for o in outcome] == [None, None]
    finally:
        strategies.unregister("broken")
    # the same windows, kept: scored
    fine = strategies.Strategy("fine", "external", _windows, {"size": 100, "overlap": 0})
    strategies.register(fine, replace=True)
    try:
        Evaluation(tiny_corpus(), query_specs=["section-titles"],
                   result_cache=False).chunked("fine", "section-titles")
    finally:
        strategies.unregister("fine")


def test_a_retriever_that_raises_fails_its_own_results_only():
    from chunkeval import retrieval

    def broken(texts):
        raise RuntimeError("the model server is down")

    retrieval.register(retrieval.Retriever("down", "1", embed=broken), replace=True)
    try:
        evaluation = Evaluation(tiny_corpus(), query_specs=["section-titles"],
                                result_cache=False)
        doc = evaluation.run(["fixed-200"], ["bm25", "down"], progress=False)
        assert [r.retriever for r in doc.results] == ["bm25"]
        [f] = doc.failures
        assert (f.strategy, f.retriever) == ("fixed-200", "down")
        assert f.message == ("strategy 'fixed-200', retriever 'down' failed: RuntimeError: "
                             "the model server is down")
        assert "raise RuntimeError" in f.detail
        again = Results.from_json(doc.to_json(), "results.json")
        assert again.failures == doc.failures
    finally:
        retrieval.unregister("down")


def test_two_splitters_of_one_name_are_refused_naming_both(project, capsys):
    (project / "other.py").write_text(
        "from mysplit import crashy\n\n\ndef fixed(doc):\n    return crashy(doc)\n\n\n"
        "fixed.strategy_name = 'fixed-400'\n", encoding="utf-8")
    assert main(["strategies", "--splitter", "mysplit:crashy", "--splitter",
                 "other:crashy"]) == 2
    err = capsys.readouterr().err
    assert "'mysplit:crashy' and 'other:crashy' are both named 'crashy'" in err
    assert main(["strategies", "--splitter", "other:fixed"]) == 2
    assert "'fixed-400' is the name of a built-in strategy" in capsys.readouterr().err
    assert strategies.is_builtin("fixed-400")  # not taken over


def test_the_built_in_retrievers_cannot_be_taken_over():
    from chunkeval import retrieval
    with pytest.raises(ConfigError, match="'bm25' is the name of a built-in retriever"):
        retrieval.register(retrieval.Retriever("bm25", "9", embed=lambda t: None), replace=True)


# -- the embedding cache ---------------------------------------------------------------------

def _letters(texts):
    return np.array([[t.count(c) for c in "abcdefgh"] for t in texts], dtype=np.float32)


def test_vectors_of_another_computation_are_not_served(cache_dir):
    calls = []

    def embed(texts):
        calls.append(len(texts))
        return _letters(texts)

    embedding.EmbeddingCache("mine", "1-va").embed(["abc", "bcd"], embed)
    embedding.EmbeddingCache("mine", "1-va").embed(["abc", "bcd"], embed)
    assert calls == [2]  # the same folder (what it computes): from the cache
    embedding.EmbeddingCache("mine", "1-vb").embed(["abc", "bcd"], embed)
    assert calls == [2, 2]  # another fingerprint, the same version: embedded again


@pytest.mark.parametrize("damage", ["cut short", "NaN vectors", "another width"])
def test_a_damaged_shard_is_a_miss_and_is_removed(cache_dir, damage):
    cache = embedding.EmbeddingCache("mine", "1")
    cache.embed(["abc", "bcd"], _letters)
    [shard] = list(cache_dir.rglob("*.npz"))
    if damage == "cut short":
        shard.write_bytes(shard.read_bytes()[:50])
    else:
        with np.load(shard) as z:
            keys, vectors = z["keys"], z["vectors"]
        vectors = np.full_like(vectors, np.nan) if damage == "NaN vectors" else vectors[:, :3]
        np.savez(shard.with_suffix(""), keys=keys, vectors=vectors)  # writes shard itself
    again = embedding.EmbeddingCache("mine", "1")
    got = again.embed(["abc", "bcd"], _letters)
    assert again.misses == 2 and np.isfinite(got).all() and got.shape == (2, 8)
    assert shard not in list(cache_dir.rglob("*.npz"))  # the damaged one is gone


def test_nan_vectors_are_refused_with_the_retrievers_name(cache_dir):
    cache = embedding.EmbeddingCache("mine", "1")
    with pytest.raises(Exception, match="embedding function of 'mine' returned NaN"):
        cache.embed(["abc"], lambda texts: np.full((len(texts), 4), np.nan))


# -- smaller ways a wrong input went through -------------------------------------------------

def test_a_fractional_k_is_refused_not_cut_down(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.chunkeval]\nk = 2.7\n", encoding="utf-8")
    assert main(["run"]) == 2
    assert "[tool.chunkeval] k: expected a whole number, got 2.7" in capsys.readouterr().err


def test_every_member_of_a_multi_member_gzip_page_is_read(tmp_path, cache_dir):
    import gzip

    from chunkeval.corpus import load_corpus
    docs = tmp_path / "docs"
    docs.mkdir()
    page = "<html><body><h1>T</h1><h2>First part</h2><p>{}</p></body></html>"
    whole = page.format("alpha beta gamma " * 5).encode()
    half = len(whole) // 2
    (docs / "p.html.gz").write_bytes(gzip.compress(whole[:half]) + gzip.compress(whole[half:]))
    corpus = load_corpus(str(docs), use_cache=False)
    assert corpus["p.html.gz"].text.count("alpha beta gamma") == 5
    assert corpus.problems == ()


def test_a_missing_query_file_says_so(tmp_path, capsys, docs):
    assert main(["corpus", "info", "--corpus", str(docs), "--queries",
                 str(tmp_path / "questions.jsonl")]) == 2
    assert "questions.jsonl: no such file" in capsys.readouterr().err


def test_init_names_a_folder_called_like_a_built_in_corpus_as_a_path(tmp_path, monkeypatch):
    from chunkeval import config
    from helpers import write_manuals
    monkeypatch.chdir(tmp_path)
    write_manuals(tmp_path / "debian-en")
    assert main(["init"]) == 0
    assert 'corpus = "./debian-en"' in (tmp_path / "pyproject.toml").read_text()
    assert config.load().corpus == str(tmp_path.resolve() / "debian-en")


def test_cache_clear_says_what_it_could_not_remove(cache_dir, monkeypatch, capsys):
    embedding.EmbeddingCache("mine", "1").embed(["abc"], _letters)
    monkeypatch.setattr(embedding.shutil, "rmtree", lambda *a, **k: None)  # as if read-only
    assert main(["cache", "clear"]) == 2
    err = capsys.readouterr().err
    assert "could not be removed" in err and str(embedding.root()) in err


# -- one odd entry in a documents folder -----------------------------------------------------

def test_odd_entries_of_a_folder_are_skipped_each_with_a_warning(manuals, tmp_path):
    import os

    from chunkeval.corpus import load_corpus
    docs = manuals(parts=2)
    (docs / "loop-a.md").symlink_to(docs / "loop-b.md")
    (docs / "loop-b.md").symlink_to(docs / "loop-a.md")
    (docs / "ring").symlink_to(docs / "ring2")
    (docs / "ring2").symlink_to(docs / "ring")
    os.mkfifo(docs / "pipe.md")  # reading it would block for ever
    (docs / "forged\nchunkeval: all good.md").write_text("# Title\n\nText.\n")
    with open(os.fsencode(str(docs)) + b"/caf\xe9.md", "wb") as f:
        f.write(b"# Caf\n\nNot UTF-8 in its name.\n")
    (docs / "caf\\xe9.md").write_text("# Literal\n\nA backslash in its name.\n")
    corpus = load_corpus(str(docs), use_cache=False)
    said = "\n".join(str(p) for p in corpus.problems)
    assert "loop-a.md: cannot be read" in said and "loop-b.md: cannot be read" in said
    assert "pipe.md: not a regular file (a FIFO, socket or device); skipped" in said
    assert "forged\\x0achunkeval: all good.md" in said and "\nchunkeval: all good" not in said
    assert "like " in said and "caf\\xe9.md" in said  # the escaped and the literal name
    assert {"part0.html", "part1.html"} <= {d.id for d in corpus.documents}
    assert sum(d.id == "caf\\xe9.md" for d in corpus.documents) == 1


def test_a_query_file_is_size_bounded(docs, tmp_path, capsys, monkeypatch):
    from chunkeval.queries import jsonl
    monkeypatch.setattr(jsonl, "MAX_FILE_MB", 0.001)
    big = tmp_path / "q.jsonl"
    big.write_text('{"id": "a", "query": "q", "doc": "page00", "answer": "' + "x" * 5000
                   + '"}\n', encoding="utf-8")
    assert main(["corpus", "info", "--corpus", str(docs), "--queries", str(big)]) == 2
    assert "q.jsonl: 5,057 bytes, over the 1,000-byte limit on a query file" in \
        capsys.readouterr().err


def test_a_failing_part_of_a_hybrid_fails_the_hybrid_naming_the_part():
    from chunkeval import retrieval

    def broken(texts):
        raise RuntimeError("the model server is down")

    retrieval.register(retrieval.Retriever("down", "1", embed=broken), replace=True)
    retrieval.register(retrieval.Retriever("mix", "1", fuses=("bm25", "down")), replace=True)
    try:
        evaluation = Evaluation(tiny_corpus(), query_specs=["section-titles"],
                                result_cache=False)
        doc = evaluation.run(["fixed-200"], ["bm25", "mix"], progress=False)
        assert [r.retriever for r in doc.results] == ["bm25"]
        [f] = doc.failures
        assert f.retriever == "mix"
        assert f.message == ("strategy 'fixed-200', retriever 'mix' failed: its part 'down': "
                             "RuntimeError: the model server is down")
    finally:
        retrieval.unregister("mix")
        retrieval.unregister("down")


def test_an_outside_retriever_is_identified_by_the_module_that_named_it(tmp_path, monkeypatch):
    """An embedding function that is a library's (a partial of numpy's) is still told apart
    by the source of the module the project named: its code changed, its results did."""
    import hashlib

    from chunkeval import retrieval
    from chunkeval.evaluate import _described
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    module = tmp_path / "myvectors.py"
    module.write_text("import functools\nimport numpy as np\n\n"
                      "vectors = functools.partial(np.ones, dtype=np.float32)\n\n\n"
                      "def embed(texts):\n    return vectors((len(texts), 4))\n\n\n"
                      "embed_too = np.vectorize(len)\n", encoding="utf-8")
    try:
        [r] = retrieval.load_retriever("myvectors:embed_too")
        digest = hashlib.sha256(module.read_bytes()).hexdigest()
        assert r.code == digest and _described(r.name)["code"] == digest
    finally:
        sys.modules.pop("myvectors", None)
        retrieval.unregister("embed_too")


def test_calibration_moves_boundaries_past_repeated_table_headers(tmp_path, cache_dir):
    """A structure-aware strategy repeats a table's header in each part; calibration's
    shifted variants move the slices around those parts on purpose and are not failed for
    it (the strategy itself keeps its contract)."""
    from chunkeval.corpus import load_corpus
    from chunkeval.gate import calibrate
    from chunkeval.results import Settings
    for p in range(3):
        rows = "\n".join(f"| `opt{p}_{i}` | `str` | Sets the value number {i} of page {p} |"
                         for i in range(25))
        (tmp_path / f"p{p}.md").write_text(
            f"# Page {p}\n\n## Options of tool {p}\n\nThe tool {p} reads these options.\n\n"
            f"| Option | Type | Meaning |\n|---|---|---|\n{rows}\n\n## Running tool {p}\n\n"
            + f"Run the tool {p} with care and read its output. " * 20 + "\n",
            encoding="utf-8")
    evaluation = Evaluation(load_corpus(str(tmp_path)), Settings(), ["section-titles"],
                            result_cache=False)
    doc = calibrate.run_trials(evaluation, "structure-400", ["bm25"], trials=20, drops=[0.2],
                               drop_trials=3, progress=False)
    assert len(doc["trials"]) == 23
    assert [c for c in evaluation.chunked("structure-400", "section-titles").handed
            if c.text.startswith("| Option")][1:]  # the header was repeated: the case is real


def test_a_stale_width_file_is_corrected_by_the_next_embedding(cache_dir):
    cache = embedding.EmbeddingCache("mine", "1")
    cache.embed(["abc", "bcd"], _letters)
    [width] = list(cache_dir.rglob(embedding.WIDTH_FILE))
    for shard in cache_dir.rglob("*.npz"):
        shard.unlink()
    width.write_text("3")  # left by an older embedding function
    embedding.EmbeddingCache("mine", "1").embed(["abc", "bcd"], _letters)
    assert width.read_text() == "8"
    again = embedding.EmbeddingCache("mine", "1")
    again.embed(["abc", "bcd"], _letters)
    assert again.misses == 0  # the shards written since are served, not discarded
