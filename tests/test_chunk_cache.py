"""The chunk cache: a warm run and an unchanged strategy cost neither chunking nor hashing;
a changed splitter file re-chunks that strategy only; what cannot be identified is not kept."""

import sys

import pytest

from chunkeval import cache, strategies
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


def test_a_project_splitter_is_chunked_once_until_its_file_changes(splitter):
    calls = splitter(150)
    first = _evaluation().chunked("windows", SPEC)
    assert len(calls) == len(tiny_corpus())
    again = _evaluation().chunked("windows", SPEC)
    assert len(calls) == len(tiny_corpus())  # read from the chunk cache
    assert again.searched == first.searched and again.stats == first.stats
    calls = splitter(120)  # the module's source changed
    changed = _evaluation().chunked("windows", SPEC)
    assert calls and changed.stats.hash != first.stats.hash


def test_a_warm_result_needs_no_chunks_at_all(splitter):
    calls = splitter(150)
    fresh = _evaluation().result("windows", "bm25", SPEC)
    n = len(calls)
    warm = _evaluation()
    reused = warm.result("windows", "bm25", SPEC)
    assert reused.reused and len(calls) == n and not warm._chunked  # nothing chunked or read
    assert reused.per_query == fresh.per_query and reused.chunks == fresh.chunks


@pytest.mark.parametrize("name", ["structure-400", "parent-child-r200-s800", "lc-html-semantic"])
def test_built_in_chunks_read_back_equal(cache_dir, name):
    made = _evaluation().chunked(name, SPEC)
    assert list(cache.CHUNKS.root().rglob("*.json.gz"))
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
        assert not list(cache.CHUNKS.root().rglob("*.json.gz"))
    finally:
        strategies.unregister("inline")


def test_a_damaged_entry_is_chunked_again(splitter):
    calls = splitter(150)
    made = _evaluation().chunked("windows", SPEC)
    [entry] = list(cache.CHUNKS.root().rglob("*.json.gz"))
    entry.write_bytes(entry.read_bytes()[:40])
    n = len(calls)
    again = _evaluation().chunked("windows", SPEC)
    assert len(calls) == 2 * n and again.searched == made.searched


def test_editing_one_built_in_module_re_chunks_only_the_strategies_using_it(monkeypatch):
    from chunkeval import evaluate
    names = ["fixed-400", "recursive-400-ov40", "parent-child-r200-s800", "heading-h2",
             "lc-html-header", "structure-400"]
    before = {n: evaluate._strategy_code(strategies.get(n)) for n in names}
    real = evaluate._file_digest
    monkeypatch.setattr(evaluate, "_file_digest",
                        lambda rel: "edited" if rel == "strategies/recursive.py" else real(rel))
    changed = {n for n in names if evaluate._strategy_code(strategies.get(n)) != before[n]}
    # parent-child holds a recursive strategy for its children
    assert {"recursive-400-ov40", "parent-child-r200-s800"} <= changed
    assert {"fixed-400", "heading-h2", "lc-html-header"}.isdisjoint(changed)
