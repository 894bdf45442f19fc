"""The report stage: terminal table, report.md, report.html with SVG plots."""

from __future__ import annotations

import os
import re

import pytest

from chunkeval import report
from chunkeval.errors import InputError, UnknownName
from chunkeval.report import html
from chunkeval.report.svg import FONT, plot_budget_curves
from helpers import STRATEGIES, make_results, rows_of, typed

# --- terminal table ----------------------------------------------------------------------

def test_table_lists_every_strategy_with_percent_and_se():
    text = report.format_table(typed(make_results()), width=200)
    lines = text.splitlines()
    for name in STRATEGIES:
        assert any(line.startswith(name + " ") for line in lines), name
    row = next(line for line in lines if line.startswith("fixed-200 "))
    # cut, chunks, mean length, then bm25 R@5 and budget recall with SE, complete, doc hit
    assert re.search(r"80\.0\s+3,440\s+200\s+21\.3±3\.4\s+37\.3±1\.4\s+23\.0\s+92\.1", row), row
    # lsa and hybrid follow on the same line when the width allows
    assert "20.3±3.4" in row and "19.3±3.4" in row
    assert "bm25" in text and "lsa" in text and "hybrid" in text


def test_table_fits_the_width_by_stacking_retrievers():
    text = report.format_table(typed(make_results()), width=120)
    assert max(len(line) for line in text.splitlines()) <= 120
    # Every strategy still appears once per stacked part, and every retriever is shown.
    assert sum(line.startswith("fixed-1600 ") for line in text.splitlines()) == 2
    assert "44.1±3.4" in text and "42.1±3.4" in text


def test_a_retriever_run_on_some_strategies_gets_a_table_of_those_rows():
    doc = make_results(retrievers=("bm25", "use"))
    doc["results"] = [r for r in doc["results"] if r["retriever"] == "bm25"
                      or r["strategy"] in ("fixed-400", "structure-800")]
    lines = report.format_table(typed(doc), width=200).splitlines()
    said = "use: evaluated on 2 of 6 strategies; the others are left out of its table"
    assert lines.count(said) == 1
    first, second = lines[:lines.index(said)], lines[lines.index(said):]
    assert sum(line.startswith("fixed-200 ") for line in first) == 1 and "use" not in first[1]
    rows = [line for line in second if re.match(r"(fixed|recursive|structure)-", line)]
    assert [r.split()[0] for r in rows] == ["fixed-400", "structure-800"]
    assert not any(re.search(r"(?<![\w.])-(?![\w.])", r) for r in rows)  # no dashes: all measured


def test_retrievers_are_shown_in_the_run_s_order():
    # the run named a team retriever first: no built-in order puts it after the built-ins
    view = report.View(typed(make_results(retrievers=("team-dense", "lsa", "bm25"))))
    assert view.retrievers("faq-headings") == ["team-dense", "lsa", "bm25"]


def test_table_of_one_query_set():
    doc = typed(make_results(query_sets={"faq-headings": 4, "section-titles": 6}))
    text = report.format_table(doc, query_set="section-titles", width=200)
    assert "section-titles (6 queries)" in text and "faq-headings" not in text
    row = next(line for line in text.splitlines() if line.startswith("fixed-200 "))
    assert "21.3±3.4" in row
    with pytest.raises(UnknownName, match="unknown query set 'nope'"):
        report.format_table(doc, query_set="nope")


def test_a_missing_value_is_refused_when_the_document_is_read():
    doc = make_results(query_sets={"faq-headings": 4, "section-titles": 6})
    del rows_of(doc, "fixed-200")[0]["metrics"]["budget_recall"]
    with pytest.raises(InputError, match=r"results\[\d+\]\.metrics\.budget_recall is missing"):
        typed(doc)


def test_table_aligns_wide_characters():
    strategies = {"見出し-h2": ("heading", 900, 100, 0.1, 0.4, 0.3), **STRATEGIES}
    lines = report.format_table(typed(make_results(strategies)), width=200).splitlines()
    wide = next(line for line in lines if line.startswith("見出し-h2"))
    plain = next(line for line in lines if line.startswith("fixed-200 "))
    # The Japanese name takes two columns per character, so the byte length differs
    # by the number of wide characters while the display columns line up.
    assert len(wide) + 3 == len(plain)


def test_bad_document_is_a_clear_error():
    with pytest.raises(InputError, match="'results' list"):
        typed({"schema": 1})
    doc = make_results()
    del doc["results"][0]["retriever"]
    with pytest.raises(InputError, match=r"results\[0\]\.retriever is missing"):
        typed(doc)


# --- files -----------------------------------------------------------------------------

def test_write_reports_writes_both_files(tmp_path):
    paths = report.write_reports(typed(make_results()), tmp_path / "out")
    assert set(paths) == {"markdown", "html"}
    md = paths["markdown"].read_text(encoding="utf-8")
    page = paths["html"].read_text(encoding="utf-8")
    assert md.startswith("# chunkeval report — debian-ja")
    assert "| fixed-1600 | 44.1 ± 3.4 | 18.0 ± 1.4 |" in md
    assert "| MRR@5 | nDCG@5 |" in md and "| 45.6 ± 2.0 | 32.1 ± 2.0 |" in md
    assert "## Findings of the seed, checked on faq-headings" in md
    assert "budget-reverses-order** — holds" in md
    # the page's style is the packaged stylesheet, its font filled in
    style = html.asset("report.css")
    assert "$font" in style and style.replace("$font", FONT) in page
    assert "standard error" in md and "paired difference" in md
    assert '<meta charset="utf-8">' in page and "<script" not in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["report.html", "report.md"]


def test_paired_difference_column_against_fixed_400(tmp_path):
    md = report.write_reports(typed(make_results()), tmp_path)["markdown"].read_text(encoding="utf-8")
    # fixed-200 vs fixed-400 differ by exactly 2.0 points on every query: a zero-width interval.
    assert "| fixed-200 | 21.3 ± 3.4 | 37.3 ± 1.4 |" in md
    assert "-8.8 [-8.8, -8.8] | +2.0 [+2.0, +2.0] |" in md
    assert "Δ budget recall vs fixed-400" in md


def test_failed_write_leaves_the_old_reports(tmp_path, monkeypatch):
    (tmp_path / "report.md").write_text("old md", encoding="utf-8")
    (tmp_path / "report.html").write_text("old html", encoding="utf-8")

    def broken_fsync(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="disk full"):
        report.write_reports(typed(make_results()), tmp_path)
    assert (tmp_path / "report.md").read_text(encoding="utf-8") == "old md"
    assert (tmp_path / "report.html").read_text(encoding="utf-8") == "old html"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "report.md"]


def test_failed_render_writes_neither_file(tmp_path, monkeypatch):
    (tmp_path / "report.md").write_text("old md", encoding="utf-8")

    def broken(doc, qs):
        raise RuntimeError("plot failed")

    monkeypatch.setattr(html, "plot_cut_rate", broken)
    with pytest.raises(RuntimeError, match="plot failed"):
        report.write_reports(typed(make_results()), tmp_path)
    assert (tmp_path / "report.md").read_text(encoding="utf-8") == "old md"
    assert not (tmp_path / "report.html").exists()


# --- HTML and plots ------------------------------------------------------------------------

def test_html_has_three_plots_per_query_set(tmp_path):
    one = report.render_html(typed(make_results()))
    assert one.count("<svg") == 3 and one.count("</svg>") == 3
    two = report.render_html(typed(make_results(query_sets={"faq-headings": 4, "section-titles": 4})))
    assert two.count("<svg") == 6
    for title in ("against mean chunk length", "against context budget", "Cut rate"):
        assert title in one
    # Axes carry tick labels and the legends name the series.
    assert ">20%</text>" in one and ">1k</text>" in one and "budget recall @2,000 chars" in one


def test_html_escapes_strategy_names():
    strategies = {**STRATEGIES, "evil<b>&\"x": ("external", 300, 10, 0.5, 0.2, 0.2)}
    page = report.render_html(typed(make_results(strategies)))
    assert "evil<b>" not in page
    assert "evil&lt;b&gt;&amp;&quot;x" in page
    md = report.render_markdown(typed(make_results(strategies)))
    assert "evil<b>" not in md and "evil\\<b>" in md


def test_html_keeps_japanese_text():
    doc = make_results(query_sets={"よくある質問": 4})
    doc["corpus"]["name"] = "デビアン"
    page = report.render_html(typed(doc))
    assert "<title>chunkeval report — デビアン</title>" in page
    assert "よくある質問" in page
    assert '<html lang="ja">' in page  # as the page's text shows it


def test_html_declares_the_corpus_language():
    doc = make_results()  # debian-ja: its language, though the page may show no Japanese
    assert '<html lang="ja">' in report.render_html(typed(doc))
    doc["corpus"]["name"] = "debian-en"
    assert '<html lang="en">' in report.render_html(typed(doc))


def test_plots_without_data_still_render_one_svg_each():
    doc = make_results()
    for row in doc["results"]:
        row.pop("budget_curve")
        row["chunks"]["mean_len"] = 0  # every chunk empty
    page = report.render_html(typed(doc))
    assert page.count("<svg") == 3
    assert "no budget curves" in page and "no chunk lengths" in page


def test_budget_line_points_follow_the_values():
    svg = plot_budget_curves(report.View(typed(make_results())), "faq-headings")
    # Six strategies with curves in three retriever panels: one polyline each.
    assert svg.count("<polyline") == 6 * 3


def _text_boxes(svg: str, size: str = "11") -> list[tuple[float, float, float, float, str]]:
    """The boxes of the SVG's unrotated texts of one font size, as the plot measures text."""
    from chunkeval.report.svg import _text_width
    boxes = []
    for x, y, fs, anchor, rest, label in re.findall(
            r'<text x="([\d.]+)" y="([\d.]+)" font-size="(\d+)" text-anchor="(\w+)"'
            r'([^>]*)>([^<]*)</text>', svg):
        if fs != size or "rotate(" in rest:
            continue
        w = _text_width(label, float(fs))
        left = float(x) - {"start": 0, "middle": w / 2, "end": w}[anchor]
        boxes.append((left, float(y) - float(fs), left + w, float(y) + 2, label))
    return boxes


@pytest.mark.parametrize("retrievers", [("bm25",), ("bm25", "lsa", "hybrid"),
                                        ("bm25", "lsa", "hybrid", "use", "hybrid-use")])
def test_no_two_tick_labels_of_the_budget_curves_overlap(retrievers):
    svg = plot_budget_curves(report.View(typed(make_results(retrievers=retrievers))),
                             "faq-headings")
    boxes = _text_boxes(svg)
    assert len(boxes) >= 2 * len(retrievers)
    overlaps = [(a[4], b[4]) for i, a in enumerate(boxes) for b in boxes[i + 1:]
                if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]]
    assert overlaps == []
    xlabels = [b[4] for b in boxes if not b[4].endswith("%")]
    assert "500" in xlabels and "4k" in xlabels  # the scale's ends are always said


def test_the_budget_legend_says_which_panels_hold_which_strategies():
    doc = make_results(retrievers=("bm25", "use"))
    doc["results"] = [r for r in doc["results"] if r["retriever"] == "bm25"
                      or r["strategy"] in ("fixed-400", "structure-800")]
    svg = plot_budget_curves(report.View(typed(doc)), "faq-headings")
    assert "every panel" not in svg
    assert ">bm25: all 6<" in svg and ">use: fixed-400, structure-800 only<" in svg
    assert ">use (2 of 6)<" in svg
    full = plot_budget_curves(report.View(typed(make_results())), "faq-headings")
    assert "strategies (every panel):" in full and ": all 6<" not in full


def test_the_seeds_findings_appear_only_on_the_built_in_corpus():
    doc = make_results()
    assert "Findings of the seed" in report.render_markdown(typed(doc))
    doc["corpus"]["name"] = "docs"  # a team's own corpus
    assert "Findings of the seed" not in report.render_markdown(typed(doc))
    assert "Findings of the seed" not in report.render_html(typed(doc))


def test_a_strategy_keeps_its_colour_across_the_report():
    import re

    from chunkeval.report import View
    from chunkeval.report.svg import plot_budget_curves
    doc = make_results(query_sets={"a": 100, "b": 100})
    first = next(iter(doc["strategies"]))
    doc["results"] = [r for r in doc["results"] if not (r["query_set"] == "b"
                                                        and r["strategy"] == first)]
    view = View(typed(doc))
    legend = re.compile(r'stroke="(#[0-9A-Fa-f]{6})" stroke-width="3"/>\s*<text[^>]*>([^<]+)<')
    colours = [dict((name, c) for c, name in legend.findall(plot_budget_curves(view, qs)))
               for qs in ("a", "b")]
    shared = set(colours[0]) & set(colours[1])
    assert first in colours[0] and first not in colours[1] and len(shared) >= 3
    assert all(colours[0][s] == colours[1][s] for s in shared)


def test_a_run_s_report_links_its_per_query_page(tmp_path):
    from chunkeval.report import write_reports
    written = write_reports(typed(make_results()), tmp_path, "queries.html")
    assert '<a href="queries.html">queries.html</a>' in written["html"].read_text()
    assert "## Every query" in written["markdown"].read_text()
    alone = write_reports(typed(make_results()), tmp_path / "merged")
    assert "queries.html" not in alone["html"].read_text()  # merge writes no such page
