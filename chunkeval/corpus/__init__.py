"""The corpus stage: a source (a built-in corpus, a folder, a built site) ->
Corpus[Document[Block]].

`debian.py` fetches and unpacks the built-in corpora; `sources.py` reads a whole source and
caches the parse, choosing each file's reader from `readers.py`: `html.py` (with
`html_blocks.py`, `css.py`, `charset.py`), `markdown.py` and `rendered.py`, `rst.py` (with
`rst_project.py`, `rst_directives.py`, `rst_roles.py`, `rst_includes.py`, `rst_walk.py`),
`pdf.py`, `word.py`; `sites.py` reads built Sphinx and MkDocs sites, `discover.py` finds a
project's documents.
"""

from .debian import BUILTIN_CORPORA, DEFAULT_CORPUS, fetch_builtin
from .sources import MAX_DOCUMENT_MB, escaped, format_of, load_corpus

__all__ = ["BUILTIN_CORPORA", "DEFAULT_CORPUS", "MAX_DOCUMENT_MB", "escaped", "fetch_builtin",
           "format_of", "load_corpus"]
