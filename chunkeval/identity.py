"""What every cache is keyed by, in one place.

A cache may make a run faster; it may never change a verdict. So a key covers only what
chunkeval can know for certain:

- chunkeval's own code (the digest of the source a value is computed by) and the exact
  versions of the libraries that code calls;
- the chunk output's hash, for results: a team's splitter is run every time and its chunks
  compared by content, never looked up by the splitter's name or source (which cannot show
  the data files, environment or helper modules it reads);
- for a retriever from outside chunkeval, what it computes: the vectors (or the ranking) it
  gives for a fixed canary set, made afresh each session (`Canary`), not its source text;
- the settings and the query set's fingerprint.

Nothing here reads a cache: the stores (cache.py, the embedding cache) and the evaluation
ask this module for keys.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from . import __version__
from .model import digest

if TYPE_CHECKING:
    import numpy as np

    from .model import Corpus
    from .retrieval.registry import Retriever
    from .strategies.registry import Strategy

PACKAGE = Path(__file__).parent

# The modules that turn chunks into a result. The rest of the package is covered otherwise:
# the chunking code by the chunks' hash, the corpus and query-set code by the query set's
# fingerprint (which includes its view), and the reporting code does not touch the numbers.
# So editing one strategy re-evaluates only what its new chunks change.
RESULT_MODULES = ("evaluate.py", "metrics.py", "stats.py", "model.py", "results.py",
                  "cache.py", "outside.py", "identity.py", "retrieval/*.py")
# Libraries whose exact versions the numbers depend on.
NUMERIC_LIBRARIES = ("numpy", "scipy", "scikit-learn", "PyStemmer")
SPLITTER_LIBRARIES = ("langchain-text-splitters", "beautifulsoup4", "lxml", "chonkie")

# The canary set a retriever from outside computes each session: fixed texts, a few headings
# (query-like) and slices of the corpus's documents (chunk-like), at most CANARY_TEXTS.
CANARY_FIXED = (
    "How do I install a package from a local file?",
    "The quick brown fox jumps over the lazy dog. 0123456789",
    "パッケージをインストールするにはどうすればよいですか。",
    "def add(a, b):\n    return a + b",
    "name | version | size\nchunkeval | 1.0 | 42",
    "",
)
CANARY_TEXTS = 32
CANARY_HEADINGS = 8
CANARY_SLICE = 400
# Two canary computations within this (max absolute difference of L2-normalised vectors)
# are the same retriever: a model's last bits may move with threads or batching.
CANARY_TOLERANCE = 1e-3
CANARY_DECIMALS = 3


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
    from .strategies.registry import Strategy

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
    from .retrieval import registry
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
    from .cache import CHUNKS_FORMAT
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
    from .cache import RESULT_FORMAT
    return digest({
        "format": RESULT_FORMAT, "chunkeval": __version__, "code": code_digest(),
        "libraries": versions(NUMERIC_LIBRARIES),
        "chunks": chunks, "parents": parents, "lengths": lengths,
        "retriever": retriever, "analyzer": analyzer, "query_set": list(query_set),
        "settings": settings, "depth": list(depth)})


def lengths_digest(lengths: Sequence[int]) -> str:
    return digest([int(n) for n in lengths])


# -- retrievers ----------------------------------------------------------------------------
class Canary:
    """The canary set of a corpus and the fingerprints retrievers from outside compute on it.

    A fingerprint is what a retriever computes, not what its source says: an `embed`
    retriever's L2-normalised vectors of the canary texts (rounded), a `build` retriever's
    ranking of the canary texts searched against themselves. Computed once per process and
    retriever; the same in every process of a run (the set depends on the corpus alone).

    For an embedding retriever, each fingerprint's vectors are kept beside its embedding
    cache; new vectors within CANARY_TOLERANCE of kept ones take the kept fingerprint, so
    that the last bits of a model do not split its cache, and vectors that differ beyond it
    are a retriever that computes something else: its vectors are embedded afresh (said once).
    """

    def __init__(self, texts: Sequence[str]):
        self.texts = list(texts)[:CANARY_TEXTS]
        self.texts_digest = digest(self.texts)[:16]
        self._fingerprints: dict[tuple[str, int], str] = {}

    @classmethod
    def of(cls, corpus: Corpus) -> Canary:
        docs = sorted(corpus.documents, key=lambda d: d.id)
        headings = [d.text[b.start:b.end][:CANARY_SLICE] for d in docs for b in d.blocks
                    if b.is_heading and b.end > b.start]
        room = CANARY_TEXTS - len(CANARY_FIXED)
        picked = spread(headings, min(CANARY_HEADINGS, room))
        slices = []
        for d in spread([d for d in docs if d.text.strip()], room - len(picked)):
            mid = max(0, len(d.text) // 2 - CANARY_SLICE // 2)
            slices.append(d.text[mid:mid + CANARY_SLICE])
        return cls([*CANARY_FIXED, *picked, *slices])

    def fingerprint(self, retriever: Retriever) -> str:
        """The retriever's fingerprint on this set (an embedding retriever's canary vectors
        are kept beside its embedding cache)."""
        key = (retriever.name, id(retriever.embed or retriever.build))
        if key not in self._fingerprints:
            self._fingerprints[key] = self._compute(retriever)
        return self._fingerprints[key]

    def _compute(self, retriever: Retriever) -> str:
        import numpy as np
        try:
            if retriever.embed is not None:
                vectors = _embedded(retriever, self.texts)
                return self._match(retriever.name, vectors, canary_store(retriever))
            index = retriever.build(self.texts, analyzer="char2", seed=0) if retriever.lexical \
                else retriever.build(self.texts)
            ranked = np.asarray(index.search(self.texts, len(self.texts)))
            return "r" + digest(ranked.astype(np.int64).tolist())[:32]
        except Exception as e:  # its own failure shows when the index is built; nothing kept
            return f"failed:{type(e).__name__}:{id(self)}"

    def _match(self, name: str, vectors: np.ndarray, store: Path) -> str:
        import numpy as np
        rounded = np.round(vectors, CANARY_DECIMALS) + 0.0  # no negative zeros
        fp = "v" + hashlib.sha256(rounded.astype("<f8").tobytes()).hexdigest()[:32]
        kept = sorted(store.glob(f"{self.texts_digest}-*.npy")) if store.is_dir() else []
        for path in kept:
            try:
                old = np.load(path)
            except (OSError, ValueError):
                continue
            if old.shape == vectors.shape and np.abs(old - vectors).max() <= CANARY_TOLERANCE:
                return path.stem.partition("-")[2]
        from .cache import atomic_write, notice
        if kept:
            notice(f"retriever {name!r} computes different vectors than the cache holds: "
                   "re-embedding")
        import io
        buf = io.BytesIO()
        np.save(buf, vectors.astype(np.float32))
        try:
            atomic_write(store / f"{self.texts_digest}-{fp}.npy", buf.getvalue())
        except OSError:
            pass  # a read-only cache: the fingerprint still keys this run
        return fp


def spread(items: list, n: int) -> list:
    """`n` of `items`, evenly spread and in order (all when there are no more)."""
    if n <= 0 or not items:
        return []
    if len(items) <= n:
        return list(items)
    return [items[(i * len(items)) // n] for i in range(n)]


def _embedded(retriever: Retriever, texts: list[str]) -> np.ndarray:
    """The retriever's L2-normalised vectors of `texts`, in its batches, held to the
    embedding contract as its index holds them."""
    import numpy as np

    from .retrieval.embedding import _check, _normalised
    step = max(1, retriever.batch_size)
    return _normalised(np.concatenate([
        _check(retriever.embed(texts[lo:lo + step]), len(texts[lo:lo + step]))
        for lo in range(0, len(texts), step)]))


def retriever_identity(name: str, canary: Canary) -> dict:
    """What a retriever's vectors and results are kept under: its description and shape;
    for a built-in, chunkeval's code (in the result key) and its libraries; for one from
    outside, the fingerprint of what it computes on the canary set."""
    from .retrieval import registry
    r = registry.get(name)
    out = {**r.describe(), "lexical": r.lexical, "batch_size": r.batch_size,
           "parts": [retriever_identity(p, canary) for p in r.fuses]}
    if not r.fuses and not is_own_retriever(name):
        out["computes"] = canary.fingerprint(r)
    return out


def embeddings_folder(r: Retriever, canary: Canary | None) -> str | None:
    """The embedding cache's folder of a retriever, under embeddings/<name>/: its version,
    and for one from outside, the fingerprint of what it computes; None (keep no vectors)
    for one from outside whose canary could not be computed."""
    from .cache import safe_name
    version = safe_name(r.version)
    if is_own_retriever(r.name):
        return version
    fp = canary.fingerprint(r) if canary is not None else None
    return f"{version}-{fp[:17]}" if fp and not fp.startswith("failed:") else None


def canary_store(r: Retriever) -> Path:
    """Where an embedding retriever's canary vectors are kept, beside its cache."""
    from .cache import embeddings_root, safe_name
    return embeddings_root() / safe_name(r.name) / (safe_name(r.version) + ".canaries")
