"""Built documentation sites: Sphinx's HTML, dirhtml and single-page builds and a MkDocs
site are read as their pages' main content, without the generator's own files."""

from pathlib import Path

import pytest

from chunkeval.corpus import load_corpus
from chunkeval.corpus.html import parse_html
from chunkeval.corpus.sites import SPHINX_MAIN, recognise
from chunkeval.problems import measured

SIDEBAR = ('<div class="sphinxsidebar" role="navigation"><h3>Navigation</h3>'
           '<ul><li><a href="a.html">Lantern care in the harbour</a></li></ul></div>')
FOOTER = ('<div class="footer">&copy; Lantern Guild. Created using '
          '<a href="https://www.sphinx-doc.org/">Sphinx</a> 7.2.</div>')


def sphinx_page(title: str, body: str) -> str:
    return (f"<html><head><title>{title} &#8212; Lanterns</title></head><body>"
            f'<div class="related" role="navigation"><a href="genindex.html">index</a></div>'
            f'<div class="document"><div class="documentwrapper"><div class="bodywrapper">'
            f'<div class="body" role="main"><section><h1>{title}</h1>{body}</section></div>'
            f"</div></div>{SIDEBAR}</div>{FOOTER}</body></html>")


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def sphinx_build(tmp_path, cache_dir):
    root = tmp_path / "html"
    write(root / "index.html", sphinx_page("Lanterns", '<div class="toctree-wrapper compound">'
                                           '<ul><li><a href="care.html">Care</a></li></ul></div>'
                                           "<p>Welcome to the guild's manual.</p>"))
    write(root / "care.html", sphinx_page("Care", "<p>Trim the wick every evening.</p>"
                                          '<div class="highlight"><pre>trim(wick)</pre></div>'))
    write(root / "search.html", sphinx_page("Search", "<p>Please activate JavaScript.</p>"))
    write(root / "genindex.html", sphinx_page("Index", "<p>trim() (in module care)</p>"))
    write(root / "py-modindex.html", sphinx_page("Module Index", "<p>care</p>"))
    write(root / "_sources" / "care.rst.txt", "Care\n====\n\nTrim the wick every evening.\n")
    write(root / "_static" / "documentation_options.js", "var DOCUMENTATION_OPTIONS = {};")
    write(root / "_static" / "basic.css", "body {}")
    write(root / "searchindex.js", "Search.setIndex({})")
    return root


def test_a_sphinx_build_is_read_as_its_pages_main_content(sphinx_build):
    corpus = load_corpus(str(sphinx_build), progress=False)
    assert [d.id for d in corpus.documents] == ["care.html", "index.html"]
    care = corpus["care.html"]
    assert care.text == "Care\n\nTrim the wick every evening.\n\ntrim(wick)"
    assert "Navigation" not in corpus["index.html"].text  # the sidebar is not the page
    assert "Created using" not in corpus["index.html"].text
    lines = [str(p) for p in corpus.problems]
    assert lines == [f"{sphinx_build}: recognised a Sphinx HTML build: read the main content "
                     "area of its 2 page(s), left out 7 file(s) of the generator's own "
                     "(sources, static files, search, indexes)"]
    assert not measured(corpus.problems[0])  # a note: `strict` does not fail on it


def test_a_folder_without_a_generators_marks_is_not_a_site(tmp_path, cache_dir):
    root = tmp_path / "pages"
    write(root / "search.html", "<html><body><h1>Search</h1><p>Find lanterns.</p></body></html>")
    assert recognise(root) is None
    corpus = load_corpus(str(root), progress=False)
    assert [d.id for d in corpus.documents] == ["search.html"]  # an ordinary page here


def test_dirhtml_and_its_generated_folders(tmp_path, cache_dir):
    root = tmp_path / "dirhtml"
    write(root / "index.html", sphinx_page("Lanterns", "<p>Welcome.</p>"))
    write(root / "care" / "index.html", sphinx_page("Care", "<p>Trim the wick.</p>"))
    write(root / "search" / "index.html", sphinx_page("Search", "<p>JavaScript.</p>"))
    write(root / "genindex" / "index.html", sphinx_page("Index", "<p>trim()</p>"))
    site = recognise(root)
    assert (site.generator, site.build) == ("Sphinx", "dirhtml build")
    corpus = load_corpus(str(root), progress=False)
    assert [d.id for d in corpus.documents] == ["care/index.html", "index.html"]


def test_the_single_page_build_yields_the_whole_manual(tmp_path, cache_dir):
    chapters = "".join(
        f'<span id="document-{name}"></span><section id="{name}"><h2>{name.title()}</h2>'
        f"<p>The {name} chapter tells how to keep a lantern lit.</p></section>"
        for name in ("care", "storage", "oil"))
    body = f'<div class="toctree-wrapper compound">{chapters}</div>'
    root = tmp_path / "singlehtml"
    write(root / "index.html", sphinx_page("Lanterns", body))
    site = recognise(root)
    assert site.build == "single-page HTML build"
    doc = load_corpus(str(root), progress=False)["index.html"]
    for name in ("care", "storage", "oil"):
        assert f"The {name} chapter tells how to keep a lantern lit." in doc.text
    assert [doc.block_text(b) for b in doc.blocks if b.kind == "heading2"] == [
        "Care", "Storage", "Oil"]


def test_a_toctree_of_links_stays_navigation():
    page = sphinx_page("Lanterns", '<div class="toctree-wrapper compound"><ul><li>'
                                   '<a href="care.html">Care of the wick</a></li></ul></div>'
                                   "<p>Welcome.</p>")
    doc, _ = parse_html(page.encode(), "index.html", main=SPHINX_MAIN)
    assert "Care of the wick" not in doc.text


MKDOCS_PAGE = """<html><head><meta name="generator" content="mkdocs-1.6.1, mkdocs-material-9.5">
<title>{title} - Lanterns</title></head><body>
<header class="md-header"><nav>Lanterns <input placeholder="Search"></nav></header>
<div class="md-container"><main class="md-main"><div class="md-main__inner">
<div class="md-sidebar md-sidebar--primary"><nav class="md-nav"><ul>
<li><a href="care/">Lantern care index</a></li></ul></nav></div>
<div class="md-content"><article class="md-content__inner md-typeset">
<h1>{title}</h1>{body}</article></div></div></main>
<footer class="md-footer"><div class="md-copyright">Made with Material for MkDocs</div></footer>
</div></body></html>"""


def test_a_mkdocs_site(tmp_path, cache_dir):
    root = tmp_path / "site"
    write(root / "index.html", MKDOCS_PAGE.format(title="Lanterns", body="<p>Welcome.</p>"))
    write(root / "care" / "index.html", MKDOCS_PAGE.format(
        title="Care", body='<div class="admonition note"><p class="admonition-title">Note</p>'
                           "<p>Trim the wick.</p></div>"))
    write(root / "404.html", MKDOCS_PAGE.format(title="404 - Not found", body=""))
    write(root / "search" / "search_index.json", '{"docs": []}')
    write(root / "assets" / "javascripts" / "bundle.js", "")
    write(root / "sitemap.xml", "<urlset/>")
    corpus = load_corpus(str(root), progress=False)
    assert [d.id for d in corpus.documents] == ["care/index.html", "index.html"]
    assert corpus["care/index.html"].text == "Care\n\nNote\n\nTrim the wick."
    assert str(corpus.problems[0]).endswith("recognised a MkDocs site: read the main content "
                                            "area of its 2 page(s), left out 4 file(s) of the "
                                            "generator's own (sources, static files, search, "
                                            "indexes)")
    assert len(corpus.problems) == 1


def test_a_site_page_without_its_content_area_is_read_whole_and_said_so():
    page = "<html><body><h1>Plain</h1><p>A page the theme did not lay out.</p></body></html>"
    doc, problems = parse_html(page.encode(), "plain.html", main=("[role=main]", "div.body"))
    assert doc.text == "Plain\n\nA page the theme did not lay out."
    assert [str(p) for p in problems] == [
        "plain.html: no main content area ([role=main], div.body) on this page of a built "
        "site: the whole page is read"]
