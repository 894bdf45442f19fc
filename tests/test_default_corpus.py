"""The real default corpus (four Debian Japanese manuals): its size and shape.

Needs apt-get and Debian's package lists the first time (then the cache answers).
"""

from collections import Counter

import pytest

from chunkeval.corpus import load_corpus
from chunkeval.corpus.readers import READERS
from chunkeval.corpus.debian import DEBIAN_JA

pytestmark = pytest.mark.corpus


@pytest.fixture(scope="module")
def debian_ja():
    return load_corpus("debian-ja")


def test_size(debian_ja):
    assert 45 <= len(debian_ja) <= 52
    assert 600_000 <= debian_ja.chars <= 800_000
    assert debian_ja.problems == ()
    packages = Counter(d.id.split("/")[0] for d in debian_ja.documents)
    assert set(packages) == {pkg.name for pkg in DEBIAN_JA}
    assert packages["debian-faq-ja"] == 16


def test_block_counts(debian_ja):
    kinds = Counter(b.kind for d in debian_ja.documents for b in d.blocks)
    assert kinds["pre"] >= 450
    # Data tables only: DocBook also draws its ~330 tip/note/warning boxes with <table>,
    # and those are read as prose.
    assert kinds["table"] >= 170
    assert kinds["heading1"] == len(debian_ja)
    assert kinds["heading2"] >= 300 and kinds["heading3"] >= 400
    assert kinds["item"] >= 1500 and kinds["paragraph"] >= 3000 and kinds["dl"] >= 10


def test_every_document_is_titled_and_structured(debian_ja):
    for doc in debian_ja.documents:
        assert doc.title and doc.blocks[0].kind == "heading1", doc.id
        assert "index" not in doc.id and "search" not in doc.id


def test_boilerplate_is_gone(debian_ja):
    for doc in debian_ja.documents:
        for needle in ("¶", "ナビゲーション", "目次", "次へ", "前へ"):
            assert not any(doc.block_text(b) == needle for b in doc.blocks), (doc.id, needle)
        assert "¶" not in doc.text


def test_tables_have_header_rows(debian_ja):
    tables = [(d, b) for d in debian_ja.documents for b in d.blocks if b.kind == "table"]
    assert sum(b.header_rows > 0 for _, b in tables) >= 0.9 * len(tables)
    doc = debian_ja["debian-reference-ja/ch02.ja.html"]
    first = next(b for b in doc.blocks if b.kind == "table")
    assert doc.text[slice(*first.rows[0])] == "パッケージ | ポプコン | サイズ | 説明"


def test_second_load_is_cached(debian_ja, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("parsed again")
    monkeypatch.setattr(READERS.get("html"), "parse", refuse)
    again = load_corpus("debian-ja")
    assert again.fingerprint == debian_ja.fingerprint
