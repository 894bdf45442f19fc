"""reStructuredText -> Document with docutils: sections as headings (level by nesting),
paragraphs, list items, literal blocks as `pre`, tables one row per line, definition lists.

Sphinx sources use directives and roles docutils does not know (`versionadded`, `function`,
`:ref:`, ...). Such a directive keeps its arguments and content, parsed as reStructuredText,
and is counted in one problem line per file; an unknown role keeps its text. `toctree` is
navigation and gives no text. Nothing is included from other files or run: file insertion and
raw output are off, as in an untrusted setting.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..errors import InputError, Problem
from ..model import TABLE_CELL_SEP, Document, Part, heading_path
from . import optional
from .html import _define, decode_html

# Bump whenever the output for the same bytes may change: it keys the parse cache.
RST_PARSER_VERSION = "1"

_DIRECTIVE = re.compile(r"^[ \t]*\.\.[ \t]+([A-Za-z0-9][\w:.+-]*)::", re.M)
_ROLE = re.compile(r"(?<![\w`]):([A-Za-z0-9][\w:.+-]*):`")
_SKIP = {"comment", "system_message", "substitution_definition", "target", "raw", "image",
         "pending", "meta", "decoration", "footer", "header", "title", "subtitle"}
# Navigation, not text.
_NAVIGATION = {"toctree"}


@lru_cache(maxsize=1)
def _docutils():
    """docutils, with the generic directive and role that unknown names are registered as."""
    from docutils import nodes
    from docutils.parsers.rst import Directive, directives, languages, roles

    class AnyOption(dict):
        def __missing__(self, key):
            return directives.unchanged

    class Generic(Directive):
        """An unknown directive: its arguments as a paragraph, its content as text."""
        optional_arguments = 100
        final_argument_whitespace = True
        has_content = True
        option_spec = AnyOption()

        def run(self):
            if self.name in _NAVIGATION:
                return []
            out = []
            if self.arguments:
                out.append(nodes.paragraph(text=" ".join(self.arguments)))
            if self.content:
                box = nodes.container()
                self.state.nested_parse(self.content, self.content_offset, box)
                out.append(box)
            return out

    def generic_role(name, rawtext, text, lineno, inliner, options=None, content=None):
        # ":ref:`Title <label>`" reads as "Title"; "~mod.func" as "mod.func"
        shown = re.sub(r"\s*<[^<>]*>$", "", text).lstrip("~!") or text
        return [nodes.literal(rawtext, shown)], []

    english = languages.get_language("en")
    return nodes, directives, roles, english, Generic, generic_role


_registered: set[str] = set()


def _known_directive(name: str) -> bool:
    nodes, directives, roles, english, Generic, generic_role = _docutils()
    return name.lower() in directives._directive_registry or \
        name.lower() in english.directives or \
        (name.lower() in directives._directives and name.lower() not in _registered)


def _prepare(text: str) -> list[str]:
    """Registers the unknown directives and roles `text` uses; returns each use of an
    unknown directive's name."""
    nodes, directives, roles, english, Generic, generic_role = _docutils()
    unknown = [n for n in _DIRECTIVE.findall(text) if not _known_directive(n)]
    for name in set(unknown) - _registered:
        directives.register_directive(name, Generic)
        _registered.add(name)
    for name in set(_ROLE.findall(text)):
        low = name.lower()
        if low not in roles._role_registry and low not in english.roles \
                and low not in roles._roles:
            roles.register_local_role(name, generic_role)
    return unknown


def _text(node) -> str:
    return " ".join(node.astext().split())


def _table_rows(table) -> tuple[tuple[str, ...], int]:
    rows, header = [], 0
    for group in table.findall(lambda n: n.tagname in ("thead", "tbody")):
        for row in group.children:
            if row.tagname != "row":
                continue
            cells = TABLE_CELL_SEP.join(_text(entry) for entry in row.children)
            if cells.replace("|", "").strip():
                rows.append(cells)
                header += group.tagname == "thead"
    return tuple(rows), header


class _Walk:
    def __init__(self):
        self.parts: list[Part] = []
        self.path = ["", "", ""]
        self.title = ""

    def emit(self, kind: str, text: str, rows: tuple[str, ...] = (), header: int = 0) -> None:
        if text.strip():
            self.parts.append(Part(kind, text, tuple(self.path), rows, header))

    def walk(self, node, depth: int, item: bool) -> None:
        for child in node.children:
            t = child.tagname
            if t in _SKIP or (t == "topic" and "contents" in child.get("classes", ())):
                continue
            if t == "section":
                titles = [c for c in child.children if c.tagname == "title"]
                level = min(depth + 1, 4)
                if titles:
                    text = _text(titles[0])
                    if level == 1:
                        self.title = self.title or text
                    self.path = heading_path(self.path, level, text)
                    self.emit(f"heading{level}", text)
                self.walk(child, depth + 1, item)
            elif t in ("paragraph", "line_block", "rubric", "caption", "legend", "attribution"):
                self.emit("item" if item else "paragraph", _text(child))
            elif t in ("literal_block", "doctest_block", "math_block"):
                self.emit("pre", child.astext().strip("\n"))
            elif t == "table":
                rows, header = _table_rows(child)
                if rows:
                    self.emit("table", "\n".join(rows), rows, header)
            elif t in ("bullet_list", "enumerated_list"):
                for li in child.children:
                    self.walk(li, depth, True)
            elif t in ("definition_list", "field_list", "option_list"):
                for entry in child.children:
                    head = [c for c in entry.children
                            if c.tagname in ("term", "field_name", "option_group")]
                    body = [c for c in entry.children
                            if c.tagname in ("definition", "field_body", "description")]
                    term = " ".join(_text(c) for c in head)
                    self.emit("dl", _define(term, " ".join(_text(c) for c in body)))
            else:  # containers: admonitions, block quotes, unknown directives' content
                self.walk(child, depth, item)


def parse_rst(data: bytes, doc_id: str, *, path: str | None = None
              ) -> tuple[Document, list[Problem]]:
    """Parse one reStructuredText file. Raises InputError when it cannot become a document."""
    where = str(path) if path else doc_id
    if not data.strip():
        raise InputError(where, "empty file")
    if b"\x00" in data and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError(where, "binary file (contains NUL bytes), not reStructuredText")
    text, problems = decode_html(data, where)
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    optional.load("rst", where)
    from docutils.core import publish_doctree
    unknown = _prepare(text)
    settings = {"report_level": 5, "halt_level": 5, "file_insertion_enabled": False,
                "raw_enabled": False, "doctitle_xform": False, "sectsubtitle_xform": False,
                "_disable_config": True, "warning_stream": False, "input_encoding": "unicode",
                "syntax_highlight": "none"}
    try:
        tree = publish_doctree(text, source_path=where, settings_overrides=settings)
    except Exception as e:  # docutils raises on input it cannot even start on
        raise InputError(where, f"not readable as reStructuredText ({str(e)[:200]})") from None
    walk = _Walk()
    walk.walk(tree, 0, False)
    if not walk.parts:
        raise InputError(where, "no text: the file holds only markup")
    if unknown:
        names = ", ".join(sorted(set(unknown)))
        problems.append(Problem(where, f"{len(unknown)} directive(s) docutils does not know "
                                       f"(Sphinx's: {names}) read as plain content"))
    if not any(p.kind.startswith("heading") for p in walk.parts):
        problems.append(Problem(where, "no sections: the file has no structure, it is read as "
                                       "one section"))
    title = walk.title or doc_id
    parts = [p if p.headings[0] else Part(p.kind, p.text, (title, *p.headings[1:]), p.rows,
                                          p.header_rows) for p in walk.parts]
    return Document.from_parts(doc_id, title, parts, source=where), problems
