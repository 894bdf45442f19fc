"""Chunking strategies: the seed's matrix, those run when named, and anything registered
from outside."""

from .defaults import FEW, MATRIX, NAMED_ONLY, REFERENCE
from .registry import (Strategy, all_strategies, get, is_builtin, load_splitter, names,
                       register, unregister)

for _strategy in MATRIX:
    register(_strategy, replace=True, builtin=True)
for _strategy in NAMED_ONLY:
    register(_strategy, replace=True, builtin=True, opt_in=True)


__all__ = ["FEW", "MATRIX", "NAMED_ONLY", "REFERENCE", "Strategy", "all_strategies", "get",
           "is_builtin", "load_splitter", "names", "register", "unregister"]
