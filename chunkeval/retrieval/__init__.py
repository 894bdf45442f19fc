"""The retrieval stage (SPEC section 4): chunk texts -> an Index -> rankings.

`registry.py` names the retrievers (built-ins and outside MODULE:ATTR ones) and builds their
indexes; `analyzers.py` turns text into terms for `lexical.py` (BM25, LSA); `embedding.py`
ranks vectors and caches them, `neural.py` is the built-in encoder, `hybrid.py` fuses
rankings; `ranking.py` holds the Index contract and the top-k they share.
"""

from .registry import (Retriever, available, build_index, get, load_retriever, names, register,
                       unregister)


def __getattr__(name: str):
    if name == "Index":  # its module needs numpy: loaded on first use, as the indexes are
        from .ranking import Index
        return Index
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Index", "Retriever", "available", "build_index", "get", "load_retriever", "names",
           "register", "unregister"]
