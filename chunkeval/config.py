"""The one configuration, shared by the CLI and the pytest plugin: settings, nothing else.

Every setting is a row of SETTINGS, which drives the chunkeval commands' options, the pytest
options and ini keys and the `[tool.chunkeval]` keys alike. A value can be given in three
places; the first that has it wins:

1. the command line (`chunkeval run --corpus docs`, `pytest --chunkeval-corpus docs`);
2. a pytest ini setting with the same name (`chunkeval_corpus = docs`; pytest only);
3. `[tool.chunkeval]` in the project's pyproject.toml (`corpus = "docs"`).

Each default is defined once, with the type that uses it (results.Settings, the gate's
Tolerance, the corpus and strategy modules), and only named here. The project root is the
folder of that pyproject.toml (for pytest: its rootdir). Paths written in a file are relative
to the root, paths given on a command line to the working directory, and modules named as
`module:attr` import from the root without any path setting. What the settings select - the
corpus, the strategies, the retrievers - is resolved by session.py.
"""

from __future__ import annotations

import argparse
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .corpus import DEFAULT_CORPUS, MAX_DOCUMENT_MB
from .corpus.debian import BUILTIN_CORPORA
from .errors import ConfigError, InputError, UnknownName
from .gate.baselines import DIRECTORY as BASELINES
from .gate.verdict import DEFAULT_TOLERANCE as TOLERANCE
from .invariants import GENERATED_EXAMPLES
from .queries import BUILDERS
from .results import DEFAULTS, MAX_K
from .store import CHUNKS_LIMIT_MB, CHUNKS_LIMIT_VAR, RESULTS_LIMIT_MB, RESULTS_LIMIT_VAR
from .strategies import REFERENCE

SECTION = "[tool.chunkeval]"
# The chunkeval commands that read a corpus and its query sets.
EVALUATING = ("info", "run", "compare", "calibrate", "sweep")
# `sweep_halving = "auto"` halves a grid of more configurations than this
HALVING_FROM = 60


@dataclass(frozen=True)
class Setting:
    name: str  # the key in [tool.chunkeval]; `chunkeval_<name>` in ini, --chunkeval-<name> in pytest
    kind: str  # str | list | int | count | float | size | bool | path | paths | grid
    default: Any
    help: str
    cli: str | None = None  # the chunkeval commands' option, where they have one
    commands: tuple[str, ...] = ()  # the chunkeval commands that take that option
    metavar: str | None = None
    adds: bool = False  # values from every place are joined, not overridden
    flag: bool = True  # has a pytest option; False: ini and [tool.chunkeval] only
    table: str | None = None  # read from [tool.chunkeval.<table>] as `key`, not from ini
    most: int | None = None  # the largest value an int setting takes

    @property
    def key(self) -> str:
        """Its key in [tool.chunkeval] (or in its own table there)."""
        return self.name.removeprefix(f"{self.table}_") if self.table else self.name

    @property
    def pytest_option(self) -> str:
        # a switch that is on by default is given to turn it off
        off = "no-" if self.kind == "bool" and self.default is True else ""
        return "--chunkeval-" + off + self.name.replace("_", "-")

    @property
    def ini(self) -> str:
        return "chunkeval_" + self.name

    @property
    def shown_default(self) -> str:
        if self.default in (None, [], (), "") or self.kind == "bool":
            return ""
        value = (", ".join(map(str, self.default)) if isinstance(self.default, (list, tuple))
                 else f"{self.default:g}" if isinstance(self.default, float) else self.default)
        return f" (default: {value})"


SETTINGS: tuple[Setting, ...] = (
    Setting("corpus", "path", DEFAULT_CORPUS,
            f"the corpus: {' or '.join(BUILTIN_CORPORA)} (built in: Debian's manuals in "
            "Japanese or English, fetched and cached) or a directory of your HTML, Markdown "
            "and text documents", cli="--corpus", commands=(*EVALUATING, "cache"),
            metavar="NAME|DIR"),
    Setting("query_sets", "paths", [],
            f"query sets: builder names ({', '.join(BUILDERS)}) or JSONL files (id, query, doc, "
            "answer|answers|spans); default: every builder that yields queries on the corpus",
            cli="--queries", commands=(*EVALUATING, "cache"), metavar="NAME|FILE"),
    Setting("strategies", "list", [],
            "strategies to evaluate and gate: built-in names, MODULE:ATTR splitters and "
            "chonkie:Class(key=value, ...) specs, comma-separated; default: every strategy on the built-in corpus, and on your "
            "corpus the splitters plus the reference strategies", cli="--strategies",
            commands=("run", "cache"), metavar="NAMES"),
    Setting("splitters", "list", [],
            "outside splitters to register, as MODULE:ATTR (imported from the project root) "
            "or chonkie:Class(key=value, ...); "
            "joined from every place they are given", cli="--splitter", adds=True,
            commands=(*EVALUATING, "strategies", "cache"), metavar="MODULE:ATTR"),
    Setting("reference", "list", list(REFERENCE),
            "built-in strategies gated next to your splitters on your own corpus"),
    Setting("retrievers", "list", [],
            "retrievers to search the chunks with: names (bm25, lsa, hybrid, use, hybrid-use) "
            "and MODULE:ATTR, comma-separated; default: every installed one (use and "
            "hybrid-use on three reference strategies only) and your outside retrievers",
            cli="--retrievers", commands=("run", "calibrate", "sweep", "cache"), metavar="NAMES"),
    Setting("outside_retrievers", "list", [],
            "your retrievers, as MODULE:ATTR (an embedding function texts -> array [n, d], or "
            "a Retriever), imported from the project root; they join the default set",
            cli="--retriever", adds=True, commands=("run", "calibrate", "sweep", "cache"),
            metavar="MODULE:ATTR"),
    Setting("analyzer", "str", DEFAULTS.analyzer,
            "BM25/LSA terms: auto (from the corpus's language), char2, word or word+stem",
            cli="--analyzer", commands=("info", "run", "compare", "calibrate", "sweep",
                                           "cache"),
            metavar="NAME"),
    Setting("k", "int", DEFAULTS.k, f"chunks handed per query (Recall@k, doc hit@k), at most "
            f"{MAX_K:,}", cli="--k", commands=("run", "sweep"), metavar="K", most=MAX_K),
    Setting("budget", "int", DEFAULTS.budget,
            "context budget for budget recall, in characters (or in the units of `length`)",
            cli="--budget", commands=("run", "sweep"), metavar="N"),
    Setting("length", "str", DEFAULTS.length,
            "how chunk lengths and the context budget are measured: chars, or MODULE:ATTR, a "
            "callable text -> int such as a tokenizer's count", cli="--length",
            commands=(*EVALUATING, "cache"), metavar="chars|MODULE:ATTR"),
    Setting("coverage", "str", DEFAULTS.coverage,
            "how gold given as spans is scored: auto and positional count a gold character only "
            "in a retrieved chunk whose range holds it; text finds its shingles anywhere in the "
            "gold document (the rule for text gold)", cli="--coverage",
            commands=(*EVALUATING, "cache"), metavar="auto|positional|text"),
    Setting("max_queries", "int", DEFAULTS.max_queries,
            f"sample at most this many queries per set (seed {DEFAULTS.seed})",
            cli="--max-queries", commands=(*EVALUATING, "cache"), metavar="N"),
    Setting("max_document_mb", "size", float(MAX_DOCUMENT_MB),
            "skip, with a warning, any document larger than this many MB, as read or once "
            "decompressed", cli="--max-document-mb", commands=(*EVALUATING, "cache"),
            metavar="MB"),
    Setting("baselines", "path", BASELINES, "directory of the baseline files"),
    Setting("base", "str", None,
            "gate against a git revision (a branch, tag, origin/main, commit) instead of the "
            "baseline file: its splitters, retrievers and configuration run on this run's "
            "corpus and questions, and the two are compared query by query",
            cli="--base", commands=("compare",), metavar="REV"),
    Setting("min_effect", "float", TOLERANCE.min_effect,
            "smallest drop of a mean metric (0-1) that counts as a regression "
            f"({TOLERANCE.min_effect:g}: {TOLERANCE.min_effect * 100:g} points)",
            cli="--min-effect", commands=("calibrate",), metavar="SHARE"),
    Setting("alpha", "float", TOLERANCE.alpha,
            "family-wise false-alarm level: the chance that a harmless change fails any of a "
            "strategy's gated comparisons (sweep: of the best against the others)",
            cli="--alpha", commands=("calibrate", "sweep"),
            metavar="LEVEL"),
    Setting("gate", "list", list(TOLERANCE.gated),
            "gated metrics, under one family-wise bound; the others (mrr_at_k, ndcg_at_k) are "
            "reported only", cli="--gate", commands=("calibrate",), metavar="METRICS"),
    Setting("cut_ceiling", "float", TOLERANCE.cut_ceiling,
            "absolute ceiling on the cut rate of strategies that keep structure"),
    Setting("invariant_examples", "count", GENERATED_EXAMPLES,
            "generated documents (hypothesis) the invariant test checks each of your splitters "
            "on, after every document of the corpus; 0: the corpus's documents only"),
    Setting("strict", "bool", False,
            "fail when any input file or query line had a problem", cli="--strict",
            commands=EVALUATING),
    Setting("json", "path", None, "also write the pytest summary as JSON here, with the "
            "per-query comparison of each case"),
    Setting("html", "path", None, "also write the comparison with the baseline as an HTML "
            "page here: verdicts and every query's coverage before and now"),
    Setting("markdown", "path", None, "also write the verdict as Markdown here, for a "
            "pull-request comment or any CI's summary (with $GITHUB_STEP_SUMMARY set, it is "
            "appended there too)"),
    Setting("result_cache", "bool", True,
            "reuse results of earlier runs whose chunks, retriever, query set and settings are "
            "the same, and chunks of unchanged strategies (kept in the cache, least recently "
            f"used dropped past ${RESULTS_LIMIT_VAR}, default {RESULTS_LIMIT_MB}, and "
            f"${CHUNKS_LIMIT_VAR}, default {CHUNKS_LIMIT_MB}); false: chunk and evaluate "
            "everything, store nothing",
            cli="--no-result-cache", commands=("run", "compare", "calibrate", "sweep")),
    Setting("cache", "bool", True,
            "use chunkeval's caches (parsed corpora, chunks of its own strategies, embeddings, "
            "results); false: compute everything and keep nothing, e.g. to check a verdict",
            cli="--no-cache", commands=(*EVALUATING, "sweep")),
    Setting("shard", "str", None,
            "run only shard I of N (I/N, e.g. 2/4) of the strategy x query set work, split "
            "evenly by cost; `chunkeval merge` joins the shards' results", cli="--shard",
            commands=("run",), metavar="I/N"),
    Setting("shard_timings", "path", None,
            "a results.json of an earlier run whose measured seconds balance the shards "
            "(default: estimated from corpus size and strategy family)", cli="--shard-timings",
            commands=("run",), metavar="results.json"),
    Setting("items", "bool", True,
            "with a [tool.chunkeval] section, add chunkeval's own test items to the pytest run "
            "(false: only the tests you write with the fixtures)", flag=False),
    # `chunkeval sweep`, [tool.chunkeval.sweep]
    Setting("sweep_strategy", "str", "recursive",
            "the strategy swept: a built-in family (fixed, recursive, structure), maybe with "
            "fixed parameters (structure(prefix=true)), chonkie:Class, or your factory "
            "MODULE:ATTR, called as ATTR(size=..., overlap=...)", cli="--strategy",
            commands=("sweep",), metavar="SPEC", flag=False, table="sweep"),
    Setting("sweep_size", "grid", "200:2000:200",
            "sizes: START:STOP:STEP (STOP included), or a list", cli="--size",
            commands=("sweep",), metavar="SIZES", flag=False, table="sweep"),
    Setting("sweep_overlap", "grid", "0",
            "overlaps: a value under 1 is a share of the size, 1 or more a count",
            cli="--overlap", commands=("sweep",), metavar="OVERLAPS", flag=False, table="sweep"),
    Setting("sweep_metric", "str", "budget_recall",
            "the metric the best is chosen and judged by: budget_recall (under the budget) or "
            "recall_at_k (top k)", cli="--metric", commands=("sweep",), metavar="METRIC",
            flag=False, table="sweep"),
    Setting("sweep_holdout", "float", None,
            "choose on the rest and judge on this share of the queries (at least 30 of them)",
            cli="--holdout", commands=("sweep",), metavar="SHARE", flag=False, table="sweep"),
    Setting("sweep_against", "str", None,
            "your current splitter (MODULE:ATTR, a factory with its parameters, or a built-in "
            "name or spec), compared with the recommendation; default: the first of "
            "`splitters`", cli="--against", commands=("sweep",), metavar="SPEC", flag=False,
            table="sweep"),
    Setting("sweep_margin", "float", None,
            "a configuration is as good as the best when its family-wise lower bound against "
            "the best is above minus this share (default: min_effect, "
            f"{TOLERANCE.min_effect:g} = {TOLERANCE.min_effect * 100:g} points)",
            cli="--margin", commands=("sweep",), metavar="SHARE", flag=False, table="sweep"),
    Setting("sweep_max_configurations", "int", 200,
            "a larger grid is refused unless --yes is given (it says what it would cost)",
            cli="--max-configurations", commands=("sweep",), metavar="N", flag=False,
            table="sweep"),
    Setting("sweep_halving", "str", "auto",
            "successive halving on nested samples of the queries: auto (grids of more than "
            f"{HALVING_FROM} configurations), on or off", cli="--halving", commands=("sweep",),
            metavar="auto|on|off", flag=False, table="sweep"),
)
BY_NAME = {s.name: s for s in SETTINGS}
# The `retrievers` default of the commands that search with fewer than every installed
# retriever: compare and sweep with one, calibrate (and init's section) with the built-in
# lexical ones, which need nothing more installed.
ONE_RETRIEVER = "bm25"
LEXICAL_RETRIEVERS = ("bm25", "lsa", "hybrid")


def add_options(parser: argparse.ArgumentParser, command: str) -> None:
    """A chunkeval command's options, from SETTINGS. Each defaults to None (not given), so
    that [tool.chunkeval] and the defaults apply underneath (see `load`)."""
    for s in SETTINGS:
        if command not in s.commands:
            continue
        also = f"[tool.chunkeval.{s.table}] {s.key}" if s.table else f"[tool.chunkeval] {s.name}"
        if s.kind == "bool":
            off = "turn off (default on): " if s.default else ""
            parser.add_argument(s.cli, dest=s.name, action="store_const", const=not s.default,
                                help=f"{off}{s.help}; also {also}")
        else:
            many = s.adds or s.kind == "paths"
            parser.add_argument(s.cli, dest=s.name, metavar=s.metavar,
                                action="append" if many else "store",
                                help=f"{s.help}{' (repeatable)' if many else ''}"
                                     f"{s.shown_default}; also {also}")


def given(args: argparse.Namespace) -> dict[str, Any]:
    """The settings a chunkeval command line gave (None: not given)."""
    return {s.name: getattr(args, s.name, None) for s in SETTINGS if s.cli}


def find_pyproject(start: Path | None = None) -> Path | None:
    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        if (d / "pyproject.toml").is_file():
            return d / "pyproject.toml"
    return None


def read_section(pyproject: Path | None) -> dict | None:
    """`[tool.chunkeval]` of the file, or None when the file or the table is absent."""
    if pyproject is None or not pyproject.is_file():
        return None
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise InputError(str(pyproject), f"not valid TOML: {e}") from None
    section = data.get("tool", {}).get("chunkeval")
    if section is not None and not isinstance(section, dict):
        raise InputError(str(pyproject), f"{SECTION} must be a table")
    return section


@dataclass(frozen=True)
class Config:
    root: Path
    values: dict[str, Any]
    where: dict[str, str]  # setting -> where its value came from, for messages
    configured: bool  # the project has a [tool.chunkeval] section

    def __getattr__(self, name: str) -> Any:
        try:
            return self.values[name]
        except KeyError:
            raise AttributeError(name) from None

    @property
    def builtin_corpus(self) -> bool:
        return self.corpus in BUILTIN_CORPORA


def known(chosen, names, where: str, what: str, hint: str = "") -> list[str]:
    """`chosen`, when every name in it is one of `names`; else UnknownName saying where."""
    for c in chosen:
        if c not in names:
            raise UnknownName(what, c, names, where, hint)
    return list(chosen)


def load(root: Path | None = None, command_line: dict[str, Any] | None = None,
         ini: Callable[[str], Any] | None = None, pyproject: Path | None = None) -> Config:
    """Resolve every setting. `command_line` holds the options given (None: not given),
    `ini` reads a pytest ini value (None or empty: not set); with `ini`, messages name the
    pytest options, else the chunkeval command's."""
    if pyproject is None:
        pyproject = (root / "pyproject.toml") if root is not None else find_pyproject()
    if root is None:
        root = pyproject.parent if pyproject is not None else Path.cwd()
    root = Path(root).resolve()
    section = read_section(pyproject)
    plain = [s.name for s in SETTINGS if not s.table]
    tables = {s.table for s in SETTINGS if s.table}
    unknown = sorted(set(section or ()) - set(plain) - tables)
    if unknown:
        raise ConfigError(f"{pyproject} {SECTION}: unknown key(s) {', '.join(unknown)}; "
                          f"known: {', '.join(plain)}")
    for table in sorted(tables & set(section or ())):
        keys = [s.key for s in SETTINGS if s.table == table]
        if not isinstance(section[table], dict):
            raise ConfigError(f"{pyproject} [tool.chunkeval.{table}]: must be a table")
        unknown = sorted(set(section[table]) - set(keys))
        if unknown:
            raise ConfigError(f"{pyproject} [tool.chunkeval.{table}]: unknown key(s) "
                              f"{', '.join(unknown)}; known: {', '.join(keys)}")
    values, where = {}, {}
    for s in SETTINGS:
        found = []  # (raw value, where, what relative paths are relative to)
        given = (command_line or {}).get(s.name)
        if _set(given):
            option = s.pytest_option if ini is not None or not s.cli else s.cli
            found.append((given, f"option {option}", Path.cwd()))
        if ini is not None and not s.table and _set(value := ini(s.ini)):
            found.append((value, f"ini setting {s.ini}", root))
        if s.table and section is not None and s.key in section.get(s.table, {}):
            found.append((section[s.table][s.key],
                          f"{pyproject} [tool.chunkeval.{s.table}] {s.key}", root))
        elif not s.table and section is not None and s.name in section:
            found.append((section[s.name], f"{pyproject} {SECTION} {s.name}", root))
        if not found:
            found.append((s.default, f"default {s.name}", root))
        if s.adds:
            values[s.name] = tuple(dict.fromkeys(
                v for raw, place, base in found for v in _convert(s, raw, place, base)))
        else:
            values[s.name] = _convert(s, *found[0])
        where[s.name] = " and ".join(place for _, place, _ in found) if s.adds else found[0][1]
    return Config(root, values, where, configured=section is not None)


def _set(value: Any) -> bool:
    return value is not None and value != [] and value != ""


def _convert(s: Setting, raw: Any, where: str, base: Path | None) -> Any:
    def fail(expected: str):
        raise ConfigError(f"{where}: expected {expected}, got {raw!r}")

    kind = s.kind
    if kind == "grid":  # a sweep's sizes or overlaps: "100:2000:100", "0,0.1", or a list
        items = raw if isinstance(raw, (list, tuple)) else [raw]
        if not items or not all(isinstance(i, (str, int, float)) and not isinstance(i, bool)
                                for i in items):
            fail("a range START:STOP:STEP or a list of numbers")
        return ",".join(str(i) for i in items)
    if kind in ("list", "paths"):
        items = [raw] if isinstance(raw, str) else raw
        if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) for i in items):
            fail("a list of names")
        items = [p.strip() for i in items for p in split_list(i) if p.strip()]
        if kind == "paths":
            items = [_path(i, base) for i in items]
        return tuple(dict.fromkeys(items))
    if kind == "bool":
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and raw.lower() in ("true", "1", "yes", "false", "0", "no"):
            return raw.lower() in ("true", "1", "yes")
        fail("true or false")
    if kind in ("int", "count"):  # count: 0 allowed
        if isinstance(raw, float) and not raw.is_integer():
            fail("a whole number")  # int() would cut 2.7 down to 2 without a word
        try:
            value = int(raw)
        except (TypeError, ValueError):
            fail("a whole number")
        least = 0 if kind == "count" else 1
        if isinstance(raw, bool) or value < least:
            fail(f"a whole number of at least {least}")
        if s.most is not None and value > s.most:
            fail(f"a whole number of at most {s.most:,}")
        return value
    if raw is None:
        return None
    if kind in ("size", "float"):  # size: any positive number; float: a share, 0 to 1
        try:
            value = float(raw)
        except (TypeError, ValueError):
            fail("a number")
        ok = value > 0 if kind == "size" else 0 <= value <= 1
        if isinstance(raw, bool) or not math.isfinite(value) or not ok:
            fail("a positive number" if kind == "size" else "a number from 0 to 1")
        return value
    if not isinstance(raw, str) or not raw.strip():
        fail("a name or a path")
    return _path(raw, base) if kind == "path" else raw


def split_list(text: str) -> list[str]:
    """`text` cut at its commas, except those inside brackets (and the quotes within them):
    a spec such as chonkie:TokenChunker(chunk_size=400, chunk_overlap=40) stays one item.
    Unbalanced brackets cut at every comma, as plain names and paths always were."""
    items, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif depth and ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth < 0:
                return text.split(",")
        elif ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    if depth or quote:
        return text.split(",")
    items.append(text[start:])
    return items


def _path(value: str, base: Path | None) -> str:
    """A file or folder value made absolute against where it was written; names of built-in
    corpora and query-set builders stay names."""
    if base is None or value in BUILTIN_CORPORA or value in BUILDERS or Path(value).is_absolute():
        return value
    return str((base / value).resolve())


REFERENCE_INTRO = """\
# Configuration reference

One set of settings, read by the chunkeval commands and the pytest plugin alike. Each can be
given on the command line, as a pytest ini setting `chunkeval_KEY`, or as `KEY` in
`[tool.chunkeval]` of the nearest `pyproject.toml`; the first of these that has it wins
(`splitters` and `outside_retrievers` are joined from all three). Paths written in a file are
relative to that file's folder; paths on a command line to the working directory. The keys
shown as `sweep.KEY` live in a table of their own, `[tool.chunkeval.sweep]`
(`size = "100:2000:100"`).

This page is generated from the settings table in `chunkeval/config.py`
(`python -m chunkeval.config > docs/configuration.md`); a test keeps the two equal.
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def reference_markdown() -> str:
    """docs/configuration.md: one row per setting, from SETTINGS, so the reference cannot
    drift from the options the commands and pytest accept."""
    rows = ["| key | `chunkeval` option (commands) | pytest option or ini key | default | what it is |",
            "|---|---|---|---|---|"]
    for s in SETTINGS:
        key = f"{s.table}.{s.key}" if s.table else s.name
        cli = f"`{s.cli}` ({', '.join(dict.fromkeys(s.commands))})" if s.cli else "—"
        pytest = (f"`{s.pytest_option}`, `{s.ini}`" if s.flag
                  else "—" if s.table else f"`{s.ini}` (ini only)")
        default = s.shown_default.removeprefix(" (default: ").removesuffix(")")
        if s.kind == "bool":
            default = "true" if s.default else "false"
        rows.append(f"| `{key}` | {cli} | {pytest} | {_cell(f'`{default}`' if default else '—')} "
                    f"| {_cell(s.help)} |")
    return REFERENCE_INTRO + "\n" + "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(reference_markdown(), end="")
