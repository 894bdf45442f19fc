"""Chunking strategies: the seed's matrix and anything registered from outside."""

from .defaults import FEW, MATRIX, REFERENCE
from .registry import (Strategy, all_strategies, get, is_builtin, load_splitter, names,
                       register, unregister)

for _strategy in MATRIX:
    register(_strategy, replace=True, builtin=True)


__all__ = ["FEW", "MATRIX", "REFERENCE", "Strategy", "all_strategies", "get", "is_builtin",
           "load_splitter", "names", "register", "unregister"]
