"""The evaluation stage: a results document anyone can recompute from its spans."""

import json

import numpy as np
import pytest

from chunkeval.evaluate import Evaluation, _merge_into_parents
from chunkeval.executors import ProcessPool
from chunkeval.scoring import coverage_of
from chunkeval.results import Settings
from helpers import tiny_corpus

NAMES = ["fixed-200", "recursive-200", "heading-h2", "structure-400", "lc-html-header",
         "parent-child-r200-s800"]


@pytest.fixture(scope="module")
def results() -> tuple[Evaluation, dict]:
    evaluation = Evaluation(tiny_corpus(), Settings(), ["section-titles"])
    return evaluation, evaluation.run(NAMES, ["bm25", "lsa"], progress=False).to_json()


def test_every_strategy_and_retriever_has_a_result(results):
    _, doc = results
    assert {(r["strategy"], r["retriever"]) for r in doc["results"]} == {
        (s, r) for s in NAMES for r in ["bm25", "lsa"]}
    for r in doc["results"]:
        assert set(r["metrics"]) >= {"recall_at_k", "budget_recall", "complete_rate",
                                     "doc_hit_at_k", "precision", "iou", "cut_rate"}
        assert all(0 <= r["metrics"][m]["value"] <= 1 for m in ("recall_at_k", "budget_recall"))
        assert set(r["seconds"]) == {"split", "index", "search"}
    json.dumps(doc)  # the document is plain JSON


def test_recall_recomputes_from_the_spans(results):
    evaluation, doc = results
    k = doc["settings"]["k"]
    view = evaluation.query_set("section-titles").view
    gold = {q.id: q for q in evaluation.query_set("section-titles").queries}
    rewritten = 0
    for r in doc["results"]:
        recomputed = []
        for pq in r["per_query"]:
            q = gold[pq["id"]]
            texts = [r["rewritten"].get(f"{d}:{s}:{e}", view[d].text[s:e])
                     for d, s, e, _ in pq["retrieved"][:k] if d == q.doc_id]
            value = coverage_of(q.answer, texts)
            assert value == pytest.approx(pq["coverage"], abs=1e-6), (r["strategy"], q.id)
            recomputed.append(value)
        assert np.mean(recomputed) == pytest.approx(r["metrics"]["recall_at_k"]["value"])
        rewritten += len(r["rewritten"])
    assert rewritten  # the LangChain splitter's output is carried, not only slices


def test_parent_child_hands_each_parent_once_in_child_order():
    children = np.array([[4, 5, 1, 4, 0, -1], [2, 3, -1, -1, -1, -1]])
    parent_of = np.array([0, 0, 1, 1, 2, 2])
    assert _merge_into_parents(children, parent_of, 3).tolist() == [[2, 0, -1], [1, -1, -1]]


def test_parallel_run_gives_the_same_document():
    names = ["fixed-200", "heading-h2"]
    # without the result cache: another test's process may store these results meanwhile
    one = Evaluation(tiny_corpus(), Settings(), ["section-titles"], result_cache=False).run(
        names, ["bm25"], progress=False).to_json()
    two = Evaluation(tiny_corpus(), Settings(), ["section-titles"], result_cache=False).run(
        names, ["bm25"], progress=False, executor=ProcessPool(2)).to_json()
    for doc in (one, two):
        for r in doc["results"]:
            r.pop("seconds")
    assert one == two


def test_strategies_and_retrievers_are_handed_in_as_objects_not_registered():
    import dataclasses

    from chunkeval import retrieval, strategies
    from chunkeval.gate.calibrate import run_trials

    fixed = strategies.get("fixed-200")
    mine = dataclasses.replace(fixed, name="mine", identity=None)
    words = dataclasses.replace(retrieval.get("bm25"), name="words")
    by_name = Evaluation(tiny_corpus(), Settings(), ["section-titles"], result_cache=False)
    handed = Evaluation(tiny_corpus(), Settings(), ["section-titles"], result_cache=False,
                        strategies=[mine], retrievers=[words])
    doc = handed.run([mine, "fixed-200"], ["words", "bm25"], progress=False).to_json()
    assert "mine" not in strategies.names(all=True)
    assert "words" not in retrieval.names(all=True)
    rows = {(r["strategy"], r["retriever"]): r for r in doc["results"]}
    expected = by_name.result("fixed-200", "bm25", "section-titles").to_json()
    assert rows[("mine", "words")]["metrics"] == expected["metrics"]
    assert doc["strategies"]["mine"]["family"] == fixed.family
    # another object under a name already evaluated is evaluated afresh
    other = dataclasses.replace(fixed, name="mine", split=lambda doc: fixed.split(doc)[:1])
    assert handed.chunked(other, "section-titles").stats.count < \
        handed.chunked("fixed-200", "section-titles").stats.count
    # calibration hands its variants in: none is ever registered
    before = strategies.names(all=True)
    trials = run_trials(by_name, fixed, ["bm25"], trials=2, drops=(0.5,), drop_trials=1,
                        progress=False)
    assert len(trials["trials"]) == 3 and strategies.names(all=True) == before
    assert not any("~" in name for name in by_name._strategies)
