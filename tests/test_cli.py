"""The command line on a small corpus written here: info, dump, strategies, run, compare."""

import json
import sys

import pytest

from chunkeval import strategies
from chunkeval.cli import main

@pytest.fixture
def corpus_dir(manuals):
    root = manuals(folder="guide")
    (root / "broken.html").write_bytes(b"\x00\x01binary")
    return root


@pytest.fixture
def query_file(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(
        json.dumps({"id": "a", "query": "how to handle backup", "doc": "guide/part1",
                    "answer": "To handle backup in step 0, open the backup panel"}) + "\n"
        + "not json\n", encoding="utf-8")
    return path


def test_info_json_counts_and_problems(corpus_dir, query_file, capsys, tmp_path):
    dump = tmp_path / "dump.jsonl"
    assert main(["corpus", "info", "--corpus", str(corpus_dir), "--queries", str(query_file),
                 "--json", "--dump", str(dump)]) == 0
    out, err = capsys.readouterr()
    info = json.loads(out)
    assert info["documents"] == 4 and info["blocks"]["table"] == 12
    assert info["queries"] == {"q": 1}
    assert "broken.html" in err and "q.jsonl:2" in err
    lines = [json.loads(line) for line in dump.read_text(encoding="utf-8").splitlines()]
    documents = [x for x in lines if x["type"] == "document"]
    # the base documents, then each query set's view tagged with the set's name
    assert [x.get("set") for x in documents] == [None] * 4 + ["q"] * 4
    assert [x for x in lines if x["type"] == "query"][0]["doc"] == "guide/part1.html"
    # the same input gives the same fingerprint; --strict turns the warnings into exit 1
    assert main(["corpus", "info", "--corpus", str(corpus_dir), "--queries", str(query_file),
                 "--json", "--strict"]) == 1
    assert json.loads(capsys.readouterr().out)["fingerprint"] == info["fingerprint"]


def test_bad_input_is_a_message_not_a_traceback(tmp_path, capsys):
    assert main(["corpus", "info", "--corpus", str(tmp_path / "missing")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["run", "--strategies", "no-such-strategy"]) == 2
    assert "unknown strategy 'no-such-strategy'" in capsys.readouterr().err


def test_outside_splitter_is_listed(tmp_path, monkeypatch, capsys):
    (tmp_path / "clisplit.py").write_text(
        "from chunkeval.model import Chunk\n"
        "def halves(doc):\n"
        "    m = len(doc.text) // 2\n"
        "    return [Chunk(doc.id, 0, m, doc.text[:m]), Chunk(doc.id, m, len(doc.text), doc.text[m:])]\n",
        encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert main(["strategies", "--json", "--splitter", "clisplit:halves"]) == 0
        listed = {s["name"]: s for s in json.loads(capsys.readouterr().out)}
        assert listed["halves"]["family"] == "external"
        assert len(listed) >= 18
    finally:
        strategies.unregister("halves")
        sys.modules.pop("clisplit", None)


def test_pyproject_registers_splitters(tmp_path, monkeypatch, capsys):
    (tmp_path / "projsplit.py").write_text(
        "from chunkeval.model import Chunk\n"
        "def whole(doc):\n"
        "    return [Chunk(doc.id, 0, len(doc.text), doc.text)]\n", encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text('[tool.chunkeval]\nsplitters = ["projsplit:whole"]\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    try:
        assert main(["strategies", "--json"]) == 0
        assert "whole" in {s["name"] for s in json.loads(capsys.readouterr().out)}
    finally:
        strategies.unregister("whole")
        sys.modules.pop("projsplit", None)


def test_run_writes_the_three_files_and_compare_reads_them(corpus_dir, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["run", "--corpus", str(corpus_dir), "--queries", "section-titles",
                 "--strategies", "fixed-200,structure-400", "--retrievers", "bm25,lsa",
                 "--jobs", "1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "fixed-200" in printed and "structure-400" in printed
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert len(doc["results"]) == 4
    assert (out / "report.md").stat().st_size and (out / "report.html").stat().st_size
    assert main(["compare", "structure-400", "fixed-200", "--results",
                 str(out / "results.json")]) == 0
    text = capsys.readouterr().out
    assert "Recall@k" in text and "95% CI" in text
    assert main(["compare", "structure-400", "nope", "--results", str(out / "results.json")]) == 2


def test_a_query_set_with_no_questions_is_one_line_naming_it(manuals, tmp_path, capsys):
    """faq-qa reads questions and answers, which the generated manuals have none of."""
    corpus = str(manuals(folder="guide"))
    for args in (["compare", "fixed-400", "structure-400", "--query-set", "faq-qa"],
                 ["run", "--queries", "faq-qa", "--strategies", "fixed-400", "--retrievers",
                  "bm25", "--jobs", "1", "--out", str(tmp_path / "out")]):
        assert main([*args, "--corpus", corpus]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err == ["chunkeval: error: query set 'faq-qa' has no questions on the corpus "
                       "'docs': nothing to score; name another"]
    assert not (tmp_path / "out").exists()


def test_a_second_run_reuses_results_and_cache_clear_empties_them(corpus_dir, tmp_path, capsys):
    args = ["run", "--corpus", str(corpus_dir), "--queries", "section-titles",
            "--strategies", "fixed-200", "--retrievers", "bm25,hybrid", "--jobs", "1"]
    assert main([*args, "--out", str(tmp_path / "one")]) == 0
    assert "results: 2 evaluated, 0 reused" in capsys.readouterr().out
    assert main([*args, "--out", str(tmp_path / "two")]) == 0
    assert "results: 0 evaluated, 2 reused" in capsys.readouterr().out
    doc = json.loads((tmp_path / "two" / "results.json").read_text(encoding="utf-8"))
    assert doc["result_cache"] == {"enabled": True, "reused": 2, "evaluated": 0}
    assert main([*args, "--no-result-cache", "--out", str(tmp_path / "off")]) == 0
    assert "results: 2 evaluated (result cache off)" in capsys.readouterr().out
    assert main(["cache", "info"]) == 0
    info = capsys.readouterr().out
    assert "result cache" in info and ": 2 results" in info and "parsed corpora" in info
    assert main(["cache", "clear"]) == 0
    assert "cleared the result cache" in capsys.readouterr().out
    assert main([*args, "--out", str(tmp_path / "three")]) == 0
    assert "results: 2 evaluated, 0 reused" in capsys.readouterr().out
