"""What a retriever's vectors and results are kept under: whether it is chunkeval's own, the
cache key one from outside declares and that key's epoch, and its embedding cache's folder.

Without a declared key a retriever from outside is run every session and nothing of it is
kept on disk; with one it is spot-checked every session (spotcheck.py), and a mismatch starts
a new epoch."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

from ..errors import ConfigError
from ..model import digest
from ..store import atomic_write, cannot_write, embeddings_root, safe_name
from . import registry
from .registry import Retriever


def is_own_retriever(name: str, get=None) -> bool:
    """True for chunkeval's built-in retrievers (hybrids of built-ins included). `get`: the
    retriever of a name, when not the registered one (an evaluation's handed-in ones)."""
    known = registry.current()
    r = (get or known.get)(name)
    return (name in known and known.get(name) is r
            and known.is_builtin(name) and all(is_own_retriever(p, get) for p in r.fuses))


def declared_key(r: Retriever) -> str | None:
    """The cache key a retriever from outside declares (`Retriever(cache_key=...)`: a string,
    or a callable giving one, e.g. a hash of the weights files and settings it reads); None
    when it declares none: then it is run every session and nothing of it is kept on disk."""
    key = r.cache_key
    if key is None:
        return None
    if callable(key):
        try:
            key = key()
        except Exception as e:
            raise ConfigError(f"retriever {r.name!r}: cache_key() raised "
                              f"{type(e).__name__}: {e}") from None
    if not isinstance(key, str) or not key:
        raise ConfigError(f"retriever {r.name!r}: cache_key gave {key!r}; it must be a "
                          "non-empty string (or a callable returning one)")
    return key


def retriever_identity(name: str, declared, get=None) -> dict | None:
    """What a retriever's vectors and results are kept under: its description and shape;
    for a built-in, chunkeval's code (in the result key) and its libraries; for one from
    outside, what `declared(retriever)` gives (its cache key and the key's epoch). None
    when a retriever from outside (a hybrid's part included) declares no key: its results
    are not kept across sessions. `get` as for is_own_retriever."""
    r = (get or registry.get)(name)
    parts = [retriever_identity(p, declared, get) for p in r.fuses]
    if any(p is None for p in parts):
        return None
    out = {**r.describe(get), "lexical": r.lexical, "batch_size": r.batch_size, "parts": parts}
    if not r.fuses and not is_own_retriever(name, get):
        kept = declared(r)
        if kept is None:
            return None
        out["declared"] = kept
    return out


def _declared_base(r: Retriever, key: str) -> Path:
    return embeddings_root() / safe_name(r.name) / f"{safe_name(r.version)}-{digest(key)[:16]}"


def epoch(r: Retriever, key: str) -> str:
    """The epoch of a declared key: "0" until a sample check finds that the retriever
    computes something else under the same key, then a new one (`discard`), so that what
    was kept under the old one is never read again."""
    path = _declared_base(r, key).with_suffix(".epoch")
    try:
        found = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return "0"
    return found if found.isalnum() else "0"


def discard(r: Retriever, key: str) -> str:
    """Start a new epoch for a declared key and delete the old epoch's vectors; the new
    epoch (the results under the old one are never looked up again, and age out)."""
    base = _declared_base(r, key)
    old = base.with_name(f"{base.name}-{epoch(r, key)}")
    new = uuid.uuid4().hex[:12]
    try:
        atomic_write(base.with_suffix(".epoch"), new)
    except OSError as e:
        cannot_write(e)
    shutil.rmtree(old, ignore_errors=True)
    return new


def embeddings_folder(r: Retriever, declared: dict | None = None) -> str | None:
    """The embedding cache's folder of a retriever, under embeddings/<name>/: its version,
    and for one from outside, its declared key's digest and epoch; None (keep no vectors on
    disk) for one from outside that declares no key."""
    if is_own_retriever(r.name):
        return safe_name(r.version)
    if declared is None:
        return None
    return f"{_declared_base(r, declared['key']).name}-{declared['epoch']}"
