"""Every registered strategy keeps its invariants on generated and on real documents."""

from __future__ import annotations

import pytest
from hypothesis import given

from chunkeval import strategies
from chunkeval.invariants import Violation, check
from chunkeval.model import Document, Part
from chunkeval.testing import assert_keeps_invariants, documents

@given(doc=documents())
def test_invariants_on_generated_documents(strategy_name, doc):
    assert_keeps_invariants(strategies.get(strategy_name), doc)


EDGE_DOCUMENTS = [
    Document.from_parts("empty.html", "", []),
    Document.from_parts("tiny.html", "T", [Part("paragraph", "a", ("T", "", ""))]),
    Document.from_parts("heading-only.html", "T", [Part("heading2", "見出し", ("T", "見出し", ""))]),
    Document.from_parts("long-word.html", "T", [Part("paragraph", "y" * 2500, ("T", "", ""))]),
    Document.from_parts("repeats.html", "T",
                        [Part("paragraph", "同じ文です。" * 200, ("T", "", "")),
                         Part("paragraph", "ab" * 700, ("T", "", ""))]),
]


@pytest.mark.parametrize("doc", EDGE_DOCUMENTS, ids=lambda d: d.id)
def test_invariants_on_edge_documents(strategy_name, doc):
    assert_keeps_invariants(strategies.get(strategy_name), doc)


def test_a_violation_names_the_strategy_and_the_property():
    doc = Document.from_parts("d.html", "T", [Part("paragraph", "abc def", ("T", "", ""))])
    broken = strategies.Strategy("broken", "external",
                                 lambda d: [strategies_chunk(d, 0, 3, "abX")], {"size": 2})
    found = {v.property: v for v in check(broken, doc)}
    assert set(found) == {"slice", "coverage", "size"}
    assert "broken" in found["slice"].message and "slice" in found["slice"].message
    assert isinstance(found["slice"], Violation)


def strategies_chunk(doc, start, end, text):
    from chunkeval.model import Chunk
    return Chunk(doc.id, start, end, text)


def test_structure_checks_catch_windows_that_ignore_structure():
    rows = ("名前 | 値",) + tuple(f"row {i} | {'v' * 30}" for i in range(20))
    doc = Document.from_parts("t.html", "T", [
        Part("paragraph", "intro " * 20, ("T", "", "")),
        Part("heading2", "表", ("T", "表", "")),
        Part("table", "\n".join(rows), ("T", "表", ""), rows, 1),
        Part("heading3", "後", ("T", "表", "後")),
        Part("paragraph", "end", ("T", "表", "後"))])
    windows = strategies.get("fixed-200")
    fake = strategies.Strategy("windows-as-structure", "structure", windows.split,
                               {"size": 200, "cut": 3}, slices=False)
    found = {v.property for v in check(fake, doc)}
    assert {"table_rows", "headings", "header_repeated"} <= found


# --- the real corpus --------------------------------------------------------------------

SLICE_STRATEGIES = [s.name for s in strategies.all_strategies() if s.slices]


@pytest.mark.corpus
def test_slice_strategies_on_the_corpus(corpus):
    problems = []
    for name in SLICE_STRATEGIES:
        strategy = strategies.get(name)
        for doc in corpus.documents:
            chunks = strategy.split(doc)
            for i, c in enumerate(chunks):
                if doc.text[c.start:c.end] != c.text:
                    problems.append(f"{name}: {doc.id} chunk #{i} is not a slice")
            if any(b.start < a.start or b.end < a.end for a, b in zip(chunks, chunks[1:])):
                problems.append(f"{name}: {doc.id} chunks out of order")
            covered = bytearray(len(doc.text))
            for c in chunks:
                covered[c.start:c.end] = b"\x01" * (c.end - c.start)
            lost = [i for i, ch in enumerate(doc.text) if not covered[i] and not ch.isspace()]
            if lost:
                problems.append(f"{name}: {doc.id} {len(lost)} chars in no chunk, first at {lost[0]}")
    assert problems == [], "\n".join(problems[:20])


@pytest.mark.corpus
def test_structure_800_never_cuts_a_table_row_in_the_corpus(corpus):
    strategy = strategies.get("structure-800")
    problems = []
    for doc in corpus.documents:
        problems += [str(v) for v in check(strategy, doc)
                     if v.property in ("table_rows", "header_repeated", "slice", "headings")]
    assert problems == [], "\n".join(problems[:20])


def test_each_run_of_lost_text_is_named_once():
    doc = Document.from_parts("d.html", "T", [Part("paragraph", "aaa bbb", ("T", "", "")),
                                              Part("paragraph", "ccc ddd", ("T", "", "")),
                                              Part("paragraph", "eee", ("T", "", ""))])
    # chunks hold "aaa", then "ccc", and overlap: "bbb" is lost, then "ddd" and "eee"
    spans = [(0, 3), (1, 2), (9, 12)]
    gappy = strategies.Strategy(
        "gappy", "external", lambda d: [strategies_chunk(d, s, e, d.text[s:e]) for s, e in spans])
    found = {v.property: v.detail for v in check(gappy, doc)}
    assert found["coverage"] == ("d.html: text [4,9) 'bbb\\n\\n' is in no chunk; "
                                 "text from 13 'ddd\\n\\neee' is in no chunk")
    whole = strategies.Strategy(
        "whole", "external", lambda d: [strategies_chunk(d, 0, len(d.text), d.text)])
    assert check(whole, doc) == []


def test_a_split_that_differs_from_the_evaluations_is_not_deterministic():
    doc = Document.from_parts("d.html", "T", [Part("paragraph", "abc def", ("T", "", ""))])
    whole = strategies.Strategy(
        "whole", "external", lambda d: [strategies_chunk(d, 0, len(d.text), d.text)])
    earlier = [strategies_chunk(doc, 0, 3, "abc"), strategies_chunk(doc, 3, 7, " def")]
    found = {v.property: v.detail for v in check(whole, doc, made=earlier)}
    assert set(found) == {"deterministic"}
    assert found["deterministic"] == "d.html: 1 chunks, against 2 in the evaluation's split"
    assert check(whole, doc, made=whole.split(doc)) == []


def test_a_markdown_files_markup_between_blocks_is_not_text_to_keep():
    from chunkeval.corpus.markdown import parse_markdown
    doc, _ = parse_markdown(b"# Title\n\nSome text here.\n\n* an item\n\n```python\nx = 1\n```\n",
                            "page.md")
    assert doc.text.startswith("# ") and doc.blocks[0].start == 2  # "# " is in no block

    def blocks(d):  # every block a chunk: the markup between them in none
        return [strategies_chunk(d, b.start, b.end, d.text[b.start:b.end]) for b in d.blocks]

    keeps = strategies.Strategy("blocks", "external", blocks)
    assert check(keeps, doc) == []
    loses = strategies.Strategy("loses", "external", lambda d: blocks(d)[:-1])
    found = {v.property: v.detail for v in check(loses, doc)}
    assert set(found) == {"coverage"}
    assert found["coverage"].startswith("page.md: text from ") and "x = 1" in found["coverage"]
