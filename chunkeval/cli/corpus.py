"""`chunkeval corpus fetch|info`: download a built-in corpus, and say what the parser and the
query builders saw."""

from __future__ import annotations

import json
import sys

from ..corpus import fetch_builtin
from ..corpus.debian import apt_update
from ..errors import CorpusError
from ..inventory import CorpusInfo, dump
from ..store import atomic_write
from .common import report_problems, session_of


def corpus_command(args) -> int:
    if args.corpus_command == "fetch":
        try:
            paths = fetch_builtin(args.corpus, progress=None)
        except CorpusError as e:
            if not args.apt_update:
                raise
            # A fresh machine's package lists may be empty or stale: refresh them once.
            print(f"chunkeval: {e}\nchunkeval: running `apt-get update` and trying again",
                  file=sys.stderr)
            apt_update()
            paths = fetch_builtin(args.corpus, progress=None)
        for p in paths:
            print(p)
        return 0
    return _info(args)


def _info(args) -> int:
    session = session_of(args, check=False)
    info = CorpusInfo.of(session)
    if args.dump:
        atomic_write(args.dump, dump(session))
    if args.json:
        print(json.dumps(info.to_json(), ensure_ascii=False, indent=2))
    else:
        print(info.to_text())
        if args.dump:
            print(f"dump        {args.dump}")
    return report_problems(info.problems, session.config.strict)
