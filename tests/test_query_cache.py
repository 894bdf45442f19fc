"""The query cache: a query file read before, byte for byte, on a corpus parsed alike, gives
the same query set without its lines being read again; anything else reads them."""

from __future__ import annotations

import gzip
import json

import pytest

from chunkeval.corpus import load_corpus
from chunkeval.queries import build_query_set, jsonl
from chunkeval.store import QUERIES


@pytest.fixture
def corpus(manuals):
    return load_corpus(str(manuals(markdown=True, folder="guide")), use_cache=False)


@pytest.fixture
def questions(corpus, tmp_path):
    doc = corpus.documents[0]
    start = doc.text.index("open the")
    lines = [{"id": "q1", "query": "Which panel handles the network?", "doc": doc.id,
              "answer": doc.text[start:start + 40]},
             {"id": 2, "query": "Where does step one start?", "doc": doc.id,
              "spans": [[start, start + 30], [start + 50, start + 90]]},
             {"id": "q3", "query": "A question on no page", "doc": "nowhere.md", "answer": "x"},
             "not an object"]
    path = tmp_path / "questions.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return path


def same(a, b) -> bool:
    return (a.name, a.queries, a.problems, a.fingerprint) == (b.name, b.queries, b.problems,
                                                              b.fingerprint)


def refuse(*args):
    raise AssertionError("the file's lines were read again")


def test_a_file_read_before_is_served_whole_and_equal(corpus, questions, monkeypatch):
    fresh = build_query_set(corpus, str(questions))
    first = build_query_set(corpus, str(questions), use_cache=True)
    assert same(first, fresh) and len(first.problems) == 2 and len(first.queries) == 2
    monkeypatch.setattr(jsonl, "_read", refuse)
    assert same(build_query_set(corpus, str(questions), use_cache=True), fresh)
    with pytest.raises(AssertionError, match="read again"):  # off: read as before
        build_query_set(corpus, str(questions))


def test_a_changed_file_corpus_or_sample_reads_the_lines(corpus, manuals, questions,
                                                        monkeypatch):
    build_query_set(corpus, str(questions), use_cache=True)
    read = jsonl._read
    calls = []
    monkeypatch.setattr(jsonl, "_read", lambda *a: calls.append(a[2]) or read(*a))
    questions.write_bytes(questions.read_bytes().replace(b"network?", b"network ?"))
    changed = build_query_set(corpus, str(questions), use_cache=True)
    assert changed.queries[0].text == "Which panel handles the network ?"
    build_query_set(corpus, str(questions), use_cache=True, max_queries=1)
    other = load_corpus(str(manuals(markdown=True, folder="guide", parts=5)), use_cache=False)
    assert other.fingerprint != corpus.fingerprint
    build_query_set(other, str(questions), use_cache=True)
    assert len(calls) == 3


@pytest.mark.filterwarnings("ignore::chunkeval.store.CacheNotice")
def test_a_damaged_entry_is_read_again_and_replaced(corpus, questions):
    fresh = build_query_set(corpus, str(questions), use_cache=True)
    (path,) = QUERIES.root().glob("*/*.json.gz")
    head, body = gzip.decompress(path.read_bytes()).split(b"\n", 1)
    path.write_bytes(gzip.compress(head + b"\n" + body.replace(b"q1", b"q9")))
    before = QUERIES.rejected
    assert same(build_query_set(corpus, str(questions), use_cache=True), fresh)
    assert QUERIES.rejected == before + 1
    assert same(build_query_set(corpus, str(questions), use_cache=True), fresh)
