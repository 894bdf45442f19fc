"""`chunkeval cache info|clear|verify`."""

from __future__ import annotations

import sys

from ..errors import ConfigError
from .common import session_of


def cache_command(args) -> int:
    from ..caches import stores

    if args.cache_command == "verify":
        return _verify(args)
    if args.cache_command == "info":
        for store in stores():
            print(store.line())
        return 0
    status = 0
    for store in (s for s in stores() if s.clear):
        where = store.root()
        freed, left = store.clear()
        print(f"cleared the {store.what} {where} ({freed / 2**20:.1f} MB)")
        if left:
            print(f"chunkeval: error: {where}: {left / 2**20:.1f} MB could not be removed "
                  "(no permission to write there?)", file=sys.stderr)
            status = 2
    return status


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
