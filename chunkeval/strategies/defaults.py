"""Registers the default strategy matrix (SPEC section 5) under stable names."""

from __future__ import annotations

from .fixed import fixed
from .headings import headings
from .langchain_html import lc_html_header, lc_html_semantic
from .parent_child import parent_child
from .recursive import recursive
from .registry import register
from .structure import structure

DEFAULTS = [
    fixed(200), fixed(400), fixed(800), fixed(1600),
    fixed(400, 40), fixed(400, 80), fixed(400, 200), fixed(800, 80), fixed(800, 160),
    recursive(200), recursive(400, 40), recursive(800),
    headings(2), headings(3),
    structure(400), structure(800),
    structure(400, prefix=True), structure(800, prefix=True),
    lc_html_header(), lc_html_semantic(),
    parent_child(recursive(200), structure(800)),
]

for _strategy in DEFAULTS:
    register(_strategy, replace=True)
