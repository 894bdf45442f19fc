"""The report stage: a Results document -> a terminal table, report.md and report.html.

`view.py` reads the document for every page; `table.py` is the terminal table,
`markdown.py` and `html.py` the two reports, `svg.py` their plots, `findings.py` the seed's
findings checked on the built-in corpus, `comparison.py` the pytest run's page against the
baseline. Nothing here needs the network: the HTML carries its styles and plots inline.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..results import Results
from ..store import atomic_write
from . import html, markdown
from .comparison import render_comparison_html
from .table import format_table
from .view import View


def render_markdown(results: Results | View) -> str:
    return markdown.render_markdown(results if isinstance(results, View) else View(results))


def render_html(results: Results | View) -> str:
    return html.render_html(results if isinstance(results, View) else View(results))


def write_reports(results: Results, out_dir: str | os.PathLike,
                  queries_page: str | None = None) -> dict[str, Path]:
    """Write report.md and report.html into out_dir; `queries_page`, the name of the
    per-query page written beside them, gets a section that links it.

    Both are rendered before either is written, so bad input leaves the old pair intact.
    """
    out = Path(out_dir)
    pages = render_reports(results, queries_page)
    return {"markdown": atomic_write(out / "report.md", pages["report.md"]),
            "html": atomic_write(out / "report.html", pages["report.html"])}


def render_reports(results: Results, queries_page: str | None = None) -> dict[str, str]:
    """report.md and report.html by file name, as write_reports writes them."""
    view = View(results)
    view.queries_page = queries_page
    return {"report.md": render_markdown(view), "report.html": render_html(view)}


__all__ = ["View", "format_table", "render_comparison_html", "render_html", "render_markdown",
           "render_reports", "write_reports"]
