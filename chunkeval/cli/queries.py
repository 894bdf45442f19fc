"""`chunkeval queries import|generate|info`: make a JSONL query set, or say what one holds."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .. import config
from ..corpus import load_corpus
from ..errors import ConfigError
from ..inventory import QuerySetInfo
from ..outside import load
from ..queries import generate, imports
from ..store import atomic_write
from .common import report_problems, session_of


def queries_command(args) -> int:
    return {"import": _queries_import, "generate": _queries_generate,
            "info": _queries_info}[args.queries_command](args)


def _queries_info(args) -> int:
    session = session_of(args, check=False)
    specs = args.sets or session.query_specs()
    info = {i.name: i for i in (QuerySetInfo.of(session, spec) for spec in specs)}
    if args.json:
        print(json.dumps({name: i.to_json() for name, i in info.items()}, ensure_ascii=False,
                         indent=2))
    else:
        print(session.corpus_line)
        for i in info.values():
            print(i.to_text())
    return report_problems([p for spec in specs for p in session.query_set(spec).problems],
                            session.config.strict)


def _queries_corpus(args):
    """The settings (--corpus over [tool.chunkeval]) and the corpus they name."""
    out = Path(args.out)
    if out.is_dir():
        raise ConfigError(f"--out {out}: is a directory; name the JSONL file to write")
    cfg = config.load(command_line=config.given(args))
    return cfg, lambda: load_corpus(cfg.corpus, use_cache=cfg.cache,
                                    max_document_mb=cfg.max_document_mb)


def _write_queries(out: str, lines: list[dict], meta: dict, empty_status: int) -> int:
    if not lines:
        print(f"chunkeval: error: no question to write; {out} not written", file=sys.stderr)
        return empty_status
    atomic_write(out, imports.jsonl_text(lines, meta))
    print(f"wrote {len(lines)} questions to {out}")
    return 0


def _queries_import(args) -> int:
    cfg, corpus = _queries_corpus(args)
    out = Path(args.out).resolve()
    for f in args.files:
        inputs = Path(f).rglob("*") if Path(f).is_dir() else [Path(f)]
        if any(p.resolve() == out for p in inputs):
            raise ConfigError(f"--out {args.out}: is an input file; name another file to write")
    # The files first: a bad one fails before the corpus is loaded (or fetched).
    asked, skipped, notes = imports.read_questions(args.format, args.files)
    corpus = corpus()
    print(f"corpus {corpus.name} ({len(corpus)} documents)")
    # A folder's files let file offsets pick among repeated copies of an excerpt.
    raw = imports.raw_files(cfg.corpus) if Path(cfg.corpus).is_dir() else None
    done = imports.locate(corpus, asked, skipped, raw, notes)
    for line in done.skipped + done.unfound:
        print(f"chunkeval: warning: {line}", file=sys.stderr)
    if args.verbose:
        for line in done.ambiguous:
            print(f"chunkeval: ambiguous: {line}", file=sys.stderr)
    print(done.summary())
    if done.skipped and cfg.strict:
        print(f"chunkeval: error: {len(done.skipped)} row(s) skipped and --strict; "
              f"{args.out} not written", file=sys.stderr)
        return 1
    meta = {"imported": args.format, "files": [Path(f).name for f in args.files],
            "corpus": corpus.name, "corpus_fingerprint": corpus.fingerprint}
    # Nothing found at all: the file, or the corpus, is not what was meant.
    return _write_queries(args.out, done.lines, meta, 2)


def _queries_generate(args) -> int:
    cfg, corpus = _queries_corpus(args)
    if args.sections < 1:
        raise ConfigError(f"--sections {args.sections}: expected at least 1")
    generator = load(args.generator, "question generator", cfg.root)
    if not callable(generator):
        raise ConfigError(f"question generator {args.generator!r} is not callable")
    corpus = corpus()
    print(f"corpus {corpus.name} ({len(corpus)} documents)")
    done = generate.generate(corpus, generator, args.generator, sections=args.sections,
                             seed=args.seed)
    for line in done.failed:
        print(f"chunkeval: warning: the generator failed on {line}", file=sys.stderr)
    for line in done.cut:
        print(f"chunkeval: warning: the generator's answer was cut on {line}", file=sys.stderr)
    if args.verbose:
        for line in done.ambiguous:
            print(f"chunkeval: ambiguous: {line}", file=sys.stderr)
    print(done.summary())
    # The run itself went through; the generator gave nothing usable.
    return _write_queries(args.out, done.lines, done.meta, 1)
