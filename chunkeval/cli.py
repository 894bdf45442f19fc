"""The command line: fetch and inspect the corpus, list strategies, run the evaluation, compare.

Exit codes: 0 done; 1 done but with problems under --strict; 2 bad input or usage.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from . import __version__, strategies
from .cache import atomic_write
from .config import configured_splitters
from .corpus import CorpusError
from .model import InputError, Problem

EPILOG = """examples:
  chunkeval corpus fetch --apt-update     download and verify the default corpus (debian-ja)
  chunkeval corpus info --json            what the parser saw: documents, blocks, query sets
  chunkeval run --out chunkeval-results   the whole matrix: table + results.json + reports
  chunkeval compare structure-400 fixed-400 --retriever bm25
  chunkeval strategies --splitter mymod:split --json
Outside splitters: --splitter MODULE:ATTR (repeatable) or [tool.chunkeval] splitters = [...]
in pyproject.toml. The cache lives in $CHUNKEVAL_CACHE (default: $XDG_CACHE_HOME/chunkeval).
"""


class UsageError(Exception):
    pass


def _corpus_args(p: argparse.ArgumentParser, queries: bool = True) -> None:
    p.add_argument("--corpus", default="debian-ja", metavar="NAME|DIR",
                   help="'debian-ja' (default: Debian's Japanese documentation, fetched and "
                        "cached) or a directory of HTML files")
    if queries:
        p.add_argument("--queries", action="append", metavar="NAME|FILE",
                       help="query set: faq-headings, faq-qa, section-titles or a JSONL file "
                            "(id, query, doc, answer); repeatable. Default: every builder "
                            "that yields queries on the corpus")
        p.add_argument("--max-queries", type=int, default=800, metavar="N",
                       help="sample at most N queries per set, seed 0 (default 800)")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when any input file or query line had a problem")
    p.add_argument("--splitter", action="append", default=[], metavar="MODULE:ATTR",
                   help="register an outside splitter (repeatable)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chunkeval", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG,
        description="Evaluate RAG chunking strategies: split a corpus many ways, search it with "
                    "BM25 and LSA, and score how much of each answer the retrieved chunks hold.")
    parser.add_argument("--version", action="version", version=f"chunkeval {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    corpus = sub.add_parser("corpus", help="fetch or inspect a corpus")
    csub = corpus.add_subparsers(dest="corpus_command", required=True, metavar="ACTION")
    fetch = csub.add_parser("fetch", help="download and verify the default corpus's packages")
    fetch.add_argument("--apt-update", action="store_true",
                       help="if apt cannot find the packages, run `apt-get update` and try "
                            "again (a fresh machine's package lists may be empty)")
    info = csub.add_parser("info", help="summarise what the parser and query builders saw")
    _corpus_args(info)
    info.add_argument("--json", action="store_true", help="print JSON instead of text")
    info.add_argument("--dump", metavar="FILE.jsonl",
                      help="write every document (text and blocks) and query, one JSON a line; "
                           "the documents of each query set's view carry the set's name")

    strat = sub.add_parser("strategies", help="list the registered chunking strategies")
    strat.add_argument("--json", action="store_true", help="print JSON instead of text")
    strat.add_argument("--splitter", action="append", default=[], metavar="MODULE:ATTR",
                       help="register an outside splitter (repeatable)")

    run = sub.add_parser("run", help="the main job: every strategy x retriever x query set, "
                                     "a results table, results.json and the reports")
    _corpus_args(run)
    run.add_argument("--strategies", metavar="NAMES", help="comma-separated subset of strategies")
    run.add_argument("--retrievers", metavar="NAMES", help="comma-separated: bm25,lsa,hybrid")
    run.add_argument("--out", default="chunkeval-results", metavar="DIR",
                     help="where results.json, report.md and report.html go "
                          "(default: chunkeval-results)")
    run.add_argument("--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                     help="worker processes, one strategy each at a time (default: all cores)")
    run.add_argument("--k", type=int, default=5, help="chunks handed per query (default 5)")
    run.add_argument("--budget", type=int, default=2000,
                     help="context budget in characters for budget recall (default 2000)")

    cmp_ = sub.add_parser("compare", help="paired bootstrap difference of two strategies on the "
                                          "same queries")
    cmp_.add_argument("a", help="strategy A")
    cmp_.add_argument("b", help="strategy B")
    cmp_.add_argument("--results", metavar="results.json",
                      help="take both from an earlier run instead of computing them")
    cmp_.add_argument("--retriever", default="bm25", help="bm25 (default), lsa or hybrid")
    cmp_.add_argument("--query-set", metavar="NAME", help="default: the first query set")
    _corpus_args(cmp_)

    cal = sub.add_parser("calibrate", help="how often harmless variants of a strategy fail the "
                                           "gate, and the smallest drop it catches")
    cal.add_argument("strategy", help="the strategy to calibrate")
    _corpus_args(cal)
    cal.add_argument("--retrievers", metavar="NAMES", help="comma-separated: bm25,lsa,hybrid")
    cal.add_argument("--trials", type=int, default=50, metavar="N",
                     help="harmless variants (random phase shifts; default 50)")
    cal.add_argument("--drops", default="0.05,0.1,0.2,0.3", metavar="SHARES",
                     help="shares of each chunk's text dropped by the degraded variants")
    cal.add_argument("--drop-trials", type=int, default=10, metavar="N",
                     help="degraded variants per share (default 10)")
    cal.add_argument("--alpha", type=float, default=0.05,
                     help="family-wise false-alarm level of the gate (default 0.05)")
    cal.add_argument("--min-effect", type=float, default=0.02,
                     help="smallest drop that counts as a regression (default 0.02)")
    cal.add_argument("--gate", default="recall_at_k,budget_recall,complete_rate,doc_hit_at_k",
                     metavar="METRICS", help="gated metrics (default: the four of the seed)")
    cal.add_argument("--out", default="chunkeval-results", metavar="DIR",
                     help="where calibration-<strategy>.json and .md go")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        for spec in dict.fromkeys([*configured_splitters(), *getattr(args, "splitter", [])]):
            strategies.load_splitter(spec)
        handler = {"corpus": _corpus_command, "strategies": _strategies, "run": _run,
                   "compare": _compare, "calibrate": _calibrate}[args.command]
        return handler(args)
    except OSError as e:
        where = e.filename if e.filename is not None else "chunkeval"
        print(f"chunkeval: error: {where}: {e.strerror or e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("chunkeval: interrupted", file=sys.stderr)
        return 130
    except (UsageError, CorpusError, InputError, strategies.SplitterError, KeyError,
            ValueError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"chunkeval: error: {msg}", file=sys.stderr)
        return 2


# -- corpus --------------------------------------------------------------------------------------
def _corpus_command(args) -> int:
    if args.corpus_command == "fetch":
        from .corpus import fetch_debian_ja
        try:
            paths = fetch_debian_ja(progress=None)
        except CorpusError as e:
            if not args.apt_update:
                raise
            # A fresh machine's package lists may be empty or stale: refresh them once.
            print(f"chunkeval: {e}\nchunkeval: running `apt-get update` and trying again",
                  file=sys.stderr)
            _apt_update()
            paths = fetch_debian_ja(progress=None)
        for p in paths:
            print(p)
        return 0
    return _info(args)


def _apt_update() -> None:
    try:
        done = subprocess.run(["apt-get", "update"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    except FileNotFoundError:
        raise UsageError("apt-get is not installed: the default corpus needs Debian's apt; "
                         "or evaluate your own documents with --corpus DIR") from None
    if done.returncode != 0:
        raise UsageError(f"`apt-get update` failed (exit {done.returncode}): "
                         f"{done.stderr.strip()[-500:]}")


def _load(args):
    from .corpus import load_corpus
    from .evaluate import Evaluation, Settings
    corpus = load_corpus(args.corpus)
    settings = Settings(max_queries=getattr(args, "max_queries", 800),
                        **{k: getattr(args, k) for k in ("k", "budget") if hasattr(args, k)})
    evaluation = Evaluation(corpus, settings, args.queries)
    return corpus, evaluation


def _problems(corpus, evaluation) -> list[Problem]:
    found = list(corpus.problems)
    for spec in evaluation.query_specs:
        found += getattr(evaluation.query_set(spec), "problems", ())
    return found


def _report_problems(problems: list[Problem], strict: bool) -> int:
    for p in problems:
        print(f"chunkeval: warning: {p}", file=sys.stderr)
    if problems and strict:
        print(f"chunkeval: {len(problems)} problem(s) and --strict: failing", file=sys.stderr)
        return 1
    return 0


def _info(args) -> int:
    from .model import _digest
    corpus, evaluation = _load(args)
    sets = {spec: evaluation.query_set(spec) for spec in evaluation.query_specs}
    blocks = Counter(b.kind for d in corpus.documents for b in d.blocks)
    problems = _problems(corpus, evaluation)
    info = {
        "name": corpus.name,
        "fingerprint": _digest([corpus.fingerprint, *[qs.fingerprint for qs in sets.values()]])[:16],
        "corpus_fingerprint": corpus.fingerprint,
        "documents": len(corpus),
        "chars": corpus.chars,
        "blocks": dict(sorted(blocks.items())),
        "queries": {qs.name: len(qs) for qs in sets.values()},
        "query_fingerprints": {qs.name: qs.fingerprint for qs in sets.values()},
        "problems": [str(p) for p in problems],
    }
    if args.dump:
        lines = [json.dumps({"type": "document", **d.to_json()}, ensure_ascii=False)
                 for d in corpus.documents]
        # results.json's spans point into each query set's view (its questions removed)
        lines += [json.dumps({"type": "document", "set": qs.name, **d.to_json()},
                             ensure_ascii=False)
                  for qs in sets.values() for d in qs.view.documents]
        lines += [json.dumps({"type": "query", "id": q.id, "set": qs.name, "query": q.text,
                              "doc": q.doc_id, "answer": q.answer}, ensure_ascii=False)
                  for qs in sets.values() for q in qs.queries]
        atomic_write(args.dump, "\n".join(lines) + "\n")
    if args.json:
        print(json.dumps(info, ensure_ascii=False, indent=2))
    else:
        print(f"corpus      {info['name']} ({info['documents']} documents, "
              f"{info['chars']:,} non-space chars)")
        print(f"fingerprint {info['fingerprint']} (corpus {info['corpus_fingerprint']})")
        print("blocks      " + ", ".join(f"{k} {v}" for k, v in info["blocks"].items()))
        print("queries     " + ", ".join(f"{k} {v}" for k, v in info["queries"].items()))
        if args.dump:
            print(f"dump        {args.dump}")
    return _report_problems(problems, args.strict)


# -- strategies ----------------------------------------------------------------------------------
def _strategies(args) -> int:
    listed = [s.describe() for s in strategies.all_strategies()]
    if args.json:
        print(json.dumps(listed, ensure_ascii=False, indent=2))
    else:
        width = max(len(s["name"]) for s in listed)
        for s in listed:
            params = ", ".join(f"{k}={v}" for k, v in s["params"].items())
            print(f"{s['name']:<{width}}  {s['family']:<14} {params}")
    return 0


# -- run -----------------------------------------------------------------------------------------
def _split_names(value: str | None, known: list[str], what: str) -> list[str] | None:
    if not value:
        return None
    names = [v.strip() for v in value.split(",") if v.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UsageError(f"unknown {what}: {', '.join(unknown)}; known: {', '.join(known)}")
    return names


def _run(args) -> int:
    from . import report
    from .retrieval import RETRIEVERS
    names = _split_names(args.strategies, strategies.names(), "strategy")
    rets = _split_names(args.retrievers, list(RETRIEVERS), "retriever")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: exists and is not a directory")
    corpus, evaluation = _load(args)
    results = evaluation.run(names, rets, jobs=args.jobs)
    atomic_write(out / "results.json", json.dumps(results, ensure_ascii=False) + "\n")
    written = report.write_reports(results, out)
    print(report.format_table(results))
    print(f"\nwrote {out / 'results.json'}, " + ", ".join(str(p) for p in written.values()))
    return _report_problems(_problems(corpus, evaluation), args.strict)


# -- compare -------------------------------------------------------------------------------------
def _compare(args) -> int:
    import numpy as np

    from . import report
    from .baselines import series
    from .stats import paired_bootstrap
    if args.results:
        try:
            doc = json.loads(Path(args.results).read_text(encoding="utf-8"))
            checked = report.checked(doc)
            query_set = args.query_set or checked.query_sets[0]
            complete_at = doc["settings"]["complete_at"]
        except (OSError, json.JSONDecodeError, UnicodeDecodeError, ValueError, KeyError,
                IndexError, TypeError) as e:
            raise InputError(args.results, f"not a chunkeval results document ({e!s})") from None
        picked = {s: r for (q, s, ret), r in checked.rows.items()
                  if ret == args.retriever and q == query_set}
        missing = [s for s in (args.a, args.b) if s not in picked]
        if missing:
            raise InputError(args.results, f"no {args.retriever} results on {query_set!r} for "
                                           f"{', '.join(missing)}")
        a, b = picked[args.a], picked[args.b]
    else:
        for name in (args.a, args.b):
            strategies.get(name)
        _, evaluation = _load(args)
        spec = args.query_set or evaluation.query_specs[0]
        a = evaluation.result(args.a, args.retriever, spec)
        b = evaluation.result(args.b, args.retriever, spec)
        query_set, complete_at = a["query_set"], evaluation.settings.complete_at
    sa, sb = series(a, complete_at), series(b, complete_at)
    print(f"{args.a} - {args.b}, retriever {args.retriever}, query set {query_set} "
          f"({len(sa['coverage'])} queries; paired bootstrap, 2,000 resamples, seed 0)")
    for metric, src in (("recall@k", "coverage"), ("budget recall", "budget_coverage"),
                        ("complete rate", "complete"), ("doc hit@k", "doc_hit")):
        ci = paired_bootstrap(np.asarray(sa[src]), np.asarray(sb[src]))
        verdict = "difference shown" if ci.shows_difference else "no difference shown"
        print(f"  {metric:<14} {sa[src].mean()*100:6.1f}% vs {sb[src].mean()*100:6.1f}%  "
              f"diff {ci.diff*100:+5.1f} points, 95% CI [{ci.low*100:+.1f}, {ci.high*100:+.1f}]"
              f"  {verdict}")
    return 0


# -- calibrate -----------------------------------------------------------------------------------
def _calibrate(args) -> int:
    from . import calibrate
    from .baselines import METRICS, Tolerance
    from .retrieval import RETRIEVERS
    strategies.get(args.strategy)
    rets = _split_names(args.retrievers, list(RETRIEVERS), "retriever") or list(RETRIEVERS)
    gated = tuple(_split_names(args.gate, list(METRICS), "metric") or ())
    try:
        drops = [float(d) for d in args.drops.split(",") if d.strip()]
    except ValueError:
        raise UsageError(f"--drops {args.drops!r}: expected comma-separated shares") from None
    if any(not 0 < d < 1 for d in drops) or args.trials < 1 or not 0 < args.alpha < 1:
        raise UsageError("--drops must lie in (0, 1), --trials be >= 1, --alpha in (0, 1)")
    corpus, evaluation = _load(args)
    trials = calibrate.run_trials(evaluation, args.strategy, rets, trials=args.trials,
                                  drops=drops, drop_trials=args.drop_trials)
    table = calibrate.judge(trials, Tolerance(min_effect=args.min_effect, alpha=args.alpha,
                                              gated=gated))
    text = calibrate.format_table(table)
    out = Path(args.out)
    stem = f"calibration-{args.strategy}"
    atomic_write(out / f"{stem}-trials.json", json.dumps(trials, ensure_ascii=False) + "\n")
    atomic_write(out / f"{stem}.json", json.dumps(table, ensure_ascii=False, indent=1) + "\n")
    atomic_write(out / f"{stem}.md", f"```\n{text}\n```\n")
    print(text)
    print(f"\nwrote {out / (stem + '.json')}, {out / (stem + '.md')}, {out / (stem + '-trials.json')}")
    return _report_problems(_problems(corpus, evaluation), args.strict)


if __name__ == "__main__":
    sys.exit(main())
