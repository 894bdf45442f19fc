"""The metric table (chunkeval/metrics.py) is the one place a metric is defined: a row added
there reaches results.json, the baselines, the gate's summary and the report with nothing
else edited."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import chunkeval
from chunkeval import metrics
from chunkeval.results import PerQuery
from chunkeval.scoring import Scores
from helpers import NO_LANGSMITH, corpus_pages, project_toml

NDCG_ROW = '    Metric("ndcg_at_k", "ndcg", False, "nDCG@k"),\n'
# A metric computed from a stored series: the share of queries whose top k holds at least
# half of their gold. Gated and a headline metric, so every face shows it.
HALF_ROW = ('    Metric("half_rate", "half", True, "half rate", headline=True,\n'
            '           derive=lambda series, complete_at: series["coverage"] >= 0.5),\n')

PYPROJECT = project_toml("half-docs", strategies=["fixed-400"], retrievers=["bm25"])


def test_each_stored_series_is_a_field_of_the_rows_and_of_the_scores():
    stored = [m.series for m in metrics.STORED]
    assert stored == ["coverage", "budget_coverage", "doc_hit", "rr", "ndcg"]
    assert set(stored) <= {f.name for f in fields(PerQuery)}
    assert set(stored) <= {f.name for f in fields(Scores)}
    # a derived series is stored nowhere: it is computed from the stored ones
    assert [m.name for m in metrics.COMPARED if not m.stored] == ["complete_rate"]
    assert not hasattr(PerQuery, "complete")


def test_a_derived_series_is_computed_from_the_stored_ones():
    import numpy as np

    rows = [PerQuery("a", 0.96, 0.5, True), PerQuery("b", 0.949, 1.0, False, 0.5, 0.25)]
    s = metrics.series(rows, complete_at=0.95)
    assert list(s) == ["coverage", "budget_coverage", "complete", "doc_hit"]  # rr: not all
    assert s["complete"].tolist() == [1.0, 0.0] and s["doc_hit"].tolist() == [1.0, 0.0]
    blank = Scores.blank(["a", "b"], (), {"complete_at": 0.5})
    blank.coverage[:] = [0.5, 0.4999]
    assert blank.complete.tolist() == [True, False]
    assert np.array_equal(blank.values("complete_rate"), [1.0, 0.0])


def _with_half_rate(root: Path) -> Path:
    """A copy of the package whose metric table has one row more, and nothing else changed."""
    package = root / "chunkeval"
    shutil.copytree(Path(chunkeval.__file__).parent, package,
                    ignore=shutil.ignore_patterns("__pycache__"))
    table = package / "metrics.py"
    text = table.read_text(encoding="utf-8")
    assert text.count(NDCG_ROW) == 1
    table.write_text(text.replace(NDCG_ROW, NDCG_ROW + HALF_ROW), encoding="utf-8")
    return root


def _run(project: Path, code: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "CI")}
    env["CHUNKEVAL_CACHE"] = str(project.parent / "cache")
    env["PYTHONPATH"] = str(code)  # the copy, with its entry point module found first
    done = subprocess.run([sys.executable, "-m", *args], cwd=project, env=env, text=True,
                          capture_output=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_a_row_added_to_the_table_reaches_results_baselines_summary_and_report(tmp_path):
    code = _with_half_rate(tmp_path / "code")
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    for name, text in corpus_pages(12).items():
        (project / "docs" / name).write_text(text, encoding="utf-8")
    (project / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")

    # results.json: its mean beside the others', in the table's order; the report's column
    _run(project, code, "chunkeval", "run", "--out", "out")
    results = json.loads((project / "out" / "results.json").read_text(encoding="utf-8"))
    for r in results["results"]:
        names = list(r["metrics"])
        assert names.index("ndcg_at_k") + 1 == names.index("half_rate")
        coverage = [q["coverage"] for q in r["per_query"]]
        assert r["metrics"]["half_rate"]["value"] == sum(c >= 0.5 for c in coverage) / len(
            coverage)
        assert "half" not in r["per_query"][0]  # derived, so not stored per query
    assert "half rate" in (project / "out" / "report.md").read_text(encoding="utf-8")

    # the baselines: its mean, compared like the seed's four
    _run(project, code, "pytest", "-p", "no:cacheprovider", *NO_LANGSMITH, "--update-baselines")
    entries = [e for path in (project / "baselines").rglob("*.json")
               for e in json.loads(path.read_text(encoding="utf-8")).get("entries", {}).values()]
    assert entries and all("half_rate" in e["metrics"] for e in entries)
    assert all("half" not in e["per_query"] for e in entries)

    # the gate: judged (gated by default) and a column of the summary's table
    gate = _run(project, code, "pytest", "-p", "no:cacheprovider", *NO_LANGSMITH, "-v")
    summary = gate.stdout[gate.stdout.index("chunkeval"):]
    assert "half rate" in summary and "fixed-400" in summary
