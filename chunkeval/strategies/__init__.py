"""Chunking strategies: the seed's matrix, those run when named, and anything registered
from outside."""

from __future__ import annotations

import dataclasses
from typing import Iterable

from ..retrieval import registry as retrievers
from . import params, registry, sized
from .defaults import FEW, MATRIX, MISSING, NAMED_ONLY, REFERENCE
from .registry import (Strategy, Unit, all_strategies, is_builtin, load_splitter, missing,
                       names, read_splitter, register, require, unregister)
from .sized import size_by

# chunkeval's own: their chunks are a function of chunkeval's code (the chunk cache's key);
# the semantic ones of the encoder's version too
MATRIX[:] = [dataclasses.replace(s, identity="chunkeval") for s in MATRIX]
NAMED_ONLY[:] = [dataclasses.replace(
    s, identity=f"chunkeval+{retrievers.RETRIEVERS.get(s.params['model']).full_version}")
    for s in NAMED_ONLY]
# the built-ins go into the library registry, which every run copies, whenever this is imported
for _strategy in MATRIX:
    registry.STRATEGIES.register(_strategy, replace=True, builtin=True,
                                 missing=MISSING.get(_strategy.name))
for _strategy in NAMED_ONLY:
    registry.STRATEGIES.register(_strategy, replace=True, builtin=True, opt_in=True)


def get(name: str) -> Strategy:
    """The strategy registered as `name`; a name sized by the configured length
    (fixed-400t, see sized.py) or a spec with parameters (`fixed(size=300, overlap=0.1)`, see
    params.py) is made on first use, and registered."""
    return _found(name, params.make, sized.make)


def build(name: str) -> Strategy:
    """What `get(name)` gives, without registering what it makes: a strategy to hand to an
    evaluation and drop (a sweep's configuration)."""
    return _found(name, params.build, sized.build)


def _found(name: str, from_spec, from_sized) -> Strategy:
    try:
        return registry.get(name)
    except LookupError:
        made = from_spec(name) if params.is_spec(name) else from_sized(name)
        if made is None:
            raise
        return made


def canonical(name: str) -> str:
    """The registered name of `name`: a spec's strategy's name (made on the way), else
    `name` itself."""
    return params.name_of(name) if params.is_spec(name) and get(name) else name


def resolve(chosen: Iterable[str]) -> None:
    """Make the names among `chosen` that are sized by the configured length, so that they
    are registered names like any other; the rest are left as they are."""
    for name in chosen:
        try:
            get(name)
        except LookupError:
            pass  # an unknown name is for the caller to report, saying where it was given


__all__ = ["FEW", "MATRIX", "NAMED_ONLY", "REFERENCE", "Strategy", "Unit", "all_strategies",
           "build", "canonical", "get", "is_builtin", "load_splitter", "missing", "names",
           "read_splitter", "register", "require", "resolve", "size_by", "unregister"]
