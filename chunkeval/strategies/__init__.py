"""Chunking strategies: the seed's matrix and anything registered from outside."""

from .defaults import FEW, MATRIX, REFERENCE
from .registry import (Strategy, all_strategies, get, load_splitter, names, register,
                       unregister)

for _strategy in MATRIX:
    register(_strategy, replace=True, builtin=True)


def is_builtin(name: str) -> bool:
    """True for a strategy of the default matrix, as chunkeval ships it."""
    strategy = get(name)
    return any(s is strategy for s in MATRIX)


__all__ = ["FEW", "MATRIX", "REFERENCE", "Strategy", "all_strategies", "get", "is_builtin",
           "load_splitter", "names", "register", "unregister"]
