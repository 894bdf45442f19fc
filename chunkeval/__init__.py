"""chunkeval: RAG chunking metrics as tests.

The names a project's own code meets: the documents a splitter receives and the chunks it
returns, the splitter and retriever contracts, and the error every chunkeval failure is.
`Strategy`, `Retriever` and `Index` are loaded on first use, so that `import chunkeval` stays
cheap for a pytest session that only collects. Under pytest, chunkeval's modules are loaded
without assertion rewriting (`chunkeval.pytest_imports`; PYTEST_DONT_REWRITE for this one).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import pytest_imports

pytest_imports.install()  # before any other module of the package is imported

from .errors import ChunkevalError  # noqa: E402
from .model import Block, Chunk, Corpus, Document, Query, QuerySet  # noqa: E402

if TYPE_CHECKING:
    from .retrieval.ranking import Index
    from .retrieval.registry import Retriever
    from .strategies.registry import Strategy

from .version import __version__  # noqa: E402

__all__ = ["Block", "Chunk", "ChunkevalError", "Corpus", "Document", "Index", "Query", "QuerySet",
           "Retriever", "Strategy", "__version__"]

def __getattr__(name: str):
    if name == "Strategy":
        from .strategies.registry import Strategy
        return Strategy
    if name == "Retriever":
        from .retrieval.registry import Retriever
        return Retriever
    if name == "Index":
        from .retrieval.ranking import Index
        return Index
    raise AttributeError(f"module 'chunkeval' has no attribute {name!r}")
