"""`chunkeval sweep` and the strategies named with parameters it sweeps: the grid, the verdict,
the recommendation rule, the holdout, the team's splitter, the configuration and the page (in
headless Chromium where one is installed).

One sweep on 40 generated pages (120 section titles) feeds most tests."""

from __future__ import annotations

import html
import json
import re
import shutil
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import chunkeval
from chunkeval import strategies, sweep
from chunkeval.report import sweep_page
from chunkeval.cli import main
from chunkeval.errors import ConfigError
from chunkeval.stats import bootstrap_p, holm
from helpers import CHROMIUM, NO_LANGSMITH, PROBE_END, corpus_pages, probe_in_browser

SERIES = {"recall_at_k": "coverage", "budget_recall": "budget_coverage"}
GRID = ["--strategy", "fixed", "--size", "100:400:100", "--overlap", "0,0.2"]


def write_pages(root, n=40):
    root.mkdir(parents=True)
    for name, text in corpus_pages(n).items():
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """(folder, sweep.json, what the sweep printed, results.json of `run` on the same names)."""
    root = tmp_path_factory.mktemp("sweep")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CHUNKEVAL_CACHE", str(root / "cache"))
        mp.chdir(root)
        docs = write_pages(root / "docs")
        import contextlib
        import io
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            assert main(["sweep", "--corpus", str(docs), *GRID, "--retrievers", "bm25,lsa",
                         "--out", str(root / "out")]) == 0
        data = json.loads((root / "out" / "sweep.json").read_text(encoding="utf-8"))
        # the grid's specs: its names were the sweep's for its time only, as in a new process
        names = ",".join(p["spec"] for p in data["grid"])
        # a fresh cache: the run computes its own numbers rather than reading the sweep's
        mp.setenv("CHUNKEVAL_CACHE", str(root / "cache-run"))
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["run", "--corpus", str(docs), "--queries", "section-titles",
                         "--strategies", names, "--retrievers", "bm25,lsa", "--jobs", "1",
                         "--out", str(root / "run")]) == 0
        run = json.loads((root / "run" / "results.json").read_text(encoding="utf-8"))
        yield root, data, printed.getvalue(), run


# -- strategies with parameters ----------------------------------------------------------------

def spec_of(s: strategies.Strategy) -> str | None:
    p = s.params
    if s.family in ("fixed", "recursive"):
        return f"{s.family}(size={p['size']}, overlap={p['overlap']})"
    if s.family in ("structure", "prefix"):
        return f"structure(size={p['size']}, prefix={'true' if p.get('prefix') else 'false'})"
    if s.family == "headings":
        return f"headings(level={p['cut']})"
    return None


def test_every_sized_strategy_of_the_matrix_is_an_alias_of_its_spec():
    aliased = 0
    for s in strategies.MATRIX:
        spec = spec_of(s)
        if spec is None:
            continue
        assert strategies.get(spec) is strategies.get(s.name), spec
        assert strategies.canonical(spec) == s.name
        aliased += 1
    assert aliased == 18


def test_an_overlap_under_one_is_a_share_of_the_size():
    assert strategies.canonical("fixed(size=400, overlap=0.1)") == "fixed-400-ov40"
    assert strategies.canonical("recursive(size=500, overlap=0.1)") == "recursive-500-ov50"
    made = strategies.get("recursive(size=500, overlap=0.1)")
    assert made.params["size"] == 500 and made.params["overlap"] == 50
    # made on demand, known by name, and not added to the default matrix
    assert "recursive-500-ov50" in strategies.names(all=True)
    assert "recursive-500-ov50" not in strategies.names()


@pytest.mark.parametrize("spec, parameter", [
    ("fixed(size=0)", "size"), ("fixed(sise=300)", "sise"), ("fixed(overlap=3)", "size"),
    ("fixed(size=100, overlap=200)", "overlap"), ("fixed(size=100, overlap=-1)", "overlap"),
    ("fixed(size=100, overlap=2.5)", "overlap"), ("structure(size=300, prefix=1)", "prefix"),
    ("structure(size=300, overlap=30)", "overlap"), ("headings(level=4)", "level"),
])
def test_a_bad_parameter_is_one_line_naming_it(spec, parameter, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=f"parameter '{parameter}'"):
        strategies.get(spec)
    assert main(["run", "--corpus", str(tmp_path), "--strategies", spec]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"parameter '{parameter}'" in err[0] and "Traceback" not in err[0]


@pytest.fixture(autouse=True)
def fresh_module():
    """The team's module is imported anew by each test, and left to no other."""
    sys.modules.pop("sweepsplit", None)
    yield
    sys.modules.pop("sweepsplit", None)


def factory_project(root, body: str = ""):
    root.mkdir(parents=True, exist_ok=True)
    (root / "sweepsplit.py").write_text(textwrap.dedent('''
        from chunkeval import Chunk

        def make(size, overlap=0):
            """Windows of `size` chars, `overlap` shared: a team's splitter factory."""
            step = max(1, size - overlap)
            def split(doc):
                n, out, start = len(doc.text), [], 0
                while start < n:
                    end = min(start + size, n)
                    out.append(Chunk(doc.id, start, end, doc.text[start:end]))
                    if end == n:
                        break
                    start += step
                return out
            return split

        def split(doc):
            return make(250, 0)(doc)
        ''') + body, encoding="utf-8")
    return root


def test_a_factory_is_called_with_its_parameters_and_named_after_them(tmp_path):
    root = factory_project(tmp_path / "project")
    found = strategies.load_splitter("sweepsplit:make(size=300, overlap=30)", root)
    assert [s.name for s in found] == ["make-overlap=30-size=300"]
    assert found[0].params == {"size": 300, "overlap": 30}
    assert found[0].identity is None  # the team's code: chunked every run, never cached
    other = strategies.load_splitter("sweepsplit:make(size=200)", root)[0]
    assert other.name == "make-size=200"
    with pytest.raises(ConfigError, match="refused its parameters"):
        strategies.load_splitter("sweepsplit:make(sise=300)", root)
    with pytest.raises(ConfigError, match="parameter 'size' must be a literal"):
        strategies.load_splitter("sweepsplit:make(size=os.sep)", root)


def test_a_factory_whose_splitters_share_one_name_is_refused(tmp_path):
    root = factory_project(tmp_path / "project", textwrap.dedent('''
        def named(size, overlap=0):
            split = make(size, overlap)
            split.strategy_name = "mine"
            return split
        '''))
    with pytest.raises(ConfigError, match="are both named 'mine'"):
        sweep.grid("sweepsplit:named", [200, 300], [0], root)


# -- the grid and the statistics ------------------------------------------------------------------

def test_sizes_and_overlaps_parse_as_ranges_lists_and_shares():
    assert sweep.parse_sizes("100:500:200") == [100, 300, 500]
    assert sweep.parse_sizes("100:2000:100")[-1] == 2000
    assert sweep.parse_sizes("200,400, 800,400") == [200, 400, 800]
    assert sweep.parse_overlaps("0,0.1,0.2,30") == [0, 0.1, 0.2, 30]
    for bad in ("0", "a", "500:100:100", "100:500:0", "1:2:3:4"):
        with pytest.raises(ConfigError, match="--size"):
            sweep.parse_sizes(bad)
    with pytest.raises(ConfigError, match="--overlap"):
        sweep.parse_overlaps("1.5")


def test_a_sweep_unregisters_the_strategies_of_its_grid_when_it_is_done(swept, tmp_path):
    """Two sweeps (or a sweep and a run) in one process: the second knows only what the
    first knew before it began."""
    before = strategies.names(all=True)
    assert main(["sweep", "--corpus", str(swept[0] / "docs"), "--strategy", "fixed",
                 "--size", "150,250", "--overlap", "0,0.1", "--retrievers", "bm25",
                 "--out", str(tmp_path / "out")]) == 0
    assert strategies.names(all=True) == before
    assert "fixed-150" not in strategies.names(all=True)


def test_a_sweep_hands_its_grid_to_the_evaluation_and_leaves_the_registry_as_it_found_it(
        swept, tmp_path, monkeypatch):
    """No wrapper unregisters what the sweep made: a team factory's grid, a team splitter
    the session loaded (known before and after), built-in specs at sizes nobody named and a
    built-in to sweep against are evaluated without ever being registered."""
    from chunkeval import config
    from chunkeval.session import Session
    from chunkeval.sweep.runner import prepare

    project = factory_project(tmp_path / "project")
    monkeypatch.chdir(project)
    session = Session(config.load(command_line={
        "corpus": str(swept[0] / "docs"), "query_sets": ["section-titles"],
        "retrievers": ["bm25"], "splitters": ["sweepsplit:split"]})).check()
    before = strategies.names(all=True)
    assert "split" in before  # the session's splitters are registered, as a project relies on
    points, against = prepare("sweepsplit:make", [200, 300], [0, 0.2], metric="recall_at_k",
                              holdout=None, against="fixed(size=175)", root=project)
    assert strategies.names(all=True) == before
    assert [p.strategy.name for p in points] == [p.name for p in points]
    assert against.strategy.params["size"] == 175
    factory = sweep.run(session, "sweepsplit:make", [200, 300], [0, 0.2], retrievers=["bm25"],
                        against="sweepsplit:split", progress=False)
    built_in = sweep.run(session, "fixed", [150, 350], [0, 0.1], retrievers=["bm25"],
                         against="structure-400", progress=False)
    assert strategies.names(all=True) == before
    assert {r.point.name for r in factory.rows[("bm25", "section-titles")]} == {
        "make-overlap=0-size=200", "make-overlap=40-size=200", "make-overlap=0-size=300",
        "make-overlap=60-size=300"}
    # the objects handed in are the ones evaluated, made once per spec
    assert session.evaluation.strategy("fixed-150") is strategies.build("fixed(size=150)")
    assert {p.name for p in built_in.points} == {"fixed-150", "fixed-150-ov15", "fixed-350",
                                                 "fixed-350-ov35"}
    assert factory.against and built_in.against  # the team splitter and structure-400
    assert not factory.failures and not built_in.failures


def test_the_grid_leaves_out_overlaps_as_large_as_the_size_and_refuses_one_a_family_lacks():
    points = sweep.grid("fixed", [10, 100], [0, 0.5, 50])
    assert [(p.size, p.overlap) for p in points] == [(10, 0), (10, 5), (100, 0), (100, 50)]
    assert points[3].name == "fixed-100-ov50"  # 0.5 and 50 of 100 are one configuration
    with pytest.raises(ConfigError, match="parameter 'overlap'"):
        sweep.grid("structure", [400], [0, 0.1])
    with pytest.raises(ConfigError, match="the grid's"):
        sweep.grid("fixed(size=400)", [400], [0])
    assert sweep.grid("structure(prefix=true)", [400], [0])[0].name == "structure-400+prefix"


def test_holm_adjusts_in_steps_and_the_bootstrap_p_follows_the_difference():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5]) == [0.5]
    rng = np.random.default_rng(1)
    a = rng.random(200)
    assert bootstrap_p(a, a) == 1.0
    assert bootstrap_p(a + 0.2, a) < 0.001 < 0.5 < bootstrap_p(a, a + 0.2)


# -- the sweep on generated pages -----------------------------------------------------------

def test_a_sweep_writes_its_three_files_and_its_numbers_are_those_of_run(swept):
    root, data, printed, run = swept
    assert sorted(p.name for p in (root / "out").iterdir()) == sorted(
        [*sweep.FILES, "chunkeval-manifest.json"])
    assert len(data["grid"]) == 8
    ran = {(r["strategy"], r["retriever"]): r for r in run["results"]}
    assert len(data["configurations"]) == 16
    for c in data["configurations"]:
        r = ran[(c["strategy"], c["retriever"])]
        for m in ("recall_at_k", "budget_recall", "complete_rate", "doc_hit_at_k"):
            assert c["metrics"][m] == r["metrics"][m]
        assert c["chunks"]["count"] == r["chunks"]["count"]
        assert c["per_query"]["coverage"] == [q["coverage"] for q in r["per_query"]]
        # what is handed: the top 5, and from the top while the total stays within 2,000
        lengths = [[span[3] for span in q["retrieved"]] for q in r["per_query"]]
        assert c["per_query"]["handed_at_k"] == [sum(n[:5]) for n in lengths]
        budget = []
        for n in lengths:
            taken = n[:1]
            for x in n[1:]:
                if sum(taken) + x > 2000:
                    break
                taken.append(x)
            budget.append(sum(taken))
        assert c["per_query"]["handed_in_budget"] == budget
    assert "to adopt the recommendation:" in printed
    assert printed.rstrip().splitlines()[-1].startswith(("budget =", "#"))


def test_the_sweep_judges_by_metrics_of_the_table_and_keeps_their_series(swept):
    from chunkeval.config import SETTINGS
    from chunkeval.results import BY_NAME
    root, data, _, _ = swept
    assert [m.name for m in sweep.JUDGED] == list(sweep.METRICS) == list(sweep.HANDED)
    assert all(BY_NAME[m] in sweep.JUDGED for m in sweep.METRICS)
    assert next(s.default for s in SETTINGS if s.name == "sweep_metric") == sweep.DEFAULT_METRIC
    assert sweep.DEFAULT_METRIC in sweep.METRICS  # the settings' default is a judged metric
    series = [BY_NAME[m].series for m in sweep.METRICS] + list(sweep.HANDED.values())
    for c in data["configurations"]:
        assert list(c["per_query"]) == series
        assert set(sweep.METRICS) <= set(c["metrics"])
    page = (root / "out" / "sweep.html").read_text(encoding="utf-8")
    for m in sweep.JUDGED:  # the page's columns and plots are titled as the table titles them
        assert f"<th data-col=\"{9 + sweep.JUDGED.index(m)}\">{html.escape(m.title(5))}" \
            in page


def max_t_bounds(rows: list[np.ndarray], alpha: float, resamples: int, seed: int):
    """The family-wise one-sided bounds of sweep.json's settings, recomputed with numpy alone:
    one index matrix for every row, each row's resampled means centred and divided by their
    standard deviation, c the 1 - alpha quantile of the largest of them over the rows."""
    idx = np.random.default_rng(seed).integers(0, rows[0].size, size=(resamples, rows[0].size))
    means = np.array([r[idx].mean(axis=1) for r in rows])
    d = np.array([r.mean() for r in rows])
    se = means.std(axis=1)
    z = (means - d[:, None]) / np.where(se > 0, se, 1)[:, None]
    varied = se > 0
    c_low = np.quantile(z[varied].max(axis=0), 1 - alpha) if varied.any() else 0.0
    c_high = np.quantile((-z[varied]).max(axis=0), 1 - alpha) if varied.any() else 0.0
    return d, d - c_low * se, d + c_high * se


def cost(c: dict, metric: str) -> tuple:
    handed = c["handed_at_k"] if metric == "recall_at_k" else c["handed_in_budget"]
    return (c["chunks"]["count"], handed, c["cut_rate"]["value"])


def test_the_verdict_and_the_recommendation_recompute_from_the_json(swept):
    _, data, _, _ = swept
    assert [(v["retriever"], v["query_set"], v["metric"]) for v in data["verdicts"]] == [
        (r, "section-titles", m) for r in ("bm25", "lsa")
        for m in ("budget_recall", "recall_at_k")]
    boot = data["settings"]["bootstrap"]
    assert data["settings"]["margin"] == 0.02  # the gate's min_effect
    by = {(c["strategy"], c["retriever"]): c for c in data["configurations"]}
    for v in data["verdicts"]:
        ret = v["retriever"]
        series = {s: np.array(c["per_query"][SERIES[v["metric"]]]) for (s, r), c in by.items()
                  if r == ret}
        assert max(x.mean() for x in series.values()) == pytest.approx(series[v["best"]].mean())
        others = [c["strategy"] for c in v["comparisons"]]
        d, low, high = max_t_bounds([series[s] - series[v["best"]] for s in others],
                                    v["alpha"], boot["resamples"], boot["seed"])
        assert [c["low"] for c in v["comparisons"]] == pytest.approx(low, abs=1e-12)
        assert [c["high"] for c in v["comparisons"]] == pytest.approx(high, abs=1e-12)
        assert [c["diff"] for c in v["comparisons"]] == pytest.approx(d, abs=1e-12)
        good = [s for s, lo in zip(others, low) if lo > -v["margin"]]
        assert v["as_good"] == good
        if good:
            assert v["verdict"] == "several as good as the best"
        elif all(high < 0):
            assert v["verdict"] == "confirmed winner"
        else:
            assert v["verdict"] == "not enough evidence" and v["recommendation"] is None
            continue
        # the cheapest of the best and those as good as it
        rec = v["recommendation"]
        tied = [v["best"], *good]
        assert rec["strategy"] == min(tied, key=lambda s: cost(by[(s, ret)], v["metric"]))
        if rec["strategy"] != v["best"]:
            assert rec["low"] > -v["margin"]


def test_a_recommendation_needs_evidence_within_the_margin():
    """Ten configurations a fifth of a point apart, with much noise per query: on 40 queries
    nothing can be shown within 2 points of the best; on 4,000 queries of the same kind, some are."""
    from chunkeval.stats import simultaneous_bounds
    rng = np.random.default_rng(3)
    for n, any_good in ((40, False), (4000, True)):
        base = rng.random(n)
        configs = [base - 0.002 * i + rng.normal(0, 0.2, n) for i in range(10)]
        best = max(range(10), key=lambda i: configs[i].mean())
        rows = [c - configs[best] for i, c in enumerate(configs) if i != best]
        b = simultaneous_bounds(rows, alpha=0.05)
        assert any(lo > -0.02 for lo in b.lows) == any_good
        assert all(lo <= d <= hi for lo, d, hi in zip(b.lows, b.diffs, b.highs))
    # the family-wise bound is wider than one comparison's
    one = simultaneous_bounds(rows[:1], alpha=0.05)
    assert one.lows[0] > b.lows[0]


def test_a_holdout_chooses_on_the_rest_and_judges_on_the_held_out_queries(swept, capsys):
    root, data, _, _ = swept
    out = root / "held"
    assert main(["sweep", "--corpus", str(root / "docs"), *GRID, "--retrievers", "bm25",
                 "--holdout", "0.25", "--out", str(out)]) == 0
    held = json.loads((out / "sweep.json").read_text(encoding="utf-8"))
    v = held["verdicts"][0]
    assert (v["queries"], v["chosen_on"], v["judged_on"]) == (120, 90, 30)
    assert "judged on 30 held out" in capsys.readouterr().out
    # the numbers judged are those of the held-out queries only: the seeded split recomputes
    series = {c["strategy"]: np.array(c["per_query"]["budget_coverage"])
              for c in held["configurations"]}
    judged = np.zeros(120, dtype=bool)
    judged[np.random.default_rng(held["settings"]["holdout_seed"]).permutation(120)[:30]] = True
    chosen = max(series, key=lambda s: series[s][~judged].mean())
    assert v["best"] == chosen
    assert v["best_value"] == pytest.approx(series[chosen][judged].mean())
    assert main(["sweep", "--corpus", str(root / "docs"), *GRID, "--retrievers", "bm25",
                 "--holdout", "0.01", "--out", str(root / "refused")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "at least 30" in err[0] and "1 would be held out" in err[0]
    assert not (root / "refused").exists()


def test_against_a_team_factory_prints_the_comparison_and_the_config_lines(
        swept, tmp_path, monkeypatch, capsys):
    root = swept[0]
    project = factory_project(tmp_path / "project")
    shutil.copytree(root / "docs", project / "docs")
    (project / "pyproject.toml").write_text(textwrap.dedent('''
        [tool.chunkeval]
        corpus = "docs"
        query_sets = ["section-titles"]

        [tool.chunkeval.sweep]
        strategy = "sweepsplit:make"
        size = [200, 300]
        overlap = [0, 0.2]
        against = "sweepsplit:make(size=250, overlap=0)"
        '''), encoding="utf-8")
    monkeypatch.chdir(project)
    monkeypatch.setenv("CHUNKEVAL_CACHE", str(tmp_path / "cache"))
    assert main(["sweep", "--retrievers", "bm25"]) == 0
    printed = capsys.readouterr().out
    data = json.loads((project / "chunkeval-sweep" / "sweep.json").read_text())
    v = data["verdicts"][0]
    rec = v["recommendation"]["spec"]
    line = re.search(rf"{re.escape(rec)} vs sweepsplit:make\(size=250, overlap=0\): "
                     r"([+-]\d+\.\d) points \[([+-]\d+\.\d), ([+-]\d+\.\d)\]", printed)
    assert line, printed
    assert float(line.group(1)) == round(v["against"]["diff"] * 100, 1)
    point = next(p for p in data["grid"] if p["strategy"] == v["recommendation"]["strategy"])
    tail = printed[printed.index("to adopt the recommendation (in "):]
    # a patch of the project's own table: the factory at the recommended size and overlap
    assert (f'+splitters = ["sweepsplit:make(size={point["size"]}, overlap={point["overlap"]})"]'
            in tail.splitlines())
    assert " [tool.chunkeval]" in tail.splitlines()

    # the team's splitter named with its parameters in `splitters` (the sweep's `against` by
    # default): --adopt replaces them there, and nothing else
    text = textwrap.dedent('''
        [tool.chunkeval]
        corpus = "docs"
        query_sets = ["section-titles"]
        splitters = ["sweepsplit:make(size=250, overlap=0)"]  # ours

        [tool.chunkeval.sweep]
        strategy = "sweepsplit:make"
        size = [200, 300]
        overlap = [0, 0.2]
        ''')
    (project / "pyproject.toml").write_text(text, encoding="utf-8")
    assert main(["sweep", "--retrievers", "bm25", "--adopt"]) == 0
    capsys.readouterr()
    data = json.loads((project / "chunkeval-sweep" / "sweep.json").read_text())
    rec = next(p for p in data["grid"]
               if p["strategy"] == data["verdicts"][0]["recommendation"]["strategy"])
    call = f"sweepsplit:make(size={rec['size']}, overlap={rec['overlap']})"
    assert (project / "pyproject.toml").read_text(encoding="utf-8") == text.replace(
        "sweepsplit:make(size=250, overlap=0)", call)
    assert (project / "pyproject.toml.bak").read_text(encoding="utf-8") == text


def test_an_unknown_key_of_the_sweep_table_names_it(tmp_path, monkeypatch, capsys):
    (tmp_path / "pyproject.toml").write_text('[tool.chunkeval.sweep]\nsizes = "100:200:100"\n')
    monkeypatch.chdir(tmp_path)
    assert main(["sweep"]) == 2
    err = capsys.readouterr().err
    assert "[tool.chunkeval.sweep]: unknown key(s) sizes" in err


# -- the page -------------------------------------------------------------------------------------

def test_the_page_is_self_contained_and_holds_every_configuration(swept):
    root, data, _, _ = swept
    page = (root / "out" / "sweep.html").read_text(encoding="utf-8")
    assert not re.search(r'(src|href)="(https?:)?//', page)
    assert page.count("<svg") == 5  # recall@k, budget recall, two frontiers, cut rate
    rows = re.findall(r"<tr class=", page)
    assert len(rows) == len(data["configurations"])
    for v in data["verdicts"]:
        assert html.escape(v["recommendation"]["spec"]) in page
    # the margin band below each best, in both frontier charts of each retriever
    assert page.count('<rect class="margin"') == 2 * 2
    md = (root / "out" / "sweep.md").read_text(encoding="utf-8")
    for v in data["verdicts"]:  # every configuration's difference and bounds, as in the json
        for c in v["comparisons"]:
            cell = (f"| {c['diff'] * 100:+.1f} | [{c['low'] * 100:+.1f}, {c['high'] * 100:+.1f}] "
                    f"| {'**yes**' if c['as_good'] else 'no'} |")
            assert cell in md
            if v["metric"] == data["settings"]["metric"]:  # the page's table: that metric's
                assert f"[{c['low'] * 100:+.1f}, {c['high'] * 100:+.1f}]" in page


PROBE = r"""<script>(function () {
var out = { errors: window.caught || [] };
try {
  var rows = function () { return Array.from(document.querySelectorAll("#configs tbody tr")); };
  out.rows = rows().length;
  out.svgs = document.querySelectorAll("svg polyline").length;
  var head = document.querySelector('#configs th[data-col="10"]');
  head.click();
  out.first = rows().map(function (tr) { return +tr.children[10].dataset.v; });
  head.click();
  out.second = rows().map(function (tr) { return +tr.children[10].dataset.v; });
  document.querySelector('#configs th[data-col="2"]').click();
  out.names = rows().map(function (tr) { return tr.children[2].dataset.v; });
} catch (e) { out.errors.push(String(e && e.stack || e)); }
""" + PROBE_END


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium installed")
def test_in_a_browser_the_page_renders_and_its_table_sorts(swept, tmp_path):
    root, data, _, _ = swept
    page = (root / "out" / "sweep.html").read_text(encoding="utf-8")
    seen, _ = probe_in_browser(page, PROBE, tmp_path)
    assert seen["errors"] == []
    assert seen["rows"] == len(data["configurations"]) and seen["svgs"] > 0
    assert seen["first"] == sorted(seen["first"], reverse=True)
    assert seen["second"] == sorted(seen["first"])
    assert seen["names"] == sorted(seen["names"], reverse=True)


def test_a_worker_of_its_own_makes_the_strategies_named_with_parameters(tmp_path):
    from chunkeval import config
    from chunkeval.executors import load_again
    from chunkeval.session import Session
    session = Session(config.load(root=tmp_path, command_line={
        "corpus": str(tmp_path), "strategies": ["fixed(size=333, overlap=0.1)", "fixed-400"]}))
    assert session.strategies == ["fixed-333-ov33", "fixed-400"]
    assert ("strategy", "fixed(size=333, overlap=0.1)", str(tmp_path)) in session.modules
    strategies.unregister("fixed-333-ov33")  # as a fresh process has it
    with pytest.raises(LookupError):
        strategies.registry.get("fixed-333-ov33")
    load_again(session.modules)
    assert strategies.registry.get("fixed-333-ov33").params["overlap"] == 33


def test_progress_counts_what_is_done_and_left_with_an_estimate(monkeypatch):
    said = []

    class Bar:
        def __init__(self, label, total, enabled=None):
            said.append(f"{label} of {total}")

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

        def step(self, what=""):
            said.append(what)

    class Evaluation:  # the first task comes from the caches, the rest are evaluated
        def stored_task(self, task, retrievers):
            return ["stored"] if task[1] == "a" else None

        def run_task(self, task, retrievers):
            return ["made"]

    from chunkeval.sweep import measure
    monkeypatch.setattr(measure, "Progress", Bar)
    found, failures = sweep.evaluate(Evaluation(), ["a", "b", "c"], ["bm25"], ["qs"])
    assert found == {("a", "bm25", "qs"): "stored", ("b", "bm25", "qs"): "made",
                     ("c", "bm25", "qs"): "made"} and failures == []
    assert said[0] == "sweep of 3"
    assert said[1] == "a on qs (2 to go)"  # nothing evaluated yet: no estimate
    assert re.fullmatch(r"b on qs \(1 to go, about \d+s left\)", said[2])
    assert said[3] == "c on qs (0 to go)"


# -- what the probe found -------------------------------------------------------------------

EVIL = "<img src=x onerror=alert(1)>|x"


def write_retriever(root, name: str | None = None) -> None:
    """myret.py: a team's embedding function (hashed bags of words), `embed`, maybe named."""
    (root / "myret.py").write_text(textwrap.dedent('''
        import numpy as np

        def embed(texts):
            out = np.zeros((len(texts), 64))
            for i, t in enumerate(texts):
                for w in t.lower().split():
                    out[i, sum(map(ord, w)) % 64] += 1
            return out
        ''') + (f"\nembed.retriever_name = {name!r}\n" if name else ""), encoding="utf-8")


def test_outside_names_in_sweep_md_stay_text_and_keep_the_tables_whole(
        swept, tmp_path, monkeypatch, capsys):
    """A corpus folder, a query file and a retriever named with an HTML element, a `|` (a
    retriever's name cannot hold one) and a line break: sweep.md renders (HTML allowed) with
    no element of theirs and every table row with its header's cells; the lines that adopt keep the MODULE:ATTR spelling."""
    from markdown_it import MarkdownIt
    from helpers import span_queries
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CHUNKEVAL_CACHE", str(tmp_path / "cache"))
    docs = tmp_path / f"docs{EVIL}\n# heading"
    shutil.copytree(swept[0] / "docs", docs)
    queries = tmp_path / f"q{EVIL}.jsonl"
    queries.write_text(span_queries(docs), encoding="utf-8")
    write_retriever(tmp_path, "emb<img src=x onerror=alert(2)>\n* y")
    assert main(["sweep", "--corpus", str(docs), "--queries", str(queries), *GRID,
                 "--retrievers", "myret:embed,bm25", "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    tail = printed[printed.index("to adopt the recommendation:"):]
    assert 'retrievers = ["myret:embed", "bm25"]' in tail
    md = (tmp_path / "out" / "sweep.md").read_text(encoding="utf-8")
    assert md.count("| configuration |") == 4  # two retrievers x two metrics
    page = MarkdownIt("commonmark", {"html": True}).enable("table").render(md)
    assert "<img" not in page and "<li>y" not in page
    for table in re.findall(r"<table>.*?</table>", page, re.S):
        rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)
        widths = {len(re.findall(r"<t[hd][ >]", r)) for r in rows}
        assert widths == {8}, table
    # one heading per verdict, the names inside them as text
    assert len(re.findall(r"<h3>", page)) == 4 and len(re.findall(r"<h2>", page)) == 1


def test_a_grid_past_max_configurations_says_what_it_costs_and_needs_yes(
        swept, tmp_path, capsys):
    docs = str(swept[0] / "docs")
    assert main(["sweep", "--corpus", docs, "--strategy", "fixed", "--size", "1:10000:1",
                 "--out", str(tmp_path / "big")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "10,000 configurations" in err[0] and "--yes" in err[0]
    assert "chunk the corpus 10,000 times" in err[0]
    assert not (tmp_path / "big").exists()
    assert main(["sweep", "--corpus", docs, *GRID, "--max-configurations", "4",
                 "--out", str(tmp_path / "small")]) == 2
    assert "8 configurations" in capsys.readouterr().err
    assert main(["sweep", "--corpus", docs, *GRID, "--max-configurations", "4", "--yes",
                 "--retrievers", "bm25", "--out", str(tmp_path / "small")]) == 0


def test_the_settings_give_a_checked_sweep_with_the_margin_and_halving_decided(
        tmp_path, monkeypatch):
    from chunkeval import config
    from chunkeval.session import Session

    monkeypatch.chdir(tmp_path)
    docs = write_pages(tmp_path / "docs")

    def configured(yes=False, **given):
        session = Session(config.load(command_line={"corpus": str(docs), **given})).check()
        return session, sweep.configure(session, yes=yes)

    _, planned = configured(sweep_strategy="fixed", sweep_size="210,420",
                                  min_effect=0.03)
    assert (planned.sizes, planned.overlaps) == ([210, 420], [0.0])
    assert planned.spelled == planned.retrievers == ["bm25"]
    assert planned.margin == 0.03 and planned.halving is False and planned.against is None
    # the grid was registered only to be checked
    assert "fixed-210" not in strategies.names(all=True)
    assert configured(sweep_strategy="fixed", sweep_size="210",
                      sweep_margin=0.05)[1].margin == 0.05
    with pytest.raises(ConfigError, match="pass --yes"):
        configured(sweep_strategy="fixed", sweep_size="100:2600:10")
    # past HALVING_FROM configurations, halved
    assert configured(True, sweep_strategy="fixed", sweep_size="100:2600:10")[1].halving
    with pytest.raises(ConfigError, match="sweep metric 'nope'"):
        configured(sweep_strategy="fixed", sweep_size="210", sweep_metric="nope")


ADOPTING = '''\
[project]
name = "team-docs"
version = "0"

[tool.chunkeval]
# the team's corpus and its questions
corpus = "docs"
query_sets = [
    "section-titles",
    "spans.jsonl",  # written by hand
]
splitters = ["teamsplit:split"]
reference = ['fixed-400', "structure-400"]  # gated beside ours
retrievers = ["bm25", "myret:embed"]

[tool.chunkeval.sweep]
strategy = "fixed"
size = [200, 300]
overlap = [0, 0.25]
'''


def in_project(root, *args):
    import os
    import subprocess
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "CI")}
    env["PYTHONPATH"] = str(Path(chunkeval.__file__).parent.parent)
    env["CHUNKEVAL_CACHE"] = str(root.parent / "cache")
    return subprocess.run([sys.executable, "-m", *args], cwd=root, env=env, text=True,
                          capture_output=True, timeout=600)


def test_adopt_writes_the_recommendation_into_the_project_and_keeps_every_test(swept, tmp_path):
    from helpers import span_queries
    root = tmp_path / "team"
    shutil.copytree(swept[0] / "docs", root / "docs")
    (root / "spans.jsonl").write_text(span_queries(root / "docs"), encoding="utf-8")
    factory_project(root)
    (root / "teamsplit.py").write_text((root / "sweepsplit.py").read_text(), encoding="utf-8")
    write_retriever(root)
    (root / "pyproject.toml").write_text(ADOPTING, encoding="utf-8")

    def items():
        done = in_project(root, "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          *NO_LANGSMITH)
        assert done.returncode == 0, done.stdout + done.stderr
        return set(re.findall(r"^\S*::\S+$", done.stdout, re.M))

    before = items()
    assert any("teamsplit" in i or "split" in i for i in before) and len(before) > 4
    done = in_project(root, "chunkeval", "sweep", "--adopt", "--out", "out")
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads((root / "out" / "sweep.json").read_text(encoding="utf-8"))
    first = data["verdicts"][0]
    chosen = max((v for v in data["verdicts"] if v["retriever"] == first["retriever"]
                  and v["metric"] == first["metric"] and v["recommendation"]),
                 key=lambda v: v["queries"])["recommendation"]
    shown = done.stdout[done.stdout.index("to adopt the recommendation (in "):]
    assert "-reference = ['fixed-400', \"structure-400\"]  # gated beside ours" in shown
    assert "is gated once recorded (`pytest --update-baselines`)" in shown  # what to run next
    text = (root / "pyproject.toml").read_text(encoding="utf-8")
    assert (root / "pyproject.toml.bak").read_text(encoding="utf-8") == ADOPTING
    # the file is the old one but for the reference list: comments and spelling kept
    assert text == ADOPTING.replace(
        "reference = ['fixed-400', \"structure-400\"]",
        f"reference = ['fixed-400', \"structure-400\", \"{chosen['spec']}\"]")
    after = items()
    assert before <= after
    assert {i for i in after - before} and all(chosen["strategy"] in i for i in after - before)


def test_halving_drops_configurations_on_a_sample_and_judges_the_finalists_on_every_query(
        swept, tmp_path, capsys):
    root = swept[0]
    out = tmp_path / "halved"
    assert main(["sweep", "--corpus", str(root / "docs"), "--strategy", "fixed", "--size",
                 "100:1000:100", "--overlap", "0,0.2", "--retrievers", "bm25",
                 "--halving", "on", "--out", str(out)]) == 0
    data = json.loads((out / "sweep.json").read_text(encoding="utf-8"))
    assert len(data["grid"]) == 20
    (rung,) = data["rungs"]  # 20 configurations: one rung of a third of the 120 queries
    assert (rung["queries"], rung["evaluated"]) == (40, 20)
    # dropped: only those shown worse than the rung's leader by more than the margin
    assert rung["dropped"] and rung["kept"] == 20 - len(rung["dropped"])
    assert [b["strategy"] for b in rung["bounds"]] == rung["dropped"]
    assert all(b["high"] < -data["settings"]["margin"] for b in rung["bounds"])
    judged = {c["strategy"] for c in data["configurations"]}
    assert len(judged) == rung["kept"] and not judged & set(rung["dropped"])
    assert all(len(c["per_query"]["coverage"]) == 120 for c in data["configurations"])
    md = (out / "sweep.md").read_text(encoding="utf-8")
    page = (out / "sweep.html").read_text(encoding="utf-8")
    assert "successive halving" in md and "successive halving" in page.lower()
    assert all(n in md and n in page for n in rung["dropped"])
    first = rung["bounds"][0]
    said = f"{first['strategy']} (≤ {first['high'] * 100:+.1f} points vs {first['leader']})"
    assert said in md and html.escape(said) in page
    capsys.readouterr()
    # a grid of 60 or fewer is not halved unless asked
    assert main(["sweep", "--corpus", str(root / "docs"), "--strategy", "fixed", "--size",
                 "100:1000:100", "--overlap", "0,0.2", "--retrievers", "bm25",
                 "--out", str(tmp_path / "whole")]) == 0
    whole = json.loads((tmp_path / "whole" / "sweep.json").read_text(encoding="utf-8"))
    assert whole["rungs"] == [] and len(whole["configurations"]) == 20


def test_the_three_verdicts_and_what_an_unclear_one_says():
    rng = np.random.default_rng(5)
    n = 200
    every = np.ones(n, dtype=bool)
    base = rng.random(n)
    costs = {"big": (300, 2000, 0.1), "small": (100, 1900, 0.1), "mid": (200, 1950, 0.1)}
    # the cheapest is a tenth of a point below the best on every query: as good, recommended
    series = {"big": base + 0.05, "small": base + 0.049, "mid": base}
    best, comps, _ = sweep.compare(series, costs, every, every, 0.05, 0.02)
    assert best == "big" and [c["strategy"] for c in comps if c["as_good"]] == ["small"]
    assert sweep.recommend(best, comps, costs) == "small"
    # a clear winner: every other is shown worse, by more than the margin
    series = {"big": base + 0.5, "small": base, "mid": base + 0.1}
    best, comps, _ = sweep.compare(series, costs, every, every, 0.05, 0.02)
    assert all(c["shown_worse"] and not c["as_good"] for c in comps)
    assert sweep.recommend(best, comps, costs) == "big"
    # noise on 30 queries: neither, nothing recommended
    few = np.ones(30, dtype=bool)
    series = {k: rng.random(30) for k in costs}
    best, comps, c = sweep.compare(series, costs, few, few, 0.05, 0.02)
    assert sweep.recommend(best, comps, costs) is None
    needed = sweep.queries_needed(30, c, comps, 0.02)
    said = sweep_page.unclear({"judged_on": 30, "margin": 0.02, "queries_needed": needed})
    assert said.startswith("the questions cannot tell configurations within 2 points apart: "
                           "30 questions; ")
    assert said.endswith(f"about {needed:,} needed" if needed and needed <= 3000
                         else "over 3,000 needed" if needed else "more needed")


def test_a_handful_of_questions_carries_no_verdict():
    """Four questions on which two configurations agree but for a little: the bootstrap's
    bounds would call them as good; with fewer than 30 questions nothing is claimed."""
    every = np.ones(4, dtype=bool)
    series = {"a": np.array([1.0, 0.5, 0.0, 1.0]), "b": np.array([1.0, 0.49, 0.0, 1.0])}
    costs = {"a": (2, 1, 0), "b": (1, 1, 0)}
    best, comps, _ = sweep.compare(series, costs, every, every, 0.05, 0.02)
    assert comps[0]["low"] > -0.02  # what the bounds alone would say
    assert not comps[0]["as_good"] and not comps[0]["shown_worse"]
    assert sweep.recommend(best, comps, costs) is None


@pytest.mark.parametrize("written, added", [
    ('reference = []\n', 'reference = ["fixed-300"]\n'),
    ('reference = ["a]", # b]\n  "c",\n]\n', 'reference = ["a]", # b]\n  "c", "fixed-300"\n]\n'),
    ("reference = ['x'] # [y]\n", "reference = ['x', \"fixed-300\"] # [y]\n"),
    ('k = 5\n', 'reference = ["fixed-400", "structure-400", "fixed-300"]\nk = 5\n'),
])
def test_a_list_gains_the_recommendation_as_written_text(written, added):
    from chunkeval import adopt
    text = "[tool.chunkeval]\n" + written + "[tool.chunkeval.sweep]\nsize = [1]\n"
    span = adopt._table_span(text, Path("pyproject.toml"))
    got = adopt._append(text, span, "reference", "fixed-300", ("fixed-400", "structure-400"),
                        Path("pyproject.toml"))
    assert got == "[tool.chunkeval]\n" + added + "[tool.chunkeval.sweep]\nsize = [1]\n"


def test_an_unknown_strategy_to_sweep_against_is_said_with_where_it_was_given():
    from chunkeval.errors import ConfigError
    from chunkeval.sweep.runner import prepare
    with pytest.raises(ConfigError) as e:
        prepare("fixed", [400], [0.0], metric=sweep.DEFAULT_METRIC, holdout=None,
                against="nosuch", where={"sweep_against": "option --against"})
    assert str(e.value).startswith("option --against: unknown strategy 'nosuch'")


def test_nothing_to_adopt_names_the_verdict_adopted_from_and_the_metric_that_recommends():
    from types import SimpleNamespace as V

    from chunkeval.sweep import nothing_to_adopt

    verdicts = [V(metric="budget_recall", retriever="bm25", recommendation=None),
                V(metric="recall_at_k", retriever="bm25", recommendation={"strategy": "r-900"})]
    said = nothing_to_adopt(V(verdicts=verdicts))
    assert said == ("nothing to adopt: no verdict by budget_recall for bm25 recommends a "
                    "configuration; by recall_at_k one does (--metric recall_at_k)")
    assert nothing_to_adopt(V(verdicts=verdicts[:1])).endswith("recommends a configuration")
