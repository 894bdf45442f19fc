"""Calibration: the variants it builds, and the command on a small corpus written here."""

import json

import pytest

from chunkeval.cli import main
from chunkeval.gate.baselines import Baseline, baseline_path, key
from chunkeval.errors import InputError
from chunkeval.gate.calibrate import (entry_of, harmless_diffs, judge, noise_floors,
                                      read_trials, shifted, truncated)
from chunkeval.gate.verdict import Tolerance
from chunkeval.model import Chunk, Document, Part


def doc(text: str) -> Document:
    return Document.from_parts("d", "t", [Part("paragraph", text)])


def windows(d: Document, size: int) -> list[Chunk]:
    return [Chunk(d.id, s, min(s + size, len(d.text)), d.text[s:s + size])
            for s in range(0, len(d.text), size)]


def test_a_shift_moves_every_inner_boundary_and_keeps_the_text_whole():
    d = doc("".join(chr(ord("a") + i % 26) for i in range(1000)))
    out = shifted(windows(d, 300), d, 40)
    assert [(c.start, c.end) for c in out] == [(0, 260), (260, 560), (560, 860), (860, 1000)]
    assert all(c.text == d.text[c.start:c.end] for c in out)
    # rewritten chunks (not slices) are left as they are
    odd = Chunk("d", 0, 300, "HEADER " + d.text[:300])
    assert shifted([odd], d, 40) == [odd]


def test_truncation_drops_the_end_of_each_chunk_and_keeps_a_prefix_of_the_index_text():
    d = doc("x" * 100 + "y" * 100)
    (c,) = truncated([Chunk("d", 0, 200, d.text, "Title > " + d.text)], 0.25)
    assert (c.start, c.end, c.text) == (0, 150, d.text[:150])
    assert c.index_text == "Title > " + d.text[:150]


def _trials(diffs_by_trial: list[tuple[float, float]], noise: float = 0.05) -> dict:
    """A trials document with one case of 40 queries: the baseline covers 0.5 each; a trial
    moves every query by `shift` plus an alternating +-noise."""
    def result(values):
        return {"per_query": [{"coverage": v, "budget_coverage": v, "doc_hit": True}
                              for v in values],
                "metrics": {"cut_rate": {"value": 0.0, "blocks": 0, "cut": 0}},
                "chunks": {"count": 1, "mean_len": 1.0, "max_len": 1, "under_30": 1,
                           "overlap": {"boundaries": 0, "zero": 0, "mean": 0.0, "max": 0}}}
    base = [0.5] * 40
    trials = [{"shift": 1, "drop": drop, "results": {"bm25|q": result(
        [0.5 + move + (noise if i % 2 else -noise) for i in range(40)])}}
              for drop, move in diffs_by_trial]
    return {"strategy": "s", "complete_at": 0.95, "baseline": {"bm25|q": result(base)},
            "trials": trials}


def test_judge_counts_false_alarms_and_catches():
    doc = _trials([(0.0, 0.0), (0.0, -0.001), (0.0, -0.05), (0.2, -0.1), (0.2, -0.1)])
    table = judge(doc, Tolerance(gated=("recall_at_k", "budget_recall")))
    assert table["trials"] == 3 and table["false_alarms"] == 1
    assert table["family"] == 2  # one case x two gated metrics
    cell = table["drops"]["0.2"]["bm25|q|recall_at_k"]
    assert cell["caught"] == 1.0 and cell["mean_drop"] == pytest.approx(0.1)
    assert table["detectable"]["bm25|q|recall_at_k"] == pytest.approx(0.1)
    assert table["strategy_failed"] == {"0.2": 1.0}
    # a minimum effect above the drops: nothing is caught, nothing alarms
    strict = judge(doc, Tolerance(min_effect=0.2, gated=("recall_at_k", "budget_recall")))
    assert strict["false_alarms"] == 0 and strict["detectable"]["bm25|q|recall_at_k"] is None


def test_calibrate_command_writes_the_table(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CHUNKEVAL_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "docs"
    root.mkdir()
    topics = ["install", "configure", "upgrade", "backup", "network", "printing"]
    for d in range(3):
        body = "".join(f"<h2>Handling {t}</h2>" + "".join(
            f"<p>For {t} in step {p}, open the {t} panel, pick option {p}; the {t} log shows "
            f"it.</p>" for p in range(3)) for t in topics[d * 2:d * 2 + 2])
        (root / f"p{d}.html").write_text(f"<html><body><h1>P{d}</h1>{body}</body></html>",
                                         encoding="utf-8")
    out = tmp_path / "out"
    assert main(["calibrate", "fixed-200", "--corpus", str(root), "--queries", "section-titles",
                 "--retrievers", "bm25", "--trials", "3", "--drops", "0.6",
                 "--drop-trials", "2", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "calibration of fixed-200: 3 harmless variants" in printed
    tables = json.loads((out / "calibration-fixed-200.json").read_text(encoding="utf-8"))
    assert set(tables) == {"bootstrap", "calibrated", "noise", "tolerance"}
    table = tables["bootstrap"]
    assert table["trials"] == 3 and set(table["drops"]) == {"0.6"}
    assert table["drops"]["0.6"]["bm25|section-titles|recall_at_k"]["trials"] == 2
    assert (out / "calibration-fixed-200.md").read_text(encoding="utf-8").startswith("```")
    trials = json.loads((out / "calibration-fixed-200-trials.json").read_text(encoding="utf-8"))
    assert len(trials["trials"]) == 5
    assert main(["calibrate", "fixed-200", "--corpus", str(root), "--drops", "2"]) == 2


def _spread_trials(harmless_moves: list[float], drop_moves: list[float]) -> dict:
    """Like _trials, but every query moves the same way: harmless trials differ from the
    baseline by a tiny spread of means while per-query noise stays wide."""
    return _trials([(0.0, m) for m in harmless_moves] + [(0.1, m) for m in drop_moves], 0.1)


def test_the_calibrated_gate_uses_the_measured_noise_and_leaves_each_harmless_trial_out():
    harmless = [(-1) ** i * 0.002 * (i % 5) for i in range(20)]
    doc = _spread_trials(harmless, [-0.04, -0.04])
    tol = Tolerance(gated=("recall_at_k",), min_effect=0.02)
    # per-query noise of +-0.1 over 40 queries makes the Bonferroni bootstrap (a family of
    # 24) too wide for a 4-point drop; harmless trials move the mean by 0.8 points at most
    assert judge(doc, tol, family=24)["drops"]["0.1"]["bm25|q|recall_at_k"]["caught"] == 0.0
    calibrated = judge(doc, tol, family=24, calibrated=True)
    assert calibrated["gate"] == "calibrated" and calibrated["false_alarms"] == 0
    assert calibrated["drops"]["0.1"]["bm25|q|recall_at_k"]["caught"] == 1.0
    floors = noise_floors(harmless_diffs(doc))
    assert floors["bm25|q"]["recall_at_k"].trials == 20
    assert noise_floors(harmless_diffs(doc), leave_out=0)["bm25|q"]["recall_at_k"].trials == 19


@pytest.fixture
def topics(tmp_path, monkeypatch, cache_dir):
    """Three pages of four short sections each, in tmp_path/docs; the working directory."""
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "docs"
    root.mkdir()
    for d in range(3):
        body = "".join(f"<h2>Topic {d} {t}</h2><p>About {t} number {d}: open panel {t}, "
                       f"choose option {d}, read the log of {t}.</p>" for t in range(4))
        (root / f"p{d}.html").write_text(f"<html><body><h1>P{d}</h1>{body}</body></html>",
                                         encoding="utf-8")
    return root


def test_calibrate_records_the_noise_floor_only_into_matching_entries(topics, tmp_path,
                                                                         capsys):
    root = topics
    args = ["calibrate", "fixed-200", "--corpus", str(root), "--queries", "section-titles",
            "--retrievers", "bm25", "--trials", "4", "--drops", "0.5", "--drop-trials", "1",
            "--out", str(tmp_path / "out")]
    # no baseline yet: refused, saying what to do
    assert main(args + ["--record"]) == 2
    assert "no baseline file" in capsys.readouterr().err
    trials = json.loads((tmp_path / "out" / "calibration-fixed-200-trials.json").read_text())
    path = baseline_path(tmp_path / "baselines", "docs")
    b = Baseline(path)
    b.data["corpus"] = {"name": "docs", "fingerprint": "0" * 16}
    b.entries[key("fixed-200", "bm25", "section-titles")] = entry_of(
        trials["baseline"]["bm25|section-titles"], trials["complete_at"])
    b.save()
    assert main(args + ["--record", "--from-trials",
                        str(tmp_path / "out" / "calibration-fixed-200-trials.json")]) == 0
    entry = Baseline.load(path).entry("fixed-200", "bm25", "section-titles")
    assert entry.noise["recall_at_k"].trials == 4


def test_calibrate_judges_with_the_projects_tolerance_and_says_so(topics, tmp_path, capsys):
    """alpha, min_effect and gate come from [tool.chunkeval] like every other setting, and
    the calibration's JSON records the tolerance it judged with."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.chunkeval]\ncorpus = "docs"\nquery_sets = ["section-titles"]\nalpha = 0.31\n'
        'min_effect = 0.07\ngate = ["recall_at_k", "doc_hit_at_k"]\n', encoding="utf-8")
    out = tmp_path / "out"
    assert main(["calibrate", "fixed-200", "--retrievers", "bm25", "--trials", "3",
                 "--drops", "0.5", "--drop-trials", "1", "--out", str(out)]) == 0
    written = json.loads((out / "calibration-fixed-200.json").read_text(encoding="utf-8"))
    assert written["tolerance"] == {"alpha": 0.31, "min_effect": 0.07, "cut_ceiling": 0.25,
                                    "gated": ["recall_at_k", "doc_hit_at_k"]}
    for table in (written["bootstrap"], written["calibrated"]):
        assert (table["alpha"], table["min_effect"]) == (0.31, 0.07)
        assert table["gated"] == ["recall_at_k", "doc_hit_at_k"]
        assert table["family"] == 2  # one retriever x one query set x two gated metrics
    assert "family-wise level 31% over 2 gated comparisons" in capsys.readouterr().out
    # an option still wins over the file
    assert main(["calibrate", "fixed-200", "--retrievers", "bm25", "--trials", "3",
                 "--drops", "0.5", "--drop-trials", "1", "--out", str(out),
                 "--alpha", "0.2"]) == 0
    written = json.loads((out / "calibration-fixed-200.json").read_text(encoding="utf-8"))
    assert written["tolerance"]["alpha"] == 0.2 and written["tolerance"]["min_effect"] == 0.07


@pytest.mark.parametrize("damage", ["no drop", "a case missing", "a coverage of 2", "no bar"])
def test_damaged_trials_are_refused_naming_the_file(tmp_path, damage):
    doc = _trials([(0.0, 0.0), (0.2, -0.1)])
    if damage == "no drop":
        del doc["trials"][0]["drop"]
    elif damage == "a case missing":
        doc["trials"][1]["results"] = {}
    elif damage == "a coverage of 2":
        doc["trials"][1]["results"]["bm25|q"]["per_query"][3]["coverage"] = 2
    else:
        doc["baseline"] = {"bm25q": doc["baseline"]["bm25|q"]}
    path = tmp_path / "calibration-s-trials.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError, match="calibration-s-trials.json"):
        read_trials(str(path), "s")
