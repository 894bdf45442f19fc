"""Markdown and plain text: blocks point into the file's own text."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkeval.corpus import load_corpus
from chunkeval.model import Document
from chunkeval.errors import InputError
from chunkeval.corpus.markdown import parse_markdown, parse_plain
from chunkeval.queries import build_query_set

DOC = """---
title: front matter is dropped
tags: [a, b]
---
Guide Title
===========

Intro paragraph with *emphasis*
over two lines.

## Install

- first item
  - nested item one
  - nested item two
- second item

  with a second paragraph

```sh
# not a heading: inside a fence

make install
```

| Name | Value |
|------|-------|
| alpha | 1 |
| beta | 2 |

Setext two
----------

> A quoted
> remark.

    indented code line

### Deep ###
Last words.
"""


def md(text: str, doc_id: str = "guide.md") -> Document:
    doc, _ = parse_markdown(text.encode("utf-8"), doc_id)
    return doc


def texts(doc: Document, kind: str) -> list[str]:
    return [doc.block_text(b) for b in doc.blocks if b.kind == kind]


def check_layout(doc: Document) -> None:
    for b in doc.blocks:
        assert 0 <= b.start < b.end <= len(doc.text)
        span = doc.text[b.start:b.end]
        assert span == span.strip(), f"block {b} has surrounding whitespace"
    for a, b in zip(doc.blocks, doc.blocks[1:]):
        assert a.end <= b.start, f"{a} and {b} overlap or are out of order"


def test_markdown_blocks_and_heading_paths():
    doc = md(DOC)
    check_layout(doc)
    body = DOC.split("---\n", 2)[2]
    assert doc.text == body  # the file's own text, front matter cut
    assert doc.file_map == ((0, len(DOC) - len(body), len(body)),)
    assert doc.title == "Guide Title"
    assert texts(doc, "heading1") == ["Guide Title"]
    assert texts(doc, "heading2") == ["Install", "Setext two"]
    assert texts(doc, "heading3") == ["Deep"]
    assert texts(doc, "paragraph") == ["Intro paragraph with *emphasis*\nover two lines.",
                                       "A quoted\n> remark.", "Last words."]
    assert texts(doc, "item") == ["first item", "nested item one", "nested item two",
                                  "second item", "with a second paragraph"]
    assert texts(doc, "pre") == ["# not a heading: inside a fence\n\nmake install",
                                 "indented code line"]
    assert "front matter" not in "".join(doc.block_text(b) for b in doc.blocks)
    by_text = {doc.block_text(b): b for b in doc.blocks}
    assert by_text["# not a heading: inside a fence\n\nmake install"].headings == (
        "Guide Title", "Install", "")
    assert by_text["Last words."].headings == ("Guide Title", "Setext two", "Deep")


def test_markdown_table_is_one_block_with_rows():
    doc = md(DOC)
    (table,) = [b for b in doc.blocks if b.kind == "table"]
    assert [doc.text[s:e] for s, e in table.rows] == [
        "| Name | Value |", "| alpha | 1 |", "| beta | 2 |"]
    assert table.header_rows == 1
    # A view rebuilds documents from parts: the delimiter line is no row and must not break it.
    rebuilt = Document.from_parts(doc.id, doc.title, doc.parts())
    (again,) = [b for b in rebuilt.blocks if b.kind == "table"]
    assert rebuilt.block_text(again) == "| Name | Value |\n| alpha | 1 |\n| beta | 2 |"


def test_front_matter_title_when_there_is_no_h1():
    doc = md('---\ntitle: "npm-access"\nsection: 1\n---\n### Synopsis\n\nText.\n')
    assert doc.title == "npm-access"
    assert [b.headings for b in doc.blocks] == [("npm-access", "", "Synopsis")] * 2
    assert md("# Real title\n\nText.\n").title == "Real title"
    assert md("Text only.\n", "no-title.md").title == "no-title.md"


def test_crlf_and_bom():
    raw = "\ufeff# Title\r\n\r\nOne line\r\nand two.\r\n\r\n- item\r\n"
    doc, problems = parse_markdown(raw.encode("utf-8"), "x.md")
    assert problems == []
    assert doc.text == "# Title\n\nOne line\nand two.\n\n- item\n"
    check_layout(doc)
    assert [(b.kind, doc.block_text(b)) for b in doc.blocks] == [
        ("heading1", "Title"), ("paragraph", "One line\nand two."), ("item", "item")]


def test_markdown_without_headings_is_a_problem_not_an_error():
    doc, problems = parse_markdown(b"just a paragraph\n", "p.md", path="docs/p.md")
    assert [doc.block_text(b) for b in doc.blocks] == ["just a paragraph"]
    assert len(problems) == 1 and "no headings" in problems[0].message
    assert problems[0].path == "docs/p.md"


@pytest.mark.parametrize("data, message", [(b"", "empty file"), (b"   \n\n", "empty file"),
                                           (b"---\na: b\n---\n", "only markup"),
                                           (b"ab\x00cd", "binary")])
def test_bad_markdown_names_the_file(data, message):
    with pytest.raises(InputError, match=message) as e:
        parse_markdown(data, "bad.md", path="docs/bad.md")
    assert e.value.path == "docs/bad.md"


def test_plain_text_paragraphs():
    raw = "\ufeffFirst para\r\nstill first.\r\n\r\n\r\n  Second para.  \n \nThird\n"
    doc, problems = parse_plain(raw.encode("utf-8"), "notes.txt")
    assert problems == []
    check_layout(doc)
    assert doc.text == "First para\nstill first.\n\n\n  Second para.  \n \nThird\n"
    assert [doc.block_text(b) for b in doc.blocks] == [
        "First para\nstill first.", "Second para.", "Third"]
    assert {b.kind for b in doc.blocks} == {"paragraph"}
    assert all(b.headings == ("", "", "") for b in doc.blocks)


def test_mixed_directory(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "guide.md").write_text(DOC, encoding="utf-8")
    (tmp_path / "sub" / "notes.txt").write_text("A note.\n\nAnother note.\n", encoding="utf-8")
    (tmp_path / "page.html").write_text(
        "<html><body><h1>Page</h1><p>Some html text.</p></body></html>", encoding="utf-8")
    (tmp_path / "logo.png").write_bytes(b"\x89PNG")
    (tmp_path / "sub" / "data.csv").write_text("a,b\n", encoding="utf-8")
    corpus = load_corpus(str(tmp_path), use_cache=False)
    assert [d.id for d in corpus.documents] == ["guide.md", "page.html", "sub/notes.txt"]
    assert corpus["guide.md"].text == DOC.split("---\n", 2)[2]  # front matter cut
    (problem,) = corpus.problems
    assert "2 unsupported file(s)" in problem.message
    assert "logo.png" in problem.message and "sub/data.csv" in problem.message
    titles = build_query_set(corpus, "section-titles")
    # Markdown headings make section-title queries; the text file has none.
    assert {q.doc_id for q in titles.queries} <= {"guide.md", "page.html"}
    assert any(q.doc_id == "guide.md" for q in titles.queries)


# --- generated documents ---------------------------------------------------------------

words = st.lists(st.text("abcdefghij", min_size=1, max_size=6), min_size=1, max_size=6).map(" ".join)
lines = st.lists(words, min_size=1, max_size=3).map("\n".join)


@st.composite
def md_block(draw):
    kind = draw(st.sampled_from(["atx", "setext", "para", "list", "fence", "table", "quote",
                                 "indented"]))
    if kind == "atx":
        return "#" * draw(st.integers(1, 6)) + " " + draw(words)
    if kind == "setext":
        text = draw(words)
        return text + "\n" + draw(st.sampled_from("=-")) * draw(st.integers(1, 5))
    if kind == "para":
        return draw(lines)
    if kind == "list":
        items = draw(st.lists(st.tuples(st.integers(0, 1), words), min_size=1, max_size=5))
        marker = draw(st.sampled_from(["-", "*", "1."]))
        return "\n".join("  " * depth * (len(marker) + 1 if marker == "1." else 1)
                         + f"{marker} {w}" for depth, w in items)
    if kind == "fence":
        body = draw(st.lists(st.one_of(words, st.just(""), words.map("# ".__add__)),
                             max_size=5))
        return "```\n" + "\n".join(body) + "\n```"
    if kind == "table":
        cols = draw(st.integers(1, 3))
        rows = draw(st.lists(st.lists(words, min_size=cols, max_size=cols), min_size=1,
                             max_size=4))
        head = draw(st.lists(words, min_size=cols, max_size=cols))
        return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * cols]
                         + ["| " + " | ".join(r) + " |" for r in rows])
    if kind == "quote":
        return "\n".join("> " + w for w in draw(st.lists(words, min_size=1, max_size=3)))
    return "\n".join("    " + w for w in draw(st.lists(words, min_size=1, max_size=3)))


MARKUP = re.compile(r"[\s#=\-*>|`0-9.]")


@settings(max_examples=200, deadline=None)
@given(blocks=st.lists(md_block(), min_size=1, max_size=8), crlf=st.booleans(),
       bom=st.booleans())
def test_generated_markdown_blocks_slice_the_text(blocks, crlf, bom):
    source = "\n\n".join(blocks) + "\n"
    raw = ("\ufeff" if bom else "") + (source.replace("\n", "\r\n") if crlf else source)
    try:
        doc, _ = parse_markdown(raw.encode("utf-8"), "gen.md")
    except InputError as e:  # only a document of markup alone may be refused
        assert "only markup" in e.message and not MARKUP.sub("", source)
        return
    assert doc.text == source
    check_layout(doc)
    # Outside the blocks there is only markup and whitespace: no word is lost.
    gaps, pos = [], 0
    for b in doc.blocks:
        gaps.append(doc.text[pos:b.start])
        pos = b.end
    gaps.append(doc.text[pos:])
    assert MARKUP.sub("", "".join(gaps)) == ""
