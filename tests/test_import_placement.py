"""Gold placed at the copy of a repeated excerpt that the question names, and the importer's
input checks: each case here once wrote a wrong span or dropped a row without a word."""

from __future__ import annotations

import csv
import io
import json
import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chunkeval.cli import main
from chunkeval.corpus import load_corpus
from chunkeval.model import Corpus, Document
from chunkeval.queries import generate
from chunkeval.queries import imports, textfiles
from chunkeval.queries.imports import import_questions

SENTENCE = "The frobnicator restarts itself after every configuration change."


def _filler(n: int, word: str) -> str:
    return " ".join(f"{word}{i}" for i in range(n))


@pytest.fixture
def html_dir(tmp_path, cache_dir):
    """An HTML page holding SENTENCE twice, the first copy early in its text but late in its
    file (a long head of markup before the body)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    head = "<head><title>T</title><style>" + "p { color: red; }\n" * 300 + "</style></head>"
    page = (f"<html>{head}<body><h1>T</h1><p>Intro. {SENTENCE}</p>"
            f"<p>{_filler(400, 'alpha')}</p><p>Later: {SENTENCE}</p></body></html>")
    (docs / "page.html").write_text(page, encoding="utf-8")
    return docs, page


def _chroma_csv(path, rows):
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["question", "references", "corpus_id"])
    w.writerows(rows)
    path.write_text(out.getvalue(), encoding="utf-8")


def test_chroma_offsets_in_the_raw_file_pick_the_copy_they_name(html_dir, tmp_path, capsys):
    docs, page = html_dir
    first = page.index(SENTENCE)
    text = load_corpus(str(docs), use_cache=False)["page.html"].text
    copies = [i for i in range(len(text)) if text.startswith(SENTENCE, i)]
    assert len(copies) == 2 and first > copies[1]  # file offsets are no text offsets
    refs = [{"content": SENTENCE, "start_index": first, "end_index": first + len(SENTENCE)}]
    _chroma_csv(tmp_path / "q.csv", [["What restarts?", json.dumps(refs), "page"]])
    out = tmp_path / "q.jsonl"
    assert main(["queries", "import", "chroma", str(tmp_path / "q.csv"), "--corpus",
                 str(docs), "--out", str(out)]) == 0
    line = json.loads(out.read_text(encoding="utf-8").splitlines()[1])
    assert line["spans"] == [[copies[0], copies[0] + len(SENTENCE)]]
    # and the second copy, named by its own offset, is the second
    second = page.index(SENTENCE, first + 1)
    refs = [{"content": SENTENCE, "start_index": second, "end_index": second + len(SENTENCE)}]
    _chroma_csv(tmp_path / "q.csv", [["What restarts?", json.dumps(refs), "page"]])
    assert main(["queries", "import", "chroma", str(tmp_path / "q.csv"), "--corpus",
                 str(docs), "--out", str(out)]) == 0
    line = json.loads(out.read_text(encoding="utf-8").splitlines()[1])
    assert line["spans"] == [[copies[1], copies[1] + len(SENTENCE)]]


def test_a_repeated_excerpt_with_no_offset_is_ambiguous_not_exact(html_dir, tmp_path, capsys):
    docs, _ = html_dir
    path = tmp_path / "ragas.json"
    path.write_text(json.dumps([{"user_input": "What restarts?",
                                 "reference_contexts": [SENTENCE]}]), encoding="utf-8")
    out = tmp_path / "q.jsonl"
    assert main(["queries", "import", "ragas", str(path), "--corpus", str(docs), "--out",
                 str(out), "--verbose"]) == 0
    printed, err = capsys.readouterr()
    labels = dict(line.strip().rsplit(None, 1) for line in printed.splitlines()
                  if line.startswith("  "))
    assert labels["exactly, by search"] == "0"
    assert labels["ambiguous, at the first"] == "1"
    assert "ambiguous: " in err and "found more than once in page.html" in err
    text = load_corpus(str(docs), use_cache=False)["page.html"].text
    line = json.loads(out.read_text(encoding="utf-8").splitlines()[1])
    assert line["spans"] == [[text.index(SENTENCE), text.index(SENTENCE) + len(SENTENCE)]]
    # without --verbose the summary counts it and lists nothing
    assert main(["queries", "import", "ragas", str(path), "--corpus", str(docs), "--out",
                 str(out)]) == 0
    assert "ambiguous: " not in capsys.readouterr().err


def _sectioned() -> Corpus:
    """Two sections holding the same sentence; the second section is asked about."""
    md = (f"# Doc\n\n## One\n\n{_filler(30, 'one')} {SENTENCE}\n\n"
          f"## Two\n\n{_filler(30, 'two')} {SENTENCE}\n")
    from chunkeval.corpus.markdown import parse_markdown

    doc, _ = parse_markdown(md.encode("utf-8"), "d.md")
    return Corpus("c", (doc,))


def test_a_generated_excerpt_is_placed_in_the_section_asked_about(cache_dir):
    corpus = _sectioned()
    doc = corpus["d.md"]
    asked = []

    def ask(text, section):
        asked.append(section)
        if "two0" not in text:
            return []
        return [{"question": "Which component restarts after a change?", "excerpts": [SENTENCE]},
                {"question": "What is named one3 here?", "excerpts": ["one3 one4"]}]

    done = generate.generate(corpus, ask, "nomodule:ask", sections=10, progress=False)
    two = next(s for s in asked if "two0" in doc.text[s.start:s.end])
    at = doc.text.index(SENTENCE, two.start)
    assert at > doc.text.index(SENTENCE)  # not the first copy in the document
    assert [line["spans"] for line in done.lines] == [[[at, at + len(SENTENCE)]]]
    # an excerpt found only in another section is not found
    assert done.excerpts_unfound == 1 and done.dropped["not_found"] == 1


def test_an_endless_generator_is_cut_at_the_cap(cache_dir):
    corpus = _sectioned()

    def ask(text, section):
        def endless():  # as good as endless: read this far, the run would never end
            for n in range(1, 100_000):
                yield {"question": f"Question number {n} about this?", "excerpts": [SENTENCE]}
            raise RuntimeError("read on past any cap")
        return endless()

    done = generate.generate(corpus, ask, "nomodule:endless", sections=1, progress=False)
    assert done.returned == generate.MAX_ANSWER_ITEMS
    assert len(done.cut) == 1 and str(generate.MAX_ANSWER_ITEMS) in done.cut[0]


# -- the importer's input checks ---------------------------------------------------------------

def test_import_refuses_to_write_over_its_input(html_dir, tmp_path, capsys):
    docs, _ = html_dir
    path = tmp_path / "q.csv"
    _chroma_csv(path, [["What restarts?", json.dumps([{"content": SENTENCE}]), ""]])
    before = path.read_bytes()
    assert main(["queries", "import", "chroma", str(path), "--corpus", str(docs), "--out",
                 str(path)]) == 2
    assert "is an input file" in capsys.readouterr().err
    assert path.read_bytes() == before


def test_strict_fails_on_a_skipped_row_and_writes_nothing(html_dir, tmp_path, capsys):
    docs, _ = html_dir
    path = tmp_path / "q.csv"
    _chroma_csv(path, [["What restarts?", json.dumps([{"content": SENTENCE}]), ""],
                       ["", json.dumps([{"content": SENTENCE}]), ""]])
    out = tmp_path / "q.jsonl"
    args = ["queries", "import", "chroma", str(path), "--corpus", str(docs), "--out", str(out)]
    assert main(args) == 0 and out.exists()
    out.unlink()
    assert main(args + ["--strict"]) == 1
    assert "1 row(s) skipped and --strict" in capsys.readouterr().err
    assert not out.exists()


def test_a_non_utf8_byte_is_named_by_its_line(html_dir, tmp_path, capsys):
    docs, _ = html_dir
    path = tmp_path / "q.csv"
    _chroma_csv(path, [["What restarts?", json.dumps([{"content": SENTENCE}]), ""]] * 3)
    data = path.read_bytes().replace(b"What", b"Wh\xe4t", 3)
    path.write_bytes(data[:data.rindex(b"Wh\xe4t")].replace(b"\xe4", b"a") +
                     data[data.rindex(b"Wh\xe4t"):])
    assert main(["queries", "import", "chroma", str(path), "--corpus", str(docs), "--out",
                 str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert f"{path}:4" in err and "not UTF-8" in err and "0xe4" in err


def test_an_excerpt_in_another_document_than_named_says_which(tmp_path, capsys):
    a = Document("a.txt", "a", "Nothing to see in this one.", ())
    b = Document("b.txt", "b", f"Other text. {SENTENCE}", ())
    path = tmp_path / "q.csv"
    _chroma_csv(path, [["What restarts?", json.dumps([{"content": SENTENCE}]), "a"]])
    done = import_questions(Corpus("c", (a, b)), "chroma", [str(path)])
    assert done.lines == [] and done.outcomes["elsewhere"] == 1
    assert "not in 'a', the document it names; found in b.txt" in done.unfound[0]


def test_qrels_rows_dropped_are_counted(tmp_path):
    root = tmp_path / "beir"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(json.dumps({"_id": "p1", "text": SENTENCE}) + "\n"
                                       + json.dumps({"_id": "p2", "text": "Other."}) + "\n",
                                       encoding="utf-8")
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "What restarts?"})
                                        + "\n", encoding="utf-8")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tp1\t1\n"
                                             "q1\tp2\tnan\nq1\tp2\t0\n", encoding="utf-8")
    doc = Document("d.txt", "d", f"Text. {SENTENCE}", ())
    done = import_questions(Corpus("c", (doc,)), "beir", [str(root)])
    assert len(done.lines) == 1
    assert done.skipped == [f"{root / 'qrels' / 'test.tsv'}:3: score 'nan' is not a number"]
    assert "not relevant (score 0 or less), not imported: 1" in done.summary()


def test_a_long_input_line_is_held_a_few_times_at_most(tmp_path):
    """A 16 MB excerpt, found nowhere: reading and searching it costs a few copies of it,
    not an object per word (a 200 MB line once took 3.4 GB)."""
    size = 16 * 2**20
    excerpt = ("word " * (size // 5)).strip()
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"user_input": "What?", "reference_contexts": [excerpt]}) + "\n",
                    encoding="utf-8")
    del excerpt
    peak = _peak_of_a_missing_excerpt("ragas", path)
    assert peak < 5 * size, f"peak {peak / 2**20:.0f} MB for a {size / 2**20:.0f} MB line"


def _peak_of_a_missing_excerpt(kind: str, path) -> int:
    """The peak memory of importing `path`, one question whose excerpt is in no document."""
    doc = Document("d.txt", "d", f"Text. {SENTENCE}", ())
    tracemalloc.start()
    try:
        done = import_questions(Corpus("c", (doc,)), kind, [str(path)])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert done.outcomes["missing"] == 1
    return peak


@given(st.lists(st.lists(st.text(alphabet='ab,"\r\n \u3042', max_size=8), min_size=1,
                         max_size=4), min_size=1, max_size=5))
def test_csv_records_read_what_the_csv_module_writes(tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("csv") / "t.csv"
    with open(path, "w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows(rows)
    with open(path, encoding="utf-8", newline="") as f:
        expected = list(csv.reader(f))
    assert [cells for _, cells in textfiles.csv_records(path)] == expected


def test_a_long_csv_cell_is_held_a_few_times_at_most(tmp_path):
    size = 16 * 2**20
    excerpt = ("word " * (size // 5)).strip()
    path = tmp_path / "q.csv"
    _chroma_csv(path, [["What?", json.dumps([{"content": excerpt}]), "d"]])
    del excerpt
    peak = _peak_of_a_missing_excerpt("chroma", path)
    assert peak < 5 * size, f"peak {peak / 2**20:.0f} MB for a {size / 2**20:.0f} MB cell"


def test_file_offsets_go_through_the_parsers_map():
    """A document whose parser removed text (a comment): the file's offset of the second
    copy maps to the second copy in the text, not to the copy nearest the raw number."""
    comment = "<!-- " + "x" * 500 + " -->\n"
    rest = f"{SENTENCE}\n\n{_filler(100, 'w')}\n\n{SENTENCE}\n"
    file_text = f"{SENTENCE}\n\n{comment}{rest}"
    text = f"{SENTENCE}\n\n{rest}"
    cut = len(SENTENCE) + 2
    doc = Document("d.md", "d", text, (),
                   file_map=((0, 0, cut), (cut, cut + len(comment), len(text) - cut)))
    at = file_text.index(SENTENCE, 1)  # the second copy, in the file
    second = text.index(SENTENCE, 1)
    third = text.rindex(SENTENCE)
    assert abs(third - at) < abs(second - at)  # the raw number is nearer the third copy
    assert doc.text_offset(at) == second
    assert doc.text_offset(cut + 3) is None  # inside the comment
    hit = imports.Locator(Corpus("c", (doc,))).find(doc, SENTENCE, (at, at + len(SENTENCE)))
    assert hit == (second, second + len(SENTENCE), "offsets")
