"""The default strategy matrix (SPEC section 5) under stable names, and the strategies the
rest of chunkeval names: the yardstick gated next to a project's own splitters, and the
few that the costly retrievers run on by default."""

from __future__ import annotations

from ..retrieval import names as retrievers
from . import langchain_html
from .fixed import fixed
from .headings import headings
from .langchain_html import lc_html_header, lc_html_semantic
from .parent_child import parent_child
from .recursive import recursive
from .semantic import cluster, installed, kamradt
from .structure import structure

MATRIX = [
    fixed(200), fixed(400), fixed(800), fixed(1600),
    fixed(400, 40), fixed(400, 80), fixed(400, 200), fixed(800, 80), fixed(800, 160),
    recursive(200), recursive(400, 40), recursive(800),
    headings(2), headings(3),
    structure(400), structure(800),
    structure(400, prefix=True), structure(800, prefix=True),
    lc_html_header(), lc_html_semantic(),
    parent_child(recursive(200), structure(800)),
]

# Built-ins of the matrix whose library is not installed here -> how to install it: they run
# only when named, and then say what is missing.
MISSING = {} if langchain_html.installed() else {
    s.name: langchain_html.INSTALL for s in MATRIX if s.family == "langchain-html"}

# Gated next to a project's own splitters on its corpus, as a yardstick: plain windows and
# structure-aware packing bracket the usual choice. The first is the reference the reports'
# paired differences are taken against.
REFERENCE = ("fixed-400", "structure-400")
# The strategies a costly retriever (an encoder) runs on when no retrievers are named: the
# plain, the recursive and the structure-aware family at their usual size.
FEW = ("fixed-400", "structure-400+prefix", "recursive-400-ov40")
# Built-ins run only when named: a corpus's first chunking embeds every sentence with the
# `use` encoder (bench/results/semantic.md). Registered where it is installed.
NAMED_ONLY = [kamradt(400), kamradt(800), cluster(400), cluster(800)] if installed() else []
# The costly ones: they embed every chunk text, and an encoder is what a cold run costs most.
LIMITED_RETRIEVERS = ("use", "hybrid-use")


def default_retrievers(strategy: str) -> list[str]:
    """Every registered retriever that can run here, the limited ones on FEW only."""
    return [r for r in retrievers() if r not in LIMITED_RETRIEVERS or strategy in FEW]
