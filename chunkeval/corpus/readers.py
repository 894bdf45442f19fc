"""The file formats a corpus directory may hold: each a Reader, registered under its format's
name, with the suffixes it is chosen by, its parser and the libraries a parse passes through."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..registry import InUse, Registry
from .html import HTML_SUFFIXES, parse_html
from .markdown import parse_markdown, parse_plain
from .pdf import parse_pdf
from .rst import parse_rst
from .word import parse_docx


@dataclass
class Reader:
    """`parse(data, doc_id, path=..., **kwargs) -> (Document, problems)` for the files whose
    names end in one of `suffixes`. Not frozen: a test may put another parser in."""

    name: str  # the format: "html", "markdown", ...
    suffixes: tuple[str, ...]
    parse: Callable
    # The distributions the format's bytes pass through, all of which can change a parse (a
    # new markdown-it-py reads `<!-- a -- b -->` differently); with "libxml2", the C library
    # lxml was built with and runs on, which a wheel can change while lxml's own version
    # stays. The parsed-corpus cache is keyed by their exact versions.
    libraries: tuple[str, ...] = ()


# In the order a file name is matched against the suffixes. A run reads with its own copy
# (`current()`, registry.Components).
READERS: Registry[Reader] = Registry("file format")
for _reader in (
    Reader("html", HTML_SUFFIXES, parse_html, ("lxml", "libxml2", "beautifulsoup4")),
    Reader("markdown", (".md", ".markdown"), parse_markdown, ("markdown-it-py",
                                                              "mdit-py-plugins")),
    Reader("text", (".txt",), parse_plain),
    Reader("pdf", (".pdf",), parse_pdf, ("pdfplumber", "pdfminer.six", "pypdfium2")),
    Reader("word", (".docx",), parse_docx, ("python-docx", "lxml", "libxml2")),
    Reader("rst", (".rst", ".rest"), parse_rst, ("docutils",)),
):
    READERS.register(_reader, builtin=True)


current = InUse(READERS).current  # the readers of the run under way, else READERS


def format_of(name: str) -> str | None:
    """The format a file is read as, by its name's suffix; None when unsupported."""
    lower = name.lower()
    return next((r.name for r in current().items() if lower.endswith(r.suffixes)), None)


def reader_of(doc_id: str) -> Reader:
    """The document's reader; HTML when its name says none (a built-in corpus's pages)."""
    return current().get(format_of(doc_id) or "html")
