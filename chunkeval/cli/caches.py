"""`chunkeval cache info|clear|verify`."""

from __future__ import annotations

import sys

from .. import cache
from ..errors import ConfigError
from ..queries import generate
from .common import session_of


def cache_command(args) -> int:
    """Parsed corpora, downloaded packages and generated questions are kept by `clear`: they
    are costly to make again (the packages need apt, the questions a generator's calls) and
    never give a wrong number."""
    from ..retrieval import embedding

    if args.cache_command == "verify":
        return _verify(args)
    if args.cache_command == "clear":
        status = 0
        for what, where, clear in (("embedding cache", embedding.root(), embedding.clear),
                                   ("result cache", cache.results_root(), cache.clear_results),
                                   ("chunk cache", cache.CHUNKS.root(), cache.CHUNKS.clear)):
            freed, left = clear()
            print(f"cleared the {what} {where} ({freed / 2**20:.1f} MB)")
            if left:
                print(f"chunkeval: error: {where}: {left / 2**20:.1f} MB could not be removed "
                      "(no permission to write there?)", file=sys.stderr)
                status = 2
        return status
    root = cache.cache_root()
    for name, what in (("corpus", "parsed corpora"), ("debs", "downloaded packages")):
        files = [f for f in (root / name).rglob("*") if f.is_file()] \
            if (root / name).is_dir() else []
        size = sum(f.stat().st_size for f in files)
        print(f"{what} {root / name}: {len(files)} files, {size / 2**20:.1f} MB (kept by clear)")
    files, size = embedding.usage()
    print(f"embedding cache {embedding.root()}: {files} shard files, {size / 2**20:.1f} MB "
          f"(limit {embedding.limit_bytes() / 2**20:.0f} MB, ${embedding.LIMIT_VAR})")
    entries, size = cache.results_usage()
    print(f"result cache {cache.results_root()}: {entries} results, {size / 2**20:.1f} MB "
          f"(limit {cache.results_limit_bytes() / 2**20:.0f} MB, ${cache.RESULTS_LIMIT_VAR})")
    entries, size = cache.CHUNKS.usage()
    print(f"chunk cache {cache.CHUNKS.root()}: {entries} strategy x view outputs, "
          f"{size / 2**20:.1f} MB (limit {cache.CHUNKS.limit_bytes() / 2**20:.0f} MB, "
          f"${cache.CHUNKS_LIMIT_VAR})")
    entries, size = generate.usage()
    print(f"question cache {generate.root()}: {entries} generator answers, "
          f"{size / 2**20:.1f} MB (limit {generate.limit_bytes() / 2**20:.0f} MB, "
          f"${generate.LIMIT_VAR}; kept by clear)")
    return 0


def _verify(args) -> int:
    from ..verify import verify

    if args.sample < 0:
        raise ConfigError(f"--sample {args.sample}: expected a count >= 0")
    session = session_of(args) if args.sample else None
    if session is not None:
        print(session.corpus_line, flush=True)
    found = verify(session, args.sample)
    for line in found.mismatches:
        print(f"mismatch: {line}")
    read = ", ".join(f"{n} {store}" for store, n in found.entries.items())
    print(f"read {read} entries" + (f" ({found.outdated} of an older format, never served)"
                                    if found.outdated else ""))
    if args.sample:
        print(f"evaluated {len(found.cases)} case(s) again without any cache: "
              + "; ".join(" | ".join(c) for c in found.cases))
    print(f"{len(found.mismatches)} mismatch(es)")
    return 1 if found.mismatches else 0
