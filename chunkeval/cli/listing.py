"""`chunkeval strategies`: the registered chunking strategies, the project's own among them."""

from __future__ import annotations

import json

from .. import strategies
from .common import session_of


def strategies_command(args) -> int:
    session_of(args, check=False)  # registers the project's splitters
    listed = [s.describe() for s in strategies.all_strategies(all=True)]
    if args.json:
        print(json.dumps(listed, ensure_ascii=False, indent=2))
    else:
        width = max(len(s["name"]) for s in listed)
        default = set(strategies.names())
        for s in listed:
            params = ", ".join(f"{k}={v}" for k, v in s["params"].items())
            needs = strategies.missing(s["name"])
            named = (f"  (needs an optional package: {needs})" if needs else
                     "" if s["name"] in default else "  (runs when named)")
            print(f"{s['name']:<{width}}  {s['family']:<14} {params}{named}")
    return 0
