"""`chunkeval cache verify`: do the caches hold what their keys say?

Two passes, each reporting every mismatch as one line:

1. Every stored chunk and result entry is read whole: its bytes match the checksum of its
   header line (a hand edit, a file cut short) and the key in that header is its file's name.
   Every embedding shard reads as digests and finite vectors of one width.
2. A deterministic sample of the configured cases (strategy x retriever x query set, evenly
   spread over their sorted list, the query sets that gate first) is evaluated twice: through
   the caches, and with no cache at all. Their numbers and chunks must be equal, and the
   vectors the embedding cache holds for the case's texts must be those the retriever
   computes now.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .store import CHUNKS, QUERIES, RESULTS
from .store.keys import spread

if TYPE_CHECKING:
    from .session import Session

# Vectors of one text computed twice may differ in their last bits (threads, batching).
VECTOR_TOLERANCE = 1e-4
TEXTS_PER_CASE = 16


@dataclass
class Verification:
    entries: dict[str, int] = field(default_factory=dict)  # store -> entries read
    outdated: int = 0  # entries of an older format: never served, not wrong
    cases: list[tuple[str, str, str]] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)


def stored_entries(out: Verification) -> None:
    """Pass 1: every entry of the chunk, result and query caches, and every embedding
    shard."""
    for store in (RESULTS, CHUNKS, QUERIES):
        found = store.entries()
        out.entries[store.name] = len(found)
        for _, path, _ in sorted(found, key=lambda e: str(e[1])):
            problem = store.check(path)
            if problem == "outdated":
                out.outdated += 1
            elif problem is not None:
                out.mismatches.append(f"{store.name} cache {path}: {problem}")
    import numpy as np

    from .retrieval import embedding
    shards = sorted(embedding.root().rglob("*.npz")) if embedding.root().is_dir() else []
    out.entries["embedding"] = len(shards)
    widths: dict = {}
    for path in shards:
        try:
            with np.load(path) as z:
                keys, vectors = z["keys"], z["vectors"]
        except Exception as e:  # any way a shard fails to read is the finding
            out.mismatches.append(f"embedding cache {path}: unreadable ({type(e).__name__})")
            continue
        width = widths.setdefault(path.parent, vectors.shape[-1] if vectors.ndim == 2 else -1)
        if not embedding.shard_holds(keys, vectors, width):
            out.mismatches.append(f"embedding cache {path}: not digests and finite vectors "
                                  f"of one width ({keys.shape}, {vectors.shape})")


def sample_cases(session: Session, n: int) -> list[tuple[str, str, str]]:
    """`n` of the configured (strategy, retriever, query set) cases: from the sets that gate
    first (a stale entry there is one a gate could pass on), then from the others; shared
    out over the sets in turn, and evenly spread within each."""
    specs = session.query_specs()
    gating = [spec for spec in specs if session.power(spec).gates]
    picked: list[tuple[str, str, str]] = []
    for group in (gating, [spec for spec in specs if spec not in gating]):
        cases = {spec: sorted((s, r, spec) for s in session.strategies
                              for r in session.plan[s]) for spec in group}
        left = n - len(picked)
        for i, spec in enumerate(group):
            picked += spread(cases[spec], left // len(group) + (i < left % len(group)))
    return picked


def recomputed(session: Session, n: int, out: Verification) -> None:
    """Pass 2: a sample of cases through the caches and with none; every difference."""
    from .evaluate import Evaluation

    warm = session.evaluation
    if not warm.result_cache:
        out.mismatches.append("the caches are off in this configuration: nothing to compare")
        return
    cold = Evaluation(warm.corpus, warm.settings, warm.query_specs, result_cache=False,
                      embedding_cache=False)
    out.cases = sample_cases(session, n)
    for strategy, retriever, spec in out.cases:
        case = f"{strategy} | {retriever} | {spec}"
        cached, fresh = warm.result(strategy, retriever, spec), cold.result(strategy, retriever,
                                                                            spec)
        differ = _differences(cached.to_json(), fresh.to_json())
        if differ:
            out.mismatches.append(f"{case}: the cached result differs: {', '.join(differ)}")
        chunks, made = warm.chunked(strategy, spec), cold.chunked(strategy, spec)
        if chunks.stats.hash != made.stats.hash:
            out.mismatches.append(f"{case}: the cached chunks differ from the strategy's")
        _vectors(warm, retriever, [c.indexed for c in made.searched[:TEXTS_PER_CASE]], case,
                 out)


def _differences(cached: dict, fresh: dict) -> list[str]:
    """The fields of two result entries that differ, but for timings and cache counters."""
    skip = {"seconds", "embeddings", "reused"}
    return [k for k in sorted(set(cached) | set(fresh)) if k not in skip
            and json.dumps(cached.get(k), sort_keys=True) != json.dumps(fresh.get(k),
                                                                         sort_keys=True)]


def _vectors(warm, name: str, texts: list[str], case: str, out: Verification) -> None:
    import numpy as np

    from . import retrieval
    for part in (name, *retrieval.get(name).fuses):
        r = retrieval.get(part)
        store = warm.embedding_cache(r) if r.embed is not None else None
        if store is None or not store.on_disk:
            continue
        kept = list(store.stored(texts).items())
        if not kept:
            continue
        now = np.asarray(r.embed([t for t, _ in kept]), dtype=np.float32)
        for (t, old), new in zip(kept, now):
            if old.shape != new.shape or np.abs(old - new).max() > VECTOR_TOLERANCE:
                out.mismatches.append(f"{case}: the embedding cache of {part!r} holds other "
                                      f"vectors than it computes for {t[:40]!r}")
                break


def verify(session: Session, sample: int) -> Verification:
    out = Verification()
    stored_entries(out)
    if sample > 0:
        recomputed(session, sample, out)
    return out
