"""The pytest summary leads with the answer: what regressed, then one line for what is ok."""

from __future__ import annotations

import re

from chunkeval.gate.outcome import Outcome
from chunkeval.gate.verdict import Verdict
from chunkeval.report.comparison import render_summary_markdown
from chunkeval.report.summary import format_summary


def verdict(metric, status, diff=0.0):
    return {"metric": metric, "status": status, "baseline": 0.5, "value": 0.5 + diff,
            "diff": diff, "low": diff - 0.02, "high": diff + 0.02, "confidence": 0.992}


def case(strategy, retriever, query_set, *statuses):
    metrics = ("recall_at_k", "budget_recall", "complete_rate", "doc_hit_at_k")
    return {"strategy": strategy, "retriever": retriever, "query_set": query_set,
            "corpus": {"name": "c", "fingerprint": "f"},
            "verdicts": [verdict(m, s, -0.1 if s == "regressed" else 0.0)
                         for m, s in zip(metrics, statuses)]}


ROWS = [case(f"fixed-{n}", "bm25", "section-titles", "ok", "ok", "ok", "ok")
        for n in range(100, 900, 100)] + [
    case("structure-400+prefix", "hybrid-use", "a-rather-long-query-set-name",
         "regressed", "ok", "ok", "regressed"),
    case("fixed-200", "lsa", "faq-headings", "ok", "improved", "ok", "ok")]


def test_regressions_come_first_and_the_ok_cases_are_one_line():
    lines = format_summary(ROWS).splitlines()
    body = lines[3:]  # two header lines and a rule
    assert body[0].startswith("structure-400+prefix")
    assert body[0].endswith("regressed (recall_at_k, doc_hit_at_k)")
    assert body[1].startswith("fixed-200") and body[1].endswith("improved (budget_recall)")
    assert body[2] == "8 of 10 cases ok: every gated metric within its bounds (-v lists them)"
    assert not any(line.startswith("fixed-100 ") for line in lines)


def test_with_every_row_the_ok_cases_are_listed_and_no_column_overflows():
    lines = format_summary(ROWS, every_row=True).splitlines()
    rows = lines[3:13]
    assert len(rows) == 10 and not any("cases ok" in line for line in lines)
    # each column starts at the same place on every row: no name runs into the next column
    header = lines[1]
    for column in ("retriever", "query set", "base", "verdict"):
        start = header.index(column)
        assert all(row[start - 1] == " " for row in rows), column
    for row in rows:
        name, retriever, query_set = row.split()[:3]
        assert row.index(retriever) == header.index("retriever")
        assert row.index(query_set, header.index("retriever")) == header.index("query set")


def test_the_job_summary_shows_what_moved_and_folds_the_rest():
    text = render_summary_markdown(ROWS)
    before, folded = text.split("<details>")
    visible = [line for line in before.splitlines() if line.startswith("| ")]
    assert visible[0].startswith("| verdict |")
    assert [line.split(" | ")[0] for line in visible[1:]] == [
        "| **regressed**", "| **regressed**", "| **improved**"]
    assert "8 of 10 cases ok: every gated metric within its bounds." in before
    assert "| ok | fixed-100 | bm25 |" in folded and "| ok | fixed-100 |" not in before


def test_tests_that_failed_without_a_verdict_head_the_job_summary():
    # a splitter that raised: every judged case is ok, and the run failed all the same
    fine = [r for r in ROWS if all(v["status"] == "ok" for v in r["verdicts"])]
    text = render_summary_markdown(fine, unjudged=7)
    assert text.startswith("## chunkeval: 7 test(s) failed without a verdict; "
                           "all 8 gated cases pass\n")
    assert render_summary_markdown(fine).startswith("## chunkeval: all 8 gated cases pass\n")


def test_a_run_where_every_case_is_ok_is_one_line():
    fine = [r for r in ROWS if all(v["status"] == "ok" for v in r["verdicts"])]
    lines = format_summary(fine).splitlines()
    assert lines[0] == "8 of 8 cases ok: every gated metric within its bounds (-v lists them)"
    assert not any(line.startswith(("strategy", "---")) for line in lines)


def test_a_rows_verdicts_read_back_as_the_gates_outcomes():
    # the controller renders the summary from outcomes the workers sent as JSON
    sent = Outcome("fixed-400", "bm25", "faq", Verdict(
        "recall_at_k", 0.5, 0.4, -0.1, -0.15, -0.05, "regressed", confidence=0.99,
        harmless=(-0.01, 0.02)), "moved beyond its bounds")
    row = {"strategy": "fixed-400", "retriever": "bm25", "query_set": "faq",
           "verdicts": [sent.to_json()]}
    assert Outcome.from_row(row) == [sent]
    assert Outcome.from_row(case("s", "r", "q", "ok"))[0].verdict.harmless is None
