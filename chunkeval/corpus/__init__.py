"""The corpus stage: a source (a built-in corpus or a directory) -> Corpus[Document[Block]].

`debian.py` fetches and unpacks the built-in corpora, `html.py` and `markdown.py` turn one
file into a Document, `sources.py` reads a whole source and caches the parse.
"""

from .debian import BUILTIN_CORPORA, DEFAULT_CORPUS, fetch_builtin
from .sources import FORMATS, MAX_DOCUMENT_MB, escaped, format_of, load_corpus

__all__ = ["BUILTIN_CORPORA", "DEFAULT_CORPUS", "FORMATS", "MAX_DOCUMENT_MB", "escaped",
           "fetch_builtin", "format_of", "load_corpus"]
