"""`chunkeval sweep` on the default corpus: its numbers are the baselines' for the strategies of
the matrix it covers, and it shows the directions the README reports.

Needs the default corpus (apt-get and Debian's package lists the first time)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from chunkeval.cli import main

pytestmark = pytest.mark.corpus
BASELINE = Path(__file__).parent.parent / "baselines" / "debian-ja.json"


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep-default")
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["sweep", "--strategy", "fixed", "--size", "200,400,800,1600",
                     "--overlap", "0,0.1,0.2", "--retrievers", "bm25",
                     "--queries", "section-titles", "--out", str(out)]) == 0
    return json.loads((out / "sweep.json").read_text(encoding="utf-8"))


def test_the_sweep_reads_as_the_baselines_do(swept):
    entries = json.loads(BASELINE.read_text(encoding="utf-8"))["entries"]
    compared = 0
    for c in swept["configurations"]:
        entry = entries.get(f"{c['strategy']}|{c['retriever']}|{c['query_set']}")
        if entry is None:
            continue
        compared += 1
        for metric in ("recall_at_k", "budget_recall", "complete_rate", "doc_hit_at_k"):
            assert round(c["metrics"][metric]["value"], 4) == round(entry["metrics"][metric], 4)
        # a baseline keeps each query's value to 4 decimals
        assert c["per_query"]["coverage"] == pytest.approx(entry["per_query"]["coverage"],
                                                           abs=0.6e-4)
    # fixed-200/400/800/1600, fixed-400-ov40/ov80, fixed-800-ov80/ov160
    assert compared == 8


def test_recall_rises_with_size_at_top_k_and_bm25_peaks_below_800_under_the_budget(swept):
    plain = {c["size"]: c["metrics"] for c in swept["configurations"] if not c["overlap"]}
    at_k = [plain[s]["recall_at_k"]["value"] for s in (200, 400, 800, 1600)]
    assert at_k == sorted(at_k)
    budget = next(v for v in swept["verdicts"] if v["metric"] == "budget_recall")
    best = next(c for c in swept["configurations"] if c["strategy"] == budget["best"])
    assert best["size"] < 800


def test_a_holdout_judges_on_a_quarter_and_leaves_out_a_set_too_small_for_it(
        swept, tmp_path, capsys):
    assert main(["sweep", "--strategy", "fixed", "--size", "400,800", "--retrievers", "bm25",
                 "--holdout", "0.25", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "left out: holdout 0.25: query set 'faq-headings' has 114 queries, so 28 would " \
           "be held out" in printed
    data = json.loads((tmp_path / "sweep.json").read_text(encoding="utf-8"))
    assert {(v["query_set"], v["queries"], v["chosen_on"], v["judged_on"])
            for v in data["verdicts"]} == {("section-titles", 708, 531, 177)}
    assert list(data["refused"]) == ["faq-headings"]
