"""Chunking strategies: the seed's matrix and anything registered from outside."""

from .defaults import DEFAULTS, FEW, REFERENCE
from .registry import (Strategy, all_strategies, get, load_splitter, names, register,
                       unregister)

for _strategy in DEFAULTS:
    register(_strategy, replace=True)


def is_builtin(name: str) -> bool:
    """True for a strategy of the default matrix, as chunkeval ships it."""
    strategy = get(name)
    return any(s is strategy for s in DEFAULTS)


__all__ = ["DEFAULTS", "FEW", "REFERENCE", "Strategy", "all_strategies", "get", "is_builtin",
           "load_splitter", "names", "register", "unregister"]
