"""The parsed-corpus cache is keyed by every library a format is read with, exactly
versioned: a new version of any of them parses the corpus again on a warm cache."""

from __future__ import annotations

import pytest

from chunkeval.corpus import load_corpus, sources

LIBRARIES = [("a.html", "lxml"), ("a.html", "libxml2"), ("a.html", "beautifulsoup4"),
             ("a.md", "markdown-it-py"), ("a.md", "mdit-py-plugins"), ("a.pdf", "pdfplumber"),
             ("a.pdf", "pdfminer.six"), ("a.pdf", "pypdfium2"), ("a.docx", "python-docx"),
             ("a.docx", "lxml"), ("a.docx", "libxml2"), ("a.rst", "docutils")]


@pytest.mark.parametrize("doc_id, dist", LIBRARIES)
def test_each_parsing_library_is_in_the_key(monkeypatch, doc_id, dist):
    inputs = [(doc_id, "0" * 64)]
    before = sources._cache_key("docs", inputs, (), 1)
    real = sources.library_version
    monkeypatch.setattr(sources, "library_version",
                        lambda d: "0.0.1-other" if d == dist else real(d))
    assert sources._cache_key("docs", inputs, (), 1) != before
    # a missing library is a value of its own, not left out
    monkeypatch.setattr(sources, "library_version", lambda d: None if d == dist else real(d))
    assert sources._cache_key("docs", inputs, (), 1) != before


def test_the_versions_are_exact():
    found = sources.parser_libraries(["html", "markdown"])
    assert set(found) == {"lxml", "libxml2", "beautifulsoup4", "markdown-it-py",
                          "mdit-py-plugins"}
    import lxml.etree
    assert found["libxml2"] == ".".join(map(str, lxml.etree.LIBXML_VERSION))
    assert sources.library_version("no-such-distribution-here") is None


def test_a_new_markdown_it_parses_a_warm_corpus_again(tmp_path, monkeypatch, cache_dir):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "guide.md").write_text("# Guide\n\nText <!-- a -- b --> here.\n", encoding="utf-8")
    parses = []
    real_parse = sources._parse_all
    monkeypatch.setattr(sources, "_parse_all",
                        lambda *a, **k: parses.append(1) or real_parse(*a, **k))
    load_corpus(str(root))
    load_corpus(str(root))
    assert len(parses) == 1  # the second load is the cache's
    real = sources.library_version
    monkeypatch.setattr(sources, "library_version",
                        lambda d: "3.0.0" if d == "markdown-it-py" else real(d))
    load_corpus(str(root))
    assert len(parses) == 2
