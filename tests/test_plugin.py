"""The pytest plugin tested from outside: inner pytest runs on a small corpus written here.

Each test builds a throwaway project (a few dozen generated HTML pages, a `mymod.py` of
outside splitters, a copy of this suite's metric or invariant tests) and runs pytest on it.
Metric runs are in-process for speed; the strategy registry is global, so the `project`
fixture unregisters whatever an inner run registered. The invariant run is a subprocess
because its hypothesis profile is global too.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

import chunkeval.evaluate
from chunkeval import strategies
from chunkeval.gate import baselines
from chunkeval.gate.baselines import Baseline
from chunkeval.gate.entry import BaselineEntry
from helpers import NO_LANGSMITH, corpus_pages, import_what_inner_runs_import

import_what_inner_runs_import()

pytest_plugins = ["pytester"]

HERE = Path(__file__).parent
CORPUS = "manuals"
BASELINE = f"baselines/{CORPUS}.json"
RUN = ["--chunkeval-corpus", CORPUS, "--chunkeval-query-sets", "section-titles",
       "--chunkeval-retrievers", "bm25", "-p", "no:randomly", "-p", "no:cacheprovider", "-rfE",
       *NO_LANGSMITH]
METRIC_STRATEGIES = "mywin,fixed-400,structure-400"

# -- the throwaway project ---------------------------------------------------------------


MYMOD = '''\
"""Outside splitters, as a user's project would write them: plain functions over a Document."""
from chunkeval.model import Chunk

SIZE = {size}
SHIFTED = {shifted}  # a few boundaries moved by a few characters
PHASE = {phase}  # windows start at PHASE (the first chunk is shorter): the same strategy
DROP = {drop}  # each chunk loses this share of its end


def _pieces(doc, cuts):
    cuts = sorted(set(cuts))
    return [Chunk(doc.id, s, e, doc.text[s:e]) for s, e in zip(cuts, cuts[1:])
            if doc.text[s:e].strip()]


def _dropped(doc, chunks):
    keep = [max(1, round((c.end - c.start) * (1 - DROP))) for c in chunks]
    return [Chunk(doc.id, c.start, c.start + n, doc.text[c.start:c.start + n])
            for c, n in zip(chunks, keep)]


def mywin(doc):
    """Fixed windows of SIZE characters."""
    cuts = [0, *range(PHASE or SIZE, len(doc.text), SIZE), len(doc.text)]
    if DROP:
        return _dropped(doc, _pieces(doc, cuts))
    if SHIFTED and doc.id.endswith(("3.html", "7.html")) and len(cuts) > 4:
        for i in (1, 2, 3):
            cuts[i] -= 7
    return _pieces(doc, cuts)


mywin.params = {{"size": SIZE + 7 if SHIFTED else SIZE, "overlap": 0}}


def drop_half(doc):
    """Windows over the first half of the text only: the rest is in no chunk."""
    half = len(doc.text) // 2
    return _pieces(doc, [*range(0, half, 300), half])


drop_half.params = {{"size": 300, "overlap": 0}}


def cut_rows(doc):
    """Windows of 200 inside each block, and every table cut inside its first row."""
    cuts = []
    for b in doc.blocks:
        cuts += [b.start, b.end, *range(b.start, b.end, 200)]
        if b.kind == "table":
            s, e = b.rows[0]
            cuts.append((s + e) // 2)
    return _pieces(doc, cuts)


# It claims the structure family, so the checker holds it to keeping table rows whole.
cut_rows.family = "structure"
cut_rows.params = {{"size": 200}}
'''

SPLITTERS = ["--splitter", "mymod:mywin", "--splitter", "mymod:drop_half",
             "--splitter", "mymod:cut_rows"]

# Reproducible and quick: a fixed seed, and no shrinking (any failing example names the
# broken property; shrinking one takes tens of seconds).
CONFTEST = '''\
from hypothesis import Phase, settings

settings.register_profile("inner", max_examples=20, deadline=None, database=None,
                          derandomize=True, phases=[Phase.explicit, Phase.generate])
settings.load_profile("inner")
'''


def write_mymod(pytester: pytest.Pytester, size: int = 300, shifted: bool = False,
                phase: int = 0, drop: float = 0.0) -> None:
    pytester.makepyfile(mymod=MYMOD.format(size=size, shifted=shifted, phase=phase, drop=drop))


# The copy of test_regression.py gets another name: under the outer run's import mode, a
# second module named test_regression would clash with the one this suite imported.
METRIC_TESTS = "test_chunking_metrics.py"


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
            tmp_path_factory: pytest.TempPathFactory):
    """A project with the corpus, mymod.py and a copy of this suite's metric tests."""
    monkeypatch.setenv("CHUNKEVAL_CACHE", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")  # mymod.py is rewritten within a second
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    pytester.syspathinsert()  # --splitter mymod:... imports it
    pytester.makeini("[pytest]\n")
    (pytester.path / METRIC_TESTS).write_text(
        (HERE / "test_regression.py").read_text(encoding="utf-8"), encoding="utf-8")
    corpus = pytester.mkdir(CORPUS)
    for name, text in corpus_pages().items():
        (corpus / name).write_text(text, encoding="utf-8")
    write_mymod(pytester)
    registered = set(strategies.names())
    yield pytester
    for name in set(strategies.names()) - registered:
        strategies.unregister(name)


def run(project: pytest.Pytester, *args: str, only: str = METRIC_STRATEGIES,
        tests: str = METRIC_TESTS, subprocess: bool = False) -> pytest.RunResult:
    """pytest on the project's tests, with the given strategies and the bm25 retriever."""
    if subprocess:
        how = project.runpytest_subprocess
    else:
        how = project.runpytest_inprocess
        # the inner config would re-mark the already imported plugin for assertion rewriting
        args = ("-W", "ignore::pytest.PytestAssertRewriteWarning", *args)
    return how(tests, *RUN, *SPLITTERS, "--chunkeval-strategies", only, *args)


def record(project: pytest.Pytester, only: str = METRIC_STRATEGIES) -> bytes:
    result = run(project, "--update-baselines", only=only)
    assert result.ret == 0, result.stdout.str()
    return (project.path / BASELINE).read_bytes()


def summary_sections(result: pytest.RunResult) -> int:
    return len(re.findall(r"^=+ chunkeval =+$", result.stdout.str(), re.M))


def statuses(path: Path) -> dict[str, dict[str, str]]:
    rows = json.loads(path.read_text(encoding="utf-8"))["rows"]
    return {f"{r['strategy']}|{r['retriever']}|{r['query_set']}":
            {v["metric"]: v["status"] for v in r["verdicts"]} for r in rows}


# -- (a) outside splitters that break invariants ------------------------------------------

def test_outside_splitters_that_break_invariants_fail_naming_strategy_and_property(project):
    project.makeconftest(CONFTEST)
    (project.path / "test_invariants.py").write_text(
        (HERE / "test_invariants.py").read_text(encoding="utf-8"), encoding="utf-8")
    result = run(project, tests="test_invariants.py", only="mywin,drop_half,cut_rows",
                 subprocess=True)
    out = result.stdout.str()
    assert result.ret == 1
    failed = set(re.findall(r"^FAILED test_invariants\.py::(\S+)", out, re.M))
    assert "test_invariants_on_generated_documents[drop_half]" in failed
    assert "test_invariants_on_generated_documents[cut_rows]" in failed
    assert not [t for t in failed if "[mywin" in t], failed  # plain windows keep them all
    assert re.search(r"strategy 'drop_half' broke 'coverage': \S+: text .* is in no chunk", out)
    assert re.search(r"strategy 'cut_rows' broke 'table_rows': \S+: .* cuts table row", out)
    # drop_half keeps every chunk a slice of the text: only coverage is broken
    assert "strategy 'drop_half' broke 'slice'" not in out


# -- (b) a recorded strategy swapped for a worse one; (f) the summary, JSON rows, xdist -----

def test_worse_implementation_under_the_same_name_fails_and_xdist_agrees(project):
    text = record(project).decode("utf-8")
    data = json.loads(text)
    assert text == baselines.dumps(data)  # the stable form: sorted keys, one list a line
    assert_sorted_keys(data)
    assert set(data["entries"]) == {f"{s}|bm25|section-titles"
                                    for s in METRIC_STRATEGIES.split(",")}
    assert len(data["entries"]["mywin|bm25|section-titles"]["per_query"]["coverage"]) >= 60

    write_mymod(project, size=150)  # same name, half the window: the top k hold half the text
    plain = run(project, "--chunkeval-json", "plain.json")
    out = plain.stdout.str()
    assert plain.ret == 1
    outcomes = plain.parseoutcomes()
    assert outcomes["failed"] == 1 and outcomes["passed"] == 3, outcomes
    plain.stdout.fnmatch_lines([
        f"*strategy 'mywin', retriever 'bm25', query set 'section-titles' regressed on corpus "
        f"'{CORPUS}' (*):*",
        f"FAILED {METRIC_TESTS}::test_recall[[]mywin-bm25-section-titles[]]*",
    ])
    assert re.search(r"^\s+recall_at_k: [0-9.]+% vs baseline [0-9.]+% \(diff -[0-9.]+ points, .*-> regressed$", out, re.M)
    # the summary: once, the regressed case first with every regressed metric named, then
    # one line for the cases that are ok
    assert summary_sections(plain) == 1
    rows = statuses(project.path / "plain.json")
    named = ", ".join(m for m, s in rows["mywin|bm25|section-titles"].items() if s == "regressed")
    assert re.search(rf"^mywin\s+bm25\s+section-titles .* regressed \({named}\)$", out, re.M)
    assert not re.search(r"^fixed-400\s+bm25\s+section-titles", out, re.M)
    assert re.search(r"^\d+ of \d+ cases ok: every gated metric within its bounds", out, re.M)
    assert rows["mywin|bm25|section-titles"]["recall_at_k"] == "regressed"
    assert set(rows["fixed-400|bm25|section-titles"].values()) == {"ok"}

    # a subprocess: xdist gives local workers the sys.path its controller started with
    xdist = run(project, "-n", "2", "--chunkeval-json", "xdist.json", "--chunkeval-html",
                "xdist.html", subprocess=True)
    assert xdist.ret == 1
    assert xdist.parseoutcomes() == outcomes
    assert summary_sections(xdist) == 1
    assert statuses(project.path / "xdist.json") == rows
    # the controller, which evaluated nothing, still writes the drill-down page
    cases = drill_down(project.path / "xdist-queries.html")["cases"]
    assert sorted(c["s"] for c in cases) == sorted(METRIC_STRATEGIES.split(","))
    assert all("before" in c for c in cases)


def test_under_xdist_the_tests_of_one_strategy_share_a_worker_and_record_the_same_bytes(
        project):
    # Its chunks and indexes are then built by one worker only. pytest 9.2 ignores the node
    # id suffix by which xdist's own loadgroup passes groups, which split them round-robin.
    # Serially (in this process) and under -n 2, with no cache (each computes every number),
    # the baselines are the same bytes: no score that enters a ranking depends on threads or
    # processes.
    retrievers = ("--chunkeval-retrievers", "bm25,lsa,hybrid", "--chunkeval-no-cache")
    serial = run(project, *retrievers, "--update-baselines")
    assert serial.ret == 0, serial.stdout.str()
    recorded = (project.path / BASELINE).read_bytes()
    (project.path / BASELINE).unlink()
    result = run(project, "-n", "2", "-v", *retrievers, "--update-baselines", subprocess=True)
    assert result.ret == 0, result.stdout.str()
    assert (project.path / BASELINE).read_bytes() == recorded
    ran = re.findall(r"^\[(gw\d)\] \[ *\d+%\] PASSED \S+::test_(?:recall|cut_rate)\[(.+)\]",
                     result.stdout.str(), re.M)
    workers: dict[str, set[str]] = {}
    for worker, case in ran:
        strategy = next(s for s in METRIC_STRATEGIES.split(",") if case.startswith(s + "-"))
        workers.setdefault(strategy, set()).add(worker)
    assert len(ran) == 3 * 3 + 1  # three retrievers a strategy, structure-400's cut rate
    assert set(workers) == set(METRIC_STRATEGIES.split(","))
    assert all(len(w) == 1 for w in workers.values()), workers


def test_the_xdist_controller_of_an_unconfigured_project_loads_no_corpus(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path):
    # Grouping by strategy needs the strategies' names only; the query sets would need the
    # corpus, which for a project without settings is the default one, fetched with apt-get.
    from chunkeval.session import Session

    def loaded(self):
        raise AssertionError("the controller loaded the corpus")
    monkeypatch.setattr(Session, "evaluation", property(loaded))
    monkeypatch.setenv("CHUNKEVAL_CACHE", str(tmp_path / "cache"))
    pytester.makepyfile(test_plain="""
        import pytest

        @pytest.mark.parametrize("n", ["fixed-400-a", "b"])
        def test_one(n):
            pass
    """)
    result = pytester.runpytest_inprocess("-n", "2", "-p", "no:cacheprovider", *NO_LANGSMITH)
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=2)


def drill_down(path: Path) -> dict:
    """The data the per-query page carries."""
    page = path.read_text(encoding="utf-8")
    return json.loads(re.search(r'id="data">(.*?)</script>', page, re.S).group(1))


def assert_sorted_keys(obj) -> None:
    if isinstance(obj, dict):
        assert list(obj) == sorted(obj)
        for v in obj.values():
            assert_sorted_keys(v)
    elif isinstance(obj, list):
        for v in obj:
            assert_sorted_keys(v)


# -- (c) a harmless change passes -----------------------------------------------------------

def test_a_few_boundaries_shifted_by_a_few_characters_pass(project):
    record(project, only="mywin")
    write_mymod(project, shifted=True)
    result = run(project, "--chunkeval-json", "rows.json", only="mywin")
    assert result.ret == 0, result.stdout.str()
    assert result.parseoutcomes()["passed"] == 1
    (row,) = json.loads((project.path / "rows.json").read_text(encoding="utf-8"))["rows"]
    recall = next(v for v in row["verdicts"] if v["metric"] == "recall_at_k")
    assert recall["value"] != recall["baseline"]  # the numbers moved, within the noise
    assert {v["status"] for v in row["verdicts"]} == {"ok"}
    # the strategy changed under its name: the summary says so, though it passed
    assert re.search(r"^mywin bm25 section-titles: chunks changed, metrics within bounds "
                     r"\(params \{.*'size': 300\} -> \{.*'size': 307.*\}\)$",
                     result.stdout.str(), re.M)
    record(project, only="mywin")
    result = run(project, only="mywin")
    assert result.ret == 0 and "chunks changed" not in result.stdout.str()


# -- per-query diffs: a real loss names the queries that lost; another phase passes ---------------

def test_a_ten_percent_loss_fails_listing_five_queries_and_another_phase_passes(project):
    record(project, only="mywin")
    write_mymod(project, drop=0.1)
    result = run(project, "--chunkeval-json", "rows.json", "--chunkeval-html", "diff.html",
                 only="mywin")
    out = result.stdout.str()
    assert result.ret == 1, out
    assert "strategy 'mywin', retriever 'bm25', query set 'section-titles' regressed" in out
    assert "the 5 queries that lost most (coverage at k, in points):" in out
    lost = re.findall(r"^\s+'([^']+)' \(gold (page\d\d\.html)\): ([0-9.]+) -> ([0-9.]+) "
                      r"\(([-+][0-9.]+)\)$", out, re.M)
    assert len(lost) == 5, out
    changes = [float(c) for *_, c in lost]
    assert all(float(b) > float(a) for _, _, b, a, _ in lost) and changes == sorted(changes)
    before = re.findall(r"^\s+most gold before: (page\d\d\.html \[\d+:\d+\]) '", out, re.M)
    now = re.findall(r"^\s+most gold now:    (page\d\d\.html \[\d+:\d+\]) '", out, re.M)
    assert len(before) == len(now) == 5, out
    assert all(b != n for b, n in zip(before, now))  # the change, not one chunk twice
    # every interval says its level, and why it is wider than 95% is said once
    level = re.search(r"\(diff [-+0-9.]+ points, (\d+(?:\.\d)?% CI) ", out).group(1)
    assert level != "95% CI" and out.count(f"{level}: family-wise intervals") >= 1
    # the JSON rows and the HTML page carry every query, not only the 5
    (row,) = json.loads((project.path / "rows.json").read_text(encoding="utf-8"))["rows"]
    assert len(row["per_query"]) >= 60 and {"before", "now", "best_before", "best_now",
                                            "query", "doc"} <= set(row["per_query"][0])
    assert [q["change"] for q in row["per_query"][:5]] == pytest.approx(
        [c / 100 for c in changes], abs=1e-3)
    page = (project.path / "diff.html").read_text(encoding="utf-8")
    assert page.count("<tr><td>") >= len(row["per_query"])
    # beside it, the drill-down page: every query before (the baseline) and now
    (case,) = drill_down(project.path / "diff-queries.html")["cases"]
    before = {q["id"]: round(q["before"] * 10_000) for q in row["per_query"]}
    assert case["before"]["firstOnly"] and sorted(case["before"]["cov"]) == sorted(before.values())
    assert case["now"]["cov"] != case["before"]["cov"] and len(case["now"]["top"][0]) == 5

    # The same windows, every boundary 30 characters earlier. (On these generated pages every
    # section starts near the same offset, so phase 0 suits them: shifts of 70-210
    # characters really lose 3-5 points here, and the gate rightly fails them.)
    write_mymod(project, phase=270)
    result = run(project, "--chunkeval-json", "rows.json", only="mywin")
    assert result.ret == 0, result.stdout.str()
    (row,) = json.loads((project.path / "rows.json").read_text(encoding="utf-8"))["rows"]
    assert any(q["change"] for q in row["per_query"])  # queries moved, the gate held


# -- cut rate: a row-cutting "structure" splitter is refused; any retriever's entry serves ----

def test_cut_rate_refuses_a_row_cutter_and_reads_the_entry_of_any_retriever(project):
    lsa = ("--chunkeval-retrievers", "lsa")
    result = run(project, "--update-baselines", *lsa, only="structure-400,cut_rows")
    assert result.ret == 1  # the ceiling holds even while recording
    result.stdout.fnmatch_lines([
        "*strategy 'cut_rows' on query set 'section-titles' on corpus *: cut rate *% is above "
        "the ceiling 25.0% (* of * table/pre blocks cut)*",
        # as a recall failure names its queries: the documents, blocks and boundaries
        "* cut block(s) in * document(s); the first 5 (document, block [[]start:end], chunk "
        "boundaries inside it):",
        "  page*.html table [[]*:*] '*': cut at *"])
    assert result.parseoutcomes()["failed"] == 1
    # recorded with lsa alone: the cut-rate test must not look for a bm25 entry
    result = run(project, *lsa, only="structure-400")
    assert result.ret == 0, result.stdout.str()


# -- (d) baselines that cannot be compared --------------------------------------------------

def test_an_edited_page_passes_when_the_chunking_of_the_other_pages_is_unchanged(project):
    record(project, only="mywin")
    page = project.path / CORPUS / "page05.html"
    page.write_text(page.read_text(encoding="utf-8").replace("<p>", "<p>Edited. ", 1),
                    encoding="utf-8")
    result = run(project, only="mywin")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines([
        "corpus changed in 1 of 40 documents (1 edited); chunking unchanged on the other 39; "
        "re-baseline when convenient; numbers now, as information:",
        "  mywin bm25 section-titles: recall_at_k * (recorded *), budget_recall * (recorded *)"])


def test_a_baseline_recorded_before_documents_were_fingerprinted_refuses_a_changed_corpus(
        project):
    record(project, only="mywin")
    path = project.path / BASELINE
    data = json.loads(path.read_text(encoding="utf-8"))
    del data["documents"]  # as a file recorded before this release has it
    path.write_text(json.dumps(data), encoding="utf-8")
    page = project.path / CORPUS / "page05.html"
    page.write_text(page.read_text(encoding="utf-8").replace("<p>", "<p>Edited. ", 1),
                    encoding="utf-8")
    result = run(project, only="mywin")
    assert result.ret == 6  # EXIT_NOT_COMPARED
    result.stdout.fnmatch_lines([
        f"*{BASELINE}: recorded on corpus '{CORPUS}' fingerprint *, this run's corpus has *: "
        "the corpus changed, so the numbers are not comparable. If the change is intended, "
        "re-baseline with `pytest --update-baselines`.*"])


def test_two_corpora_of_one_name_never_overwrite_each_others_baseline(project):
    first = record(project, only="mywin")
    other = project.path / "elsewhere" / CORPUS
    other.mkdir(parents=True)
    for name, text in list(corpus_pages(seed=8).items())[:20]:
        (other / name).write_text(text, encoding="utf-8")
    elsewhere = ("--chunkeval-corpus", str(other))
    result = run(project, "--update-baselines", *elsewhere, only="mywin")
    assert result.ret == 1
    result.stdout.fnmatch_lines([f"baselines NOT written: *{BASELINE}: recorded on the corpus "
                                 f"'dir:{CORPUS}', not on this run's 'dir:elsewhere/{CORPUS}'*"])
    assert (project.path / BASELINE).read_bytes() == first
    result = run(project, *elsewhere, only="mywin")  # comparing says the same, once
    assert result.ret == 6 and result.stdout.str().count("recorded on the corpus") == 1
    other_dir = ("--chunkeval-baselines", "baselines-elsewhere")
    assert run(project, "--update-baselines", *elsewhere, *other_dir, only="mywin").ret == 0
    assert run(project, *elsewhere, *other_dir, only="mywin").ret == 0
    assert (project.path / BASELINE).read_bytes() == first


def test_a_missing_entry_and_a_missing_file_say_how_to_record_them(project):
    result = run(project, only="mywin")
    assert result.ret == 6  # no comparison could be made (EXIT_NOT_COMPARED)
    result.stdout.fnmatch_lines([f"*no baseline file at *{BASELINE}: run `pytest "
                                 "--update-baselines` to record one from this run*"])
    record(project, only="mywin")
    result = run(project, only="mywin,fixed-400")
    outcomes = result.parseoutcomes()
    assert (outcomes["passed"], outcomes["failed"], result.ret) == (1, 1, 6), outcomes
    result.stdout.fnmatch_lines([
        "*no baseline entry for strategy 'fixed-400', retriever 'bm25', query set "
        f"'section-titles' in *{BASELINE}: run `pytest --update-baselines` to record it*"])


def test_a_corrupt_baseline_file_is_named_in_a_clear_error(project):
    (project.path / "baselines").mkdir()
    (project.path / BASELINE).write_text('{"schema": 1, "entries": {', encoding="utf-8")
    result = run(project, only="mywin")
    assert result.ret == 1
    result.stdout.fnmatch_lines([f"*{BASELINE}: not a valid baseline file (*); fix it, or "
                                 "replace it with this run's entries by `pytest "
                                 "--update-baselines=replace`*"])
    out = result.stdout.str()
    assert "Traceback" not in out
    assert "During handling" not in out and out.count("not a valid baseline file (") == 1
    # an update neither replaces it silently nor crashes; replace does, when asked
    before = (project.path / BASELINE).read_bytes()
    result = run(project, "--update-baselines", only="mywin")
    assert result.ret == 1
    result.stdout.fnmatch_lines([f"baselines NOT written: *{BASELINE}: not a valid baseline*"])
    assert (project.path / BASELINE).read_bytes() == before
    result = run(project, "--update-baselines=replace", only="mywin")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["baselines written: *(1 entry recorded, 1 in the file); "
                                 "the old file was replaced: *not a valid baseline file*"])


# -- (e) writing baselines: stable bytes, and a crash keeps the old file ---------------------

def test_update_baselines_twice_gives_the_same_bytes(project):
    first = record(project)
    second = record(project)
    assert first == second


@pytest.mark.parametrize("failing", ["fsync", "replace"])
def test_a_crash_while_saving_a_baseline_keeps_the_old_file(tmp_path, monkeypatch, failing):
    path = tmp_path / "baselines" / "c.json"
    entry = BaselineEntry(metrics=dict.fromkeys(("recall_at_k", "budget_recall",
                                                 "complete_rate", "doc_hit_at_k"), 0.5),
                          cut_rate=0.0, chunks=1, per_query={"coverage": [0.5],
                                                             "budget_coverage": [0.5],
                                                             "doc_hit": [1]})
    old = Baseline(path, {"schema": 1, "corpus": {"name": "c", "fingerprint": "f"},
                          "settings": {}, "query_sets": {}}, {"a|bm25|q": entry})
    old.save()
    before = path.read_bytes()

    def crash(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, failing, crash)
    new = Baseline.load(path)
    new.entries["b|bm25|q"] = entry
    with pytest.raises(OSError, match="No space left"):
        new.save()
    monkeypatch.undo()
    assert path.read_bytes() == before
    # no temporary left (and the folder's .gitignore of them, written by the first save)
    assert sorted(p.name for p in path.parent.iterdir()) == [".gitignore", "c.json"]


def test_a_baseline_measured_with_another_length_function_is_not_compared(project):
    record(project, only="mywin")
    project.makepyfile(lenmod11="def words(text):\n    return len(text.split())\n")
    result = run(project, "--chunkeval-length", "lenmod11:words", only="mywin")
    assert result.ret == 6  # not compared
    result.stdout.fnmatch_lines([f"*{BASELINE}: recorded with length=chars, this run uses "
                                 "length=lenmod11:words.*--update-baselines*"])
    bad = run(project, "--chunkeval-length", "lenmod11:nope", only="mywin")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert "length 'lenmod11:nope': 'lenmod11' has no attribute 'nope'" in bad.stderr.str()


def test_a_second_session_reuses_the_results_of_the_first(project, monkeypatch):
    record(project)
    stored = sorted(Path(os.environ["CHUNKEVAL_CACHE"]).glob("results/*/*.json.gz"))
    assert len(stored) == len(METRIC_STRATEGIES.split(","))  # one retriever, one query set

    def refuse(*args, **kw):
        raise AssertionError("an index was built although its result was cached")
    monkeypatch.setattr(chunkeval.evaluate.Evaluation, "index", refuse)
    again = run(project)
    assert again.ret == 0, again.stdout.str()
    assert again.parseoutcomes().get("passed", 0) >= len(METRIC_STRATEGIES.split(","))
    # off: evaluated again, so the refused index fails every metric test
    off = run(project, "--chunkeval-no-result-cache")
    assert off.ret == 1 and "an index was built" in off.stdout.str()


def test_a_session_with_chunkeval_tests_freezes_what_it_collected_once(project, monkeypatch):
    import gc

    frozen = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append("frozen"))
    monkeypatch.setattr(gc, "get_freeze_count", lambda: 0)
    assert run(project, "--update-baselines").ret == 0
    assert frozen == ["frozen"]
    # none without a chunkeval test, beside a team's own test, nor when objects are frozen
    # already (an outer session)
    assert run(project, "-k", "no_such_test").ret == pytest.ExitCode.NO_TESTS_COLLECTED
    project.makepyfile(test_own="def test_own():\n    pass\n")
    assert run(project, tests=".").ret == 0
    (project.path / "test_own.py").unlink()
    monkeypatch.setattr(gc, "get_freeze_count", lambda: 1)
    assert run(project).ret == 0
    assert frozen == ["frozen"]


def test_a_gate_compares_the_corpus_without_counting_its_characters(project, monkeypatch):
    from chunkeval.model import Corpus

    record(project)

    def counted(self):
        raise AssertionError("the corpus's characters were counted")
    monkeypatch.setattr(Corpus, "chars", property(counted))
    result = run(project)
    assert result.ret == 0, result.stdout.str()


def test_the_verdict_lands_in_the_ci_summary_and_the_junit_report(project, monkeypatch):
    record(project, only="mywin")
    write_mymod(project, drop=0.1)
    summary = project.path / "step-summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = run(project, "--chunkeval-markdown", "verdict.md", "--junitxml", "junit.xml",
                 only="mywin")
    assert result.ret == 1
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("earlier step\n## chunkeval: 1 of ")  # appended, not replaced
    table = [line for line in text.splitlines() if line.startswith("| ")]
    assert table[0].startswith("| verdict | strategy |")
    assert table[1].startswith("| **regressed** | mywin | bm25 | section-titles | recall_at_k")
    assert "family-wise intervals" in text and "### Queries that lost most: mywin" in text
    assert (project.path / "verdict.md").read_text(encoding="utf-8") in text
    junit = (project.path / "junit.xml").read_text(encoding="utf-8")
    assert re.search(r'<property name="recall_at_k" value="0\.\d+"', junit)
    assert '<property name="recall_at_k_status" value="regressed"' in junit


# -- a warm cache never changes a verdict --------------------------------------------------
READS_ITS_SIZE = '''\
import json, os
from pathlib import Path
import mysize
from chunkeval.model import Chunk


def mywin(doc):
    size = int(os.environ.get("MYWIN_SIZE") or 0) or mysize.SIZE or \\
        json.loads((Path(__file__).parent / "mywin.json").read_text())["size"]
    cuts = [*range(0, len(doc.text), size), len(doc.text)]
    return [Chunk(doc.id, s, e, doc.text[s:e]) for s, e in zip(cuts, cuts[1:])
            if doc.text[s:e].strip()]


mywin.params = {"size": 300, "overlap": 0}


def drop_half(doc):  # named by the project's options, not run here
    return mywin(doc)


cut_rows = drop_half
'''


@pytest.mark.parametrize("where", ["data file", "environment", "helper module"])
def test_a_warm_cache_fails_a_regression_of_a_team_splitter_as_an_empty_one_does(
        project, monkeypatch, where):
    """The splitter's size lives outside its source: a data file, the environment, a
    module it imports. The cache must not serve its old chunks."""
    project.makepyfile(mymod=READS_ITS_SIZE, mysize="SIZE = 0\n")
    (project.path / "mywin.json").write_text('{"size": 300}', encoding="utf-8")
    monkeypatch.delenv("MYWIN_SIZE", raising=False)
    record(project, only="mywin")
    assert run(project, only="mywin").ret == 0  # warm, unchanged: passes
    if where == "data file":
        (project.path / "mywin.json").write_text('{"size": 40}', encoding="utf-8")
    elif where == "environment":
        monkeypatch.setenv("MYWIN_SIZE", "40")
    else:
        sys.modules.pop("mysize", None)
        project.makepyfile(mysize="SIZE = 40\n")
    sys.modules.pop("mymod", None)
    warm = run(project, only="mywin")
    assert warm.ret == 1 and "regressed" in warm.stdout.str(), warm.stdout.str()
    monkeypatch.delenv("MYWIN_SIZE", raising=False)
    (project.path / "mywin.json").write_text('{"size": 300}', encoding="utf-8")
    sys.modules.pop("mysize", None)
    project.makepyfile(mysize="SIZE = 0\n")
    sys.modules.pop("mymod", None)
    assert run(project, only="mywin").ret == 0  # reverted: passes again
