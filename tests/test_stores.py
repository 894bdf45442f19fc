"""The table of caches that `chunkeval cache info` and `clear` read."""

from __future__ import annotations

from chunkeval import store
from chunkeval.caches import stores


def test_every_cache_is_listed_once_and_clear_keeps_the_costly_ones(tmp_path, monkeypatch):
    monkeypatch.setenv("CHUNKEVAL_CACHE", str(tmp_path))
    listed = stores()
    roots = [s.root() for s in listed]
    assert len(set(roots)) == len(roots) == 7
    assert all(r.parent == store.cache_root() for r in roots)
    kept = {s.what for s in listed if s.clear is None}
    assert kept == {"parsed corpora", "downloaded packages", "question cache"}


def test_a_store_line_counts_what_is_there(tmp_path, monkeypatch):
    monkeypatch.setenv("CHUNKEVAL_CACHE", str(tmp_path))
    (tmp_path / "corpus" / "a").mkdir(parents=True)
    (tmp_path / "corpus" / "a" / "x.json").write_bytes(b"0" * 2**20)
    corpora = stores()[0]
    assert corpora.line() == f"parsed corpora {tmp_path / 'corpus'}: 1 files, 1.0 MB (kept by clear)"
    limited = [s for s in stores() if s.limit]
    assert limited and all("limit " in s.line() and "$CHUNKEVAL_" in s.line() for s in limited)
