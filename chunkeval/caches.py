"""Every cache chunkeval keeps, as one table: where it lives, what it holds, its size limit and
whether `chunkeval cache clear` empties it.

Parsed corpora, downloaded packages and generated questions are kept by `clear`: they are
costly to make again (the packages need apt, the questions a generator's calls) and never give
a wrong number."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .queries import generate
from .retrieval import embedding
from .store import (CHUNKS, CHUNKS_LIMIT_VAR, QUERIES, QUERIES_LIMIT_VAR, RESULTS,
                    RESULTS_LIMIT_VAR, cache_root)

MB = 2**20


@dataclass(frozen=True)
class Store:
    what: str
    root: Callable[[], Path]
    usage: Callable[[], tuple[int, int]]  # (entries, bytes)
    unit: str  # what an entry is
    limit: tuple[Callable[[], int], str] | None = None  # (bytes, the variable that sets it)
    clear: Callable[[], tuple[int, int]] | None = None  # (bytes freed, bytes left); None: kept

    def line(self) -> str:
        entries, size = self.usage()
        notes = [f"limit {self.limit[0]() / MB:.0f} MB, ${self.limit[1]}"] if self.limit else []
        if self.clear is None:
            notes.append("kept by clear")
        return (f"{self.what} {self.root()}: {entries} {self.unit}, {size / MB:.1f} MB "
                f"({'; '.join(notes)})")


def _files(name: str) -> Callable[[], tuple[int, int]]:
    def usage() -> tuple[int, int]:
        folder = cache_root() / name
        files = [f for f in folder.rglob("*") if f.is_file()] if folder.is_dir() else []
        return len(files), sum(f.stat().st_size for f in files)
    return usage


def stores() -> tuple[Store, ...]:
    """Built when asked, so that what a test (or a setting) changed in the modules counts."""
    return (
        Store("parsed corpora", lambda: cache_root() / "corpus", _files("corpus"), "files"),
        Store("downloaded packages", lambda: cache_root() / "debs", _files("debs"), "files"),
        Store("embedding cache", embedding.root, embedding.usage, "shard files",
              (embedding.limit_bytes, embedding.LIMIT_VAR), embedding.clear),
        Store("result cache", RESULTS.root, RESULTS.usage, "results",
              (RESULTS.limit_bytes, RESULTS_LIMIT_VAR), RESULTS.clear),
        Store("chunk cache", CHUNKS.root, CHUNKS.usage, "strategy x view outputs",
              (CHUNKS.limit_bytes, CHUNKS_LIMIT_VAR), CHUNKS.clear),
        Store("query cache", QUERIES.root, QUERIES.usage, "query files as read",
              (QUERIES.limit_bytes, QUERIES_LIMIT_VAR), QUERIES.clear),
        Store("question cache", generate.root, generate.usage, "generator answers",
              (generate.limit_bytes, generate.LIMIT_VAR)),
    )
