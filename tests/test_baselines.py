"""Verdicts against a baseline: real regressions fail, noise and small effects do not."""

import json
from dataclasses import replace

import numpy as np
import pytest

from chunkeval.errors import BaselineError, ConfigError
from chunkeval.gate.baselines import Baseline, Record, dumps
from chunkeval.gate.verdict import Tolerance, compare
from chunkeval.gate.entry import BaselineEntry, Noise
from helpers import a_result as _result

COMPLETE_AT = 0.95


def _entry(result):
    return BaselineEntry.from_result(result, COMPLETE_AT)


def _rec(corpus, settings, fingerprint, result, params=None):
    return Record(result.strategy, result.retriever, result.query_set,
                  BaselineEntry.from_result(result, settings["complete_at"], params), corpus,
                  settings, fingerprint)


def _statuses(new, old, tol=Tolerance()):
    return {v.metric: v.status for v in compare(_result(new), _entry(_result(old)), COMPLETE_AT,
                                                tol)}


OLD = np.random.default_rng(0).uniform(0, 1, 400)


def test_identical_run_is_ok():
    assert set(_statuses(OLD, OLD).values()) == {"ok"}


def test_clear_drop_regresses_and_clear_gain_is_reported():
    assert _statuses(OLD - 0.10, OLD)["recall_at_k"] == "regressed"
    assert _statuses(OLD + 0.10, OLD)["recall_at_k"] == "improved"


def test_noise_does_not_fail():
    rng = np.random.default_rng(1)
    shuffled = OLD.copy()
    moved = rng.choice(len(OLD), 20, replace=False)
    shuffled[moved] = rng.uniform(0, 1, 20)  # a handful of queries change, either way
    assert _statuses(shuffled, OLD)["recall_at_k"] == "ok"


def test_a_significant_but_tiny_drop_is_below_the_minimum_effect():
    tiny = OLD - 0.005  # every query down half a point: certain, and negligible
    assert _statuses(tiny, OLD)["recall_at_k"] == "ok"
    assert _statuses(tiny, OLD, Tolerance(min_effect=0.001))["recall_at_k"] == "regressed"


def test_query_count_mismatch_is_an_error():
    with pytest.raises(BaselineError, match="queries"):
        _statuses(OLD[:10], OLD)


def test_incomparable_baselines_say_how_to_rebaseline(tmp_path):
    b = Baseline(tmp_path / "c.json")
    corpus = {"name": "c", "fingerprint": "aaa"}
    settings = {"k": 5, "budget": 2000, "shingle": 8, "complete_at": 0.95,
                "max_queries": 800, "seed": 0}
    b.record(_rec(corpus, settings, "q1", _result(OLD)))
    b.check_comparable(corpus, settings, "qs", "q1")
    for args in [({"name": "c", "fingerprint": "bbb"}, settings, "qs", "q1"),
                 (corpus, {**settings, "k": 10}, "qs", "q1"),
                 (corpus, settings, "qs", "q2")]:
        with pytest.raises(BaselineError, match="--update-baselines"):
            b.check_comparable(*args)


def test_file_is_stable_sorted_and_round_trips(tmp_path):
    b = Baseline(tmp_path / "c.json")
    b.record(_rec({"name": "c", "fingerprint": "f"}, {"k": 5, "complete_at": 0.95}, "q",
                  _result(OLD[:5])))
    path = b.save()
    text = path.read_text(encoding="utf-8")
    assert text == dumps(json.loads(text))
    assert Baseline.load(path).entry("s", "bm25", "qs").per_query["coverage"] == \
        [round(float(x), 4) for x in OLD[:5]]
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    with pytest.raises(Exception, match="bad.json"):
        Baseline.load(tmp_path / "bad.json")


def test_rerecording_drops_entries_of_a_changed_query_set(tmp_path):
    b = Baseline(tmp_path / "c.json")
    corpus = {"name": "c", "fingerprint": "f"}
    settings = {"k": 5, "complete_at": 0.95}
    b.record(_rec(corpus, settings, "q1", _result(OLD, name="a")))
    b.record(_rec(corpus, settings, "q1", _result(OLD, name="b")))
    b.record(_rec(corpus, settings, "q2", _result(OLD, name="a")))
    assert b.entry("a", "bm25", "qs") and b.entry("b", "bm25", "qs") is None
    b.record(_rec(corpus, {**settings, "k": 10}, "q2", _result(OLD, name="b")))
    assert list(b.entries) == ["b|bm25|qs"]


# -- updating the file: lock, validation, identity, modes ---------------------------------

import math
import os
import threading
import time

from chunkeval.gate import baselines
from chunkeval.gate.baselines import update_file
from chunkeval.store import atomic_write
from chunkeval.errors import InputError

CORPUS = {"name": "c", "fingerprint": "f"}
SETTINGS = {"k": 5, "complete_at": COMPLETE_AT}


def _record(name, coverage=OLD, chunk_hash="0" * 64):
    result = _result(coverage, name=name)
    result.chunks = replace(result.chunks, hash=chunk_hash)
    return _rec(CORPUS, SETTINGS, "q", result, params={"size": 400})


def test_overlapping_updates_keep_both_runs_entries(tmp_path, monkeypatch):
    """Run A is held just before its rename; run B starts meanwhile. Without a lock B reads
    the old file and A's rename then wipes B's entries (or B's wipes A's)."""
    path = tmp_path / "c.json"
    update_file(path, [_record("old")])
    at_rename, go_on = threading.Event(), threading.Event()
    real_write = baselines.atomic_write

    def held_write(p, data, **kw):
        if threading.current_thread().name == "A":
            at_rename.set()
            assert go_on.wait(10)
        return real_write(p, data, **kw)

    monkeypatch.setattr(baselines, "atomic_write", held_write)
    a = threading.Thread(target=update_file, args=(path, [_record("a")]), name="A")
    b = threading.Thread(target=update_file, args=(path, [_record("b")]), name="B")
    a.start()
    assert at_rename.wait(10)
    b.start()
    b.join(0.5)
    assert b.is_alive()  # B waits for A's lock instead of reading the old file
    go_on.set()
    a.join(10)
    b.join(10)
    entries = json.loads(path.read_text(encoding="utf-8"))["entries"]
    assert set(entries) == {"old|bm25|qs", "a|bm25|qs", "b|bm25|qs"}


def _saved(tmp_path, mutate):
    b = Baseline(tmp_path / "c.json")
    for name in ("a", "b"):
        b.record(_record(name))
    path = b.save()
    data = json.loads(path.read_text(encoding="utf-8"))
    mutate(data)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize("where", ["coverage", "cut_rate", "metric"])
def test_a_nan_in_a_baseline_fails_loudly_naming_the_entry(tmp_path, where):
    def nan(data):
        e = data["entries"]["b|bm25|qs"]
        e["per_query"]["coverage"] = [1.0] * len(e["per_query"]["coverage"])
        if where == "coverage":
            e["per_query"]["coverage"][3] = math.nan
        elif where == "cut_rate":
            e["cut_rate"] = math.nan
        else:
            e["metrics"]["recall_at_k"] = math.nan
    path = _saved(tmp_path, nan)
    assert "NaN" in path.read_text(encoding="utf-8")
    said = r"c\.json: .*'b\|bm25\|qs'.* is nan, not a number in \[0, 1\]"
    with pytest.raises(InputError, match=said):
        Baseline.load(path)


@pytest.mark.parametrize("mutate, said", [
    (lambda d: d["entries"]["a|bm25|qs"].update(per_query=None),
     "per_query is missing or not an object"),
    (lambda d: d.pop("corpus"), "'corpus' is missing"),
    (lambda d: d.pop("settings"), "'settings' is missing"),
    (lambda d: d.pop("query_sets"), "'query_sets' is missing"),
    (lambda d: d.pop("schema"), "schema is None"),
    (lambda d: d["entries"]["a|bm25|qs"]["per_query"]["doc_hit"].pop(), "differ in length"),
    (lambda d: d["entries"]["b|bm25|qs"].update(cut_rate=1.5), "cut_rate is 1.5"),
    (lambda d: d["entries"]["b|bm25|qs"]["metrics"].pop("budget_recall"),
     "metrics.budget_recall is None"),
    (lambda d: d["entries"]["b|bm25|qs"]["per_query"]["coverage"].__setitem__(0, "1"),
     r"coverage\[0\] is '1'"),
])
def test_a_malformed_baseline_is_a_clear_error_naming_the_file(tmp_path, mutate, said):
    path = _saved(tmp_path, mutate)
    with pytest.raises(InputError, match=f"c\\.json: not a valid baseline file .*{said}"):
        Baseline.load(path)


@pytest.mark.parametrize("damage", ["cut in half", "no schema"])
def test_an_unreadable_baseline_is_replaced_only_when_asked(tmp_path, damage):
    path = tmp_path / "c.json"
    update_file(path, [_record(f"s{i}") for i in range(5)])
    text = path.read_text(encoding="utf-8")
    if damage == "cut in half":
        text = text[:len(text) // 2]
    else:
        data = json.loads(text)
        del data["schema"]
        text = json.dumps(data)
    path.write_text(text, encoding="utf-8")
    for mode in ("all", "failing"):
        with pytest.raises(InputError, match="c.json: .*--update-baselines=replace"):
            update_file(path, [_record("new")], mode)
        assert path.read_text(encoding="utf-8") == text
    done = update_file(path, [_record("new")], "replace")
    assert done.replaced and list(Baseline.load(path).entries) == ["new|bm25|qs"]


def test_a_file_of_another_corpus_of_the_same_name_is_never_overwritten(tmp_path):
    path = tmp_path / "debian-ja.json"
    update_file(path, [_record("a")], identity="debian-ja")
    before = path.read_bytes()
    with pytest.raises(BaselineError, match="recorded on the corpus 'debian-ja', not on this "
                                            "run's 'dir:/elsewhere/debian-ja'"):
        update_file(path, [_record("b")], identity="dir:/elsewhere/debian-ja")
    assert path.read_bytes() == before
    with pytest.raises(BaselineError, match="--chunkeval-baselines"):
        Baseline.load(path).check_comparable({**CORPUS, "identity": "dir:x"}, SETTINGS, "qs", "q")
    update_file(path, [_record("b")], "replace", identity="dir:/elsewhere/debian-ja")
    assert Baseline.load(path).data["corpus"]["identity"] == "dir:/elsewhere/debian-ja"


def test_corpus_identity_tells_same_named_corpora_apart(tmp_path):
    here = tmp_path / "repo" / "debian-ja"
    here.mkdir(parents=True)
    ids = {baselines.corpus_identity("debian-ja", tmp_path / "repo"),
           baselines.corpus_identity(str(here), tmp_path / "repo"),
           baselines.corpus_identity(str(tmp_path / "debian-ja"), tmp_path / "repo")}
    assert len(ids) == 3
    assert baselines.corpus_identity(str(here), tmp_path / "repo") == "dir:debian-ja"
    assert baselines.baseline_path(tmp_path, "a b").name == "a_b.json"
    assert baselines.baseline_path(tmp_path, "debian-ja") == tmp_path / "debian-ja.json"


def test_update_modes_rewrite_only_what_they_should(tmp_path):
    path = tmp_path / "c.json"
    update_file(path, [_record("same"), _record("worse"), _record("changed"), _record("aside")])
    entries = lambda: json.loads(path.read_text(encoding="utf-8"))["entries"]  # noqa: E731
    before = entries()
    assert before["same|bm25|qs"]["params"] == {"size": 400}
    assert before["same|bm25|qs"]["chunks_hash"] == "0" * 64
    shifted = np.clip(OLD + np.random.default_rng(5).normal(0, 0.001, len(OLD)), 0, 1)
    run = [_record("same", shifted), _record("worse", OLD - 0.2),
           _record("changed", shifted, chunk_hash="1" * 64), _record("new")]
    done = update_file(path, run, "failing")
    assert done.reasons == {"worse|bm25|qs": "failed", "changed|bm25|qs": "chunks changed",
                            "new|bm25|qs": "missing"}
    assert (done.recorded, done.unchanged, done.total) == (3, 1, 5)
    assert "3 entries recorded (1 chunks changed, 1 failed, 1 missing), 1 selected entries " \
           "passed and were kept as they were, 5 in the file" in done.describe()
    after = entries()
    assert after["same|bm25|qs"] == before["same|bm25|qs"]  # passed: left as it was
    assert after["aside|bm25|qs"] == before["aside|bm25|qs"]  # not selected: untouched
    assert after["worse|bm25|qs"] != before["worse|bm25|qs"]
    assert after["changed|bm25|qs"]["chunks_hash"] == "1" * 64
    update_file(path, [_record("same", shifted)], "all")
    assert entries()["same|bm25|qs"] != before["same|bm25|qs"]
    assert entries()["aside|bm25|qs"] == before["aside|bm25|qs"]
    with pytest.raises(ConfigError, match="unknown update mode"):
        update_file(path, [], "some")


def test_a_killed_writes_temp_file_is_removed_by_the_next_write(tmp_path):
    path = tmp_path / "c.json"
    old, fresh = tmp_path / ".c.json.abc123.tmp", tmp_path / ".c.json.def456.tmp"
    other = tmp_path / ".d.json.abc123.tmp"
    for p in (old, fresh, other):
        p.write_text("partial", encoding="utf-8")
    hour_ago = time.time() - 2 * 3600
    os.utime(old, (hour_ago, hour_ago))
    os.utime(other, (hour_ago, hour_ago))
    atomic_write(path, "{}")
    assert not old.exists()
    assert fresh.exists()  # may belong to a write still under way
    assert other.exists()  # another file's


def test_a_baseline_measured_with_another_length_is_not_compared(tmp_path):
    b = Baseline(tmp_path / "c.json")
    corpus = {"name": "c", "fingerprint": "aaa"}
    settings = {"k": 5, "budget": 2000, "shingle": 8, "complete_at": 0.95,
                "max_queries": 800, "seed": 0, "length": "chars"}
    b.record(_rec(corpus, settings, "q1", _result(OLD)))
    b.check_comparable(corpus, settings, "qs", "q1")
    with pytest.raises(BaselineError, match="length=chars.*length=tok:count"):
        b.check_comparable(corpus, {**settings, "length": "tok:count"}, "qs", "q1")
    # A baseline written before the setting existed was measured in characters.
    del b.data["settings"]["length"]
    b.check_comparable(corpus, settings, "qs", "q1")
    with pytest.raises(BaselineError, match="length"):
        b.check_comparable(corpus, {**settings, "length": "tok:count"}, "qs", "q1")


def test_only_gated_metrics_regress_and_a_larger_family_widens_the_interval():
    gone = np.zeros(len(OLD), bool)  # the gold document left the top k everywhere
    entry = _entry(_result(OLD))
    reported = Tolerance(gated=("recall_at_k", "budget_recall"))
    verdicts = {v.metric: v for v in compare(_result(OLD, gone), entry, COMPLETE_AT, reported)}
    assert verdicts["doc_hit_at_k"].diff == -1.0 and not verdicts["doc_hit_at_k"].gated
    assert verdicts["doc_hit_at_k"].status == "ok"
    gated = Tolerance(gated=("doc_hit_at_k",))
    assert {v.metric: v.status for v in compare(_result(OLD, gone), entry, COMPLETE_AT, gated)}[
        "doc_hit_at_k"] == "regressed"
    noisy = OLD + np.random.default_rng(2).normal(-0.03, 0.2, len(OLD))
    one, many = (next(v for v in compare(_result(noisy), entry, COMPLETE_AT, Tolerance(family=f))
                      if v.metric == "recall_at_k") for f in (1, 24))
    assert many.low < one.low and many.high > one.high
    assert many.confidence == pytest.approx(1 - 0.1 / 24)


def test_rank_metrics_and_best_chunks_are_kept_and_compared_when_both_sides_have_them():
    result = _result(OLD)
    for q in result.per_query:
        q.rr, q.ndcg, q.retrieved, q.best = 0.5, 0.25, [["d", 0, 10, 10], ["d", 10, 20, 10]], 1
    entry = _entry(result)
    assert entry.per_query["best"][0] == "d:10:20" and entry.metrics["mrr_at_k"] == 0.5
    assert entry.best == (entry.per_query["best"], True)
    # a file recorded with the first retrieved chunk instead still reads, saying so
    older = BaselineEntry.from_json({**entry.to_json(), "per_query": {
        **{k: v for k, v in entry.per_query.items() if k != "best"},
        "first": ["d:0:10"] * len(OLD)}}, "old.json")
    assert older.best == (["d:0:10"] * len(OLD), False)
    metrics = {v.metric for v in compare(result, entry, COMPLETE_AT, Tolerance())}
    assert {"mrr_at_k", "ndcg_at_k"} <= metrics
    old_entry = _entry(_result(OLD))  # recorded before rank metrics
    assert "mrr_at_k" not in {v.metric for v in compare(result, old_entry, COMPLETE_AT, Tolerance())}


def test_a_noise_floor_in_the_entry_judges_the_drop_and_is_validated():
    # 40 queries, per-query noise of +-0.1: the Bonferroni bootstrap (a family of 24) leaves
    # a 4-point drop unshown
    base = [0.5] * 40
    now = [0.46 + (0.1 if i % 2 else -0.1) for i in range(40)]
    result = _result(now)
    entry = _entry(_result(base))
    tol = Tolerance(gated=("recall_at_k",), family=24)
    (plain,) = [v for v in compare(result, entry, 0.95, tol) if v.metric == "recall_at_k"]
    assert plain.status == "ok" and plain.harmless is None
    floor = Noise(offset=0.0, sd=0.004, trials=20)
    (v,) = [v for v in compare(result, replace(entry, noise={"recall_at_k": floor}), 0.95, tol)
            if v.metric == "recall_at_k"]
    assert v.status == "regressed" and v.confidence == 0.95
    assert v.harmless[0] == pytest.approx(-tol.noise_margin(floor))
    assert "harmless variants" in v.describe() and "harmless" in v.to_json()
    # a wide floor (re-chunking is that noisy) lets the same drop pass
    wide = replace(floor, sd=0.03)
    (v,) = [v for v in compare(result, replace(entry, noise={"recall_at_k": wide}), 0.95, tol)
            if v.metric == "recall_at_k"]
    assert v.status == "ok"
    good = entry.to_json()
    floor_json = floor.to_json()
    BaselineEntry.from_json({**good, "noise": {"recall_at_k": floor_json}}, "b.json")
    with pytest.raises(InputError, match="trials"):
        BaselineEntry.from_json({**good, "noise": {"recall_at_k": {**floor_json, "trials": 1}}},
                                "b.json")
    with pytest.raises(InputError, match="not a metric"):
        BaselineEntry.from_json({**good, "noise": {"recal": floor_json}}, "b.json")
