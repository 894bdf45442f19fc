"""The one configuration, shared by the CLI and the pytest plugin.

Every setting is a row of SETTINGS. It can be given in three places; the first that has it wins:

1. the command line (`chunkeval run --corpus docs`, `pytest --chunkeval-corpus docs`);
2. a pytest ini setting with the same name (`chunkeval_corpus = docs`; pytest only);
3. `[tool.chunkeval]` in the project's pyproject.toml (`corpus = "docs"`).

The project root is the folder of that pyproject.toml (for pytest: its rootdir). Paths written
in a file are relative to the root, paths given on a command line to the working directory,
and modules named as `module:attr` import from the root without any path setting.
"""

from __future__ import annotations

import math
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .model import InputError

SECTION = "[tool.chunkeval]"
BUILTIN_CORPORA = ("debian-ja", "debian-en")  # defined in corpus.py; named here to resolve settings
DEFAULT_CORPUS = "debian-ja"
# What an outside corpus is gated on besides the project's own splitters: two built-ins that
# bracket the usual choice (plain windows, structure-aware), as a yardstick in the report.
REFERENCE = ("fixed-400", "structure-400")


@dataclass(frozen=True)
class Setting:
    name: str  # the key in [tool.chunkeval]; `chunkeval_<name>` in ini, --chunkeval-<name> in pytest
    kind: str  # str | list | int | float | bool | path | paths
    default: Any
    help: str
    cli: str | None = None  # the chunkeval command's own option, where it has one
    adds: bool = False  # values from every place are joined, not overridden
    flag: bool = True  # has a pytest option; False: ini and [tool.chunkeval] only

    @property
    def pytest_option(self) -> str:
        # a switch that is on by default is given to turn it off
        off = "no-" if self.kind == "bool" and self.default is True else ""
        return "--chunkeval-" + off + self.name.replace("_", "-")

    @property
    def ini(self) -> str:
        return "chunkeval_" + self.name


SETTINGS: tuple[Setting, ...] = (
    Setting("corpus", "path", DEFAULT_CORPUS,
            "the corpus: 'debian-ja' (built in: Debian's Japanese manuals, fetched and cached) "
            "or a directory of your documents", cli="--corpus"),
    Setting("query_sets", "paths", [],
            "query sets: builder names (faq-headings, faq-qa, section-titles) or JSONL files "
            "(id, query, doc, answer); default: every builder that yields queries on the "
            "corpus", cli="--queries"),
    Setting("strategies", "list", [],
            "strategies to evaluate and gate: built-in names and MODULE:ATTR splitters; "
            "default: every strategy on the built-in corpus, and on your corpus the splitters "
            "plus the reference strategies", cli="--strategies"),
    Setting("splitters", "list", [],
            "outside splitters to register, as MODULE:ATTR (imported from the project root); "
            "joined from every place they are given", cli="--splitter", adds=True),
    Setting("reference", "list", list(REFERENCE),
            "built-in strategies gated next to your splitters on your own corpus "
            f"(default: {', '.join(REFERENCE)})"),
    Setting("retrievers", "list", [],
            "retrievers to search the chunks with: names (bm25, lsa, hybrid, use, hybrid-use) "
            "and MODULE:ATTR; default: every installed one (use and hybrid-use on three "
            "reference strategies only) and your outside retrievers", cli="--retrievers"),
    Setting("outside_retrievers", "list", [],
            "your retrievers, as MODULE:ATTR (an embedding function texts -> array [n, d], or "
            "a Retriever), imported from the project root; they join the default set",
            cli="--retriever", adds=True),
    Setting("analyzer", "str", "auto",
            "BM25/LSA terms: auto (from the corpus's language), char2, word or word+stem",
            cli="--analyzer"),
    Setting("k", "int", 5, "chunks handed per query (Recall@k, doc hit@k)", cli="--k"),
    Setting("budget", "int", 2000, "context budget for budget recall, in characters (or in "
            "the units of `length`)",
            cli="--budget"),
    Setting("length", "str", "chars",
            "how chunk lengths and the context budget are measured: chars, or MODULE:ATTR, a "
            "callable text -> int such as a tokenizer's count", cli="--length"),
    Setting("max_queries", "int", 800, "sample at most this many queries per set (seed 0)",
            cli="--max-queries"),
    Setting("max_document_mb", "size", 20.0,
            "skip, with a warning, any document larger than this many MB, as read or once "
            "decompressed", cli="--max-document-mb"),
    Setting("baselines", "path", "baselines", "directory of the baseline files"),
    Setting("min_effect", "float", 0.02,
            "smallest drop of a mean metric (0-1) that counts as a regression (0.02: 2 points)"),
    Setting("alpha", "float", 0.05,
            "family-wise false-alarm level: the chance that a harmless change fails any of a "
            "strategy's gated comparisons"),
    Setting("gate", "list", ["recall_at_k", "budget_recall", "complete_rate", "doc_hit_at_k"],
            "gated metrics, under one family-wise bound; the others (mrr_at_k, ndcg_at_k) are "
            "reported only"),
    Setting("cut_ceiling", "float", 0.25,
            "absolute ceiling on the cut rate of strategies that keep structure"),
    Setting("strict", "bool", False,
            "fail when any input file or query line had a problem", cli="--strict"),
    Setting("json", "path", None, "also write the pytest summary as JSON here, with the "
            "per-query comparison of each case"),
    Setting("html", "path", None, "also write the comparison with the baseline as an HTML "
            "page here: verdicts and every query's coverage before and now"),
    Setting("result_cache", "bool", True,
            "reuse results of earlier runs whose chunks, retriever, query set and settings are "
            "the same (kept in the cache, least recently used dropped past "
            "$CHUNKEVAL_RESULTS_MB, default 1024); false: evaluate everything, store nothing",
            cli="--no-result-cache"),
    Setting("shard", "str", None,
            "run only shard I of N (I/N, e.g. 2/4) of the strategy x query set work, split "
            "evenly by cost; `chunkeval merge` joins the shards' results", cli="--shard"),
    Setting("shard_timings", "path", None,
            "a results.json of an earlier run whose measured seconds balance the shards "
            "(default: estimated from corpus size and strategy family)", cli="--shard-timings"),
    Setting("items", "bool", True,
            "with a [tool.chunkeval] section, add chunkeval's own test items to the pytest run "
            "(false: only the tests you write with the fixtures)", flag=False),
)
BY_NAME = {s.name: s for s in SETTINGS}


class ConfigError(Exception):
    """A setting has a value chunkeval cannot use; the message names where it was given."""


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

    def register_splitters(self) -> dict[str, list[str]]:
        """Import every MODULE:ATTR named in `splitters` and `strategies`: spec -> the names of
        the strategies it registered."""
        from . import strategies
        return self._register("splitters", "strategies", strategies.load_splitter,
                              strategies.SplitterError)

    def strategy_names(self) -> list[str]:
        """What is evaluated and gated: the listed strategies; else every registered one on the
        built-in corpus; else the project's splitters and the reference strategies."""
        from . import strategies
        loaded = self.register_splitters()
        if self.strategies:
            chosen = [n for s in self.strategies for n in (loaded[s] if ":" in s else [s])]
            return _known(list(dict.fromkeys(chosen)), strategies.names(), self.where["strategies"],
                          "strategy")
        if self.builtin_corpus:
            return strategies.names()
        own = [n for spec in self.splitters for n in loaded[spec]]
        reference = _known(list(self.reference), strategies.names(), self.where["reference"],
                           "strategy")
        return list(dict.fromkeys([*own, *reference]))

    def register_retrievers(self) -> dict[str, list[str]]:
        """Import every MODULE:ATTR named in `outside_retrievers` and `retrievers`: spec ->
        the names of the retrievers it registered."""
        from . import retrieval
        return self._register("outside_retrievers", "retrievers", retrieval.load_retriever,
                              retrieval.RetrieverError)

    def _register(self, outside: str, selection: str, load, error) -> dict[str, list[str]]:
        """Load the specs of `outside` and the MODULE:ATTR entries of `selection` with the
        project root on the path; a failure names where the spec was given."""
        specs = [(s, outside) for s in self.values[outside]]
        specs += [(s, selection) for s in self.values[selection] if ":" in s]
        loaded: dict[str, list[str]] = {}
        with on_path(self.root):
            for spec, key in specs:
                if spec not in loaded:
                    try:
                        loaded[spec] = [x.name for x in load(spec)]
                    except error as e:
                        raise ConfigError(f"{self.where[key]}: {e}") from None
        return loaded

    def retriever_plan(self, strategy_names: list[str]) -> dict[str, list[str]]:
        """strategy -> the retrievers it is evaluated with: the listed ones; else every
        installed built-in (the costly ones on a few strategies) and the outside ones."""
        from . import retrieval
        from .evaluate import default_retrievers
        loaded = self.register_retrievers()
        if self.retrievers:
            chosen = [n for r in self.retrievers for n in (loaded[r] if ":" in r else [r])]
            chosen = _known(list(dict.fromkeys(chosen)), retrieval.names(all=True),
                            self.where["retrievers"], "retriever")
            return {s: chosen for s in strategy_names}
        outside = [n for spec in self.outside_retrievers for n in loaded[spec]]
        return {s: list(dict.fromkeys([*default_retrievers(s), *outside]))
                for s in strategy_names}

    def settings(self):
        from .evaluate import Settings
        from .metrics import length_function
        with on_path(self.root):
            try:
                length_function(self.length)  # imported once here, from the project
            except ValueError as e:
                raise ConfigError(f"{self.where['length']}: {e}") from None
        return Settings(k=self.k, budget=self.budget, max_queries=self.max_queries,
                        analyzer=self.analyzer, length=self.length)

    def tolerance(self, family: int = 1):
        """The verdict's bounds; `family` is how many comparisons of one strategy are gated."""
        from .baselines import METRICS, Tolerance
        gated = tuple(_known(list(self.gate), list(METRICS), self.where["gate"], "metric"))
        return Tolerance(min_effect=self.min_effect, alpha=self.alpha, family=family,
                         gated=gated, cut_ceiling=self.cut_ceiling)


def _known(chosen: list[str], known: list[str], where: str, what: str) -> list[str]:
    unknown = [c for c in chosen if c not in known]
    if unknown:
        raise ConfigError(f"{where}: unknown {what}: {', '.join(unknown)}; "
                          f"known: {', '.join(known)}")
    return chosen


class on_path:
    """The project root first on sys.path while its modules are imported."""

    def __init__(self, root: Path):
        self.root = str(root)

    def __enter__(self):
        sys.path.insert(0, self.root)

    def __exit__(self, *exc):
        try:
            sys.path.remove(self.root)
        except ValueError:
            pass


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
    unknown = sorted(set(section or ()) - set(BY_NAME))
    if unknown:
        raise ConfigError(f"{pyproject} {SECTION}: unknown key(s) {', '.join(unknown)}; "
                          f"known: {', '.join(BY_NAME)}")
    values, where = {}, {}
    for s in SETTINGS:
        found = []  # (raw value, where, what relative paths are relative to)
        given = (command_line or {}).get(s.name)
        if _set(given):
            option = s.pytest_option if ini is not None or not s.cli else s.cli
            found.append((given, f"option {option}", Path.cwd()))
        if ini is not None and _set(value := ini(s.ini)):
            found.append((value, f"ini setting {s.ini}", root))
        if section is not None and s.name in section:
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
    if kind in ("list", "paths"):
        items = [raw] if isinstance(raw, str) else raw
        if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) for i in items):
            fail("a list of names")
        items = [p.strip() for i in items for p in i.split(",") if p.strip()]
        if kind == "paths":
            items = [_path(i, base) for i in items]
        return tuple(dict.fromkeys(items))
    if kind == "bool":
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and raw.lower() in ("true", "1", "yes", "false", "0", "no"):
            return raw.lower() in ("true", "1", "yes")
        fail("true or false")
    if kind == "int":
        try:
            value = int(raw)
        except (TypeError, ValueError):
            fail("a whole number")
        if isinstance(raw, bool) or value < 1:
            fail("a whole number of at least 1")
        return value
    if kind in ("size", "float"):  # size: any positive number; float: a share, 0 to 1
        try:
            value = float(raw)
        except (TypeError, ValueError):
            fail("a number")
        ok = value > 0 if kind == "size" else 0 <= value <= 1
        if isinstance(raw, bool) or not math.isfinite(value) or not ok:
            fail("a positive number" if kind == "size" else "a number from 0 to 1")
        return value
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw.strip():
        fail("a name or a path")
    return _path(raw, base) if kind == "path" else raw


def _path(value: str, base: Path | None) -> str:
    """A file or folder value made absolute against where it was written; names of built-in
    corpora and query-set builders stay names."""
    from .queries import BUILDERS
    if base is None or value in BUILTIN_CORPORA or value in BUILDERS or Path(value).is_absolute():
        return value
    return str((base / value).resolve())
