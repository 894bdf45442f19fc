"""Embedding retrievers: cosine ranking of vectors, and the cache that keeps them.

The embedding cache: vectors keyed by the retriever's identity (identity.embeddings_folder:
its name and version, and for a retriever from outside chunkeval the cache key its team
declares, with the key's epoch) and the sha256 of the text. A retriever from outside that
declares no key keeps its vectors in memory only.

Under cache_root()/embeddings/<name>/<folder>/, each lookup's newly embedded texts (up to
1,024) make one shard file (`<random>.npz`: the 32-byte text digests and the float32 vectors), written
atomically. Shards are only ever added or deleted whole, so runs and forked workers share
the directory without locks; a shard that cannot be read is ignored (its texts are embedded
again). Every strategy and run shares the cache: a second run embeds nothing it has seen, a
changed strategy only its new chunk texts.

The whole cache is kept under a size limit ($CHUNKEVAL_EMBEDDINGS_MB, default 2048 MB):
after a write, the least recently written shards go first. `chunkeval cache clear` empties
it.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import uuid
import zipfile
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..errors import ContractError
from ..store import (atomic_write, cannot_write, embeddings_root, files_by_age, limit_from_env,
                     prune_oldest)
from ..store import safe_name as _safe
from .ranking import Batched

LIMIT_VAR = "CHUNKEVAL_EMBEDDINGS_MB"
DEFAULT_LIMIT_MB = 2048
SHARD_TEXTS = 1024  # new vectors per shard file, at most
WIDTH_FILE = "width"


root = embeddings_root


def limit_bytes() -> int:
    return limit_from_env(LIMIT_VAR, DEFAULT_LIMIT_MB)


def digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).digest()


class EmbeddingCache:
    """One retriever's vectors. `hits` and `misses` count texts looked up since creation.

    `folder` is what identity.embeddings_folder gives: another declared key, or a new
    epoch of one, is another folder. A shard that cannot be read whole, or holds vectors of
    another width or that are not finite, is a miss: its texts are embedded again and the
    shard is removed. `on_disk=False` keeps the
    vectors in this process only (a model no key on disk can name)."""

    def __init__(self, name: str, folder: str, directory: Path | None = None, *,
                 on_disk: bool = True):
        self.dir = directory or root() / _safe(name) / _safe(folder)
        self.on_disk = on_disk
        self.name = name
        self.hits = self.misses = 0
        self._width: int | None = None
        self._rows: dict[bytes, np.ndarray] | None = None
        self._seen_shards: set[str] = set()

    def _load(self) -> dict[bytes, np.ndarray]:
        """Read shards not read yet (another process may have added some)."""
        if self._rows is None:
            self._rows = {}
        if not self.on_disk:
            return self._rows
        for path in sorted(self.dir.glob("*.npz")) if self.dir.is_dir() else []:
            if path.name in self._seen_shards:
                continue
            self._seen_shards.add(path.name)
            try:
                with np.load(path) as z:
                    keys, vectors = z["keys"], z["vectors"]
            except OSError:
                continue  # pruned meanwhile, or not readable now: not evidence of damage
            except (ValueError, KeyError, EOFError, zipfile.BadZipFile):
                _discard(path)  # damaged: its texts are embedded again
                continue
            width = self._width if self._width is not None else self._recorded_width()
            if width is None and vectors.ndim == 2:
                width = vectors.shape[1]
            if not shard_holds(keys, vectors, width):
                _discard(path)
                continue
            self._width = width
            for k, v in zip(keys, vectors):
                self._rows[k.tobytes()] = v
        return self._rows

    def embed(self, texts: Sequence[str], fn: Callable[[list[str]], np.ndarray],
              batch_size: int = 64) -> np.ndarray:
        """[len(texts), d] float32 vectors: from the cache, else from `fn` in batches (and
        then stored)."""
        texts = list(texts)
        keys = [digest(t) for t in texts]
        rows = self._load()
        missing: dict[bytes, str] = {}
        for k, t in zip(keys, texts):
            if k not in rows and k not in missing:
                missing[k] = t
        self.misses += len(missing)
        self.hits += len(texts) - len(missing)
        todo = list(missing.items())
        new: dict[bytes, np.ndarray] = {}
        for lo in range(0, len(todo), batch_size):
            part = todo[lo:lo + batch_size]
            vectors = _check(fn([t for _, t in part]), len(part),
                             f"the embedding function of {self.name!r}")
            if self._width is None:  # no shard read: the width is the function's
                self._width = vectors.shape[1]
                if self.on_disk and self._recorded_width() != self._width:
                    try:
                        atomic_write(self.dir / WIDTH_FILE, str(self._width))
                    except OSError as e:
                        cannot_write(e)  # a read-only cache only costs time
            elif vectors.shape[1] != self._width:
                raise ContractError(f"the embedding function of {self.name!r} returned vectors "
                                    f"of {vectors.shape[1]} dimensions, its cached ones have "
                                    f"{self._width}")
            new.update((k, v) for (k, _), v in zip(part, vectors))
            if len(new) >= SHARD_TEXTS:  # an interrupted run keeps what it embedded
                self._store(new)
                rows.update(new)
                new = {}
        if new:
            self._store(new)
            rows.update(new)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([rows[k] for k in keys]).astype(np.float32, copy=False)

    def stored(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """The vectors this cache holds for those of `texts` it has, by text."""
        rows = self._load()
        return {t: rows[k] for t in texts if (k := digest(t)) in rows}

    def _recorded_width(self) -> int | None:
        """The width of this retriever's vectors, written with its first shard: a shard of
        another width is damage, not data."""
        try:
            return int((self.dir / WIDTH_FILE).read_text(encoding="ascii"))
        except (OSError, ValueError):
            return None

    def _store(self, new: dict[bytes, np.ndarray]) -> None:
        if not self.on_disk:
            return
        buf = io.BytesIO()
        keys = np.frombuffer(b"".join(new), dtype=np.uint8).reshape(len(new), 32)
        np.savez(buf, keys=keys, vectors=np.stack(list(new.values())).astype(np.float32))
        name = f"{uuid.uuid4().hex}.npz"
        self._seen_shards.add(name)
        try:
            atomic_write(self.dir / name, buf.getvalue())
        except OSError as e:
            cannot_write(e)  # a read-only cache only costs time
            return
        prune(limit_bytes())


def shard_holds(keys: np.ndarray, vectors: np.ndarray, width: int | None) -> bool:
    """Whether a shard's arrays are what one is: 32-byte digests, and as many finite vectors
    of `width` dimensions."""
    return (keys.ndim == 2 and keys.shape[1] == 32 and vectors.ndim == 2
            and len(keys) == len(vectors) and vectors.shape[1] == width
            and bool(np.isfinite(vectors).all()))


def _check(vectors, n: int, name: str = "an embedding function") -> np.ndarray:
    v = np.asarray(vectors, dtype=np.float32)
    if v.ndim != 2 or len(v) != n:
        raise ContractError(f"{name} returned shape {v.shape} for {n} texts; "
                            f"expected [{n}, d]")
    if not np.isfinite(v).all():
        raise ContractError(f"{name} returned NaN or infinite values")
    return v


def _discard(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass  # another process did, or the cache is read-only: it is skipped either way


class EmbeddingIndex(Batched):
    """Cosine ranking of L2-normalised vectors (rounded by top_k, so that the last bits of a
    batched product do not decide an order)."""

    def __init__(self, texts: Sequence[str], embed: Callable[[list[str]], np.ndarray]):
        self.embed = embed
        self.n = len(texts)
        self.vectors = _normalised(embed(list(texts)))

    def __len__(self) -> int:
        return self.n

    def _score_batch(self, queries: Sequence[str]) -> np.ndarray:
        q = _normalised(self.embed(list(queries)))
        if q.shape[1] != self.vectors.shape[1]:
            raise ContractError(f"query vectors have {q.shape[1]} dimensions, chunk vectors "
                             f"{self.vectors.shape[1]}")
        return q @ self.vectors.T


def _normalised(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return v / np.where(norms > 0, norms, 1)


def usage() -> tuple[int, int]:
    """(shard files, bytes) in the whole embedding cache."""
    files = list(root().rglob("*.npz")) if root().is_dir() else []
    return len(files), sum(_size(f) for f in files)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def prune(limit: int) -> int:
    """Delete the oldest shards until the cache holds at most `limit` bytes; the count
    deleted."""
    return prune_oldest(files_by_age(root(), "**/*.npz"), limit)


def clear() -> tuple[int, int]:
    """Delete the whole embedding cache: (bytes freed, bytes that could not be removed)."""
    _, size = usage()
    shutil.rmtree(root(), ignore_errors=True)
    left = usage()[1]
    return size - left, left
