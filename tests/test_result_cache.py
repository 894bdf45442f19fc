"""Results reused across runs: the result cache (store/entries.py) as Evaluation uses it."""

import json
import multiprocessing
import os

import pytest

from chunkeval import store, strategies
from chunkeval.evaluate import Evaluation
from chunkeval.executors import ProcessPool
from chunkeval.gate import calibrate
from chunkeval.results import Settings
from chunkeval.model import Chunk

from helpers import tiny_corpus, write_entry

SPEC = "section-titles"
# a window strategy, a parent-child one (handed parents), the LangChain one (rewritten texts)
NAMES = ["fixed-200", "parent-child-r200-s800", "lc-html-header"]
RETRIEVERS = ["bm25", "lsa", "hybrid"]


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CHUNKEVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(store.RESULTS_LIMIT_VAR, raising=False)
    return tmp_path / "cache"


def _evaluate(names=NAMES, retrievers=RETRIEVERS, settings=None, **kw) -> list[dict]:
    evaluation = Evaluation(tiny_corpus(), settings or Settings(), [SPEC], **kw)
    return [evaluation.result(s, r, SPEC).to_json() for s in names for r in retrievers]


def _comparable(result: dict) -> str:
    """The entry's JSON without what may differ between two evaluations."""
    return json.dumps({k: v for k, v in result.items()
                       if k not in ("seconds", "embeddings", "reused")}, ensure_ascii=False)


def _refuse_indexes(monkeypatch):
    def refuse(*args, **kw):
        raise AssertionError("an index was built although the result was cached")
    monkeypatch.setattr(Evaluation, "index", refuse)


def _stored() -> list:
    return sorted(store.results_root().glob("*/*.json.gz"))


def test_a_second_evaluation_reuses_every_result_and_builds_no_index(monkeypatch):
    first = _evaluate()
    assert not any(r["reused"] for r in first)
    assert len(_stored()) == len(NAMES) * len(RETRIEVERS)
    _refuse_indexes(monkeypatch)  # hybrids' parts included
    second = _evaluate()
    assert all(r["reused"] for r in second)
    assert [_comparable(r) for r in second] == [_comparable(r) for r in first]
    for a, b in zip(first, second):
        assert list(a) == list(b)  # the same keys in the same order
        assert b["embeddings"] == {"embedded": 0, "cached": 0}
        assert b["seconds"]["index"] == a["seconds"]["index"]  # the stored timings


def test_the_document_counts_reused_and_evaluated_results():
    names = ["fixed-200", "heading-h2"]
    one = Evaluation(tiny_corpus(), Settings(), [SPEC]).run(names, ["bm25"],
                                                            progress=False).to_json()
    assert one["result_cache"] == {"enabled": True, "reused": 0, "evaluated": 2}
    two = Evaluation(tiny_corpus(), Settings(), [SPEC]).run(
        names, ["bm25"], progress=False, executor=ProcessPool(2)).to_json()
    assert two["result_cache"] == {"enabled": True, "reused": 2, "evaluated": 0}
    assert [_comparable(r) for r in two["results"]] == [_comparable(r) for r in one["results"]]


def test_changed_chunks_are_evaluated_again_equal_chunks_under_another_name_are_not(
        monkeypatch):
    base = strategies.get("fixed-200")

    def mine(size):
        return strategies.Strategy("mine", "fixed", lambda doc: [
            Chunk(doc.id, s, min(s + size, len(doc.text)), doc.text[s:s + size])
            for s in range(0, len(doc.text), size)], {"size": size})
    try:
        strategies.register(mine(200), replace=True)
        first = _evaluate(["mine"], ["bm25"])[0]
        strategies.register(mine(300), replace=True)  # the same name, other chunks
        changed = _evaluate(["mine"], ["bm25"])[0]
        assert not changed["reused"]
        assert changed["chunks"]["hash"] != first["chunks"]["hash"]
        # an alias of fixed-200 with the same chunks reuses fixed-200's stored result
        _evaluate(["fixed-200"], ["bm25"])
        strategies.register(strategies.Strategy("alias", base.family, base.split, base.params),
                            replace=True)
        _refuse_indexes(monkeypatch)
        alias = _evaluate(["alias"], ["bm25"])[0]
        assert alias["reused"] and alias["strategy"] == "alias"
    finally:
        strategies.unregister("mine")
        strategies.unregister("alias")


def test_changed_settings_miss():
    assert not _evaluate(["fixed-200"], ["bm25"])[0]["reused"]
    assert not _evaluate(["fixed-200"], ["bm25"], Settings(k=3))[0]["reused"]
    assert not _evaluate(["fixed-200"], ["bm25"], Settings(budget=1000))[0]["reused"]
    assert _evaluate(["fixed-200"], ["bm25"], Settings(k=3))[0]["reused"]
    assert len(_stored()) == 3


@pytest.mark.parametrize("damage", ["cut", "garbage", "other key", "empty"])
def test_a_damaged_file_is_a_miss_and_is_written_again(damage, monkeypatch):
    first = _evaluate(["fixed-200"], ["bm25"])[0]
    [path] = _stored()
    raw = path.read_bytes()
    if damage == "cut":
        path.write_bytes(raw[:len(raw) // 2])
    elif damage == "garbage":
        path.write_bytes(b"not gzip at all")
    elif damage == "other key":  # valid, but stored for another key
        header, entry = store.RESULTS.read(path)
        write_entry(path, {**header, "key": "0" * 64}, entry)
    else:
        path.write_bytes(b"")
    again = _evaluate(["fixed-200"], ["bm25"])[0]
    assert not again["reused"]
    assert _comparable(again) == _comparable(first)
    assert store.RESULTS.read(path)[0]["key"] == path.name.split(".")[0]  # written again
    _refuse_indexes(monkeypatch)
    assert _evaluate(["fixed-200"], ["bm25"])[0]["reused"]


def test_off_reads_and_writes_nothing(monkeypatch):
    assert not _evaluate(["fixed-200"], ["bm25"], result_cache=False)[0]["reused"]
    assert not store.results_root().exists()
    _evaluate(["fixed-200"], ["bm25"])  # stored now
    before = {p: p.stat().st_mtime_ns for p in _stored()}
    off = Evaluation(tiny_corpus(), Settings(), [SPEC], result_cache=False)
    assert not off.result("fixed-200", "bm25", SPEC).reused
    assert off.document([off.result("fixed-200", "bm25", SPEC)], ["fixed-200"]).result_cache \
        == {"enabled": False, "reused": 0, "evaluated": 1}
    assert {p: p.stat().st_mtime_ns for p in _stored()} == before  # not even touched


def _entry(i: int) -> dict:
    return {"strategy": f"s{i}", "per_query": [os.urandom(1500).hex()]}  # ~3 KB gzipped


def test_the_size_bound_evicts_the_least_recently_used(monkeypatch):
    monkeypatch.setenv(store.RESULTS_LIMIT_VAR, str(20_000 / 2**20))  # about six entries
    keys = [f"{i:02x}" + "0" * 62 for i in range(12)]
    for i, key in enumerate(keys[:6]):
        store.store_result(key, _entry(i))
        os.utime(store.result_path(key), (1000 + i, 1000 + i))  # written in this order
    assert store.load_result(keys[0]) is not None  # used now: the newest
    for i, key in enumerate(keys[6:], 6):
        store.store_result(key, _entry(i))
    entries, size = store.RESULTS.usage()
    assert size <= 20_000 and 0 < entries < 12
    assert store.load_result(keys[0]) is not None  # kept: recently used
    assert store.load_result(keys[1]) is None  # the least recently used went first
    assert store.load_result(keys[-1]) is not None


def _write_all(root: str) -> None:
    os.environ["CHUNKEVAL_CACHE"] = root
    for i in range(30):
        key = f"{i:064x}"
        store.store_result(key, {"strategy": "s", "value": i, "per_query": list(range(500))})
        got = store.load_result(f"{(i * 7) % 30:064x}")  # reading what others write
        assert got is None or got["value"] == (i * 7) % 30


def test_concurrent_writers_of_the_same_entries_leave_valid_files(cache_dir):
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_write_all, args=(str(cache_dir),)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * 4
    for i in range(30):
        assert store.load_result(f"{i:064x}")["value"] == i
    assert len(_stored()) == 30
    assert not list(store.results_root().glob("*/.*.tmp"))  # no temporary file left


def test_calibration_variants_are_not_stored():
    evaluation = Evaluation(tiny_corpus(), Settings(), [SPEC])
    calibrate.run_trials(evaluation, "fixed-200", ["bm25"], trials=3, drops=[0.5],
                         drop_trials=2, progress=False)
    [path] = _stored()  # the calibrated strategy's own result only
    assert store.RESULTS.read(path)[1]["strategy"] == "fixed-200"


def test_the_code_digest_covers_every_module_a_result_is_computed_by():
    """A module that the result-computing modules import must be in the digest, or be one
    whose effect is hashed otherwise (chunks, query sets) or that does not touch numbers."""
    import ast
    from pathlib import Path

    from chunkeval.store import keys
    package = Path(keys.__file__).parent.parent
    covered = {p for pattern in keys.RESULT_MODULES for p in package.glob(pattern)}
    # the package face and version.py hold __version__, which is in the key itself; the rest
    # run tasks, load the project's modules (whose source is in the key), check chunks without
    # changing them, or are hashed as chunks and query-set fingerprints; the registry only
    # names them
    otherwise = {"__init__.py", "version.py", "strategies", "queries", "progress.py", "shard.py",
                 "executors.py", "errors.py", "outside.py", "invariants.py", "registry.py"}

    def target(path: Path, node: ast.ImportFrom) -> list[Path]:
        base = path.parent
        for _ in range(node.level - 1):
            base = base.parent
        names = [node.module] if node.module else [a.name for a in node.names]
        out = []
        for name in names:
            where = base.joinpath(*name.split("."))
            if where.with_suffix(".py").is_file():
                out.append(where.with_suffix(".py"))
            elif (where / "__init__.py").is_file():
                out.append(where / "__init__.py")
            else:  # a name the package itself defines
                out.append(base / "__init__.py")
        return out

    assert covered
    for path in sorted(covered):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level >= 1:
                for module in target(path, node):
                    rel = module.relative_to(package)
                    assert module in covered or rel.parts[0] in otherwise \
                        or rel.as_posix() in otherwise, (
                            f"{path.relative_to(package)} imports {rel}, which the result "
                            "cache's code digest does not cover")
