"""Chunking strategies: the seed's matrix and anything registered from outside."""

from .registry import (SplitterError, Strategy, all_strategies, get, is_builtin, load_splitter,
                       names, register, unregister)

__all__ = ["Strategy", "SplitterError", "all_strategies", "get", "is_builtin", "load_splitter",
           "names", "register", "unregister"]
