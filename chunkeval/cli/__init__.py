"""The command line: fetch and inspect the corpus, list strategies, run the evaluation, compare.

The parser (parser.py) takes every option that is a setting from config.SETTINGS; each
command is a module here (corpus, queries, listing, run with merge and export, compare, sweep,
caches, calibrate, init; common.py what they share) whose handler works on one
session.Session, as the plugin does, and prints what the domain code below returns. Nothing
in the package imports this one; `init`'s files are in templates/.

Exit codes: 0 done; 1 done, but a strategy could not be scored or, under --strict, the input
had problems; 2 bad input or usage; 130 interrupted. Anything else that escapes is a bug and shows its traceback.
"""

from __future__ import annotations

import sys
import warnings

from .. import store
from ..errors import ChunkevalError
from ..registry import Components
from .parser import build_parser

__all__ = ["build_parser", "main"]


def main(argv: list[str] | None = None) -> int:
    with warnings.catch_warnings():  # the notices of chunkeval itself, as one line each
        shown = warnings.showwarning

        def show(message, category, *rest, **kw):
            if issubclass(category, store.CacheNotice):
                print(f"chunkeval: notice: {message}", file=sys.stderr)
            else:
                shown(message, category, *rest, **kw)
        warnings.showwarning = show
        return _main(argv)


def _handler(command: str):
    # The commands' modules (and what they import) load once the command line is parsed.
    from . import caches, calibrate, compare, corpus, init, listing, queries, run, sweep

    return {"corpus": corpus.corpus_command, "queries": queries.queries_command,
            "strategies": listing.strategies_command, "run": run.run_command,
            "compare": compare.compare_command, "cache": caches.cache_command,
            "calibrate": calibrate.calibrate_command, "merge": run.merge_command,
            "export": run.export_command, "sweep": sweep.sweep_command,
            "init": init.init_command}[command]


def _main(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    try:
        # the command's own registries: what it loads is gone when it returns
        with Components().used():
            return _handler(args.command)(args)
    except OSError as e:
        where = e.filename if e.filename is not None else "chunkeval"
        print(f"chunkeval: error: {where}: {e.strerror or e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("chunkeval: interrupted", file=sys.stderr)
        return 130
    except ChunkevalError as e:
        print(f"chunkeval: error: {e}", file=sys.stderr)
        return 2

