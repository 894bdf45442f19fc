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
from typing import TYPE_CHECKING, Sequence

from .. import __version__
from ..model import digest

if TYPE_CHECKING:
    from ..retrieval.registry import Retriever
    from ..strategies.registry import Strategy

PACKAGE = Path(__file__).parent.parent

# The modules that turn chunks into a result. The rest of the package is covered otherwise:
# the chunking code by the chunks' hash, the corpus and query-set code by the query set's
# fingerprint (which includes its view), and the reporting code does not touch the numbers.
# So editing one strategy re-evaluates only what its new chunks change.
RESULT_MODULES = ("evaluate.py", "scoring/*.py", "stats.py", "model.py", "results.py",
                  "metrics.py", "measured.py", "checking.py",
                  "store/__init__.py", "store/files.py", "store/entries.py", "store/keys.py",
                  "outside.py", "spotcheck.py", "retrieval/*.py")
# Libraries whose exact versions the numbers depend on.
NUMERIC_LIBRARIES = ("numpy", "scipy", "scikit-learn", "PyStemmer")
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


def strategy_code(strategy: Strategy) -> str:
    """sha256 of the source of chunkeval's modules a strategy's chunks come from: those of
    the functions its split reaches through closures (a parent-child strategy holds two
    others), with the package modules each imports. Editing one built-in strategy then
    re-chunks the strategies that use its code, not all."""
    from ..strategies.registry import Strategy

    package = __package__
    modules: set[str] = set()
    seen: set[int] = set()

    def reach(obj) -> None:
        if id(obj) in seen or obj is None:
            return
        seen.add(id(obj))
        if isinstance(obj, Strategy):
            reach(obj.split)
        elif isinstance(obj, functools.partial):
            reach(obj.func)
            for value in (*obj.args, *obj.keywords.values()):
                reach(value)
        elif isinstance(obj, (list, tuple)):
            for value in obj:
                reach(value)
        elif hasattr(obj, "__code__"):
            modules.add(getattr(obj, "__module__", "") or "")
            for cell in obj.__closure__ or ():
                try:
                    reach(cell.cell_contents)
                except ValueError:  # an empty cell
                    pass
            for value in obj.__defaults__ or ():
                reach(value)
        elif hasattr(obj, "__func__"):  # a bound method
            reach(obj.__func__)
            reach(obj.__self__)
        elif type(obj).__module__.startswith(package + "."):
            modules.add(type(obj).__module__)

    reach(strategy)
    files = set()
    for name in modules:
        if name == package or name.startswith(package + "."):
            files |= imported_files(name)
    return digest(sorted((f, file_digest(f)) for f in files))


@functools.lru_cache(maxsize=None)
def imported_files(module: str) -> frozenset[str]:
    """The package's files `module` is, and those it imports, transitively (as paths
    relative to the package)."""
    import ast
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
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = here[:len(here) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
                todo.append(target)
                todo += [f"{target}.{a.name}" for a in node.names]  # `from . import x`
    return frozenset(out)


@functools.lru_cache(maxsize=None)
def file_digest(rel: str) -> str:
    return hashlib.sha256((PACKAGE / rel).read_bytes()).hexdigest()


# -- what is chunkeval's own ---------------------------------------------------------------
def is_own_strategy(strategy: Strategy) -> bool:
    """True for chunkeval's built-in strategies and chonkie specs: their chunks are a function
    of code chunkeval knows (its own, and library versions). A team's splitter, a strategy
    registered in code and a calibration variant are not."""
    return bool(strategy.checked and strategy.identity
                and strategy.identity.partition("+")[0] in ("chunkeval", "chonkie"))


def is_own_retriever(name: str) -> bool:
    """True for chunkeval's built-in retrievers (hybrids of built-ins included)."""
    from ..retrieval import registry
    r = registry.get(name)
    return registry.is_builtin(name) and all(is_own_retriever(p) for p in r.fuses)


# -- the keys ------------------------------------------------------------------------------
def chunk_key(strategy: Strategy, view_fingerprint: str, length: str,
              model: dict | None) -> str | None:
    """The chunk cache's key for a strategy's chunks of a corpus view; None when they cannot
    be kept: a strategy that is not chunkeval's own, an outside length measure (a team's
    tokenizer may size the chunks), or a semantic chunker on an outside model."""
    if not is_own_strategy(strategy) or length != "chars":
        return None
    if strategy.params.get("model") is not None and model is None:
        return None
    from .entries import CHUNKS_FORMAT
    return digest({
        "format": CHUNKS_FORMAT, "chunkeval": __version__,
        "code": strategy_code(strategy), "identity": strategy.identity,
        "strategy": strategy.describe(), "libraries": versions(SPLITTER_LIBRARIES),
        "model": model, "view": view_fingerprint})


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


def lengths_digest(lengths: Sequence[int]) -> str:
    return digest([int(n) for n in lengths])


# -- retrievers ----------------------------------------------------------------------------
def declared_key(r: Retriever) -> str | None:
    """The cache key a retriever from outside declares (`Retriever(cache_key=...)`: a string,
    or a callable giving one, e.g. a hash of the weights files and settings it reads); None
    when it declares none: then it is run every session and nothing of it is kept on disk."""
    key = r.cache_key
    if key is None:
        return None
    if callable(key):
        from ..errors import ConfigError
        try:
            key = key()
        except Exception as e:
            raise ConfigError(f"retriever {r.name!r}: cache_key() raised "
                              f"{type(e).__name__}: {e}") from None
    if not isinstance(key, str) or not key:
        from ..errors import ConfigError
        raise ConfigError(f"retriever {r.name!r}: cache_key gave {key!r}; it must be a "
                          "non-empty string (or a callable returning one)")
    return key


def retriever_identity(name: str, declared) -> dict | None:
    """What a retriever's vectors and results are kept under: its description and shape;
    for a built-in, chunkeval's code (in the result key) and its libraries; for one from
    outside, what `declared(retriever)` gives (its cache key and the key's epoch). None
    when a retriever from outside (a hybrid's part included) declares no key: its results
    are not kept across sessions."""
    from ..retrieval import registry
    r = registry.get(name)
    parts = [retriever_identity(p, declared) for p in r.fuses]
    if any(p is None for p in parts):
        return None
    out = {**r.describe(), "lexical": r.lexical, "batch_size": r.batch_size, "parts": parts}
    if not r.fuses and not is_own_retriever(name):
        kept = declared(r)
        if kept is None:
            return None
        out["declared"] = kept
    return out


def _declared_base(r: Retriever, key: str) -> Path:
    from .files import embeddings_root, safe_name
    return embeddings_root() / safe_name(r.name) / f"{safe_name(r.version)}-{digest(key)[:16]}"


def epoch(r: Retriever, key: str) -> str:
    """The epoch of a declared key: "0" until a sample check finds that the retriever
    computes something else under the same key, then a new one (`discard`), so that what
    was kept under the old one is never read again."""
    path = _declared_base(r, key).with_suffix(".epoch")
    try:
        found = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return "0"
    return found if found.isalnum() else "0"


def discard(r: Retriever, key: str) -> str:
    """Start a new epoch for a declared key and delete the old epoch's vectors; the new
    epoch (the results under the old one are never looked up again, and age out)."""
    import shutil
    import uuid

    from .files import atomic_write, cannot_write
    base = _declared_base(r, key)
    old = base.with_name(f"{base.name}-{epoch(r, key)}")
    new = uuid.uuid4().hex[:12]
    try:
        atomic_write(base.with_suffix(".epoch"), new)
    except OSError as e:
        cannot_write(e)
    shutil.rmtree(old, ignore_errors=True)
    return new


def embeddings_folder(r: Retriever, declared: dict | None = None) -> str | None:
    """The embedding cache's folder of a retriever, under embeddings/<name>/: its version,
    and for one from outside, its declared key's digest and epoch; None (keep no vectors on
    disk) for one from outside that declares no key."""
    from .files import safe_name
    if is_own_retriever(r.name):
        return safe_name(r.version)
    if declared is None:
        return None
    return f"{_declared_base(r, declared['key']).name}-{declared['epoch']}"


def spread(items: list, n: int) -> list:
    """`n` of `items`, evenly spread and in order (all when there are no more)."""
    if n <= 0 or not items:
        return []
    if len(items) <= n:
        return list(items)
    return [items[(i * len(items)) // n] for i in range(n)]
