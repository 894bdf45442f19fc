"""Markdown as a reader sees it: what the rendered page does not show is not document text,
and the map back to the file's offsets is exact."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from chunkeval.corpus import load_corpus
from chunkeval.corpus.markdown import parse_markdown, parse_plain
from chunkeval.model import Document
from chunkeval.queries.imports import import_questions

from test_parse_text import check_layout, md_block


def md(text: str, doc_id: str = "page.md") -> Document:
    doc, _ = parse_markdown(text.encode("utf-8"), doc_id)
    return doc


def check_map(doc: Document, raw: str) -> None:
    """The runs are the text, in order, each the file's text at its offset."""
    pos = 0
    for t, f, n in doc.file_map:
        assert t == pos and n > 0
        assert doc.text[t:t + n] == raw[f:f + n]
        pos += n
    assert pos == len(doc.text)
    for i in range(len(doc.text)):
        assert doc.text_offset(doc.file_offset(i)) == i


def test_comments_are_no_text_and_the_map_goes_back_to_the_file():
    raw = ("<!--\n## English title\n-->\n\n## 日本語の題\n\n<!--\nEnglish paragraph\nover lines.\n-->\n\n"
           "日本語の段落。<!-- inline note --> 続き。\n")
    doc = md(raw)
    assert "English" not in doc.text and "<!--" not in doc.text and "note" not in doc.text
    assert doc.text == "## 日本語の題\n\n日本語の段落。 続き。\n"
    check_map(doc, raw)
    check_layout(doc)
    assert [(b.kind, doc.block_text(b)) for b in doc.blocks] == [
        ("heading2", "日本語の題"), ("paragraph", "日本語の段落。 続き。")]
    # a file offset inside a comment has no text offset; one after it has
    assert doc.text_offset(raw.index("English title")) is None
    at = raw.index("続き")
    assert doc.text[doc.text_offset(at):].startswith("続き")
    assert doc.text_span(raw.index("English paragraph"), raw.index("over lines.")) is None
    assert dict(doc.removed)["comment"] == sum(
        len(c) for c in ("<!--\n## English title\n-->\n\n", "<!--\nEnglish paragraph\nover "
                         "lines.\n-->\n\n", "<!-- inline note -->"))


def test_each_rule_and_what_stays():
    raw = """---
title: From front matter
---
## Install { #install .big }

Text with <b>bold words</b>, `<br>` in code, a [link][ref] and [button](x.md){ .md-button }.

[ref]: https://example.com/ "A title"

::: tip Remember this
Inside the tip.
:::

/// note | Technical Details

Note body.

///

{* ../../docs_src/app/tutorial001.py hl[3] *}

--8<-- "includes/abbreviations.md"

```python
# a comment in code <!-- stays -->
--8<-- "snippets/app.py"
{{#rustdoc_include ../listings/main.rs:here}}
print("<b>kept</b>")
```

```{note}
:class: dropdown
A directive's body.
```

```{code-block} python
:caption: app.py
x = 1
```

| Name | Value |
|------|-------|
| a <span>b</span> | 1 |
"""
    doc = md(raw)
    check_map(doc, raw)
    check_layout(doc)
    text = doc.text
    for gone in ("From front matter", "{ #install", ".md-button", "https://example.com",
                 ":::", "/// note", "{*", "--8<--", "rustdoc_include", "{note}", ":class:",
                 "{code-block}", ":caption:", "<b>bold", "<span>"):
        assert gone not in text, gone
    for kept in ("## Install\n", "Text with bold words, `<br>` in code, a [link][ref] and "
                 "[button](x.md).", "Remember this\nInside the tip.", "Technical Details",
                 "Note body.", "# a comment in code <!-- stays -->", 'print("<b>kept</b>")',
                 "A directive's body.", "```python\nx = 1\n```", "| a b | 1 |"):
        assert kept in text, kept
    assert doc.title == "From front matter"  # no h1: the front matter's title
    assert [b.kind for b in doc.blocks if "directive" in doc.block_text(b)] == ["paragraph"]
    assert [b.kind for b in doc.blocks if doc.block_text(b) == "x = 1"] == ["pre"]
    assert [doc.block_text(b) for b in doc.blocks if b.is_heading] == ["Install"]
    assert set(dict(doc.removed)) == {"front-matter", "attributes", "html-tag",
                                      "link-definition", "container", "include", "directive"}


def test_a_file_without_markup_to_cut_is_its_own_text():
    raw = "# Title\n\nPlain words, `code`, *emphasis* and 1 < 2 > 0.\n"
    doc = md(raw)
    assert doc.text == raw and doc.file_map == ((0, 0, len(raw)),) and doc.removed == ()
    plain, _ = parse_plain(b"one\n\ntwo\n", "p.txt")
    assert plain.file_map == ((0, 0, 9),) and plain.text_offset(5) == 5


def test_a_file_of_comments_only_is_refused():
    try:
        md("<!-- nothing\nbut a comment -->\n")
    except Exception as e:  # InputError: one clear message naming the file
        assert "only markup" in str(e) and "page.md" in str(e)
    else:
        raise AssertionError("a file holding only a comment became a document")


def test_the_map_survives_the_parse_cache_and_html_keeps_its_json():
    doc = md("<!-- c -->\n# T\n\nWords.\n")
    again = Document.from_json(json.loads(json.dumps(doc.to_json())))
    assert again == doc and again.file_map and again.removed
    plain = Document.from_parts("a.html", "A", [])
    assert "file_map" not in plain.to_json() and "removed" not in plain.to_json()
    assert plain.text_offset(0) is None


COMMENT = st.lists(st.text("abc xyz\n", min_size=1, max_size=12), min_size=1, max_size=3).map(
    lambda lines: "<!--\n" + "\n".join(lines).replace("-", "") + "\n-->")


@settings(max_examples=150, deadline=None)
@given(blocks=st.lists(st.tuples(md_block(), st.none() | COMMENT), min_size=1, max_size=6))
def test_generated_markdown_with_comments_reads_as_without(blocks):
    """Comments between blocks are cut and the rest is the same document as without them."""
    plain = "\n\n".join(b for b, _ in blocks) + "\n"
    commented = "\n\n".join(b + ("\n\n" + c if c else "") for b, c in blocks) + "\n"
    try:
        without = md(plain)
    except Exception:
        return  # markup alone: covered in test_parse_text
    doc = md(commented)
    check_map(doc, commented)
    check_layout(doc)
    assert "<!--" not in doc.text
    assert [(b.kind, doc.block_text(b)) for b in doc.blocks] == [
        (b.kind, without.block_text(b)) for b in without.blocks]


def test_imported_offsets_are_mapped_and_a_reference_in_a_comment_is_reported(tmp_path):
    docs = tmp_path / "corpora"
    docs.mkdir()
    raw = ("# Notes\n\n<!-- an editor's note that no reader sees -->\n\n"
           "The <unk> system is carried over directly from the first game.\n\n"
           "Later text about the battle system.\n")
    (docs / "notes.md").write_text(raw, encoding="utf-8")
    seen = "The <unk> system is carried over"
    hidden = "an editor's note"
    later = "Later text about the battle system."

    def ref(s):
        return {"content": s, "start_index": raw.index(s), "end_index": raw.index(s) + len(s)}

    rows = [("What is carried over?", [ref(seen)]), ("Anything later?", [ref(later)]),
            ("What does the editor say?", [ref(hidden)])]
    csv = tmp_path / "questions_df.csv"
    csv.write_text("question,references,corpus_id\n" + "".join(
        f'"{q}","{json.dumps(refs).replace(chr(34), chr(34) * 2)}",notes\n' for q, refs in rows),
        encoding="utf-8")
    corpus = load_corpus(str(docs), use_cache=False)
    doc = corpus["notes.md"]
    done = import_questions(corpus, "chroma", [str(csv)])
    assert done.outcomes["offsets"] == 2 and done.outcomes["removed"] == 1
    by_query = {line["query"]: line for line in done.lines}
    (span,) = by_query["What is carried over?"]["spans"]
    assert doc.text[span[0]:span[1]] == "The  system is carried over"  # the tag is cut
    (span,) = by_query["Anything later?"]["spans"]
    assert doc.text[span[0]:span[1]] == later
    assert "What does the editor say?" not in by_query
    (line,) = done.unfound
    assert line.startswith(f"{csv}:4 reference 0: in markup a reader does not see")


def test_corpus_info_counts_what_each_rule_removed_per_kind(tmp_path, capsys):
    from chunkeval.cli import main

    (tmp_path / "a.md").write_text("<!-- hidden -->\n# A\n\nText of a.\n", encoding="utf-8")
    (tmp_path / "b.md").write_text("# B { #b }\n\n<!-- x -->\n\nText of b.\n", encoding="utf-8")
    (tmp_path / "c.html").write_text("<html><body><h1>C</h1><p>Text of c.</p></body></html>",
                                     encoding="utf-8")
    (tmp_path / "d.txt").write_text("Text of d.\n", encoding="utf-8")
    assert main(["corpus", "info", "--corpus", str(tmp_path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["removed"] == {"markdown": {
        "comment": {"chars": len("<!-- hidden -->\n") + len("<!-- x -->\n\n"), "documents": 2},
        "attributes": {"chars": len(" { #b }"), "documents": 1}}}
    assert info["analyzer"] == {"setting": "auto", "resolved": "word+stem"}
    assert main(["corpus", "info", "--corpus", str(tmp_path), "--analyzer", "word"]) == 0
    out = capsys.readouterr().out
    assert "removed     from markdown, what a reader does not see:" in out
    assert "  HTML comments: 28 chars in 2 documents" in out
    assert "analyzer    word\n" in out


PIECES = ["<!--", "-->", "<b>", "</b>", "<div>\n", "{ #id }", "{* x *}", "{{#include a}}",
          "--8<--", ":::", "::: tip T", "///", "/// note | N", "```", "```{note}", ":opt: v",
          "[r]: /u", "[r]", "`", "# ", "## ", "- ", "> ", "    ", "|a|b|\n|-|-|", "---",
          "\n", "\n\n", "text", "語", " ", "]", "(x)"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=40).map("".join))
def test_any_mix_of_markup_parses_or_is_refused_with_a_message(raw):
    from chunkeval.errors import InputError

    try:
        doc = md(raw)
    except InputError as e:
        assert "only markup" in e.message or "empty file" in e.message
        return
    check_map(doc, raw.replace("\r", ""))
    check_layout(doc)
