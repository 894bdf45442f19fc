"""The result, chunk and query caches: entries kept by key as gzip'd JSON, bounded in size,
least recently used dropped first."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import zlib
from pathlib import Path

from .files import (atomic_write, cache_root, cannot_write, files_by_age, limit_from_env, notice,
                    prune_oldest)


# -- the result cache ------------------------------------------------------------------------
# One evaluated result entry a file, results/<2 hex>/<key>.json.gz, keyed by everything its
# numbers depend on (identity.result_key). Files are only ever replaced whole
# (atomic_write) or deleted, so runs, forked workers and xdist workers share the directory
# without locks: a reader that finds a file gone, cut short or damaged counts a miss, and the
# evaluation it then does writes the file again.
RESULTS_LIMIT_VAR = "CHUNKEVAL_RESULTS_MB"
RESULTS_LIMIT_MB = 1024
RESULT_FORMAT = 2  # raise when the stored entry's layout changes: old files then miss
CHUNKS_LIMIT_VAR = "CHUNKEVAL_CHUNKS_MB"
CHUNKS_LIMIT_MB = 512
CHUNKS_FORMAT = 2
QUERIES_LIMIT_VAR = "CHUNKEVAL_QUERIES_MB"
QUERIES_LIMIT_MB = 64
QUERIES_FORMAT = 1
# After an eviction the cache holds at most this share of its limit, so that the next few
# writes do not each scan the whole cache again.
PRUNE_TO = 0.9


class Store:
    """Entries kept by key as gzip'd JSON under cache_root()/`name`, bounded by $`limit_var`
    MB (least recently used dropped first); written atomically, so concurrent runs each
    write whole files and a reader sees one whole entry or none.

    An entry proves itself: its file holds a header line (the format, the key it was stored
    under, what it describes and the sha256 of the entry's bytes) and then the entry. A file
    whose header does not match the key and what the caller expects it to describe, or whose
    bytes do not match their checksum, is a miss, counted in `rejected` and said once."""

    def __init__(self, name: str, fmt: int, limit_var: str, limit_mb: float):
        self.name, self.format = name, fmt
        self.limit_var, self.limit_mb = limit_var, limit_mb
        self._written: dict[str, int] = {}  # bytes this process believes the store holds
        self.rejected = 0  # entries found but not what they claim to be, in this process

    def root(self) -> Path:
        return cache_root() / self.name

    def limit_bytes(self) -> int:
        return limit_from_env(self.limit_var, self.limit_mb)

    def path(self, key: str) -> Path:
        return self.root() / key[:2] / f"{key}.json.gz"

    def read(self, path: Path) -> tuple[dict, dict] | None:
        """(header, entry) of a stored file, or None: absent, unreadable, or its bytes not
        those its header's checksum names (then counted as rejected)."""
        found = self._parse(path)
        if isinstance(found, tuple):
            return found
        if found not in ("gone", "outdated"):
            self.reject(path)
        return None

    def check(self, path: Path) -> str | None:
        """What is wrong with a stored file: None, "outdated" (an older format, never
        served) or the problem, said for `chunkeval cache verify`."""
        found = self._parse(path)
        if isinstance(found, str):
            return None if found == "gone" else found
        if found[0].get("key") != path.name.split(".")[0]:
            return f"stored under key {str(found[0].get('key'))[:16]}…, not its file's name"
        return None

    def _parse(self, path: Path) -> tuple[dict, dict] | str:
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except OSError:
            return "gone"
        try:
            raw = gzip.decompress(raw)
        except (EOFError, zlib.error, OSError):
            return "not a whole gzip file"
        head, sep, body = raw.partition(b"\n")
        try:
            header = json.loads(head.decode("utf-8"))
        except ValueError:
            header = None
        if isinstance(header, dict) and header.get("format") != self.format:
            return "outdated"  # an older chunkeval's entry (one JSON object, no header line)
        if not isinstance(header, dict) or not sep:
            return "no header line"
        if header.get("checksum") != hashlib.sha256(body).hexdigest():
            return "its bytes do not match their checksum (edited or damaged)"
        try:
            entry = json.loads(body.decode("utf-8"))
        except ValueError:
            entry = None
        return (header, entry) if isinstance(entry, dict) else "not a JSON object"

    def load(self, key: str, describes: dict | None = None) -> dict | None:
        """The entry stored under `key` when it is for this key and describes what the caller
        expects (`describes`: the hashes of the chunk output, query set... it was made from),
        else None. A hit marks the file as just used (its mtime), which keeps it from eviction
        longest."""
        path = self.path(key)
        found = self.read(path)
        if found is None:
            return None
        header, entry = found
        if header.get("key") != key or header.get("describes") != (describes or {}):
            self.reject(path)
            return None
        try:
            os.utime(path)
        except OSError:
            pass  # evicted meanwhile, or a read-only cache: the entry is still good
        return entry

    def reject(self, path: Path) -> None:
        """Count an entry found under its key that is not what the key says (said once): its
        file, or its content as the caller checked it."""
        self.rejected += 1
        if self.rejected == 1:
            notice(f"{self.name} cache: an entry that is not what its key says ({path}) was "
                   "ignored and is computed again")

    def store(self, key: str, entry: dict, describes: dict | None = None) -> None:
        """Store an entry (never failing the caller: a cache that cannot be written only
        costs time, said once). gzip without a timestamp, so one entry gives the same bytes
        anywhere."""
        body = json.dumps(entry, ensure_ascii=False).encode("utf-8")
        header = json.dumps({"format": self.format, "key": key, "describes": describes or {},
                             "checksum": hashlib.sha256(body).hexdigest()})
        # Level 1: the entries are a little larger, and far cheaper to write
        # (bench/results/result-cache.md).
        raw = gzip.compress(header.encode("utf-8") + b"\n" + body, compresslevel=1, mtime=0)
        try:
            atomic_write(self.path(key), raw)
        except OSError as e:
            cannot_write(e)
            return
        # Each process scans the store once, then counts what it adds, and prunes when its
        # count passes the limit: a scan per write would cost more than what it saves.
        root = str(self.root())
        if root not in self._written:
            self._written[root] = self.usage()[1]
        else:
            self._written[root] += len(raw)
        limit = self.limit_bytes()
        if self._written[root] > limit:
            self.prune(int(limit * PRUNE_TO))
            self._written[root] = self.usage()[1]

    def entries(self) -> list[tuple[float, Path, int]]:
        return files_by_age(self.root(), "*/*.json.gz")

    def usage(self) -> tuple[int, int]:
        """(entries, bytes)."""
        entries = self.entries()
        return len(entries), sum(size for _, _, size in entries)

    def prune(self, limit: int) -> int:
        """Delete the least recently used entries until at most `limit` bytes are kept."""
        return prune_oldest(self.entries(), limit)

    def clear(self) -> tuple[int, int]:
        """Delete the whole store: (bytes freed, bytes that could not be removed)."""
        _, size = self.usage()
        shutil.rmtree(self.root(), ignore_errors=True)
        self._written.pop(str(self.root()), None)
        left = self.usage()[1]
        return size - left, left


RESULTS = Store("results", RESULT_FORMAT, RESULTS_LIMIT_VAR, RESULTS_LIMIT_MB)
# A strategy's chunks of one corpus view, by the strategy's code identity (evaluate.py)
CHUNKS = Store("chunks", CHUNKS_FORMAT, CHUNKS_LIMIT_VAR, CHUNKS_LIMIT_MB)

# A query file as read on one parsed corpus: its questions and the problems its lines and its
# leak check found (queries/jsonl.py), by the file's bytes and the corpus's fingerprint
QUERIES = Store("queries", QUERIES_FORMAT, QUERIES_LIMIT_VAR, QUERIES_LIMIT_MB)

# The result cache as the rest of chunkeval and its tests name it.
results_root, results_limit_bytes, result_path = RESULTS.root, RESULTS.limit_bytes, RESULTS.path
load_result, store_result, results_usage = RESULTS.load, RESULTS.store, RESULTS.usage
prune_results, clear_results = RESULTS.prune, RESULTS.clear
