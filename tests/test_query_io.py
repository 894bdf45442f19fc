"""Questions brought in: `chunkeval queries import` of Chroma, Ragas, LlamaIndex and BEIR files,
and `chunkeval queries generate` driving a question generator written here. Every excerpt
must land on spans of the documents chunkeval scores, and every one that does not is counted."""

import csv
import hashlib
import json
import re
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chunkeval.cli import main
from chunkeval.corpus import load_corpus
from chunkeval.model import Corpus, Document
from chunkeval.queries import build_query_set, generate
from chunkeval.errors import UnknownName
from chunkeval.queries import formats
from chunkeval.queries.imports import Locator, import_questions, read_questions

# In the Markdown manuals (helpers.write_manuals) each step is two lines: "... choose
# option 0\nand confirm; ...". An excerpt written on one line is found with whitespace ignored.
EXACT = "To handle network in step 0, open the network panel"  # part1.md
SPACED = "choose option 1 and confirm; the network log then shows the new state."  # part1.md
PART2 = "To handle firewall in step 2, open the firewall panel"  # part2.md
MISSING = "The network manual is kept in the vault next to the printer."


@pytest.fixture
def corpus_dir(manuals):
    return manuals(markdown=True, folder="guide")


@pytest.fixture
def corpus(corpus_dir):
    return load_corpus(str(corpus_dir), use_cache=False)


def squeeze(text):
    return "".join(text.split())


def span(corpus, doc, needle):
    """Where `needle` is in the document, whitespace ignored: the span an import must give."""
    text = corpus[doc].text
    bare = [i for i, c in enumerate(text) if not c.isspace()]
    at = "".join(text[i] for i in bare).index(squeeze(needle))
    return [bare[at], bare[at + len(squeeze(needle)) - 1] + 1]


def read_back(corpus, path):
    """The written file as chunkeval reads it: queries by id, and its lines' problems."""
    qs = build_query_set(corpus, str(path), max_queries=10**6)
    return {q.id: q for q in qs.queries}, qs.problems


def write_csv(path, header, rows):
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


# -- Chroma --------------------------------------------------------------------------------

def chroma_rows(corpus):
    text = corpus["guide/part1.md"].text
    start = text.index(EXACT)

    def ref(content, s=None, e=None):
        return {"content": content, "start_index": s, "end_index": e}

    return [
        # the file's offsets are right
        ["Which panel opens first for network?", [ref(EXACT, start, start + len(EXACT))],
         "chunking_evaluation/corpora/part1.md"],
        # offsets off by a few characters, and an excerpt on one line where the file breaks it
        ["What does the network log show?", [ref(EXACT, start + 3, start + 3 + len(EXACT)),
                                             ref(SPACED, 0, len(SPACED))], "part1"],
        # nothing of it is in the corpus: not written
        ["Where is the manual kept?", [ref(MISSING, 5, 50)], "part1"],
        # one found, one not: written with the one
        ["Which panel, and where is it kept?", [ref(PART2), ref(MISSING)], "part2.md"],
    ]


def write_chroma(path, rows, bad_row=True):
    lines = [[q, json.dumps(refs), doc] for q, refs, doc in rows]
    if bad_row:
        lines.append(["A row whose references are no JSON", "[{'content'", "part1"])
    return write_csv(path, ["question", "references", "corpus_id"], lines)


def test_chroma_offsets_search_and_whitespace(corpus, tmp_path):
    path = write_chroma(tmp_path / "questions_df.csv", chroma_rows(corpus))
    done = import_questions(corpus, "chroma", [str(path)])
    assert done.read == 4 and len(done.lines) == 3 and done.dropped == 1
    assert dict(done.outcomes) == {"offsets": 1, "exact": 2, "whitespace": 1, "missing": 2}
    by_id = {x["id"]: x for x in done.lines}
    assert list(by_id) == ["questions_df-1", "questions_df-2", "questions_df-4"]
    exact = span(corpus, "guide/part1.md", EXACT)
    assert by_id["questions_df-1"]["spans"] == [exact]
    assert by_id["questions_df-1"]["doc"] == "guide/part1.md"
    assert by_id["questions_df-2"]["spans"] == [exact, span(corpus, "guide/part1.md", SPACED)]
    assert by_id["questions_df-4"] == {"id": "questions_df-4", "query": "Which panel, and where "
                                       "is it kept?", "doc": "guide/part2.md",
                                       "spans": [span(corpus, "guide/part2.md", PART2)]}
    # each excerpt not found is listed with its file, line and first characters
    assert len(done.unfound) == 2
    assert done.unfound[0].startswith(f"{path}:4 reference 0: not found: 'The network manual")
    assert done.skipped == [f"{path}:6: 'references' is not JSON (Expecting property name "
                            "enclosed in double quotes)"]


def test_chroma_import_on_the_command_line(corpus_dir, corpus, tmp_path, capsys):
    path = write_chroma(tmp_path / "questions_df.csv", chroma_rows(corpus))
    out = tmp_path / "q.jsonl"
    assert main(["queries", "import", "chroma", str(path), "--corpus", str(corpus_dir),
                 "--out", str(out)]) == 0
    printed, err = capsys.readouterr()
    assert "questions read     4 (+1 rows skipped)" in printed
    assert "questions written  3" in printed
    assert "  with whitespace ignored  1" in printed and "  not found                2" in printed
    assert f"{path}:4 reference 0: not found" in err and f"{path}:6:" in err
    meta = json.loads(out.read_text(encoding="utf-8").splitlines()[0])["chunkeval_meta"]
    assert meta["imported"] == "chroma" and meta["files"] == ["questions_df.csv"]
    queries, problems = read_back(corpus, out)
    assert problems == ()
    q = queries["questions_df-2"]
    text = corpus["guide/part1.md"].text
    assert [text[s:e] for s, e in q.spans] == [EXACT, SPACED.replace("1 and", "1\nand")]


def test_excerpts_in_several_documents_go_to_the_one_holding_most(corpus, tmp_path):
    part2_other = "the firewall log then shows the new state."
    path = tmp_path / "testset.json"
    path.write_text(json.dumps([
        {"user_input": "Which panels are there?", "reference_contexts": [EXACT, PART2,
                                                                         part2_other]}]))
    done = import_questions(corpus, "ragas", [str(path)])
    (line,) = done.lines
    assert line["doc"] == "guide/part2.md"
    assert line["spans"] == [span(corpus, "guide/part2.md", PART2),
                             span(corpus, "guide/part2.md", part2_other)]
    assert done.outcomes["elsewhere"] == 1
    assert done.unfound == [f"{path} item 0 context 0: in another document only (in "
                            f"guide/part1.md): {EXACT!r}"]


# -- Ragas ---------------------------------------------------------------------------------

def test_ragas_csv_with_python_lists(corpus, tmp_path):
    path = write_csv(tmp_path / "testset.csv",
                     ["user_input", "reference_contexts", "reference", "synthesizer_name"],
                     [["How is network handled?", str([EXACT, SPACED]), "It opens.", "single"],
                      ["Where is it kept?", str([MISSING]), "Nowhere.", "single"],
                      ["A row without contexts", "", "x", "single"]])
    done = import_questions(corpus, "ragas", [str(path)])
    assert done.read == 2 and len(done.lines) == 1 and done.dropped == 1
    assert dict(done.outcomes) == {"exact": 1, "whitespace": 1, "missing": 1}
    assert done.lines[0]["spans"] == [span(corpus, "guide/part1.md", EXACT),
                                      span(corpus, "guide/part1.md", SPACED)]
    assert done.unfound[0].startswith(f"{path}:3 context 0: not found:")
    assert done.skipped == [f"{path}:4: 'reference_contexts' is not a list"]


def test_ragas_json_samples_and_jsonl(corpus, tmp_path):
    whole = tmp_path / "testset.json"
    whole.write_text(json.dumps({"samples": [
        {"eval_sample": {"user_input": "How is network handled?",
                         "reference_contexts": [SPACED]}, "synthesizer_name": "single"},
        {"eval_sample": {"user_input": [{"content": "hi", "type": "human"}],
                         "reference_contexts": [EXACT]}, "synthesizer_name": "multi"}]}))
    lines = tmp_path / "testset.jsonl"
    lines.write_text(json.dumps({"question": "Which firewall step?", "contexts": [PART2]})
                     + "\n")
    done = import_questions(corpus, "ragas", [str(whole), str(lines)])
    assert [x["id"] for x in done.lines] == ["testset-1", "testset-1~2"]  # unique ids
    assert dict(done.outcomes) == {"whitespace": 1, "exact": 1}
    assert done.lines[1]["doc"] == "guide/part2.md"
    assert done.skipped == [f"{whole} item 1: a multi-turn sample: only single questions "
                            "are imported"]


# -- LlamaIndex ----------------------------------------------------------------------------

def test_llamaindex_dataset(corpus, tmp_path):
    path = tmp_path / "qa.json"
    path.write_text(json.dumps({
        "queries": {"q-a": "How is network handled?", "q-b": "Where is the manual?",
                    "q-c": "Which node is gone?"},
        "corpus": {"n1": EXACT, "n2": SPACED.replace(" and", "\n\n and"), "n3": MISSING},
        "relevant_docs": {"q-a": ["n1", "n2"], "q-b": ["n3"], "q-c": ["n9"]},
        "mode": "text"}, indent=4))
    done = import_questions(corpus, "llamaindex", [str(path)])
    assert [x["id"] for x in done.lines] == ["q-a"]
    assert done.lines[0]["spans"] == [span(corpus, "guide/part1.md", EXACT),
                                      span(corpus, "guide/part1.md", SPACED)]
    assert dict(done.outcomes) == {"exact": 1, "whitespace": 1, "missing": 1}
    assert done.unfound[0].startswith(f"{path} query 'q-b' node 'n3': not found:")
    assert done.skipped == [f"{path} query 'q-c': relevant node 'n9' is not in 'corpus'"]


# -- BEIR ----------------------------------------------------------------------------------

def write_beir(root):
    (root / "qrels").mkdir(parents=True)
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in [
        {"_id": "1", "text": "How is network handled?"},
        {"_id": "2", "text": "Where is the manual kept?"},
        {"_id": "3", "text": "A query of another split"}]))
    (root / "corpus.jsonl").write_text("".join(json.dumps(p) + "\n" for p in [
        {"_id": "d1", "title": "Network", "text": EXACT},
        {"_id": "d2", "title": "Network", "text": SPACED},
        {"_id": "d3", "title": "Vault", "text": MISSING},
        {"_id": "d4", "title": "Other", "text": PART2}]))
    (root / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n1\td1\t1\n1\td2\t2\n1\td4\t0\n2\td3\t1\nbroken line\n")
    return root


def test_beir_folder(corpus, tmp_path):
    root = write_beir(tmp_path / "scifact")
    done = import_questions(corpus, "beir", [str(root)])
    # score 0 is not relevant, and query 3 has no qrels: neither is read
    assert done.read == 2 and [x["id"] for x in done.lines] == ["1"]
    assert done.lines[0]["spans"] == [span(corpus, "guide/part1.md", EXACT),
                                      span(corpus, "guide/part1.md", SPACED)]
    assert dict(done.outcomes) == {"exact": 1, "whitespace": 1, "missing": 1}
    assert done.unfound[0].startswith(f"{root / 'corpus.jsonl'}:3 passage 'd3': not found")
    assert done.skipped == [f"{root / 'qrels' / 'test.tsv'}:6: not "
                            "'query-id<TAB>corpus-id<TAB>score'"]
    # the files named one by one read the same
    files = [str(root / "queries.jsonl"), str(root / "corpus.jsonl"),
             str(root / "qrels" / "test.tsv")]
    assert import_questions(corpus, "beir", files).lines == done.lines


# -- unusable input ------------------------------------------------------------------------

@pytest.mark.parametrize("fmt, name, content, message", [
    ("chroma", "q.csv", "question,corpus_id\nWhat?,part1\n",
     "q.csv:1: no column 'references' (the columns: question, corpus_id)"),
    ("llamaindex", "qa.json", '{"queries": {\n  "a": "x",\n}',
     "qa.json:3: not JSON: Expecting property name enclosed in double quotes"),
    ("llamaindex", "qa.json", '{"queries": {}}', "qa.json: expected an "
     "EmbeddingQAFinetuneDataset"),
    ("ragas", "t.csv", 'user_input,reference_contexts\n"What?" no,"[]"\n',
     "t.csv:2: not CSV: ',' expected after '\"'"),
    ("beir", "queries.jsonl", '{"_id": "1", "text": "x"}\n', "no corpus.jsonl"),
])
def test_unusable_input_is_one_line_and_exit_2(corpus_dir, tmp_path, capsys, fmt, name,
                                               content, message):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    out = tmp_path / "q.jsonl"
    assert main(["queries", "import", fmt, str(path), "--corpus", str(corpus_dir),
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("chunkeval: error: ") and message in err
    assert "Traceback" not in err and not out.exists()


def test_each_format_is_one_row_of_the_table(monkeypatch, tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["queries", "import", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "{" + ",".join(f.name for f in formats.TABLE) + "}" in shown
    assert f"Read {formats.described()}, locate each excerpt" in shown
    # a row added to the table is read by its own reader and named in the description
    path = tmp_path / "q.txt"
    path.write_text("what?\n", encoding="utf-8")
    row = formats.Format("lines", "a text file of questions", lambda paths: ([], [], ["read"]))
    monkeypatch.setattr(formats, "TABLE", (*formats.TABLE, row))
    assert formats.described().endswith("LlamaIndex's EmbeddingQAFinetuneDataset JSON, "
                                        "a BEIR folder or a text file of questions")
    assert read_questions("lines", [str(path)]) == ([], [], ["read"])


def test_an_unknown_format_is_named_with_the_known_ones(tmp_path):
    with pytest.raises(UnknownName, match="unknown question format 'csv'; known: chroma, ragas, "
                                          "llamaindex, beir"):
        read_questions("csv", [str(tmp_path)])


def test_nothing_found_writes_nothing(corpus_dir, tmp_path, capsys):
    path = tmp_path / "qa.json"
    path.write_text(json.dumps({"queries": {"a": "Where?"}, "corpus": {"n": MISSING},
                                "relevant_docs": {"a": ["n"]}}))
    out = tmp_path / "q.jsonl"
    assert main(["queries", "import", "llamaindex", str(path), "--corpus", str(corpus_dir),
                 "--out", str(out)]) == 2
    printed, err = capsys.readouterr()
    assert "questions written  0" in printed and "not written" in err and not out.exists()


# -- the metadata line ---------------------------------------------------------------------

def test_a_leading_metadata_line_is_skipped_elsewhere_a_problem(corpus, tmp_path):
    meta = json.dumps({"chunkeval_meta": {"seed": 1}})
    line = json.dumps({"id": "a", "query": "backup step", "doc": "guide/part1.md",
                       "answer": EXACT})
    path = tmp_path / "q.jsonl"
    path.write_text(f"\n{meta}\n{line}\n", encoding="utf-8")
    queries, problems = read_back(corpus, path)
    assert list(queries) == ["a"] and problems == ()
    path.write_text(f"{line}\n{meta}\n", encoding="utf-8")
    queries, problems = read_back(corpus, path)
    assert list(queries) == ["a"] and [p.line for p in problems] == [2]


# -- the generator -------------------------------------------------------------------------

GENERATOR = '''
import re

version = "v7"
CALLS = []
FAIL = {"kernel"}  # topics whose section raises
STOP_AFTER = None  # calls after which the run is interrupted


def ask(text, section):
    CALLS.append(section)
    if STOP_AFTER is not None and len(CALLS) > STOP_AFTER:
        raise KeyboardInterrupt
    topic = re.search(r"To handle (\\w+) in step", text).group(1)
    if topic in FAIL:
        raise RuntimeError(f"the model timed out on {topic}")
    if topic == "sound":
        return "not a list of questions"
    step1 = f"To handle {topic} in step 1, open the {topic} panel, choose option 1"
    return [
        {"question": f"Which panel is opened when handling {topic}?",
         "excerpts": [f"To handle {topic} in step 0, open the {topic} panel"]},
        {"question": f"What does the {topic} log show after confirming?",
         "excerpts": f"choose option 2 and confirm; the {topic} log then shows the new state."},
        {"question": f"Where is the {topic} manual kept?",
         "excerpts": ["The manual is kept in the vault."]},
        {"question": step1 + "?", "excerpts": [step1]},
        {"question": "What does this section describe?", "excerpts": [f"| {topic} |"]},
    ]
'''


@pytest.fixture
def generator(tmp_path, monkeypatch):
    """The module `fakegen` in a project folder that is the working directory (and on the
    path, so that a test can reach the module the command line imports)."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "fakegen.py").write_text(GENERATOR, encoding="utf-8")
    monkeypatch.chdir(project)
    monkeypatch.syspath_prepend(str(project))
    yield project / "fakegen.py"
    sys.modules.pop("fakegen", None)


def run_generate(corpus_dir, out, *extra):
    return main(["queries", "generate", "--generator", "fakegen:ask", "--corpus",
                 str(corpus_dir), "--out", str(out), "--sections", "100", *extra])


def counts(printed):
    """The summary's numbers by their label."""
    found = (re.match(r"\s*(\D+?)\s+(\d+)", line) for line in printed.splitlines())
    return {m[1]: int(m[2]) for m in found if m}


def test_generate_keeps_checked_questions_and_a_rerun_calls_nothing(corpus_dir, corpus,
                                                                    generator, tmp_path,
                                                                    capsys):
    out = tmp_path / "gen.jsonl"
    assert run_generate(corpus_dir, out) == 0
    printed, err = capsys.readouterr()
    fake = sys.modules["fakegen"]
    # 4 parts x 3 topics; "kernel" raises and "sound" breaks the protocol: 10 answer
    assert counts(printed) == {
        "sections asked": 12, "generator calls": 12, "sections failed": 2,
        "questions returned": 50, "kept": 21, "dropped, excerpt not found": 10,
        "dropped, leak (quotes its excerpt)": 10, "dropped, duplicate": 9,
        "excerpts not found": 10, "excerpts ambiguous": 0, "wrote": 21}
    assert len(fake.CALLS) == 12
    assert "the generator failed on guide/part2.md Working with kernel" in err
    assert "RuntimeError: the model timed out on kernel" in err
    assert "returned str, not an iterable" in err

    lines = out.read_text(encoding="utf-8").splitlines()
    meta = json.loads(lines[0])["chunkeval_meta"]
    assert meta["generator"] == {
        "spec": "fakegen:ask", "version": "v7",
        "source_digest": hashlib.sha256(generator.read_bytes()).hexdigest()}
    assert meta["seed"] == 0 and meta["sections"] == 12
    queries, problems = read_back(corpus, out)
    assert len(queries) == 21 and problems == ()
    logs = [q for q in queries.values() if q.text == "What does the backup log show after "
                                                   "confirming?"]
    (log,) = logs
    text = corpus[log.doc_id].text
    # found with whitespace ignored: the span covers the file's own line break
    assert [text[s:e] for s, e in log.spans] == [
        "choose option 2\nand confirm; the backup log then shows the new state."]
    assert not any(q.text.startswith("To handle") for q in queries.values())  # leaks dropped

    # The failed sections are asked again; the rest come from the cache.
    fake.FAIL.clear()
    assert run_generate(corpus_dir, out) == 0
    again = counts(capsys.readouterr().out)
    assert again["generator calls"] == 2 and again["sections failed"] == 1  # sound still bad
    fake.CALLS.clear()
    assert run_generate(corpus_dir, tmp_path / "again.jsonl") == 0
    third = counts(capsys.readouterr().out)
    assert third["generator calls"] == 1 and len(fake.CALLS) == 1
    assert third["kept"] == 23


def test_an_interrupted_run_resumes_without_asking_again(corpus_dir, generator, tmp_path,
                                                        capsys):
    fake_source = generator.read_text(encoding="utf-8").replace('FAIL = {"kernel"}',
                                                                 "FAIL = set()")
    generator.write_text(fake_source.replace('if topic == "sound"', "if False"),
                         encoding="utf-8")
    out = tmp_path / "gen.jsonl"
    import fakegen  # the generator's module, as the first run will find it
    fakegen.STOP_AFTER = 5
    assert run_generate(corpus_dir, out) == 130
    assert not out.exists()
    fakegen.STOP_AFTER, fakegen.CALLS[:] = None, []
    assert run_generate(corpus_dir, out) == 0
    assert counts(capsys.readouterr().out)["generator calls"] == 7  # 12 sections, 5 answered
    assert run_generate(corpus_dir, out) == 0
    assert counts(capsys.readouterr().out)["generator calls"] == 0


def test_sections_are_picked_round_robin_over_documents(corpus):
    picked = generate.pick_sections(corpus, 4, seed=0)
    assert sorted(s.doc_id for s in picked) == sorted(d.id for d in corpus.documents)
    assert generate.pick_sections(corpus, 4, seed=0) == picked
    assert generate.pick_sections(corpus, 4, seed=1) != picked
    for s in picked:
        body = corpus[s.doc_id].text[s.start:s.end]
        assert body.startswith("To handle") and s.headings[1].startswith("Working with")


def test_long_sections_are_cut(monkeypatch, corpus):
    monkeypatch.setattr(generate, "MAX_SECTION_CHARS", 150)
    doc = corpus["guide/part0.md"]
    sections = generate.sections_of(doc)
    assert len(sections) > 9 and all(s.end - s.start <= 150 for s in sections)
    assert all(not doc.text[s.start].isspace() for s in sections)


def test_leak_share_tells_a_copy_from_a_question():
    excerpt = ("The reaction rate increased significantly at higher temperatures, resulting in "
               "quicker product formation.")
    copy = "Is it true that the reaction rate increased significantly at higher temperatures?"
    natural = "How did temperature affect how fast the product formed?"
    assert generate.leak_share(copy, [excerpt]) >= generate.LEAK_SHARE
    assert generate.leak_share(natural, [excerpt]) < generate.LEAK_SHARE
    assert generate.leak_share("Reaction rate?", [excerpt]) == 0  # too short to judge


def test_a_bad_generator_spec_is_a_message(corpus_dir, tmp_path, capsys, generator):
    assert main(["queries", "generate", "--generator", "nosuchmodule:ask", "--corpus",
                 str(corpus_dir), "--out", str(tmp_path / "g.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "question generator 'nosuchmodule:ask': cannot import" in err
    assert main(["queries", "generate", "--generator", "fakegen:version", "--corpus",
                 str(corpus_dir), "--out", str(tmp_path / "g.jsonl")]) == 2
    assert "is not callable" in capsys.readouterr().err


@given(st.text(alphabet="ab c\n\t\u3000\xa0\x1c\u200b", min_size=1, max_size=60),
       st.data())
def test_whitespace_search_maps_back_to_real_offsets(text, data):
    doc = Document("d.txt", "d", text, ())
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    # the excerpt as a tool might quote it: every whitespace run made one space
    quoted = " ".join(text[start:end].split())
    hit = Locator(Corpus("c", (doc,))).find(doc, quoted)
    if not quoted:
        assert hit is None
        return
    s, e, how = hit
    assert squeeze(text[s:e]) == squeeze(quoted)
    assert not text[s].isspace() and not text[e - 1].isspace()
    where, needle = (text, quoted) if quoted in text else (squeeze(text), squeeze(quoted))
    copies = sum(where.startswith(needle, i) for i in range(len(where)))
    # more than one copy and no offset to choose by: the first, counted as a guess
    assert how == ("ambiguous" if copies > 1 else "exact" if quoted in text else "whitespace")
    if copies > 1:  # at the first copy
        assert where.find(needle) == (s if where is text else len(squeeze(text[:s])))
