"""The command line: fetch and inspect the corpus, list strategies, run the evaluation, compare.

Every option that is a setting comes from config.SETTINGS, so the commands, the pytest plugin
and `[tool.chunkeval]` share its names, help and defaults; each command then works on one
session.Session, as the plugin does.

Exit codes: 0 done; 1 done, but a strategy could not be scored or, under --strict, the input
had problems; 2 bad input or usage; 130 interrupted. Anything else that escapes is a bug and shows its traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import warnings
from collections import Counter
from pathlib import Path

# The reports, the embedding cache and the statistics (numpy, with the scoring and the
# indexes behind them) are imported by the commands that use them: building the command
# line, and `--help`, needs none.
from . import __version__, cache, config, export, strategies
from .cache import atomic_write
from .corpus import DEFAULT_CORPUS, fetch_builtin, format_of, load_corpus
from .corpus.debian import BUILTIN_CORPORA
from .corpus.rendered import RULES
from .errors import (EXIT_NOT_COMPARED, BaselineError, ChunkevalError, ConfigError,
                     CorpusError, InputError, Problem, StrategyFailed)
from .executors import EXECUTORS, make
from .gate import calibrate, verdict
from .gate import baselines
from .gate.baselines import ignore_temporaries, key, record_noise
from .gate.power import MIN_DETECTABLE, set_power
from .model import digest
from .outside import load
from .problems import strict_failure, summary as problem_summary, to_json as problem_json
from .queries import build_default_query_sets, generate, imports
from .results import DEFAULTS, BaselineEntry, Results
from .retrieval import load_retriever
from .session import Session, read_results
from .shard import merge

EPILOG = """examples:
  chunkeval corpus fetch --apt-update     download and verify the default corpus (debian-ja)
  chunkeval corpus info --json            what the parser saw: documents, blocks, query sets
  chunkeval run --out chunkeval-results   the whole matrix: table + results.json + reports
  chunkeval compare structure-400 fixed-400 --retriever bm25
  chunkeval export --format ranx chunkeval-results --dump corpus.jsonl
  chunkeval strategies --splitter mymod:split --json
  chunkeval run --retriever mymod:embed --retrievers embed,bm25
  chunkeval init --example-splitter       write a [tool.chunkeval] section for this project
Settings come from the command line, else [tool.chunkeval] in the project's pyproject.toml
(the nearest one above the working directory), else the defaults; the pytest plugin reads the
same section. Modules named as MODULE:ATTR import from the project's folder.
The cache (parsed corpora, embeddings, results) lives in $CHUNKEVAL_CACHE (default:
$XDG_CACHE_HOME/chunkeval); a result whose chunks, retriever, query set and settings did not
change is reused, not evaluated again (--no-result-cache: evaluate everything);
`chunkeval cache clear` empties the embedding and result caches.
"""

EXAMPLE_MODULE = "chunking"
# The first experiment init suggests: the example splitter at this size loses the answers.
EXPERIMENT_SIZE = 100
DEFAULT_OUT = "chunkeval-results"
SWEEP_OUT = "chunkeval-sweep"
# The gate is calibrated on the built-in lexical retrievers unless others are named.
CALIBRATION_RETRIEVERS = ("bm25", "lsa", "hybrid")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chunkeval", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG,
        description="Evaluate RAG chunking strategies: split a corpus many ways, search it with "
                    "BM25, LSA and embeddings, and score how much of each answer the retrieved "
                    "chunks hold.")
    parser.add_argument("--version", action="version", version=f"chunkeval {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    corpus = sub.add_parser("corpus", help="fetch or inspect a corpus")
    csub = corpus.add_subparsers(dest="corpus_command", required=True, metavar="ACTION")
    fetch = csub.add_parser("fetch", help="download and verify a built-in corpus's packages")
    fetch.add_argument("--corpus", default=DEFAULT_CORPUS, choices=list(BUILTIN_CORPORA),
                       help=f"which built-in corpus (default {DEFAULT_CORPUS})")
    fetch.add_argument("--apt-update", action="store_true",
                       help="if apt cannot find the packages, run `apt-get update` and try "
                            "again (a fresh machine's package lists may be empty)")
    info = csub.add_parser("info", help="summarise what the parser and query builders saw")
    config.add_options(info, "info")
    info.add_argument("--json", action="store_true", help="print JSON instead of text")
    info.add_argument("--dump", metavar="FILE.jsonl",
                      help="write every document (text and blocks) and query, one JSON a line; "
                           "the documents of each query set's view carry the set's name")

    strat = sub.add_parser("strategies", help="list the registered chunking strategies")
    strat.add_argument("--json", action="store_true", help="print JSON instead of text")
    config.add_options(strat, "strategies")

    queries = sub.add_parser("queries", help="make a JSONL query set: import questions you "
                                             "have, or ask your own question generator")
    qsub = queries.add_subparsers(dest="queries_command", required=True, metavar="ACTION")
    imp = qsub.add_parser("import", help="convert another tool's questions, locating every "
                                         "excerpt in the corpus",
                          description="Read Chroma's chunking-evaluation CSV, a Ragas test set "
                                      "(CSV, JSON, JSONL), LlamaIndex's "
                                      "EmbeddingQAFinetuneDataset JSON or a BEIR folder, locate "
                                      "each excerpt in the corpus and write chunkeval's JSONL "
                                      "with spans. A question whose excerpts lie in several "
                                      "documents goes to the one holding most of them.")
    imp.add_argument("format", choices=imports.FORMATS)
    imp.add_argument("files", nargs="+", metavar="FILE",
                     help="the questions (for beir: the folder, or its files)")
    imp.add_argument("--strict", action="store_true", default=None,
                     help="fail, writing nothing, when any row is skipped")
    _queries_options(imp)
    gen = qsub.add_parser("generate", help="ask your question generator about sections of the "
                                           "corpus, keeping only questions whose excerpts are "
                                           "in the document and that do not quote them",
                          description="Call GENERATOR(text, section) on heading sections picked "
                                      "round-robin over the documents; it returns "
                                      "[{'question': str, 'excerpts': [str, ...]}, ...]. "
                                      "Answers are cached: a re-run calls it again only for "
                                      "sections that failed. See docs/documents.md, 'Questions "
                                      "from your own generator'.")
    qinfo = qsub.add_parser("info", help="what each query set is made of and the smallest "
                                         "drop its gate catches")
    qinfo.add_argument("sets", nargs="*", metavar="SET",
                       help="builder names or JSONL files (default: the configured sets)")
    config.add_options(qinfo, "info")
    qinfo.add_argument("--json", action="store_true", help="print JSON instead of text")
    gen.add_argument("--generator", required=True, metavar="MODULE:ATTR",
                     help="the callable, imported from the project's folder")
    gen.add_argument("--sections", type=int, default=generate.DEFAULT_SECTIONS, metavar="N",
                     help=f"sections to ask about (default {generate.DEFAULT_SECTIONS})")
    gen.add_argument("--seed", type=int, default=0, metavar="S",
                     help="seed of the section order (default 0)")
    _queries_options(gen)

    run = sub.add_parser("run", help="the main job: every strategy x retriever x query set, "
                                     "a results table, results.json and the reports")
    config.add_options(run, "run")
    run.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                     help=f"where results.json, report.md, report.html and queries.html "
                          f"go (default: {DEFAULT_OUT})")
    run.add_argument("--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                     help="worker processes (or Ray CPUs), one strategy each at a time "
                          "(default: all cores)")
    run.add_argument("--executor", choices=EXECUTORS, default=EXECUTORS[0],
                     help="process: a pool of --jobs processes here (default); ray: a Ray "
                          "cluster, embedded with --jobs CPUs or the one at --address "
                          "(pip install 'chunkeval[distributed]')")
    run.add_argument("--address", metavar="HOST:PORT",
                     help="with --executor ray: a running cluster (HOST:6379 or "
                          "ray://HOST:10001), whose nodes have chunkeval installed")
    run.add_argument("--traceback", action="store_true",
                     help="with a strategy that failed, also print the frames of your own "
                          "code that raised (results.json keeps them too)")

    merge_ = sub.add_parser("merge", help="join the results.json of every shard of a run into "
                                          "one results.json and report")
    merge_.add_argument("dirs", nargs="+", metavar="DIR",
                        help="each shard's --out directory (or its results.json)")
    merge_.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                        help=f"where the joined results.json and reports go "
                             f"(default: {DEFAULT_OUT})")

    exp = sub.add_parser("export", help="write each case's ranking and its gold as TREC run "
                                        "and qrels files, or ranx's JSON",
                         description="Read results.json and the query sets it was measured on "
                                     "(`chunkeval corpus info --dump`), and write "
                                     "DIR/<query set>/<strategy>/qrels and one run per "
                                     "retriever: the top k chunks, named doc:start:end, and "
                                     "their relevance 0-3 by the share of the gold each holds "
                                     "(any share >= 1), so that MRR@k is chunkeval's.")
    exp.add_argument("results", metavar="RESULTS", help="results.json (or its folder)")
    exp.add_argument("--format", required=True, choices=export.FORMATS)
    exp.add_argument("--dump", required=True, metavar="FILE.jsonl",
                     help="the corpus dump of the run's query sets (corpus info --dump)")
    exp.add_argument("--out", default="chunkeval-export", metavar="DIR",
                     help="where the files go (default: chunkeval-export)")

    cmp_ = sub.add_parser("compare", help="paired bootstrap difference of two strategies on the "
                                          "same queries; with --base REV, the gate of every "
                                          "configured case against the code at a git revision")
    cmp_.add_argument("a", nargs="?", help="strategy A")
    cmp_.add_argument("b", nargs="?", help="strategy B")
    cmp_.add_argument("--results", metavar="results.json",
                      help="take both from an earlier run instead of computing them")
    cmp_.add_argument("--retriever", dest="compared_retriever", default="bm25",
                      metavar="NAME|MODULE:ATTR",
                      help="bm25 (default), lsa, hybrid, use, hybrid-use, or an outside "
                           "retriever (registered first)")
    cmp_.add_argument("--query-set", metavar="NAME",
                      help="default: the largest query set (with --results: of those that "
                           "gate)")
    config.add_options(cmp_, "compare")

    sw = sub.add_parser("sweep", help="which size and overlap: evaluate a grid of one strategy "
                                      "family and recommend the cheapest configuration shown "
                                      "to be within a margin of the best",
                        description="Evaluate every size x overlap of one strategy; per "
                                    "retriever and query set choose the best by the metric and "
                                    "bound every other configuration's difference to it, "
                                    "family-wise and one-sided (bootstrap max-t); recommend "
                                    "the cheapest whose lower bound is above -margin, or say "
                                    "that the questions cannot tell. Grids over 60 "
                                    "configurations are narrowed by successive halving first "
                                    "(a sample of the questions drops only those it shows "
                                    "worse than its leader by more than the margin). "
                                    "Settings also in [tool.chunkeval.sweep]; retrievers "
                                    "default to bm25 unless --retrievers or [tool.chunkeval] "
                                    "retrievers names others.")
    config.add_options(sw, "sweep")
    sw.add_argument("--out", default=SWEEP_OUT, metavar="DIR",
                    help=f"where sweep.json, sweep.html and sweep.md go (default: {SWEEP_OUT})")
    sw.add_argument("--yes", action="store_true",
                    help="run a grid larger than max_configurations (default 200)")
    sw.add_argument("--adopt", action="store_true",
                    help="write the recommendation into pyproject.toml's [tool.chunkeval] after "
                         "showing it (the file before kept beside it as .bak)")

    cache_ = sub.add_parser(
        "cache", help="the caches (parsed corpora, downloaded packages, embeddings, chunks, "
                      "results, generated questions): their sizes, clear the embedding, chunk "
                      "and result caches, or verify that they hold what their keys say",
        description="info: what each cache holds. clear: empty the embedding, chunk and result "
                    "caches. verify: read every stored chunk and result entry and embedding "
                    "shard whole, then evaluate a sample of the configured cases through the "
                    "caches and with none, and report every difference (exit 1 on any).")
    cache_.add_argument("cache_command", choices=["info", "clear", "verify"],
                        metavar="info|clear|verify")
    cache_.add_argument("--sample", type=int, default=3, metavar="N",
                        help="verify: the cases (strategy x retriever x query set) evaluated "
                             "again without any cache, evenly spread (default: 3; 0: only "
                             "read the stored entries)")
    config.add_options(cache_, "cache")

    init = sub.add_parser("init", help="write a commented [tool.chunkeval] section for the "
                                       "project in the working directory")
    init.add_argument("--docs", metavar="DIR",
                      help="the folder of your documents (default: the folder below here "
                           "with the most HTML, Markdown or text files)")
    init.add_argument("--example-splitter", action="store_true",
                      help=f"also write {EXAMPLE_MODULE}.py, a paragraph-packing splitter to "
                           "start from, and gate it")

    cal = sub.add_parser("calibrate", help="how often harmless variants of a strategy fail the "
                                           "gate, and the smallest drop it catches",
                         description="Evaluate harmless and degraded variants of a strategy and "
                                     "judge them with the gate's tolerance (alpha, min_effect, "
                                     "gate: the options below, else [tool.chunkeval]). Retrievers "
                                     f"default to {', '.join(CALIBRATION_RETRIEVERS)} and your "
                                     "outside ones (--retriever) unless --retrievers or "
                                     "[tool.chunkeval] retrievers names others.")
    cal.add_argument("strategy", help="the strategy to calibrate")
    config.add_options(cal, "calibrate")
    cal.add_argument("--trials", type=int, default=50, metavar="N",
                     help="harmless variants (random phase shifts; default 50)")
    cal.add_argument("--drops", default=",".join(map(str, calibrate.DROPS)), metavar="SHARES",
                     help="shares of each chunk's text dropped by the degraded variants "
                          f"(default {','.join(map(str, calibrate.DROPS))})")
    cal.add_argument("--drop-trials", type=int, default=10, metavar="N",
                     help="degraded variants per share (default 10)")
    cal.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                     help="where calibration-<strategy>.json and .md go")
    cal.add_argument("--record", action="store_true",
                     help="write the strategy's measured noise floor into its baseline entries; "
                          "the gate then judges drops against it (docs/method.md, 'How much "
                          "to trust the gate')")
    cal.add_argument("--from-trials", metavar="FILE",
                     help="judge (and --record) the trials of an earlier calibrate run, "
                          "calibration-<strategy>-trials.json, instead of evaluating anew")
    return parser


def main(argv: list[str] | None = None) -> int:
    with warnings.catch_warnings():  # the notices of chunkeval itself, as one line each
        shown = warnings.showwarning

        def show(message, category, *rest, **kw):
            if issubclass(category, cache.CacheNotice):
                print(f"chunkeval: notice: {message}", file=sys.stderr)
            else:
                shown(message, category, *rest, **kw)
        warnings.showwarning = show
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "init":
            return _init(args)
        handler = {"corpus": _corpus_command, "queries": _queries_command,
                   "strategies": _strategies, "run": _run,
                   "compare": _compare, "cache": _cache, "calibrate": _calibrate,
                   "merge": _merge, "export": _export, "sweep": _sweep}[args.command]
        return handler(args)
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


def _session(args, check: bool = True) -> Session:
    """The project's settings with this command's options over them; `check`: every setting
    resolved now."""
    session = Session(config.load(command_line=config.given(args)))
    return session.check() if check else session


def _out_dir(out: str) -> Path:
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"--out {path}: exists and is not a directory")
    return path


def _write_results(results: Results, out: Path, pages: dict[str, str] | None = None
                   ) -> dict[str, Path]:
    """results.json, the reports and `pages` (more files by name) into `out`, together: all
    rendered and written aside first, so a failure leaves the previous run's files whole."""
    from . import report

    pages = pages or {}
    files = {"results.json": json.dumps(results.to_json(), ensure_ascii=False) + "\n",
             **report.render_reports(results, next(iter(pages), None)), **pages}
    written = cache.write_together(out, files)
    return {"markdown": written["report.md"], "html": written["report.html"],
            **{name.split(".")[0]: written[name] for name in pages}}


# -- corpus --------------------------------------------------------------------------------------
def _corpus_command(args) -> int:
    if args.corpus_command == "fetch":
        try:
            paths = fetch_builtin(args.corpus, progress=None)
        except CorpusError as e:
            if not args.apt_update:
                raise
            # A fresh machine's package lists may be empty or stale: refresh them once.
            print(f"chunkeval: {e}\nchunkeval: running `apt-get update` and trying again",
                  file=sys.stderr)
            _apt_update()
            paths = fetch_builtin(args.corpus, progress=None)
        for p in paths:
            print(p)
        return 0
    return _info(args)


def _apt_update() -> None:
    try:
        done = subprocess.run(["apt-get", "update"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    except FileNotFoundError:
        raise CorpusError("apt-get is not installed: the default corpus needs Debian's apt; "
                          "or evaluate your own documents with --corpus DIR") from None
    if done.returncode != 0:
        raise CorpusError(f"`apt-get update` failed (exit {done.returncode}): "
                          f"{done.stderr.strip()[-500:]}")


def _report_problems(problems: list[Problem], strict: bool) -> int:
    """One warning line per kind of problem; under --strict, 1 when one changes what is
    measured."""
    for line in problem_summary(problems):
        print(f"chunkeval: warning: {line}", file=sys.stderr)
    failing = strict_failure(problems) if strict else None
    if failing:
        print(f"chunkeval: {failing}; failing", file=sys.stderr)
        return 1
    return 0


def _info(args) -> int:
    session = _session(args, check=False)
    corpus, evaluation = session.corpus, session.evaluation
    sets = {spec: evaluation.query_set(spec) for spec in evaluation.query_specs}
    blocks = Counter(b.kind for d in corpus.documents for b in d.blocks)
    problems = session.problems()
    info = {
        "name": corpus.name,
        "fingerprint": digest([corpus.fingerprint, *[qs.fingerprint for qs in sets.values()]])[:16],
        "corpus_fingerprint": corpus.fingerprint,
        "documents": len(corpus),
        "formats": dict(sorted(Counter(format_of(d.id) or "html" for d in corpus.documents).items())),
        "chars": corpus.chars,
        "blocks": dict(sorted(blocks.items())),
        "removed": _removed(corpus),
        "analyzer": {"setting": session.config.analyzer, "resolved": evaluation.analyzer},
        "queries": {qs.name: len(qs) for qs in sets.values()},
        "query_fingerprints": {qs.name: qs.fingerprint for qs in sets.values()},
        "query_sets": {qs.name: _set_info(session, spec) for spec, qs in sets.items()},
        "problems": [str(p) for p in problems],
        "problem_details": [problem_json(p) for p in problems],
        "warnings": problem_summary(problems),
    }
    if corpus.paged:  # PDF: how many pages, and that every block of those documents has one
        paged = [d for d in corpus.documents if d.paged]
        info["pages"] = {"documents": len(paged),
                         "pages": sum(max(b.page for b in d.blocks) for d in paged),
                         "blocks": sum(len(d.blocks) for d in paged),
                         "blocks_with_page": sum(1 for d in paged for b in d.blocks if b.page)}
    if args.dump:
        lines = [json.dumps({"type": "document", **d.to_json()}, ensure_ascii=False)
                 for d in corpus.documents]
        # results.json's spans point into each query set's view (its questions removed)
        lines += [json.dumps({"type": "document", "set": qs.name, **d.to_json()},
                             ensure_ascii=False)
                  for qs in sets.values() for d in qs.view.documents]
        lines += [json.dumps({"type": "query", "id": q.id, "set": qs.name, "query": q.text,
                              "doc": q.doc_id, **q.gold_json()}, ensure_ascii=False)
                  for qs in sets.values() for q in qs.queries]
        atomic_write(args.dump, "\n".join(lines) + "\n")
    if args.json:
        print(json.dumps(info, ensure_ascii=False, indent=2))
    else:
        print(f"corpus      {info['name']} ({info['documents']} documents, "
              f"{info['chars']:,} non-space chars)")
        print(f"fingerprint {info['fingerprint']} (corpus {info['corpus_fingerprint']})")
        print("blocks      " + ", ".join(f"{k} {v}" for k, v in info["blocks"].items()))
        print("formats     " + ", ".join(f"{k} {v}" for k, v in info["formats"].items()))
        if "pages" in info:
            p = info["pages"]
            print(f"pages       {p['pages']:,} in {p['documents']} documents; "
                  f"{p['blocks_with_page']:,} of their {p['blocks']:,} blocks have a page")
        for kind, rules in info["removed"].items():
            print(f"removed     from {kind}, what a reader does not see:")
            for rule, r in rules.items():
                print(f"  {RULES[rule]}: {r['chars']:,} chars in {r['documents']} "
                      f"document{'s' if r['documents'] != 1 else ''}")
        analyzer = info["analyzer"]
        print(f"analyzer    {analyzer['resolved']}" + (
            " (auto: from the corpus's language)" if analyzer["setting"] == "auto" else ""))
        print("queries     " + ", ".join(f"{k} {v}" for k, v in info["queries"].items()))
        for name, detail in info["query_sets"].items():
            print(_format_set_info(name, detail, indent="  "))
        if info["formats"].get("text"):
            print("note        text files have no headings: section-titles finds no queries "
                  "in them")
        if args.dump:
            print(f"dump        {args.dump}")
    return _report_problems(problems, session.config.strict)


def _removed(corpus) -> dict:
    """Per file kind and rule, the characters the parser cut and the documents it cut them
    from (a Markdown file's comments, tags, markers...)."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    for d in corpus.documents:
        for rule, n in d.removed:
            r = out.setdefault(format_of(d.id) or "html", {}).setdefault(
                rule, {"chars": 0, "documents": 0})
            r["chars"] += n
            r["documents"] += 1
    return {kind: {rule: rules[rule] for rule in RULES if rule in rules}
            for kind, rules in sorted(out.items())}


def _set_info(session: Session, spec: str) -> dict:
    """What a query set is made of and what its gate can see (corpus info, queries info)."""
    qs = session.query_set(spec)
    per_doc = Counter(q.doc_id for q in qs.queries)
    power = session.power(spec)
    top = per_doc.most_common(1)
    return {"queries": len(qs), "documents": len(per_doc),
            "largest_share": ({"document": top[0][0], "share": round(top[0][1] / len(qs), 4)}
                              if top else None),
            "candidates": qs.candidates or None, "removed": dict(qs.removed),
            "skipped_lines": len(qs.problems), "gate": power.to_json(),
            "not_gated": power.reason() or None}


def _format_set_info(name: str, d: dict, indent: str = "") -> str:
    share = d["largest_share"]
    lines = [f"{indent}{name}: {d['queries']:,} queries from {d['documents']} documents"
             + (f" (largest share {share['share']:.0%}, {share['document']})" if share else "")]
    if d["candidates"]:
        removed = ", ".join(f"{n:,} {rule}" for rule, n in d["removed"].items()) or "none"
        lines.append(f"{indent}  {d['candidates']:,} candidates; removed: {removed}")
    if d["skipped_lines"]:
        lines.append(f"{indent}  {d['skipped_lines']} line(s) of the file skipped (warnings)")
    gate = d["gate"]
    if d["not_gated"]:
        lines.append(f"{indent}  NOT GATED: {d['not_gated']}")
    else:
        lines.append(f"{indent}  gates: catches a drop of {gate['smallest_drop'] * 100:.1f} "
                     f"points 4 times in 5 (coverage spread {gate['sd'] * 100:.0f} points, "
                     f"{'measured on its baseline' if gate['measured'] else 'assumed'})")
    return "\n".join(lines)


# -- strategies ----------------------------------------------------------------------------------
def _strategies(args) -> int:
    _session(args, check=False)  # registers the project's splitters
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


# -- queries -------------------------------------------------------------------------------------
def _queries_options(parser: argparse.ArgumentParser) -> None:
    corpus = config.BY_NAME["corpus"]
    parser.add_argument("--corpus", metavar=corpus.metavar,
                        help=f"{corpus.help}{corpus.shown_default}; also [tool.chunkeval] corpus")
    parser.add_argument("--out", required=True, metavar="FILE.jsonl",
                        help="the JSONL query set to write (replaced whole)")
    parser.add_argument("--verbose", action="store_true",
                        help="also list each excerpt found more than once and placed at its "
                             "first copy")


def _queries_command(args) -> int:
    return {"import": _queries_import, "generate": _queries_generate,
            "info": _queries_info}[args.queries_command](args)


def _queries_info(args) -> int:
    session = _session(args, check=False)
    specs = args.sets or session.query_specs()
    info = {session.query_set(spec).name: _set_info(session, spec) for spec in specs}
    if args.json:
        print(json.dumps(info, ensure_ascii=False, indent=2))
    else:
        print(session.corpus_line)
        for name, detail in info.items():
            print(_format_set_info(name, detail))
    return _report_problems([p for spec in specs for p in session.query_set(spec).problems],
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


# -- run -----------------------------------------------------------------------------------------
def _run(args) -> int:
    from . import report

    session = _session(args)
    out = _out_dir(args.out)
    executor = make(args.executor, jobs=args.jobs, address=args.address,
                    modules=session.modules)
    print(session.corpus_line, flush=True)
    if session.left_out:
        print(session.left_out, flush=True)
    results = session.evaluation.run(session.strategies, session.plan, shard=session.shard,
                                     timings=session.timings, executor=executor)
    if session.shard is not None:
        print(f"shard {session.shard}: {len(results.shard['tasks'])} strategy x query set "
              "task(s)")
    from .report import queries_page

    written = _write_results(results, out, {queries_page.FILE: queries_page.render_run_page(
        results, [session.query_set(s) for s in session.query_specs()])})
    print(report.format_table(results))
    emb = results.embeddings
    kept = "from the cache" if session.config.cache else "repeated in this run (cache off)"
    print(f"\nanalyzer {results.analyzer}; embeddings: {emb['embedded']} texts embedded, "
          f"{emb['cached']} {kept}")
    rc = results.result_cache
    if rc["enabled"]:
        print(f"results: {rc['evaluated']} evaluated, {rc['reused']} reused from the result "
              "cache (their index and search seconds are those measured when stored)")
    else:
        print(f"results: {rc['evaluated']} evaluated (result cache off)")
    print(f"wrote {out / 'results.json'}, " + ", ".join(str(p) for p in written.values()))
    status = _report_problems(session.problems(), session.config.strict)
    return _report_failures(results.failures, args.traceback) or status


def _report_failures(failures, traceback: bool | None, kept: str = "results.json") -> int:
    """Each strategy that could not be scored, one line (and its frames with --traceback;
    None where the command has no such option, and `kept` keeps them); 1 when there is
    one: the rest of the results are written, but the run did not succeed."""
    for f in failures:
        print(f"chunkeval: failed: {f.message}", file=sys.stderr)
        if traceback and f.detail:
            print(f.detail, file=sys.stderr)
    if failures:
        shown = ("" if traceback else " (--traceback shows where in your code)"
                 if traceback is not None else f" ({kept} keeps where in your code)")
        print(f"chunkeval: {len(failures)} strategy result(s) not scored{shown}",
              file=sys.stderr)
        return 1
    return 0


# -- cache ---------------------------------------------------------------------------------------
def _cache(args) -> int:
    """Parsed corpora, downloaded packages and generated questions are kept by `clear`: they
    are costly to make again (the packages need apt, the questions a generator's calls) and
    never give a wrong number."""
    from .retrieval import embedding

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
    from .verify import verify

    if args.sample < 0:
        raise ConfigError(f"--sample {args.sample}: expected a count >= 0")
    session = _session(args) if args.sample else None
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


# -- merge -------------------------------------------------------------------------------------
def _merge(args) -> int:
    from . import report

    docs = []
    for d in args.dirs:
        path = Path(d) / "results.json" if Path(d).is_dir() else Path(d)
        docs.append((str(path), read_results(path)))
    merged = merge(docs)
    out = _out_dir(args.out)
    written = _write_results(merged, out)
    print(report.format_table(merged))
    print(f"\nmerged {len(docs)} shard(s); wrote {out / 'results.json'}, "
          + ", ".join(str(p) for p in written.values()))
    return _report_failures(merged.failures, None)


# -- export --------------------------------------------------------------------------------------
def _export(args) -> int:
    results = read_results(args.results)
    out = _out_dir(args.out)
    written = export.export(results, export.read_dump(args.dump), args.format, out,
                            where=args.dump)
    print(f"wrote {len(written)} files under {out} (qrels and one run per retriever for "
          f"each strategy and query set)")
    return 0


# -- compare -------------------------------------------------------------------------------------
def _compare(args) -> int:
    from . import report
    from .stats import paired_bootstrap

    session = _session(args)
    if session.config.base and args.a is None:
        return _compare_base(session, session.config.base)
    if args.b is None:
        raise ConfigError("compare needs two strategies (chunkeval compare A B), or a base "
                          "revision to gate the configured ones against (--base REV)")
    retriever = args.compared_retriever
    if ":" in retriever:
        retriever = load_retriever(retriever, session.config.root)[0].name
    if args.results:
        results = read_results(args.results)
        present = report.View(results).query_sets  # those with results, the largest first
        if not present:
            raise InputError(args.results, "holds no results")
        query_set = args.query_set or present[0]
        picked = {r.strategy: r for r in results.results
                  if r.retriever == retriever and r.query_set == query_set}
        missing = [s for s in (args.a, args.b) if s not in picked]
        if missing:
            raise InputError(args.results, f"no {retriever} results on {query_set!r} for "
                                           f"{', '.join(missing)}")
        a, b = picked[args.a], picked[args.b]
        if [q.id for q in a.per_query] != [q.id for q in b.per_query]:
            raise InputError(args.results, f"{args.a} and {args.b} were not measured on the same "
                                           f"queries of {query_set!r}")
        complete_at = results.settings.complete_at
    else:
        for name in (args.a, args.b):
            strategies.get(name)
        evaluation = session.evaluation
        print(session.corpus_line)
        spec = args.query_set or max(evaluation.query_specs,  # the largest set
                                     key=lambda q: len(evaluation.query_set(q)))
        a = evaluation.result(args.a, retriever, spec)
        b = evaluation.result(args.b, retriever, spec)
        query_set, complete_at = a.query_set, evaluation.settings.complete_at
    sa, sb = a.series(complete_at), b.series(complete_at)
    print(f"{args.a} - {args.b}, retriever {retriever}, query set {query_set} "
          f"({len(sa['coverage'])} queries; paired bootstrap, 2,000 resamples, seed 0)")
    for metric, src in (("recall@k", "coverage"), ("budget recall", "budget_coverage"),
                        ("complete rate", "complete"), ("doc hit@k", "doc_hit")):
        ci = paired_bootstrap(sa[src], sb[src])
        verdict = "difference shown" if ci.shows_difference else "no difference shown"
        print(f"  {metric:<14} {sa[src].mean()*100:6.1f}% vs {sb[src].mean()*100:6.1f}%  "
              f"diff {ci.diff*100:+5.1f} points, 95% CI [{ci.low*100:+.1f}, {ci.high*100:+.1f}]"
              f"  {verdict}")
    for name, r in ((args.a, a), (args.b, b)):  # what differs in the chunks themselves
        c = r.chunks
        print(f"  {name}: cut rate {r.cut_rate.value * 100:.1f}% ({r.cut_rate.cut} of "
              f"{r.cut_rate.blocks} table/pre blocks), {c.count:,} chunks, mean length "
              f"{c.mean_len:,.0f}, longest {c.max_len:,}, {c.under_30} under 30")
    return 0


def _compare_base(session: Session, revision: str) -> int:
    """The gate of every configured case against the code at `revision`, as `pytest
    --chunkeval-base REV` judges it: 0 no regression, 1 a regression or a failure here,
    EXIT_NOT_COMPARED when nothing could be compared."""
    from .gate.base import BaseRun, head, measuring_settings
    from .gate.outcome import decide
    from .plugin import format_summary
    from .report.comparison import compared_line

    run = BaseRun(session.config.root, revision, measuring_settings(session.config))
    try:
        evaluation = session.evaluation
        print(session.corpus_line, flush=True)
        side = run.side()
    except BaselineError as e:  # the revision could not be measured: nothing to compare
        print(f"chunkeval: not compared: {e}", file=sys.stderr)
        return EXIT_NOT_COMPARED
    finally:
        run.close()
    rows, new, failures = [], set(), 0
    whose = "this branch's" if head(session.config.root) else "this run's"
    for spec in session.query_specs():
        qs = session.query_set(spec)
        if not session.power(spec).gates:
            print(f"not gated: {session.power(spec).reason()}")
            continue
        for s in session.strategies:
            if s in side.failed:
                print(f"chunkeval: not compared: at {side.label}: {side.failed[s]}",
                      file=sys.stderr)
                continue
            for r in session.plan[s]:
                entry = side.baseline.entry(s, r, qs.name)
                same = baselines.key(s, r, qs.name) in side.same
                if entry is None and not same:
                    new.add(s)
                    continue
                try:
                    result = evaluation.result(s, r, spec)
                except StrategyFailed as e:
                    print(f"chunkeval: failed: {e}", file=sys.stderr)
                    failures += 1
                    continue
                if same:  # chunkeval's own code on both sides: one result
                    entry = BaselineEntry.from_result(result, evaluation.settings.complete_at)
                outcomes = decide(result, entry, evaluation.settings.complete_at,
                                  session.tolerance_for(s))
                rows.append({"strategy": s, "retriever": r, "query_set": qs.name,
                             "verdicts": [o.to_json() for o in outcomes],
                             "against": side.label, "documents": len(session.corpus),
                             "questions": len(qs), "whose": whose})
    if rows:
        print(compared_line(rows))
        print(format_summary(rows, session.config.alpha))
    if new:
        print(f"new since {side.label} (not gated): {', '.join(sorted(new))}")
    gone = sorted(set(side.strategies) - set(session.strategies))
    if gone:
        print(f"removed since {side.label}: {', '.join(gone)}")
    regressed = any(v["status"] == "regressed" for r in rows for v in r["verdicts"])
    if regressed or failures:
        return 1
    return 0 if rows or (new and not side.failed) else EXIT_NOT_COMPARED


# -- sweep ---------------------------------------------------------------------------------------


def _sweep(args) -> int:
    from . import adopt, sweep
    from .report import sweep_page

    session = _session(args)
    cfg = session.config
    out = _out_dir(args.out)
    sizes = sweep.parse_sizes(cfg.sweep_size, cfg.where["sweep_size"])
    overlaps = sweep.parse_overlaps(cfg.sweep_overlap, cfg.where["sweep_overlap"])
    spelled = list(cfg.retrievers) or ["bm25"]
    retrievers = session.listed_retrievers(spelled)
    against = cfg.sweep_against or (cfg.splitters[0] if cfg.splitters else None)
    # said before thousands of configurations are registered
    grid_size = len(sizes) * len(overlaps)
    halving = sweep.halving_on(cfg.sweep_halving, grid_size, cfg.where["sweep_halving"])
    sweep.check_size(grid_size, len(retrievers), len(session.query_specs()),
                     cfg.sweep_max_configurations, args.yes, halving)
    points, _ = sweep.prepare(cfg.sweep_strategy, sizes, overlaps, metric=cfg.sweep_metric,
                              holdout=cfg.sweep_holdout, against=against, root=cfg.root,
                              where={**cfg.where, "sweep_against": cfg.where["sweep_against"]
                                     if cfg.sweep_against else cfg.where["splitters"]})
    halving = sweep.halving_on(cfg.sweep_halving, len(points), cfg.where["sweep_halving"])
    print(session.corpus_line, flush=True)
    margin = cfg.sweep_margin if cfg.sweep_margin is not None else cfg.min_effect
    result = sweep.run(session, cfg.sweep_strategy, sizes, overlaps, retrievers=retrievers,
                       metric=cfg.sweep_metric, holdout=cfg.sweep_holdout, against=against,
                       margin=margin, spelled=spelled, halving=halving)
    try:
        patch, unadoptable = adopt.plan(
            result, cfg.root / "pyproject.toml" if cfg.configured else None), None
    except ConfigError as e:  # said, and the sweep's outputs written all the same
        patch, unadoptable = None, str(e)
    lines = patch.shown if patch else sweep.config_lines(result)
    data = result.to_json()
    # rendered first and swapped in together, as a run's outputs are
    cache.write_together(out, {
        "sweep.json": json.dumps(data, ensure_ascii=False) + "\n",
        "sweep.md": sweep.markdown(result, lines),
        "sweep.html": sweep_page.render(data, lines)})
    print(f"{len(result.points)} configurations x {len(retrievers)} retriever(s) x "
          f"{len(result.settings['query_sets'])} query set(s)")
    for line in sweep.summary_lines(result):
        print(line)
    failed = _report_failures(result.failures, None, kept="sweep.json")
    print(f"wrote {out / 'sweep.json'}, {out / 'sweep.html'}, {out / 'sweep.md'}")
    if not lines:
        print("\nnothing to adopt: no verdict recommends a configuration")
    else:
        print(f"\nto adopt the recommendation{f' (in {patch.path})' if patch else ''}:")
        print("\n".join(lines))
        if unadoptable:
            print(f"chunkeval: warning: {unadoptable}", file=sys.stderr)
        if args.adopt:
            if patch is None:
                raise ConfigError(unadoptable or "--adopt: no pyproject.toml with a "
                                  "[tool.chunkeval] table to write the recommendation to")
            backup = adopt.write(patch)
            print(f"adopted: wrote {patch.path} (the one before kept as {backup})")
    status = _report_problems(session.problems(), cfg.strict)
    return failed or status


# -- calibrate -----------------------------------------------------------------------------------


def _calibrate(args) -> int:
    session = _session(args)
    strategies.get(args.strategy)
    own = [n for names in session.retrievers.values() for n in names]
    rets = (session.plan_for([args.strategy])[args.strategy] if session.config.retrievers
            else list(dict.fromkeys([*CALIBRATION_RETRIEVERS, *own])))
    try:
        drops = [float(d) for d in args.drops.split(",") if d.strip()]
    except ValueError:
        raise ConfigError(f"--drops {args.drops!r}: expected comma-separated shares") from None
    if any(not 0 < d < 1 for d in drops) or args.trials < 1:
        raise ConfigError("--drops must lie in (0, 1) and --trials be >= 1")
    tol = session.tolerance
    if not 0 < tol.alpha < 1:
        raise ConfigError(f"{session.config.where['alpha']}: alpha must lie in (0, 1)")
    evaluation = session.evaluation
    if args.from_trials:
        trials = calibrate.read_trials(args.from_trials, args.strategy)
    else:
        trials = calibrate.run_trials(evaluation, args.strategy, rets, trials=args.trials,
                                      drops=drops, drop_trials=args.drop_trials)
    tables = {"bootstrap": calibrate.judge(trials, tol),
              "calibrated": calibrate.judge(trials, tol, calibrated=True)}
    text = "\n\n".join(calibrate.format_table(t) for t in tables.values())
    floors = calibrate.noise_floors(calibrate.harmless_diffs(trials))
    out = _out_dir(args.out)
    stem = f"calibration-{args.strategy}"
    if not args.from_trials:
        atomic_write(out / f"{stem}-trials.json", json.dumps(trials, ensure_ascii=False) + "\n")
    written = {**tables, "tolerance": tol.to_json(),
               "noise": {c: {m: n.to_json() for m, n in f.items()} for c, f in floors.items()}}
    atomic_write(out / f"{stem}.json", json.dumps(written, ensure_ascii=False, indent=1) + "\n")
    # a fence longer than any run of backticks in the names within: the block cannot end early
    fence = "`" * max(3, 1 + max((len(m) for m in re.findall("`+", text)), default=0))
    atomic_write(out / f"{stem}.md", f"{fence}\n{text}\n{fence}\n")
    print(text)
    print(f"\nwrote {out / (stem + '.json')}, {out / (stem + '.md')}"
          + ("" if args.from_trials else f", {out / (stem + '-trials.json')}"))
    if args.record:
        _record_noise(session, trials, floors)
    return _report_problems(session.problems(), session.config.strict)


def _record_noise(session: Session, trials: dict, floors: dict) -> None:
    path = session.baseline_path
    measured: dict[str, tuple[BaselineEntry, dict]] = {}
    for case, noise in floors.items():
        retriever, query_set = case.split("|", 1)
        entry = calibrate.entry_of(trials["baseline"][case], trials["complete_at"])
        measured[key(trials["strategy"], retriever, query_set)] = (entry, noise)
    written = record_noise(path, measured, identity=session.corpus_identity)
    print(f"recorded the noise floor of {len(written)} entries in {path}")


# -- init ----------------------------------------------------------------------------------------
# Folders that hold tools, not the project's documents.
SKIP_DIRS = {"node_modules", "venv", "env", "site-packages", "build", "dist", "__pycache__",
             "baselines", "chunkeval-results"}

EXAMPLE_SPLITTER = '''"""A splitter of this project's own, gated by chunkeval (see [tool.chunkeval] in
pyproject.toml). Edit it freely; `pytest` tells you whether retrieval got worse."""

from chunkeval import Chunk

SIZE = 800  # characters a chunk may hold, tables and code blocks aside
WHOLE = {"table", "pre"}  # blocks never cut: a table or code block is one chunk at most


def split(doc):
    """Pack blocks (paragraphs, list items, tables, code) into chunks of at most SIZE
    characters. A prose block longer than SIZE is cut into pieces of SIZE, at the last space
    before the size where there is one; a table or code block stays whole, however long."""
    chunks, start, end = [], None, None
    for block in doc.blocks:
        if start is not None and block.end - start > SIZE:
            chunks.append(Chunk(doc.id, start, end, doc.text[start:end]))
            start = None
        if block.end - block.start > SIZE and block.kind not in WHOLE:
            chunks.extend(_pieces(doc, block.start, block.end))
            continue
        if start is None:
            start = block.start
        end = block.end
    if start is not None:
        chunks.append(Chunk(doc.id, start, end, doc.text[start:end]))
    return chunks


def _pieces(doc, start, end):
    pieces = []
    while start < end:
        stop = min(start + SIZE, end)
        if stop < end:  # break after a space when the piece has one past its middle
            space = doc.text.rfind(" ", start + SIZE // 2, stop)
            stop = space + 1 if space != -1 else stop
        pieces.append(Chunk(doc.id, start, stop, doc.text[start:stop]))
        start = stop
    return pieces


# Promises whole tables and code blocks: chunkeval adds a cut-rate test and checks table rows.
split.keeps_structure = True
'''


def _find_docs(root: Path) -> tuple[Path | None, int]:
    """The folder below `root` holding the most documents chunkeval reads, and how many."""
    counts: Counter[Path] = Counter()
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS)
        here = Path(folder)
        if here == root:
            continue
        n = sum(1 for f in files if format_of(f) is not None)
        for parent in [here, *here.parents]:
            if parent == root:
                break
            counts[parent] += n
    if not counts or counts.most_common(1)[0][1] == 0:
        return None, 0
    # the deepest folder that still holds the most files: docs/html rather than docs
    best = max(counts.values())
    folder = max((p for p, n in counts.items() if n == best), key=lambda p: len(p.parts))
    return folder, best


def _init(args) -> int:
    root = Path.cwd()
    pyproject = root / "pyproject.toml"
    if config.read_section(pyproject) is not None:
        raise ConfigError(f"{pyproject} already has a {config.SECTION} section; edit it there")
    if args.docs:
        docs = Path(args.docs)
        if not docs.is_dir():
            raise ConfigError(f"--docs {args.docs}: not a directory")
        docs = docs.resolve()
    else:
        docs, n = _find_docs(root)
        if docs is None:
            raise ConfigError(f"no HTML, Markdown or text files in any folder below {root}; "
                             "pass --docs DIR")
        print(f"documents: {docs.relative_to(root)} ({n} files)")
    try:
        built = build_default_query_sets(load_corpus(str(docs)))
    except ChunkevalError as e:
        raise ConfigError(f"{docs}: {e}") from None
    # Every set that found queries is written, as the run would use it anyway: the file says
    # what the run does. Which of them gate is said here and in the file, from the same power.
    tol = verdict.DEFAULT_TOLERANCE  # the section's retrievers, every set: the widest family
    family = 3 * len(built) * len(tol.gated)
    sets = [qs.name for qs in built if len(qs)]
    notes = []  # (set, one line on whether it gates), for the terminal and the file
    gating = []
    for qs in built:
        power = set_power(qs.name, len(qs), alpha=tol.alpha, min_effect=tol.min_effect,
                          family=family)
        if power.gates:
            gating.append(qs.name)
        notes.append((qs.name, f"{len(qs)} queries; "
                      + (f"gates: catches a drop of {power.smallest_drop * 100:.0f} points "
                         "(4 times in 5)" if power.gates else
                         f"measured and shown, does not gate: catches only drops of "
                         f"{power.smallest_drop * 100:.0f} points or more (a gate needs "
                         f"{MIN_DETECTABLE * 100:.0f}, about {power.queries_needed} queries); "
                         "judged again from its baseline's spread once recorded")))
        print(f"query set {notes[-1][0]}: {notes[-1][1]}")
    example = root / f"{EXAMPLE_MODULE}.py"
    if args.example_splitter and example.exists():
        raise ConfigError(f"{example} exists; remove it or leave out --example-splitter")
    rel = os.path.relpath(docs, root)
    if rel in BUILTIN_CORPORA:  # a bare name would mean the built-in corpus
        rel = f"./{rel}"
    section = _section(rel, sets, args.example_splitter, notes)
    old = pyproject.read_text(encoding="utf-8") if pyproject.exists() else ""
    if args.example_splitter:
        atomic_write(example, EXAMPLE_SPLITTER)
        print(f"wrote {example.name}: a paragraph-packing splitter to start from")
    atomic_write(pyproject, old + ("\n" if old and not old.endswith("\n\n") else "") + section)
    print(f"wrote {config.SECTION} to {pyproject}")
    # A baseline update killed mid-write leaves a temporary file there: never to be committed.
    ignore_temporaries(root / baselines.DIRECTORY)
    print(f"wrote {baselines.DIRECTORY}/.gitignore (temporary files of baseline updates)")
    if not gating:
        print(("no built-in query set can gate on these documents" if sets else
               "no built-in query set found queries in these documents")
              + ": write your own questions as JSONL (id, query, doc, answer) and list the "
              "file in query_sets")
    print("next:\n  pytest --update-baselines   # record the baselines; commit baselines/\n"
          "  pytest                      # then every change is gated against them")
    if args.example_splitter:
        print(f"then try one change the gate catches: set SIZE = {EXPERIMENT_SIZE} in "
              f"{example.name} and run `pytest`: the chunks get too small to hold an answer, and "
              "test_recall[split-...] fails with the drop in points")
    return 0


def _section(docs: str, sets: list[str], example: bool,
             notes: list[tuple[str, str]]) -> str:
    def toml_list(items) -> str:
        return "[" + ", ".join(json.dumps(i) for i in items) + "]"

    splitters = (f"splitters = {toml_list([EXAMPLE_MODULE + ':split'])}" if example
                 else '# splitters = ["mychunker:split"]')
    query_sets = (f"query_sets = {toml_list(sets)}" if sets
                  else '# query_sets = ["questions.jsonl"]')
    judged = "".join(f"#   {name}: {note}\n" for name, note in notes)
    return f"""[tool.chunkeval]
# Your documents: a folder of HTML, Markdown or text files, relative to this file.
corpus = {json.dumps(docs)}
# Questions to retrieve answers for: built-in builders (faq-headings, faq-qa,
# section-titles) or JSONL files of your own ({{"id", "query", "doc", "answer"}} a line).
# As `chunkeval init` found them:
{judged}{query_sets}
# Your splitters, as MODULE:ATTR importable from this folder: each gets metric, cut-rate
# and invariant tests, gated against the baselines in baselines/.
{splitters}
# Built-in strategies gated next to yours, as a yardstick (`chunkeval strategies` lists all).
reference = {toml_list(strategies.REFERENCE)}
# Retrievers the chunks are searched with: bm25, lsa, hybrid.
retrievers = ["bm25", "lsa", "hybrid"]
# k = {DEFAULTS.k}              # chunks handed per query (Recall@k)
# budget = {DEFAULTS.budget}      # context budget in characters (budget recall)
# min_effect = {config.BY_NAME["min_effect"].default:g}  # a drop smaller than this ({config.BY_NAME["min_effect"].default * 100:g} points) never fails
# strict = false     # true: problems in the documents or query files fail the run
"""


if __name__ == "__main__":
    sys.exit(main())
