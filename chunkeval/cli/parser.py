"""The command line's parser: every option that is a setting comes from config.SETTINGS, so the
commands, the pytest plugin and `[tool.chunkeval]` share its names, help and defaults.

Building it, and `--help`, imports nothing that evaluating needs."""

from __future__ import annotations

import argparse
import os

from .. import __version__, config, export
from ..corpus import DEFAULT_CORPUS
from ..corpus.debian import BUILTIN_CORPORA
from ..executors import EXECUTORS
from ..gate import calibrate
from ..queries import generate, imports


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
EXPORT_OUT = "chunkeval-export"
VERIFIED_CASES = 3  # cache verify evaluates this many cases again, without any cache


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
                          description=f"Read {imports.described()}, locate "
                                      "each excerpt in the corpus and write chunkeval's JSONL "
                                      "with spans. A question whose excerpts lie in several "
                                      "documents goes to the one holding most of them.")
    imp.add_argument("format", choices=imports.FORMATS)
    imp.add_argument("files", nargs="+", metavar="FILE",
                     help="the questions (for beir: the folder, or its files)")
    imp.add_argument("--strict", action="store_true", default=None,
                     help="fail, writing nothing, when any row is skipped")
    queries_options(imp)
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
    gen.add_argument("--seed", type=int, default=generate.SEED, metavar="S",
                     help=f"seed of the section order (default {generate.SEED})")
    queries_options(gen)

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
    exp.add_argument("--out", default=EXPORT_OUT, metavar="DIR",
                     help=f"where the files go (default: {EXPORT_OUT})")

    cmp_ = sub.add_parser("compare", help="paired bootstrap difference of two strategies on the "
                                          "same queries; with --base REV, the gate of every "
                                          "configured case against the code at a git revision")
    cmp_.add_argument("a", nargs="?", help="strategy A")
    cmp_.add_argument("b", nargs="?", help="strategy B")
    cmp_.add_argument("--results", metavar="results.json",
                      help="take both from an earlier run instead of computing them")
    cmp_.add_argument("--retriever", dest="compared_retriever", default=config.ONE_RETRIEVER,
                      metavar="NAME|MODULE:ATTR",
                      help="bm25, lsa, hybrid, use, hybrid-use, or an outside retriever "
                           f"(registered first); default {config.ONE_RETRIEVER}")
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
                                    "that the questions cannot tell. Grids over "
                                    f"{config.HALVING_FROM} configurations are narrowed by "
                                    "successive halving first "
                                    "(a sample of the questions drops only those it shows "
                                    "worse than its leader by more than the margin). "
                                    "Settings also in [tool.chunkeval.sweep]; retrievers "
                                    f"default to {config.ONE_RETRIEVER} unless --retrievers or "
                                    "[tool.chunkeval] retrievers names others.")
    config.add_options(sw, "sweep")
    sw.add_argument("--out", default=SWEEP_OUT, metavar="DIR",
                    help=f"where sweep.json, sweep.html and sweep.md go (default: {SWEEP_OUT})")
    sw.add_argument("--yes", action="store_true",
                    help="run a grid larger than max_configurations (default "
                         f"{config.BY_NAME['sweep_max_configurations'].default})")
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
    cache_.add_argument("--sample", type=int, default=VERIFIED_CASES, metavar="N",
                        help="verify: the cases (strategy x retriever x query set) evaluated "
                             "again without any cache, evenly spread, the query sets that "
                             f"gate first (default: {VERIFIED_CASES}; 0: only read the stored "
                             "entries)")
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
                                     f"default to {', '.join(config.LEXICAL_RETRIEVERS)} and your "
                                     "outside ones (--retriever) unless --retrievers or "
                                     "[tool.chunkeval] retrievers names others.")
    cal.add_argument("strategy", help="the strategy to calibrate")
    config.add_options(cal, "calibrate")
    cal.add_argument("--trials", type=int, default=calibrate.TRIALS, metavar="N",
                     help=f"harmless variants (random phase shifts; default {calibrate.TRIALS})")
    cal.add_argument("--drops", default=",".join(map(str, calibrate.DROPS)), metavar="SHARES",
                     help="shares of each chunk's text dropped by the degraded variants "
                          f"(default {','.join(map(str, calibrate.DROPS))})")
    cal.add_argument("--drop-trials", type=int, default=calibrate.DROP_TRIALS, metavar="N",
                     help=f"degraded variants per share (default {calibrate.DROP_TRIALS})")
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


def queries_options(parser: argparse.ArgumentParser) -> None:
    corpus = config.BY_NAME["corpus"]
    parser.add_argument("--corpus", metavar=corpus.metavar,
                        help=f"{corpus.help}{corpus.shown_default}; also [tool.chunkeval] corpus")
    parser.add_argument("--out", required=True, metavar="FILE.jsonl",
                        help="the JSONL query set to write (replaced whole)")
    parser.add_argument("--verbose", action="store_true",
                        help="also list each excerpt found more than once and placed at its "
                             "first copy")
