"""Verdicts against a baseline: real regressions fail, noise and small effects do not."""

import json

import numpy as np
import pytest

from chunkeval.baselines import Baseline, BaselineError, Tolerance, compare, dumps, entry_from_result

COMPLETE_AT = 0.95


def _result(coverage, doc_hit=None, name="s"):
    coverage = np.clip(np.asarray(coverage, dtype=float), 0, 1)
    doc_hit = np.ones(len(coverage), bool) if doc_hit is None else doc_hit
    return {"strategy": name, "retriever": "bm25", "query_set": "qs",
            "metrics": {"cut_rate": {"value": 0.1}}, "chunks": {"count": 10},
            "per_query": [{"coverage": float(c), "budget_coverage": float(c), "doc_hit": bool(h)}
                          for c, h in zip(coverage, doc_hit)]}


def _statuses(new, old, tol=Tolerance()):
    entry = entry_from_result(_result(old), COMPLETE_AT)
    return {v.metric: v.status for v in compare(_result(new), entry, COMPLETE_AT, tol)}


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
    with pytest.raises(ValueError, match="queries"):
        _statuses(OLD[:10], OLD)


def test_incomparable_baselines_say_how_to_rebaseline(tmp_path):
    b = Baseline(tmp_path / "c.json")
    corpus = {"name": "c", "fingerprint": "aaa"}
    settings = {"k": 5, "budget": 2000, "shingle": 8, "complete_at": 0.95,
                "max_queries": 800, "seed": 0}
    b.record(corpus, settings, {"qs": {"fingerprint": "q1"}}, _result(OLD))
    b.check_comparable(corpus, settings, "qs", "q1")
    for args in [({"name": "c", "fingerprint": "bbb"}, settings, "qs", "q1"),
                 (corpus, {**settings, "k": 10}, "qs", "q1"),
                 (corpus, settings, "qs", "q2")]:
        with pytest.raises(BaselineError, match="--update-baselines"):
            b.check_comparable(*args)


def test_file_is_stable_sorted_and_round_trips(tmp_path):
    b = Baseline(tmp_path / "c.json")
    b.record({"name": "c", "fingerprint": "f"}, {"k": 5, "complete_at": 0.95},
             {"qs": {"fingerprint": "q"}}, _result(OLD[:5]))
    path = b.save()
    text = path.read_text(encoding="utf-8")
    assert text == dumps(json.loads(text))
    assert Baseline.load(path).entry("s", "bm25", "qs")["per_query"]["coverage"] == \
        [round(float(x), 4) for x in OLD[:5]]
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    with pytest.raises(Exception, match="bad.json"):
        Baseline.load(tmp_path / "bad.json")


def test_rerecording_drops_entries_of_a_changed_query_set(tmp_path):
    b = Baseline(tmp_path / "c.json")
    corpus = {"name": "c", "fingerprint": "f"}
    settings = {"k": 5, "complete_at": 0.95}
    b.record(corpus, settings, {"qs": {"fingerprint": "q1"}}, _result(OLD, name="a"))
    b.record(corpus, settings, {"qs": {"fingerprint": "q1"}}, _result(OLD, name="b"))
    b.record(corpus, settings, {"qs": {"fingerprint": "q2"}}, _result(OLD, name="a"))
    assert b.entry("a", "bm25", "qs") and b.entry("b", "bm25", "qs") is None
    b.record(corpus, {**settings, "k": 10}, {"qs": {"fingerprint": "q2"}}, _result(OLD, name="b"))
    assert list(b.data["entries"]) == ["b|bm25|qs"]


def test_only_gated_metrics_regress_and_a_larger_family_widens_the_interval():
    gone = np.zeros(len(OLD), bool)  # the gold document left the top k everywhere
    entry = entry_from_result(_result(OLD), COMPLETE_AT)
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


def test_rank_metrics_and_first_chunks_are_kept_and_compared_when_both_sides_have_them():
    result = _result(OLD)
    for q in result["per_query"]:
        q |= {"rr": 0.5, "ndcg": 0.25, "retrieved": [["d", 0, 10, 10]]}
    entry = entry_from_result(result, COMPLETE_AT)
    assert entry["per_query"]["first"][0] == "d:0:10" and entry["metrics"]["mrr_at_k"] == 0.5
    metrics = {v.metric for v in compare(result, entry, COMPLETE_AT, Tolerance())}
    assert {"mrr_at_k", "ndcg_at_k"} <= metrics
    old_entry = entry_from_result(_result(OLD), COMPLETE_AT)  # recorded before rank metrics
    assert "mrr_at_k" not in {v.metric for v in compare(result, old_entry, COMPLETE_AT, Tolerance())}
