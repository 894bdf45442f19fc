"""Text from outside (documents, questions, file names, strategy names) as Markdown that
renders as exactly that text. Outside the report package, whose import loads the whole report
stage (numpy and scipy with it): the pull-request comment needs this and nothing else."""

from __future__ import annotations

import re

# Characters backslash-escaped in text from outside (documents, questions, file names,
# strategy names): all that opens a link, an image, an HTML tag or entity or emphasis, or
# ends a table cell. A scheme's "://", "www." and an address's "@" are broken up too, or
# GitHub would make a link of them.
_ESCAPED = frozenset("\\`*_[]|<&!~#")
_AUTOLINK = re.compile(r":(?=/)|(?<![^\W_])www(?=\.)|@(?=[\w-]*\.[\w-])", re.IGNORECASE)
# Where CommonMark ends a line (and control characters): never inside one cell or line.
_BREAKS = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]")


def md_text(text) -> str:
    """`text` as Markdown that renders as exactly this text (line breaks as spaces): no
    element, link or table cell of its own, under any renderer that allows HTML."""
    out = "".join("\\" + c if c in _ESCAPED else c for c in _BREAKS.sub(" ", str(text)))
    return _AUTOLINK.sub(lambda m: _autolink_escape(m[0]), out)


def _autolink_escape(found: str) -> str:
    # "www" keeps its letters; its dot, the colon and the at sign are escaped
    return found + "\\" if found.lower() == "www" else "\\" + found
