"""The seed's findings checked on crafted results documents."""

from __future__ import annotations

import numpy as np
import pytest

from chunkeval.errors import UnknownName
from chunkeval.report.findings import Finding, findings, paired_difference
from helpers import make_results, rows_of, typed


def by_name(doc: dict, query_set: str | None = None) -> dict[str, Finding]:
    return {f.name: f for f in findings(typed(doc), query_set)}


def set_budget(doc: dict, strategy: str, value: float) -> None:
    for row in rows_of(doc, strategy):
        row["metrics"]["budget_recall"]["value"] = value
        row["budget_curve"]["2000"]["value"] = value


def test_all_four_hold_and_quote_their_numbers():
    got = by_name(make_results())
    assert list(got) == ["budget-reverses-order", "structure-cuts-fewer",
                         "overlap-doubles-chunks", "recursive-zero-overlap"]
    assert all(f.holds is True for f in got.values())
    order = got["budget-reverses-order"].summary
    for number in ("fixed-200 21.3%", "fixed-1600 44.1%", "fixed-200 37.3%", "fixed-1600 18.0%",
                   "21.3% → 30.1% → 44.1%", "2,000 chars"):
        assert number in order
    assert "71.0% (639 of 900" in got["structure-cuts-fewer"].summary
    assert "7.0% (63 of 900" in got["structure-cuts-fewer"].summary
    assert "10.1×" in got["structure-cuts-fewer"].summary
    assert "3,430" in got["overlap-doubles-chunks"].summary
    assert "1.99×" in got["overlap-doubles-chunks"].summary
    assert "71 of 84 boundaries (84.5%)" in got["recursive-zero-overlap"].summary


def test_budget_order_does_not_reverse():
    doc = make_results()
    set_budget(doc, "fixed-200", 0.15)
    f = by_name(doc)["budget-reverses-order"]
    assert f.holds is False
    assert "fixed-200 15.0% ≤ fixed-1600 18.0%" in f.summary
    assert "Does not hold" in f.summary
    assert f.details["recall_rises"] is True and f.details["budget_reverses"] is False


def test_recall_does_not_rise_with_size():
    doc = make_results()
    for row in rows_of(doc, "fixed-1600"):
        row["metrics"]["recall_at_k"]["value"] = 0.2
    f = by_name(doc)["budget-reverses-order"]
    assert f.holds is False
    assert "fixed-200 21.3% ≥ fixed-1600 20.0%" in f.summary
    assert "does not rise" in f.summary


def test_budget_order_only_looks_at_bm25():
    doc = make_results()
    for row in rows_of(doc, "fixed-200"):
        if row["retriever"] != "bm25":
            row["metrics"]["budget_recall"]["value"] = 0.0
            row["budget_curve"]["2000"]["value"] = 0.0
    assert by_name(doc)["budget-reverses-order"].holds is True


def test_budget_difference_is_paired_over_queries():
    f = by_name(make_results())["budget-reverses-order"]
    d = f.details["budget_difference"]
    # Per-query values are the means +-0.1 in step, so every query differs by 19.3 points.
    assert d["diff"] == pytest.approx(0.193)
    assert d["lo"] == pytest.approx(0.193) and d["hi"] == pytest.approx(0.193)
    assert d["n"] == 20
    assert "+19.3 points (paired 95% CI +19.3 to +19.3, 20 queries)" in f.summary


def test_a_reversal_within_noise_is_said_to_be():
    doc = make_results()
    for name, values in (("fixed-200", (0.1, 0.95)), ("fixed-1600", (0.5, 0.5))):
        row = next(r for r in rows_of(doc, name) if r["retriever"] == "bm25")
        for i, q in enumerate(row["per_query"]):
            q["budget_coverage"] = values[i % 2]
    f = by_name(doc)["budget-reverses-order"]
    d = f.details["budget_difference"]
    assert d["diff"] == pytest.approx(0.025) and d["lo"] < 0 < d["hi"]
    assert "the interval includes 0, so the reversal is within noise" in f.summary
    # shown as such, never as a green "holds"
    assert f.verdict == "within noise" and "but within noise" in f.summary
    from chunkeval import report
    page = report.render_html(typed(doc))
    assert '<span class="badge noise">within noise</span>' in page
    assert "**budget-reverses-order** — within noise." in report.render_markdown(typed(doc))


def test_without_a_budget_curve_the_run_budget_is_used():
    doc = make_results()
    doc["settings"]["budget"] = 1500
    for row in doc["results"]:
        del row["budget_curve"]
    f = by_name(doc)["budget-reverses-order"]
    assert f.holds is True and f.details["budget"] == 1500
    assert "budget recall at 1,500 chars" in f.summary


def test_other_run_budget_takes_the_curve_point_at_2000():
    doc = make_results()
    doc["settings"]["budget"] = 1500
    for row in rows_of(doc, "fixed-200"):
        row["budget_curve"]["2000"]["value"] = 0.1
    f = by_name(doc)["budget-reverses-order"]
    assert f.holds is False and f.details["budget"] == 2000
    assert "budget recall at 2,000 chars fixed-200 10.0%" in f.summary
    assert "budget_difference" not in f.details  # per-query values are at 1,500, not 2,000


def test_structure_cut_ratio_below_three():
    doc = make_results()
    for row in rows_of(doc, "fixed-400"):
        row["metrics"]["cut_rate"] = {"value": 0.2, "blocks": 900, "cut": 180}
    for row in rows_of(doc, "structure-800"):
        row["metrics"]["cut_rate"] = {"value": 0.1, "blocks": 900, "cut": 90}
    f = by_name(doc)["structure-cuts-fewer"]
    assert f.holds is False
    assert "fixed-400 20.0% (180 of 900" in f.summary and "structure-800 10.0%" in f.summary
    assert "2.0×" in f.summary and "at least 3×" in f.summary
    assert f.details["ratio"] == pytest.approx(2.0)


def test_structure_that_cuts_nothing_holds_and_no_blocks_is_not_measurable():
    doc = make_results()
    for row in rows_of(doc, "structure-800"):
        row["metrics"]["cut_rate"] = {"value": 0.0, "blocks": 900, "cut": 0}
    f = by_name(doc)["structure-cuts-fewer"]
    assert f.holds is True and "structure-800 cuts none" in f.summary
    for row in doc["results"]:
        row["metrics"]["cut_rate"] = {"value": 0.0, "blocks": 0, "cut": 0}
    f = by_name(doc)["structure-cuts-fewer"]
    assert f.holds is None and "no table or pre blocks" in f.summary


def test_overlap_that_does_not_double():
    doc = make_results()
    for row in rows_of(doc, "fixed-400-ov200"):
        row["chunks"]["count"] = 2600
    f = by_name(doc)["overlap-doubles-chunks"]
    assert f.holds is False
    assert "2,600" in f.summary and "1,720" in f.summary and "1.51×" in f.summary
    assert "1.8–2.2" in f.summary


def test_recursive_overlap_mostly_nonzero():
    doc = make_results(overlap={"boundaries": 84, "zero": 20, "mean": 30.1, "max": 40})
    f = by_name(doc)["recursive-zero-overlap"]
    assert f.holds is False
    assert "20 of 84 boundaries (23.8%)" in f.summary and "mean overlap 30.1, max 40" in f.summary
    # Exactly half is not "most".
    doc = make_results(overlap={"boundaries": 84, "zero": 42, "mean": 20, "max": 40})
    assert by_name(doc)["recursive-zero-overlap"].holds is False


def test_recursive_without_boundaries_is_not_measurable():
    doc = make_results(overlap={"boundaries": 0, "zero": 0, "mean": 0, "max": 0})
    f = by_name(doc)["recursive-zero-overlap"]
    assert f.holds is None and "no chunk boundaries" in f.summary


def test_missing_strategies_make_findings_not_measurable():
    doc = make_results()
    doc["results"] = [r for r in doc["results"]
                      if r["strategy"] not in ("fixed-1600", "fixed-400-ov200")]
    got = by_name(doc)
    assert got["budget-reverses-order"].holds is None
    assert "fixed-1600 missing" in got["budget-reverses-order"].summary
    assert got["overlap-doubles-chunks"].holds is None
    assert "fixed-400-ov200 missing" in got["overlap-doubles-chunks"].summary
    assert got["structure-cuts-fewer"].holds is True
    assert got["budget-reverses-order"].verdict == "not measurable"


def test_missing_bm25_row_is_named():
    doc = make_results(retrievers=("lsa",))
    f = by_name(doc)["budget-reverses-order"]
    assert f.holds is None and "fixed-200, fixed-1600 missing" in f.summary and "bm25" in f.summary
    # Chunk-level findings do not need BM25.
    assert by_name(doc)["overlap-doubles-chunks"].holds is True


def test_query_set_choice():
    doc = make_results(query_sets={"faq-headings": 4, "section-titles": 6})
    for row in doc["results"]:
        if row["query_set"] == "section-titles" and row["strategy"] == "fixed-200":
            row["metrics"]["budget_recall"]["value"] = 0.05
            row["budget_curve"]["2000"]["value"] = 0.05
    assert by_name(doc)["budget-reverses-order"].holds is True  # the first set by default
    f = by_name(doc, "section-titles")["budget-reverses-order"]
    assert f.holds is False and "section-titles" in f.summary
    with pytest.raises(UnknownName, match="unknown query set 'nope'"):
        findings(typed(doc), "nope")


def test_empty_document():
    got = findings(typed(make_results(strategies={})))
    assert len(got) == 4 and all(f.holds is None for f in got)


def test_paired_difference_interval_covers_the_true_shift():
    rng = np.random.default_rng(3)
    base = rng.uniform(0, 1, 400)
    a = {f"q{i}": float(v) + 0.05 + float(rng.normal(0, 0.02)) for i, v in enumerate(base)}
    b = {f"q{i}": float(v) for i, v in enumerate(base)}
    d = paired_difference(a, b)
    assert d["lo"] < 0.05 < d["hi"]
    # Pairing removes the shared spread of `base`: the interval is far narrower than 2 SEs of it.
    assert d["hi"] - d["lo"] < 0.01
    assert paired_difference(a, {"other": 1.0}) is None
