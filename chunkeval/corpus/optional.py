"""The libraries the formats of the `documents` extra are read with: which one a format
needs, and importing it with the error that says what to install."""

from __future__ import annotations

import importlib
from types import ModuleType

from ..errors import InputError

# format -> (module, distribution, what a message calls its files)
LIBRARIES = {"pdf": ("pdfplumber", "pdfplumber", "PDF files"),
             "word": ("docx", "python-docx", "Word files"),
             "rst": ("docutils", "docutils", "reStructuredText")}


def load(fmt: str, where: str) -> ModuleType:
    """The library `fmt` is read with; an InputError naming `where` when it is missing."""
    module, dist, what = LIBRARIES[fmt]
    try:
        return importlib.import_module(module)
    except ImportError:
        raise InputError(where, f"reading {what} needs {dist}: pip install "
                                "'chunkeval[documents]'") from None
