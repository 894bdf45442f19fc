"""Chunking strategies: the seed's matrix and anything registered from outside."""

from __future__ import annotations

import dataclasses
from typing import Iterable

from . import registry, sized
from .defaults import FEW, MATRIX, REFERENCE
from .registry import (Strategy, Unit, all_strategies, load_splitter, names, register,
                       unregister)
from .sized import size_by

# chunkeval's own: their chunks are a function of chunkeval's code (the chunk cache's key)
MATRIX[:] = [dataclasses.replace(s, identity="chunkeval") for s in MATRIX]
for _strategy in MATRIX:
    register(_strategy, replace=True, builtin=True)


def get(name: str) -> Strategy:
    """The strategy registered as `name`; a name sized by the configured length
    (fixed-400t, see sized.py) is made on first use."""
    try:
        return registry.get(name)
    except LookupError:
        if sized.make(name) is None:
            raise
    return registry.get(name)


def resolve(chosen: Iterable[str]) -> None:
    """Make the names among `chosen` that are sized by the configured length, so that they
    are registered names like any other; the rest are left as they are."""
    for name in chosen:
        try:
            get(name)
        except LookupError:
            pass  # an unknown name is for the caller to report, saying where it was given


def is_builtin(name: str) -> bool:
    """True for a strategy of the default matrix, as chunkeval ships it."""
    strategy = get(name)
    return any(s is strategy for s in MATRIX)


__all__ = ["FEW", "MATRIX", "REFERENCE", "Strategy", "Unit", "all_strategies", "get",
           "is_builtin", "load_splitter", "names", "register", "resolve", "size_by",
           "unregister"]
