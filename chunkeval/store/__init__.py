"""The caches and the files they live in: atomic writes and a run's outputs written together
(files), the result, chunk and query caches (entries), their keys (keys), `chunkeval cache verify`
(verify) and the table of every cache the commands show (table).

The face holds what the rest of the package writes and reads with; keys, verify and table are
imported by name (they reach into retrieval/ and queries/, which write through this face)."""

from .entries import CHUNKS, QUERIES, RESULT_FORMAT, RESULTS, RESULTS_LIMIT_VAR, Store, \
    load_result, result_path, results_root, store_result
from .files import CacheNotice, atomic_write, cache_root, cannot_write, embeddings_root, \
    files_by_age, limit_from_env, notice, outputs_file, prune_oldest, safe_name, write_together

__all__ = ["CHUNKS", "QUERIES", "RESULTS", "RESULTS_LIMIT_VAR", "RESULT_FORMAT", "Store",
           "load_result", "result_path", "results_root", "store_result", "CacheNotice", "atomic_write",
           "cache_root", "cannot_write", "embeddings_root", "files_by_age", "limit_from_env",
           "notice", "outputs_file", "prune_oldest", "safe_name", "write_together"]
