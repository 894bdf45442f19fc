"""PDF, Word and reStructuredText documents, written by the tests (documents.py): blocks,
headings, tables and pages; the files that cannot be read give one line each."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from documents import MANUAL_RST, Page, manual_docx, manual_pdf, paragraph, pdf

from chunkeval.corpus import load_corpus, sources
from chunkeval.corpus.pdf import parse_pdf
from chunkeval.corpus.rst import parse_rst
from chunkeval.corpus.word import parse_docx
from chunkeval.errors import InputError
from chunkeval.scoring import score
from chunkeval.model import Chunk, Corpus, Document, Part, Query, QuerySet
from chunkeval.queries import build_query_set
from chunkeval.results import Results


def page_data(path) -> dict:
    """The data the per-query page carries."""
    text = path.read_text(encoding="utf-8")
    return json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>',
                                text, re.S).group(1))


def _blocks(doc: Document) -> list[tuple]:
    return [(b.page, b.kind, doc.block_text(b)) for b in doc.blocks]


def test_pdf_blocks_know_their_page_and_lose_running_headers():
    doc, problems = parse_pdf(manual_pdf(), "guide.pdf")
    assert problems == []
    assert doc.title == "Field Guide to Lanterns"
    assert _blocks(doc) == [
        (1, "heading1", "Field Guide to Lanterns"),
        (1, "heading2", "1 Getting started"),
        (1, "paragraph", "Lanterns light the harbor path for every late boat that comes home "
                         "after the beacon has gone dark."),
        (1, "paragraph", "A second paragraph says that the kettle must be warm before the wick "
                         "is trimmed."),
        (1, "heading3", "1.1 How do I trim the wick?"),
        (1, "paragraph", "Trim the wick with the brass scissors and keep the glass chimney "
                         "clean of soot, otherwise the"),
        (2, "paragraph", "flame flickers and the orchard stays dark all night."),
        (2, "item", "- keep a spare wick and a box of dry matches"),
        (2, "item", "- keep the oil dry"),
        (2, "paragraph", "A wick sample in code:"),
        (2, "pre", "trim(wick, length=2)\nlight(wick)"),
        (2, "heading3", "1.2 Oil grades"),
        (2, "table", "Grade | Burns for\nparaffin | nine hours\nwhale | seven hours"),
        (3, "heading2", "2 Storage"),
        (3, "paragraph", "Store lanterns upright in the jetty shed, away from the canal."),
    ]
    # the running header and the page numbers are gone, not merged into the text
    assert "draft" not in doc.text and "\n\n2\n\n" not in doc.text
    table = next(b for b in doc.blocks if b.kind == "table")
    assert [doc.text[s:e] for s, e in table.rows][0] == "Grade | Burns for"
    assert table.header_rows == 1
    oil = next(b for b in doc.blocks if doc.block_text(b) == "1.2 Oil grades")
    assert oil.headings == ("Field Guide to Lanterns", "1 Getting started", "1.2 Oil grades")


def test_a_chunks_pages_follow_from_its_offsets():
    doc, _ = parse_pdf(manual_pdf(), "guide.pdf")
    start = doc.text.index("Trim the wick")
    end = doc.text.index("flame flickers") + 5
    assert doc.pages_of(start, end) == (1, 2)
    assert doc.pages_of(start, start + 10) == (1,)
    assert doc.pages_of(doc.text.index("Store lanterns"), len(doc.text)) == (3,)
    # a separator between blocks lies on the page of the block before it
    sep = doc.blocks[0].end
    assert doc.pages_of(sep, sep + 1) == (1,)
    # pages survive the cache's round trip and the views' reassembly
    again = Document.from_json(doc.to_json())
    assert [b.page for b in again.blocks] == [b.page for b in doc.blocks]
    rebuilt = Document.from_parts(doc.id, doc.title, doc.parts())
    assert rebuilt.blocks == doc.blocks
    plain = Document.from_parts("x", "x", [p for p in doc.parts()][:1])
    assert "page" in doc.to_json()["blocks"][0]
    assert not Document.from_json({**plain.to_json(), "blocks": [
        {k: v for k, v in b.items() if k != "page"} for b in plain.to_json()["blocks"]]}).paged


@pytest.mark.parametrize("data, message", [
    (manual_pdf(password=True), "encrypted PDF (it needs a password); skipped"),
    (pdf([Page(image=True), Page(image=True)]), "no text layer (a scanned or image-only PDF"),
    (manual_pdf()[:400], "damaged PDF, cannot be read"),
    (b"%PDF-1.4\nnothing else", "damaged PDF, cannot be read"),
])
def test_unreadable_pdfs_say_why(data, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")) as e:
        parse_pdf(data, "bad.pdf", path="docs/bad.pdf")
    assert str(e.value).startswith("docs/bad.pdf: ")


def test_a_folder_of_documents_loads_around_the_bad_pdfs(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "guide.pdf").write_bytes(manual_pdf())
    (root / "locked.pdf").write_bytes(manual_pdf(password=True))
    (root / "scan.pdf").write_bytes(pdf([Page(image=True)]))
    (root / "broken.pdf").write_bytes(manual_pdf()[:500])
    (root / "handbook.docx").write_bytes(manual_docx())
    (root / "quarry.rst").write_text(MANUAL_RST, encoding="utf-8")
    corpus = load_corpus(str(root), use_cache=False)
    assert [d.id for d in corpus.documents] == ["guide.pdf", "handbook.docx", "quarry.rst"]
    lines = [str(p) for p in corpus.problems]
    assert len(lines) == 3  # the Sphinx directives of quarry.rst are known
    assert any(line.startswith(f"{root}/locked.pdf: encrypted") for line in lines)
    assert any(line.startswith(f"{root}/scan.pdf: no text layer") for line in lines)
    assert any(line.startswith(f"{root}/broken.pdf: damaged PDF") for line in lines)
    assert corpus.paged and corpus["guide.pdf"].paged and not corpus["handbook.docx"].paged


def test_without_the_library_one_line_says_what_to_install(tmp_path, monkeypatch):
    root = tmp_path / "docs"
    root.mkdir()
    for name in ("a.pdf", "b.pdf"):
        (root / name).write_bytes(manual_pdf())
    (root / "c.md").write_text("# C\n\nSome text here.\n", encoding="utf-8")
    real = sources._library
    monkeypatch.setattr(sources, "_library", lambda fmt: None if fmt == "pdf" else real(fmt))
    corpus = load_corpus(str(root), use_cache=False)
    assert [d.id for d in corpus.documents] == ["c.md"]
    assert [p.message for p in corpus.problems] == [
        "2 pdf file(s) not read (a.pdf, b.pdf): reading them needs pdfplumber; "
        "pip install 'chunkeval[documents]'"]


def test_the_cache_key_knows_the_document_libraries(tmp_path, monkeypatch):
    inputs, html = [("a.pdf", "0" * 64)], [("a.html", "0" * 64)]
    before, html_before = (sources._cache_key("docs", inputs, (), 1),
                           sources._cache_key("docs", html, (), 1))
    real = sources.library_version
    monkeypatch.setattr(sources, "library_version",
                        lambda dist: None if dist == "pdfplumber" else real(dist))
    assert sources._cache_key("docs", inputs, (), 1) != before
    # corpora without such files keep the keys they had
    assert sources._cache_key("docs", html, (), 1) == html_before


def test_word_headings_by_style_lists_and_tables():
    doc, problems = parse_docx(manual_docx(), "handbook.docx")
    assert problems == []
    assert doc.title == "Harbor Handbook"
    assert _blocks(doc) == [
        (0, "heading1", "Harbor Handbook"),
        (0, "heading2", "Mooring"),
        (0, "paragraph", "Boats moor at the eastern jetty after the beacon is lit."),
        (0, "item", "bring two ropes"),
        (0, "item", "check the tide table"),
        (0, "heading3", "How do I pay the harbor fee?"),
        (0, "paragraph", "Pay the harbor master in the signal tower before sunset."),
        # the merged cell is read once
        (0, "table", "Boat | Fee\nrowing boat | two coins\nferries pay by agreement"),
        (0, "heading2", "Storms"),
        (0, "paragraph", "In a storm the canal gates close."),
    ]
    table = next(b for b in doc.blocks if b.kind == "table")
    assert len(table.rows) == 3 and table.header_rows == 1
    with pytest.raises(InputError, match="not a readable Word"):
        parse_docx(b"PK\x03\x04 not really a zip", "bad.docx")


def test_rst_sections_literal_blocks_tables_and_sphinx_directives():
    doc, problems = parse_rst(MANUAL_RST.encode(), "quarry.rst")
    assert problems == []
    assert doc.title == "Quarry Operations"
    assert _blocks(doc) == [
        (0, "heading1", "Quarry Operations"),
        (0, "paragraph", "The quarry opens at dawn."),
        (0, "heading2", "Safety"),
        # an explicit title is shown; a function gets its parentheses
        (0, "paragraph", "Wear a helmet in the quarry at all times. See the rules and "
                         "quarry.open()."),
        # Sphinx's label; toctree is navigation
        (0, "paragraph", "Added in version 2.1: Helmets are now checked at the gate."),
        (0, "heading3", "How do I report a rockfall?"),
        (0, "paragraph", "Ring the bell twice:"),
        (0, "pre", "ring(bell, times=2)"),
        (0, "item", "call the foreman"),
        (0, "item", "close the pylon road"),
        (0, "table", "Shift | Starts\nmorning | six o'clock\nevening | two o'clock"),
        (0, "paragraph", "Note: The bell is in the tunnel."),
        (0, "heading2", "Tools"),
        (0, "dl", "hammer: Breaks stone."),
    ]
    table = next(b for b in doc.blocks if b.kind == "table")
    assert table.header_rows == 1
    assert "intro" not in doc.text


def test_query_builders_read_every_format(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "guide.pdf").write_bytes(manual_pdf())
    (root / "handbook.docx").write_bytes(manual_docx())
    (root / "quarry.rst").write_text(MANUAL_RST, encoding="utf-8")
    corpus = load_corpus(str(root), use_cache=False)
    faq = build_query_set(corpus, "faq-headings")
    asked = {q.text: q for q in faq.queries}
    assert set(asked) == {"How do I trim the wick?", "How do I pay the harbor fee?",
                          "How do I report a rockfall?"}
    trim = asked["How do I trim the wick?"]
    assert trim.doc_id == "guide.pdf" and trim.pages == (1, 2)
    assert "flame flickers" in trim.answer
    assert asked["How do I pay the harbor fee?"].pages == ()
    # the question is gone from the view, and the view keeps the pages
    view = faq.view["guide.pdf"]
    assert "How do I trim" not in view.text and view.paged
    titles = {q.text for q in build_query_set(corpus, "section-titles").queries}
    assert {"Getting started", "Mooring", "Safety"} <= titles


def _pdf_folder(root):
    docs = root / "docs"
    docs.mkdir()
    (docs / "guide.pdf").write_bytes(manual_pdf())
    gold = root / "pages.jsonl"
    gold.write_text("\n".join(json.dumps(q) for q in [
        {"id": "oil", "query": "which oil burns for nine hours", "doc": "guide.pdf", "page": 2},
        {"id": "store", "query": "where are lanterns stored", "doc": "guide.pdf",
         "pages": [3]},
        {"id": "boat", "query": "when do lanterns light the path", "doc": "guide.pdf",
         "answer": "light the harbor path for every late boat"},
    ]) + "\n", encoding="utf-8")
    return docs, gold


def test_page_gold_in_jsonl(tmp_path):
    docs, gold = _pdf_folder(tmp_path)
    corpus = load_corpus(str(docs), use_cache=False)
    qs = build_query_set(corpus, str(gold))
    by_id = {q.id: q for q in qs.queries}
    assert by_id["oil"].pages == (2,) and by_id["store"].pages == (3,)
    # pages alone: the gold is their text, by position
    doc = corpus["guide.pdf"]
    assert [doc.text[a:b] for a, b in by_id["store"].spans] == [
        "2 Storage", "Store lanterns upright in the jetty shed, away from the canal."]
    # a text answer on a document with pages: the pages where it is
    assert by_id["boat"].pages == (1,) and not by_id["boat"].spans
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "x", "query": "q", "doc": "guide.pdf", "page": 9}) + "\n"
                   + json.dumps({"id": "y", "query": "q", "doc": "guide.pdf", "page": 1}) + "\n",
                   encoding="utf-8")
    problems = [p.message for p in build_query_set(corpus, str(bad)).problems]
    assert problems == ["pages must be whole numbers from 1 to 3 (the pages of guide.pdf); "
                        "line skipped"]


def test_page_hit_and_pages_in_budget(tmp_path):
    docs, gold = _pdf_folder(tmp_path)
    corpus = load_corpus(str(docs), use_cache=False)
    qs = build_query_set(corpus, str(gold))
    doc = corpus["guide.pdf"]
    # one chunk per block: ranking every query to the blocks of page 1 first, then page 3
    handed = [Chunk(doc.id, b.start, b.end, doc.block_text(b)) for b in doc.blocks]
    order = [i for i, b in enumerate(doc.blocks) if b.page == 1] + \
            [i for i, b in enumerate(doc.blocks) if b.page == 3]
    ranking = np.array([order] * len(qs.queries))
    scores = score(qs, handed, ranking, k=2, budget=60)
    hits = dict(zip(scores.query_ids, scores.page_hit))
    assert hits == {"oil": 0.0, "store": 0.0, "boat": 1.0}
    deep = score(qs, handed, ranking, k=len(order), budget=60)
    assert dict(zip(deep.query_ids, deep.page_hit)) == {"oil": 0.0, "store": 1.0, "boat": 1.0}
    # within 60 characters: the title and "1 Getting started" (both on page 1)
    assert list(scores.budget_pages) == [1.0, 1.0, 1.0]
    wide = score(qs, handed, ranking, k=2, budget=10_000)
    assert list(wide.budget_pages) == [2.0, 2.0, 2.0]
    summary = scores.summary()
    assert summary["page_hit_at_k"].value == pytest.approx(1 / 3)
    assert summary["budget_pages"].value == 1.0
    # a corpus without pages has neither
    plain = Corpus("p", (Document.from_parts("a", "a", [Part("paragraph", "x" * 50)]),))
    flat = score(QuerySet("s", (Query("q", "x", "a", "x" * 50),), plain),
                 [Chunk("a", 0, 50, "x" * 50)], np.array([[0]]))
    assert "page_hit_at_k" not in flat.summary() and "budget_pages" not in flat.summary()


def test_run_reports_page_metrics(tmp_path, cache_dir, capsys):
    from chunkeval.cli import main
    docs, gold = _pdf_folder(tmp_path)
    out = tmp_path / "out"
    assert main(["run", "--corpus", str(docs), "--queries", str(gold),
                 "--strategies", "fixed-200,structure-400", "--retrievers", "bm25",
                 "--jobs", "1", "--out", str(out)]) == 0
    table = capsys.readouterr().out
    assert "page" in table and "pgs" in table and "page hit@5" in table
    results = Results.from_json(json.loads((out / "results.json").read_text()), "results.json")
    for r in results.results:
        assert 0 <= r.metrics["page_hit_at_k"].value <= 1
        assert r.metrics["budget_pages"].value >= 1
    report = (out / "report.md").read_text()
    assert "page hit@5" in report and "pages in budget" in report
    # the per-query page: each chunk's pages, from its offsets, and the gold's pages
    data = page_data(out / "queries.html")
    doc = load_corpus(str(docs))["guide.pdf"]
    (shown,) = data["sets"]
    assert shown["pages"] == [list(doc.pages_of(a, b)) for _, a, b, *_ in shown["chunks"]]
    assert any(len(p) > 1 for p in shown["pages"])
    assert {q[0]: q[5] for q in shown["queries"]} == {"oil": [2], "store": [3], "boat": [1]}
    # export: page-level qrels and runs beside the chunk-level ones
    dump = tmp_path / "corpus.jsonl"
    assert main(["corpus", "info", "--corpus", str(docs), "--queries", str(gold),
                 "--dump", str(dump)]) == 0
    assert "pages       3 in 1 documents; 15 of their 15 blocks have a page" in \
        capsys.readouterr().out
    assert main(["export", "--format", "trec", str(out), "--dump", str(dump),
                 "--out", str(tmp_path / "trec")]) == 0
    folder = tmp_path / "trec" / "pages" / "fixed-200"
    assert sorted((folder / "pages-qrels.trec").read_text().splitlines()) == [
        "boat 0 guide.pdf#1 1", "oil 0 guide.pdf#2 1", "store 0 guide.pdf#3 1"]
    run = [line.split() for line in (folder / "pages-bm25.trec").read_text().splitlines()]
    # the page hit@k of results.json, from the files
    hit = {q for q, _, d, *_ in run} & {q for q, _, d, _ in (
        line.split() for line in (folder / "pages-qrels.trec").read_text().splitlines())
        if (q, d) in {(r[0], r[2]) for r in run}}
    fixed = next(r for r in results.results if r.strategy == "fixed-200")
    assert len(hit) / 3 == pytest.approx(fixed.metrics["page_hit_at_k"].value)


def test_a_pdf_without_headings_takes_its_title_from_the_metadata():
    page = Page()
    paragraph(page, 100, ["only body text here", "and a second line"])
    doc, problems = parse_pdf(pdf([page], title="Lantern Notes"), "notes.pdf")
    assert doc.title == "Lantern Notes"
    assert _blocks(doc) == [(1, "paragraph", "only body text here and a second line")]
    assert [p.message for p in problems] == [
        "no headings (no line is set larger or bolder than the body text): it is read as "
        "one section"]


def test_word_without_a_title_style_starts_at_heading_1():
    import io

    import docx
    d = docx.Document()
    d.add_heading("Canal Locks", 1)
    d.add_paragraph("The locks open at the signal.")
    d.add_heading("Lock keepers", 2)
    d.add_paragraph("A keeper lives beside each lock.")
    out = io.BytesIO()
    d.save(out)
    doc, _ = parse_docx(out.getvalue(), "locks.docx")
    assert [(b.kind, b.headings) for b in doc.blocks] == [
        ("heading1", ("Canal Locks", "", "")), ("paragraph", ("Canal Locks", "", "")),
        ("heading2", ("Canal Locks", "Lock keepers", "")),
        ("paragraph", ("Canal Locks", "Lock keepers", ""))]


def test_contents_and_index_pages_are_dropped_but_their_heading_stays():
    contents, body, index = Page(), Page(), Page()
    contents.text(72, 80, 17, "Contents", "bold")
    for i, entry in enumerate(["1 Lanterns . . . . . . . . 2", "1.1 Wicks . . . . . . . . 2",
                               "1.2 A wrapped entry whose title runs onto",
                               "a second line . . . . . . . . 3"]):
        contents.text(72, 110 + 14 * i, 11, entry)
    body.text(72, 80, 17, "1 Lanterns", "bold")
    paragraph(body, 110, ["Lanterns burn oil.", "Wicks are trimmed daily."])
    index.text(72, 80, 17, "Index", "bold")
    index.text(72, 110, 11, "A W", "bold")
    index.text(72, 124, 11, "abline . . . . . . . . 2 wick . . . . . . . . 2, 3")
    index.text(72, 138, 11, "axis . . . . . . . . 3, 4")
    doc, _ = parse_pdf(pdf([contents, body, index]), "book.pdf")
    assert _blocks(doc) == [(1, "heading1", "Contents"), (2, "heading1", "1 Lanterns"),
                            (2, "paragraph", "Lanterns burn oil. Wicks are trimmed daily."),
                            (3, "heading1", "Index")]


def _handbook(admonition_size: float = 17) -> list[Page]:
    """Two pages: a title, chapters at 14 pt, sections bold at body size, and a "Note:"
    title set as large as a chapter (as some manuals set admonitions)."""
    p1, p2 = Page(), Page()
    p1.text(72, 80, 24, "Harbour Handbook", "bold")
    p1.text(72, 130, 14, "1 Lanterns", "bold")
    y = paragraph(p1, 160, ["Every boat carries a lantern after dusk."])
    p1.text(72, y + 20, admonition_size, "Note:", "bold")
    y = paragraph(p1, y + 44, ["Spare wicks live in the shed."])
    p1.text(72, y + 20, 11, "1.1 Trimming the wick", "bold")
    paragraph(p1, y + 44, ["Cut the wick square with the brass scissors."])
    p2.text(72, 80, 14, "2 Moorings", "bold")
    paragraph(p2, 110, ["Moorings are checked every spring tide."])
    return [p1, p2]


def test_a_pdf_with_an_outline_takes_its_headings_from_the_bookmarks():
    bookmarks = [(1, "Lanterns", 0, 125), (2, "Trimming the wick", 0, 220),
                 (1, "Moorings", 1, 75)]
    doc, problems = parse_pdf(pdf(_handbook(), outline=bookmarks), "handbook.pdf")
    assert problems == []
    assert [(b.kind, doc.block_text(b)) for b in doc.blocks if b.is_heading] == [
        ("heading1", "Harbour Handbook"), ("heading2", "1 Lanterns"),
        ("heading3", "1.1 Trimming the wick"), ("heading2", "2 Moorings")]
    note = next(b for b in doc.blocks if doc.block_text(b).startswith("Note:"))
    assert note.kind == "paragraph" and note.headings == ("Harbour Handbook", "1 Lanterns", "")


def test_without_an_outline_an_admonition_title_is_no_heading():
    doc, _ = parse_pdf(pdf(_handbook()), "handbook.pdf")
    headings = [(b.kind, doc.block_text(b)) for b in doc.blocks if b.is_heading]
    assert "Note:" not in [t for _, t in headings]
    # the chapters stay one level below the title: the note's size makes no level
    assert ("heading2", "1 Lanterns") in headings and ("heading2", "2 Moorings") in headings


def test_bookmarks_that_are_not_on_their_pages_leave_the_headings_to_font_sizes():
    bookmarks = [(1, "Anchors", 0, 125), (1, "Chains", 1, 75)]
    doc, problems = parse_pdf(pdf(_handbook(), outline=bookmarks), "handbook.pdf")
    assert [str(p) for p in problems] == [
        "handbook.pdf: only 0 of the 2 bookmarks in its outline were found on their pages: "
        "headings are taken from font sizes instead"]
    assert ("heading2", "1 Lanterns") in [(b.kind, doc.block_text(b)) for b in doc.blocks]


def test_a_table_without_rules_is_found_by_its_aligned_columns_and_prose_is_not():
    page = Page()
    page.text(72, 80, 17, "Oil grades", "bold")
    y = paragraph(page, 110, ["Lamp oils differ in how long they burn and in how much soot",
                              "they leave on the chimney glass, so the guild keeps a short",
                              "list of the grades it allows on the harbour wall."])
    for row, (grade, hours, soot) in enumerate([("Grade", "Burns for", "Soot"),
                                                ("paraffin", "nine hours", "little"),
                                                ("whale", "seven hours", "much"),
                                                ("olive", "five hours", "none")]):
        for x, cell in ((72, grade), (200, hours), (330, soot)):
            page.text(x, y + 14 + 14 * row, 11, cell)
    paragraph(page, y + 90, ["After the table the prose goes on as before, line after",
                             "line, with nothing but word spaces between its words."])
    doc, _ = parse_pdf(pdf([page]), "oils.pdf")
    tables = [b for b in doc.blocks if b.kind == "table"]
    assert [doc.block_text(b) for b in tables] == [
        "Grade | Burns for | Soot\nparaffin | nine hours | little\nwhale | seven hours | much\n"
        "olive | five hours | none"]
    assert [b.kind for b in doc.blocks if "prose goes on" in doc.block_text(b)] == ["paragraph"]


def test_wide_gaps_in_prose_at_different_places_make_no_table():
    page = Page()
    page.text(72, 80, 17, "Moorings", "bold")
    for row, (first, x, rest) in enumerate([("Ropes fray.", 150, "Check them at every tide."),
                                            ("Knots slip when wet.", 215, "Tie them twice."),
                                            ("Buoys drift.", 160, "Count them each morning.")]):
        page.text(72, 110 + 14 * row, 11, first)
        page.text(x, 110 + 14 * row, 11, rest)
    doc, _ = parse_pdf(pdf([page]), "moorings.pdf")
    assert [b.kind for b in doc.blocks] == ["heading1", "paragraph"]


def test_a_bookmarks_number_may_be_set_apart_from_its_title():
    p1, p2 = Page(), Page()
    p1.text(72, 80, 24, "Harbour Handbook", "bold")
    paragraph(p1, 120, ["Every boat carries a lantern after dusk."])
    p2.text(72, 80, 14, "CHAPTER THREE", "bold")
    p2.text(72, 110, 20, "Moorings", "bold")
    paragraph(p2, 140, ["Moorings are checked every spring tide."])
    bookmarks = [(1, "Harbour Handbook", 0, 75), (2, "3 Moorings", 1, 75)]
    doc, problems = parse_pdf(pdf([p1, p2], outline=bookmarks), "handbook.pdf")
    assert problems == []
    assert [(b.kind, doc.block_text(b)) for b in doc.blocks if b.is_heading] == [
        ("heading1", "Harbour Handbook"), ("heading2", "Moorings")]
