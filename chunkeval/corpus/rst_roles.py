"""Sphinx's roles as docutils roles: a cross-reference shows the target's title when the
corpus has it (:ref:, :doc:) or what Sphinx shows for it (`~pkg.App.config` -> `config`,
:func: gets "()"); text roles (:kbd:, :menuselection:, :pep:...) their text; a role nobody
registered its text. Imported only once docutils is needed."""

from __future__ import annotations

import re

from docutils import nodes
from docutils.parsers.rst import roles
from docutils.utils import unescape

from .rst_project import ParseState, role_title, state_of, stem

_XREF_ROLES = {"ref", "doc", "class", "meth", "func", "attr", "exc", "mod", "data", "const",
               "obj", "any", "term", "option", "envvar", "keyword", "token", "numref",
               "download", "program", "type", "deco", "confval", "dir", "role", "member",
               "var", "macro", "struct", "enum", "enumerator", "union", "expr", "texpr"}
_TEXT_ROLES = {"abbr", "command", "dfn", "file", "guilabel", "kbd", "mailheader", "makevar",
               "manpage", "menuselection", "mimetype", "newsgroup", "program", "regexp",
               "samp", "pep", "rfc", "index", "eq"}
_PARENS = {"func", "meth"}


def xref(name, rawtext, text, lineno, inliner, options=None, content=None):
    kind = name.lower().split(":")[-1]
    text = unescape(text)
    explicit = re.match(r"^(.+?)\s*<([^<>]*)>$", text, re.S)
    if explicit:
        shown = explicit.group(1)
    else:
        shown = _xref_title(state_of(inliner.document), kind, text)
    node = nodes.inline if kind in ("ref", "doc", "term", "numref", "download") \
        else nodes.literal
    return [node(rawtext, " ".join(shown.split()))], []


def text_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    kind = name.lower().split(":")[-1]
    text = unescape(text)
    if kind in ("pep", "rfc"):
        explicit = re.match(r"^(.+?)\s*<([^<>]*)>$", text, re.S)
        text = explicit.group(1) if explicit else f"{kind.upper()} {text.split('#')[0]}"
    elif kind == "menuselection":
        text = text.replace("-->", "\N{TRIANGULAR BULLET}")
    elif kind == "guilabel":
        text = re.sub(r"&(?=\w)", "", text).replace("&&", "&")
    elif kind in ("samp", "file"):
        text = re.sub(r"(?<!\\)\{([^{}]*)\}", r"\1", text)
    return [nodes.literal(rawtext, text)], []


def generic_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    # ":issue:`Title <123>`" reads as "Title"
    return [nodes.literal(rawtext, role_title(unescape(text)) or text)], []


def register_roles() -> None:
    for name in _XREF_ROLES:
        for full in (name, f"py:{name}", f"std:{name}", f"c:{name}", f"cpp:{name}",
                     f"js:{name}", f"rst:{name}"):
            roles.register_local_role(full, xref)
    for name in _TEXT_ROLES:
        roles.register_local_role(name, text_role)


def _xref_title(state: ParseState, kind: str, target: str) -> str:
    """What Sphinx shows for a reference without an explicit title."""
    target = target.lstrip("!")
    if kind == "ref":
        return state.project.labels.get(target.lower(), target)
    if kind == "doc":
        here = stem(state.doc_id).rsplit("/", 1)[0] if "/" in state.doc_id else ""
        path = target.lstrip("/") if target.startswith("/") or not here else f"{here}/{target}"
        return state.project.titles.get(_normal(path), target)
    title = target.lstrip(".")
    if title.startswith("~"):
        title = title[1:].rsplit(".", 1)[-1]
    if kind in _PARENS and not title.endswith(")"):
        title += "()"
    return title


def _normal(path: str) -> str:
    parts: list[str] = []
    for part in path.split("/"):
        if part == "..":
            if parts:
                parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return "/".join(parts)
