"""queries.html, the per-query drill-down page: what it stores, and that it works in a real
browser (headless Chromium, skipped where none is installed).

One `chunkeval run` on generated pages feeds every test: section-titles (text gold) and a
JSONL set of positional gold (spans)."""

from __future__ import annotations

import json
import re
from importlib import resources

import pytest

from chunkeval import config
from chunkeval.model import Corpus, Document, Part, Query, QuerySet
from chunkeval.report import queries_page
from chunkeval.results import Settings
from chunkeval.session import Session, read_results
from helpers import CHROMIUM, PROBE_END, probe_in_browser, run_on_pages_with_spans

STRATEGIES = "fixed-200,fixed-400,structure-400"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """(results folder, the query sets it was measured on) of one run on 24 generated pages."""
    root = tmp_path_factory.mktemp("queries-page")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CHUNKEVAL_CACHE", str(root / "cache"))
        docs, spans, out = run_on_pages_with_spans(root, STRATEGIES)
        session = Session(config.load(command_line={"corpus": str(docs), "query_sets": [
            "section-titles", str(spans)]}))
        sets = [session.query_set(s) for s in session.query_specs()]
        yield out, sets


def page_data(path) -> dict:
    text = path.read_text(encoding="utf-8")
    found = re.search(r'<script type="application/json" id="data">(.*?)</script>', text, re.S)
    return json.loads(found.group(1))


def document(data: dict, s: dict, d: int) -> list[str]:
    """A document as the page rebuilds it: its characters, "" where the page left it out."""
    chars: list[str] = []
    for part in s["text"][d]:
        chars += list(data["strings"][part]) if part >= 0 else [""] * -part
    return chars


# -- what the page stores -------------------------------------------------------------------

def test_every_case_and_query_is_there_and_every_chunk_is_its_slice(run):
    out, sets = run
    data = page_data(out / "queries.html")
    results = read_results(out)
    assert len(data["cases"]) == len(results.results) == 12 and not data["notes"]
    views = {qs.name: qs.view for qs in sets}
    for case in data["cases"]:
        s = data["sets"][case["set"]]
        result = results.row(s["name"], case["s"], case["r"])
        assert [q[0] for q in s["queries"]] == [q.id for q in result.per_query]
        assert case["now"]["cov"] == [round(q.coverage * 10_000) for q in result.per_query]
        for numbers, q in zip(case["now"]["top"], result.per_query):
            spans = [s["chunks"][n][:3] for n in numbers]
            assert [[s["docs"][d], a, b] for d, a, b in spans] == \
                [r[:3] for r in q.retrieved[:data["k"]]]
        # every case but the reference's is compared with the reference on its retriever
        ref = data["cases"][case["ref"]] if "ref" in case else None
        assert (ref is None) == (case["s"] == "fixed-400")
        assert ref is None or (ref["s"], ref["r"], ref["set"]) == ("fixed-400", case["r"],
                                                                   case["set"])
    for s in data["sets"]:
        view = views[s["name"]]
        for d, a, b, *_ in s["chunks"]:
            assert "".join(document(data, s, d)[a:b]) == view[s["docs"][d]].text[a:b]


def test_texts_are_stored_once_and_only_where_needed(run):
    out, sets = run
    data = page_data(out / "queries.html")
    assert len(data["strings"]) == len(set(data["strings"]))
    stored = sum(len(t) for t in data["strings"])
    assert stored < sum(len(d.text) for qs in sets for d in qs.view.documents)


def test_a_page_over_its_budget_leaves_cases_out_and_says_which(run, monkeypatch, tmp_path):
    out, sets = run
    monkeypatch.setattr(queries_page, "ROW_BUDGET", 200)
    page = queries_page.write_run_page(read_results(out), sets, tmp_path)
    data = page_data(page)
    assert 0 < len(data["cases"]) < 12
    (note,) = data["notes"]
    assert f"{12 - len(data['cases'])} case(s) left out" in note and "query rows" in note


def test_markup_in_the_documents_cannot_end_the_data():
    text = "Comment out with <!--<script>, end with </script> and go on."
    doc = Document.from_parts("a.html", "A", [Part("paragraph", text)])
    qs = QuerySet("s", (Query("q", "comment", "a.html", "end with </script>"),),
                  Corpus("c", (doc,)))
    page = queries_page.Page([qs], Settings(), "t", None)
    page.add("fixed-400", "bm25", "s", {"coverage": [1.0], "top": [[["a.html", 0, len(text)]]]})
    rendered = page.render()
    data = re.search(r'id="data">(.*?)</script>', rendered, re.S).group(1)
    assert "<" not in data
    stored = json.loads(data)
    assert "".join(document(stored, stored["sets"][0], 0)) == text


def test_a_rewritten_chunk_keeps_only_what_it_adds():
    assert queries_page._affix("body text", "Title\nbody text") == ["Title\n", ""]
    assert queries_page._affix("a | b", "a  \nb") is None


def test_the_pytest_page_sits_next_to_the_html_setting():
    assert queries_page.sibling("out/diff.html").as_posix() == "out/diff-queries.html"


def test_the_page_is_its_packaged_skeleton_style_and_script(run):
    out, _ = run
    page = (out / "queries.html").read_text(encoding="utf-8")
    assets = resources.files(queries_page.__package__) / "assets"
    assert sorted(p.name for p in assets.iterdir()) == ["queries.css", "queries.html",
                                                       "queries.js", "report.css"]
    for name in ("queries.css", "queries.js"):
        text = (assets / name).read_text(encoding="utf-8")
        assert len(text) > 1000 and text in page
    # the skeleton's text between its fields stands in the page, in order
    at = 0
    for piece in re.split(r"\{\w+\}", (assets / "queries.html").read_text(encoding="utf-8")):
        at = page.index(piece, at) + len(piece)
    assert at == len(page)


# -- in a browser ---------------------------------------------------------------------------

# After it: sort, filter, open rows; the outcome goes into the DOM, read by --dump-dom.
PROBE = r"""<script>(function () {
var out = { errors: window.caught };
function rows() { return Array.from(document.querySelectorAll("#queries tbody tr.q")); }
function column(i) { return rows().map(function (tr) { return tr.children[i].textContent; }); }
function pick(id, value) {
  var e = document.getElementById(id); e.value = value; e.dispatchEvent(new Event("change"));
}
try {
  out.rows = rows().length;
  var first = rows().map(function (tr) { return tr.dataset.key; }).join();
  var head = document.querySelector('th[data-sort="coverage"]');
  head.click();
  out.ascending = column(5).map(Number);
  out.moved = rows().map(function (tr) { return tr.dataset.key; }).join() !== first;
  head.click();
  out.descending = column(5).map(Number);
  out.sets = {};
  Array.from(document.getElementById("set").options).slice(1).forEach(function (o) {
    pick("set", o.value);
    rows()[0].click();  // the best covered query of the set
    var detail = document.querySelector("#queries tr.detail");
    out.sets[o.value] = {
      rows: rows().length, gold: detail.querySelector(".gold").textContent,
      marks: Array.from(detail.querySelectorAll("mark")).map(function (m) {
        return m.textContent; }),
      chunks: detail.querySelectorAll("ol.chunks li").length };
    document.querySelector("#queries tr.q.open").click();
    out.sets[o.value].closed = !document.querySelector("#queries tr.detail");
  });
  pick("set", "");
  pick("change", "worse");
  out.worse = column(6);
  pick("change", "");
  document.getElementById("search").value = "zzz-no-such-query";
  document.getElementById("search").dispatchEvent(new Event("input"));
  out.searched = rows().length;
} catch (e) { out.errors.push(String(e && e.stack || e)); }
""" + PROBE_END


def baseline_page(out, sets, path):
    """The pytest page, as if structure-400 had replaced fixed-400 under the baseline."""
    results = read_results(out)
    views = {qs.name: qs.view for qs in sets}
    rows = []
    for now in (r for r in results.results if r.strategy == "structure-400"):
        old = results.row(now.query_set, "fixed-400", now.retriever)
        rows.append({"strategy": now.strategy, "retriever": now.retriever,
                     "query_set": now.query_set,
                     "retrieved": queries_page.retrieved(now, views[now.query_set], 5),
                     "per_query": [{"id": q.id, "before": q.coverage, "best_before": q.best_span}
                                   for q in old.per_query]})
    return queries_page.write_baseline_page(rows, sets, results.settings, path)


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium installed")
@pytest.mark.parametrize("kind", ["run", "baseline"])
def test_in_a_browser_rows_sort_filter_and_open_with_the_gold_marked(run, tmp_path, kind):
    out, sets = run
    path = out / "queries.html" if kind == "run" else \
        baseline_page(out, sets, tmp_path / "diff-queries.html")
    page = path.read_text(encoding="utf-8")
    seen, done = probe_in_browser(page, PROBE, tmp_path, "--enable-logging=stderr", "--v=0")
    assert seen["errors"] == []
    assert [line for line in done.stderr.splitlines() if "CONSOLE" in line] == []
    n = sum(len(qs) for qs in sets)
    assert seen["rows"] == n and seen["moved"]
    assert seen["ascending"] == sorted(seen["ascending"])
    assert seen["descending"] == sorted(seen["ascending"], reverse=True)
    positional = next(qs for qs in sets if qs.name != "section-titles")
    for qs in sets:
        opened = seen["sets"][qs.name]
        assert opened["rows"] == len(qs) and opened["closed"]
        # now and before: the reference's top 5, or the chunk that held the most gold in the baseline
        assert opened["chunks"] == 5 + (5 if kind == "run" else 1)
        assert opened["marks"], f"no gold marked in {qs.name}"
    # by position: each mark is a run of the gold excerpt itself
    gold = "".join(seen["sets"][positional.name]["gold"].split())
    assert all("".join(m.split()) in gold for m in seen["sets"][positional.name]["marks"])
    assert seen["worse"] and all(c.startswith("-") for c in seen["worse"])
    assert seen["searched"] == 0
