"""The caches and the files they live in: atomic writes and a run's outputs written together
(files), the result, chunk and query caches (entries) and what every cache is keyed by (keys).

The face holds what the rest of the package writes and reads with; keys is imported by name.
The room sits low: retrieval/, queries/ and the corpus write through it, so it imports none of
them (the table of every cache and `chunkeval cache verify`, which read them all, are
caches.py and verify.py above)."""

from .entries import CHUNKS, CHUNKS_LIMIT_MB, CHUNKS_LIMIT_VAR, QUERIES, QUERIES_LIMIT_VAR, \
    RESULT_FORMAT, RESULTS, RESULTS_LIMIT_MB, RESULTS_LIMIT_VAR, Store, load_result, result_path, \
    results_root, store_result
from .files import CacheNotice, atomic_write, cache_root, cannot_write, embeddings_root, \
    files_by_age, limit_from_env, notice, outputs_file, prune_oldest, safe_name, write_together

__all__ = ["CHUNKS", "CHUNKS_LIMIT_MB", "CHUNKS_LIMIT_VAR", "QUERIES", "QUERIES_LIMIT_VAR",
           "RESULTS", "RESULTS_LIMIT_MB", "RESULTS_LIMIT_VAR", "RESULT_FORMAT", "Store",
           "load_result", "result_path", "results_root", "store_result", "CacheNotice",
           "atomic_write", "cache_root", "cannot_write", "embeddings_root", "files_by_age",
           "limit_from_env", "notice", "outputs_file", "prune_oldest", "safe_name",
           "write_together"]
