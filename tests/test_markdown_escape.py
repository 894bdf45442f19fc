"""Markdown outputs carry text from documents, questions and file names: rendered with HTML
allowed, that text shows as written and makes no element, link or cell of its own."""

from __future__ import annotations

import re

import pytest
from bs4 import BeautifulSoup
from markdown_it import MarkdownIt

from chunkeval import report
from chunkeval.report.comparison import render_summary_markdown
from chunkeval.report import markdown
from helpers import STRATEGIES, make_results, typed

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(2)>",
    "</td></tr></table><h1>owned</h1>",
    "[link](javascript:alert(3))",
    "![img](http://tracker.example/p.png)",
    '"><img src=x onerror=alert(4)>.md',
    "line one\n# heading\n<details open>\n| a | b |",
    "`code` **bold** _it_ ~~gone~~ <http://auto.example> x@y.example www.example.org",
    "&lt;script&gt; &#60;b&#62; \\| a|b",
]


def _render(markdown: str) -> BeautifulSoup:
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)
    return BeautifulSoup(html, "html.parser")


def _shown(soup: BeautifulSoup) -> str:
    return " ".join(soup.get_text().split())


def _checked(soup: BeautifulSoup, allowed: set[str]) -> None:
    tags = {t.name for t in soup.find_all(True)}
    assert tags <= allowed, tags - allowed
    for t in soup.find_all(True):
        assert set(t.attrs) <= {"style"}, (t.name, t.attrs)  # a table's alignment only
    for table in soup.find_all("table"):
        width = len(table.find("tr").find_all(["th", "td"]))
        assert all(len(tr.find_all(["th", "td"])) == width for tr in table.find_all("tr"))


@pytest.mark.parametrize("text", HOSTILE)
def test_md_text_renders_as_exactly_the_text(text):
    soup = _render(f"| x |\n|---|\n| {markdown.md_text(text)} |\n\n- {markdown.md_text(text)}\n")
    _checked(soup, {"table", "thead", "tbody", "tr", "th", "td", "ul", "li"})
    assert [" ".join(td.get_text().split()) for td in soup.find_all(["td", "li"])] \
        == [" ".join(text.split())] * 2
    # no GitHub autolink: its schemes' ":" and its "www." are escaped
    assert not re.search(r"(?<!\\):/|www\.", markdown.md_text(text))


def _hostile_rows() -> list[dict]:
    rows = []
    for i, text in enumerate(HOSTILE):
        verdict = {"metric": "recall_at_k", "status": "regressed", "baseline": 0.5,
                   "value": 0.4, "diff": -0.1, "low": -0.15, "high": -0.05, "confidence": 0.95}
        rows.append({"strategy": f"s{i} {text}", "retriever": text, "query_set": text,
                     "corpus": {"name": text, "fingerprint": "abc"},
                     "verdicts": [verdict],
                     "per_query": [{"query": text, "doc": text, "before": 0.5, "now": 0.1,
                                    "change": -0.4, "best_before": text, "best_now": text}]})
    rows.append({"strategy": "x", "retriever": "bm25", "query_set": HOSTILE[0],
                 "not_gated": f"query set {HOSTILE[2]}: too few queries"})
    return rows


def test_the_ci_summary_of_a_hostile_corpus_has_no_element_but_its_own():
    text = render_summary_markdown(_hostile_rows())
    soup = _render(text)
    _checked(soup, {"h2", "h3", "p", "table", "thead", "tbody", "tr", "th", "td", "strong",
                    "ul", "li", "details", "summary"})
    shown = _shown(soup)
    for payload in HOSTILE:
        assert " ".join(payload.split()) in shown
    # every regressed case has its table of queries: none was swallowed by another
    assert len(soup.find_all("h3")) == len(HOSTILE) + 1


def test_report_md_of_hostile_names_has_no_element_but_its_own():
    strategies = {**STRATEGIES, **{f"s{i} {t}": ("external", 300, 10, 0.5, 0.2, 0.2)
                                   for i, t in enumerate(HOSTILE)}}
    soup = _render(report.render_markdown(typed(make_results(
        strategies, query_sets={HOSTILE[2]: 20, HOSTILE[5]: 20}))))
    _checked(soup, {"h1", "h2", "h3", "p", "table", "thead", "tbody", "tr", "th", "td",
                    "strong", "code", "ul", "li"})
    assert len(soup.find_all("h1")) == 1
    shown = _shown(soup)
    for payload in HOSTILE:
        assert " ".join(payload.split()) in shown
