"""The chunk cache: a warm run and an unchanged strategy cost neither chunking nor hashing;
a changed splitter file re-chunks that strategy only; what cannot be identified is not kept."""

import sys

import pytest

from chunkeval import store, strategies
from chunkeval.evaluate import Evaluation, chunks_hash
from chunkeval.results import Settings
from helpers import tiny_corpus

SPEC = "section-titles"
SPLITTER = '''\
from chunkeval import Chunk

CALLS = []


def windows(doc):
    CALLS.append(doc.id)
    step = {step}
    return [Chunk(doc.id, s, min(s + step, len(doc.text)), doc.text[s:s + step])
            for s in range(0, len(doc.text), step)]
'''


@pytest.fixture
def splitter(tmp_path, cache_dir, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)

    def write(step: int):
        sys.modules.pop("cachedsplit", None)
        (tmp_path / "cachedsplit.py").write_text(SPLITTER.format(step=step), encoding="utf-8")
        [s] = strategies.load_splitter("cachedsplit:windows", tmp_path)
        return sys.modules["cachedsplit"].CALLS

    yield write
    sys.modules.pop("cachedsplit", None)
    strategies.unregister("windows")


def _evaluation(**kw) -> Evaluation:
    return Evaluation(tiny_corpus(), Settings(), [SPEC], **kw)


def test_a_project_splitter_is_chunked_every_run_and_its_results_reused_by_content(splitter):
    calls = splitter(150)
    first = _evaluation().result("windows", "bm25", SPEC)
    n = len(calls)
    assert n == len(tiny_corpus()) and not list(store.CHUNKS.root().rglob("*.json.gz"))
    again = _evaluation().result("windows", "bm25", SPEC)
    assert len(calls) == 2 * n  # chunked again: its code may read what no key can see
    assert again.reused and again.per_query == first.per_query  # same chunks, same result
    calls = splitter(120)
    changed = _evaluation().result("windows", "bm25", SPEC)
    assert calls and not changed.reused and changed.chunks.hash != first.chunks.hash


def test_a_warm_result_needs_no_chunks_at_all(cache_dir, monkeypatch):
    fresh = _evaluation().result("fixed-200", "bm25", SPEC)
    monkeypatch.setattr(Evaluation, "_chunk", _refuse)
    warm = _evaluation()
    reused = warm.result("fixed-200", "bm25", SPEC)
    assert reused.reused and not warm._chunked  # nothing chunked or read
    assert reused.per_query == fresh.per_query and reused.chunks == fresh.chunks


def _refuse(*args):
    raise AssertionError("chunked, where the cache holds the chunks")


@pytest.mark.parametrize("name", ["structure-400", "parent-child-r200-s800", "lc-html-semantic"])
def test_built_in_chunks_read_back_equal(cache_dir, name):
    made = _evaluation().chunked(name, SPEC)
    assert list(store.CHUNKS.root().rglob("*.json.gz"))
    read = _evaluation().chunked(name, SPEC)
    assert read.searched == made.searched and read.handed == made.handed
    assert chunks_hash(read.searched, read.handed) == made.stats.hash
    assert read.rewritten == made.rewritten and read.cut == made.cut
    assert (read.parent_of is None) == (made.parent_of is None)
    if made.parent_of is not None:
        assert (read.parent_of == made.parent_of).all()


def test_a_strategy_registered_in_code_is_not_kept(cache_dir):
    from chunkeval.model import Chunk
    s = strategies.Strategy("inline", "external",
                            lambda doc: [Chunk(doc.id, 0, len(doc.text), doc.text)])
    strategies.register(s, replace=True)
    try:
        _evaluation().chunked("inline", SPEC)
        assert not list(store.CHUNKS.root().rglob("*.json.gz"))
    finally:
        strategies.unregister("inline")


def _counting(monkeypatch) -> list:
    calls = []
    real = Evaluation._chunk

    def chunk(self, name, spec):
        calls.append(name)
        return real(self, name, spec)
    monkeypatch.setattr(Evaluation, "_chunk", chunk)
    return calls


def test_a_damaged_entry_is_chunked_again(cache_dir, monkeypatch):
    calls = _counting(monkeypatch)
    made = _evaluation().chunked("fixed-200", SPEC)
    [entry] = list(store.CHUNKS.root().rglob("*.json.gz"))
    entry.write_bytes(entry.read_bytes()[:40])
    again = _evaluation().chunked("fixed-200", SPEC)
    assert calls == ["fixed-200"] * 2 and again.searched == made.searched


def test_a_built_in_strategys_code_digest_reads_the_modules_its_split_reaches():
    # The chunk cache's key holds this digest: were it of no file, an edit to a built-in
    # strategy in a checkout would be served the chunks of the code before the edit.
    from chunkeval.model import digest
    from chunkeval.store.keys import imported_files
    from chunkeval.strategies.identity import strategy_code

    fixed, recursive = strategies.get("fixed-400"), strategies.get("recursive-400-ov40")
    assert strategy_code(fixed) != digest([])
    assert strategy_code(fixed) != strategy_code(recursive)
    assert "strategies/fixed.py" in imported_files("chunkeval.strategies.fixed")
