"""What every cache is keyed by, in one place.

A cache may make a run faster; it may never change a verdict. So a key covers only what
chunkeval can know for certain:

- chunkeval's own code (the digest of the source a value is computed by) and the exact
  versions of the libraries that code calls;
- the chunk output's hash, for results: a team's splitter is run every time and its chunks
  compared by content, never looked up by the splitter's name or source (which cannot show
  the data files, environment or helper modules it reads);
- for a retriever from outside chunkeval, nothing unless its team declares a cache key
  (`declared_key`): an undeclared one is run every session (a sample of what it computes
  can always miss a change: an input limit, the weights of a word no sample holds); a
  declared one is re-run on a rotating sample each session (spotcheck.py), and a mismatch
  starts a new epoch of its key;
- the settings and the query set's fingerprint.

Nothing here reads a cache: the stores (entries.py, the embedding cache) and the evaluation
ask this module for keys.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Sequence

from ..version import __version__
from ..model import digest

PACKAGE = Path(__file__).parent.parent

# The modules that turn chunks into a result. The rest of the package is covered otherwise:
# the chunking code by the chunks' hash, the corpus and query-set code by the query set's
# fingerprint (which includes its view), and the reporting code does not touch the numbers.
# So editing one strategy re-evaluates only what its new chunks change.
RESULT_MODULES = ("evaluate.py", "evaluation/*.py", "scoring/*.py", "stats.py", "model.py",
                  "results.py", "metrics.py", "measured.py", "checking.py", "store/__init__.py",
                  "store/files.py", "store/entries.py", "store/keys.py", "outside.py",
                  "spotcheck.py", "retrieval/*.py")
# The modules a query file is read by: its line checks, the sample, the leak check, the model.
QUERY_MODULES = ("queries/*.py", "model.py", "errors.py")
# Libraries whose exact versions the numbers depend on.
NUMERIC_LIBRARIES = ("numpy", "scipy", "PyStemmer")
SPLITTER_LIBRARIES = ("langchain-text-splitters", "beautifulsoup4", "lxml", "chonkie")

# -- chunkeval's own code and the libraries it calls ----------------------------------------
_DIGESTS: dict[tuple[str, ...], str] = {}


def code_digest(patterns: tuple[str, ...] = RESULT_MODULES) -> str:
    """sha256 of the source of the package modules `patterns` name: a checkout edited in
    place keeps its version number, and its old entries must not be reused."""
    if patterns not in _DIGESTS:
        h = hashlib.sha256()
        for pattern in patterns:
            for path in sorted(PACKAGE.glob(pattern)):
                name = path.relative_to(PACKAGE).as_posix()
                h.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
        _DIGESTS[patterns] = h.hexdigest()
    return _DIGESTS[patterns]


@functools.lru_cache(maxsize=None)
def versions(names: tuple[str, ...]) -> dict:
    """The installed versions of `names` (None where one is missing)."""
    from importlib.metadata import PackageNotFoundError, version
    out = {}
    for name in names:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


@functools.lru_cache(maxsize=None)
def imported_files(module: str) -> frozenset[str]:
    """The package's files `module` is, and those it imports, transitively (as paths
    relative to the package)."""
    out: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        rel = name.split(".")[1:]
        path = PACKAGE.joinpath(*rel).with_suffix(".py")
        if not path.exists():
            path = PACKAGE.joinpath(*rel, "__init__.py")
        if not path.exists() or str(path.relative_to(PACKAGE)) in out:
            continue
        out.add(str(path.relative_to(PACKAGE)))
        todo += _imported_names(name, path)
    return frozenset(out)


@functools.lru_cache(maxsize=None)
def _imported_names(name: str, path: Path) -> tuple[str, ...]:
    """The modules (and names, which may be modules) module `name` at `path` imports
    relatively: each file parsed once, though the strategies' modules share most of theirs."""
    import ast
    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = here[:len(here) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
            out.append(target)
            out += [f"{target}.{a.name}" for a in node.names]  # `from . import x`
    return tuple(out)


@functools.lru_cache(maxsize=None)
def file_digest(rel: str) -> str:
    return hashlib.sha256((PACKAGE / rel).read_bytes()).hexdigest()


# -- the keys ------------------------------------------------------------------------------
def chunk_key(*, code: str, identity: str, strategy: dict, model: dict | None,
              view: str) -> str:
    """The chunk cache's key: the code and libraries a strategy's chunks come from, the
    strategy as it describes itself, the model a semantic one cuts by, and the corpus view
    (strategies/identity.py says which strategies' chunks may be kept, and their code)."""
    from .entries import CHUNKS_FORMAT
    return digest({
        "format": CHUNKS_FORMAT, "chunkeval": __version__, "code": code, "identity": identity,
        "strategy": strategy, "libraries": versions(SPLITTER_LIBRARIES), "model": model,
        "view": view})


def result_key(*, chunks: str, parents: str | None, lengths: str | None,
               retriever: dict, analyzer: str, query_set: tuple[str, str],
               settings: dict, depth: tuple[int, int]) -> str:
    """The result cache's key: everything a result's numbers depend on, but the name of the
    strategy (equal chunks give equal results) and what the chunking gives. `lengths` is
    the digest of the handed chunks' lengths under an outside length measure."""
    from .entries import RESULT_FORMAT
    return digest({
        "format": RESULT_FORMAT, "chunkeval": __version__, "code": code_digest(),
        "libraries": versions(NUMERIC_LIBRARIES),
        "chunks": chunks, "parents": parents, "lengths": lengths,
        "retriever": retriever, "analyzer": analyzer, "query_set": list(query_set),
        "settings": settings, "depth": list(depth)})


def query_file_key(data: bytes, path: str, corpus: str, max_queries: int, seed: int) -> str:
    """The query cache's key for a query file: its bytes and the path it was given by (its
    problems name it), the parsed corpus's fingerprint, the sample's size and seed, and the
    code that reads it."""
    from .entries import QUERIES_FORMAT
    return digest({
        "format": QUERIES_FORMAT, "chunkeval": __version__, "code": code_digest(QUERY_MODULES),
        "file": hashlib.sha256(data).hexdigest(), "path": path, "corpus": corpus,
        "max_queries": max_queries, "seed": seed})


def lengths_digest(lengths: Sequence[int]) -> str:
    return digest([int(n) for n in lengths])


def spread(items: list, n: int) -> list:
    """`n` of `items`, evenly spread and in order (all when there are no more)."""
    if n <= 0 or not items:
        return []
    if len(items) <= n:
        return list(items)
    return [items[(i * len(items)) // n] for i in range(n)]
