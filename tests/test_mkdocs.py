"""MkDocs Markdown as its site shows it: admonitions, collapsibles and content tabs read as
their title and content (no markers, no code-block indent), snippets from inside the corpus
folder put in, front matter left out."""

from chunkeval.corpus import load_corpus
from chunkeval.corpus.markdown import parse_markdown

from test_markdown_view import check_map

PAGE = '''---
title: Lantern care
tags: [care]
---
# Lantern care

!!! note "Keep the wick dry"
    A damp wick sputters.

    ```python
    trim(wick)
    ```

??? tip inline end
    Folded away until opened.

???+ warning ""
    Open, and without a title.

=== "Paraffin"

    Burns for nine hours.

    !!! danger "Fumes"
        Air the shed.

=== "Whale oil"
    Burns for seven hours.

- a list item

    !!! info "Inside the item"
        Still the item's.

After the tabs.
'''


def kinds(doc):
    return [(b.kind, doc.block_text(b)) for b in doc.blocks]


def test_admonitions_collapsibles_and_tabs_read_as_their_visible_text():
    doc, problems = parse_markdown(PAGE.encode(), "care.md")
    assert problems == []
    check_map(doc, PAGE)
    for marker in ("!!!", "???", "===", '"', "tags:"):
        assert marker not in doc.text, marker
    assert kinds(doc) == [
        ("heading1", "Lantern care"),
        ("paragraph", "Keep the wick dry\nA damp wick sputters."),
        ("pre", "trim(wick)"),
        ("paragraph", "tip\nFolded away until opened."),
        ("paragraph", "Open, and without a title."),
        ("paragraph", "Paraffin"),
        ("paragraph", "Burns for nine hours."),
        ("paragraph", "Fumes\nAir the shed."),
        ("paragraph", "Whale oil\nBurns for seven hours."),
        ("item", "a list item"),
        ("item", "Inside the item\n    Still the item's."),
        ("paragraph", "After the tabs."),
    ]
    assert dict(doc.removed)["admonition"] > 0


def test_a_setext_heading_is_not_a_tab():
    raw = "Lanterns\n===\n\nText.\n"
    doc, _ = parse_markdown(raw.encode(), "a.md")
    assert kinds(doc) == [("heading1", "Lanterns"), ("paragraph", "Text.")]


def test_snippets_inside_the_folder_are_put_in_and_outside_ones_skipped(tmp_path, cache_dir):
    outside = tmp_path / "secret.md"
    outside.write_text("The harbour master's key code.\n", encoding="utf-8")
    docs = tmp_path / "docs"
    (docs / "snippets").mkdir(parents=True)
    (docs / "snippets" / "oil.txt").write_text("line one\nBurns clean.\nline three\n",
                                               encoding="utf-8")
    (docs / "snippets" / "warn.md").write_text('!!! warning "Hot glass"\n    Let it cool.\n',
                                               encoding="utf-8")
    page = ('# Oil\n\n--8<-- "snippets/warn.md"\n\n--8<-- "snippets/oil.txt:2:2"\n\n'
            '--8<--\nsnippets/oil.txt:1:1\n../secret.md\n--8<--\n\n--8<-- "../secret.md"\n\n'
            '--8<-- "snippets/gone.md"\n\nThe end.\n')
    (docs / "oil.md").write_text(page, encoding="utf-8")
    corpus = load_corpus(str(docs), progress=False)
    doc = corpus["oil.md"]
    assert doc.text == ("# Oil\n\nHot glass\nLet it cool.\n\nBurns clean.\n\nline one\n\n"
                        "The end.\n")
    assert "harbour" not in doc.text and "--8<--" not in doc.text
    lines = [str(p) for p in corpus.problems if "oil.md" in p.path]
    assert lines == [
        f"{docs}/oil.md:9: snippet '../secret.md' not included: the file lies outside the "
        "corpus folder; its marker is skipped",
        f"{docs}/oil.md:12: snippet '../secret.md' not included: the file lies outside the "
        "corpus folder; its marker is skipped",
        f"{docs}/oil.md:14: snippet 'snippets/gone.md' not included: no such file in the "
        "corpus folder; its marker is skipped"]
    assert [p.kind for p in corpus.problems if "oil.md" in p.path] == [
        "include-outside", "include-outside", "include-missing"]
    # the page's own text maps back to the file; included text maps to its marker
    for t, f, n in doc.file_map:
        assert doc.text[t:t + n] == page[f:f + n]
    end = doc.text.index("The end.")
    assert page[doc.file_offset(end):].startswith("The end.")
    assert doc.file_offset(doc.text.index("Let it cool.")) == page.index("--8<--")
