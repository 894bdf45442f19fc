"""reStructuredText -> Document with docutils, as a Sphinx build shows it: sections as
headings (level by nesting), paragraphs, list items, literal blocks as `pre`, tables one row
per line, definition lists.

Sphinx's directives and roles are registered here with their option tables and the text
Sphinx shows for them, so a docs project reads without Sphinx installed:

- code-block, sourcecode, code and literalinclude are code blocks, their caption a paragraph
  before them; include and literalinclude read files inside the corpus folder only (a file
  outside is skipped with a problem, nothing of it read);
- versionadded, versionchanged, deprecated and versionremoved carry Sphinx's label ("Added in
  version 2.0: ..."); admonitions their label ("Note: ...") or title;
- Python domain objects (class, function, method, ...) are their signature line and body;
  autodoc directives, whose text comes from the project's code, only their signature line
  and the content written beside them (counted in one problem);
- toctree, index, highlight, currentmodule, only and other markers give no text;
- :ref: and :doc: show the target's title when the corpus has it, else the label; Python
  roles show what Sphinx shows (`~pkg.App.config` -> `config`, `:func:` gets "()").

Substitutions come from the document. |version|, |release| and |today| come from conf.py,
which is not run: a plain string assigned to `version`/`release` in a conf.py at the corpus
folder's top is used, else the reference reads as nothing (one problem per file). Errors
docutils reports (a malformed table, inconsistent title levels) become problems with the
file and line; the rest of the file is kept. Raw output stays off.

This module runs docutils and turns its messages into problems; rst_project.py reads what
files refer to across the project, rst_directives.py and rst_roles.py give Sphinx's markup
its text, rst_includes.py reads other files, and rst_walk.py turns the tree into Parts.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from ..errors import InputError, Problem
from ..model import Document, Part
from . import optional
from .charset import decode_html
from .rst_project import ParseState, Project, sha256
from .rst_walk import Walk

# Where the corpus's sources import them from
__all__ = ["RST_PARSER_VERSION", "Project", "parse_rst"]

# Bump whenever the output for the same bytes may change: it keys the parse cache.
RST_PARSER_VERSION = "2"

_DIRECTIVE = re.compile(r"^[ \t]*\.\.[ \t]+([A-Za-z0-9][\w:.+-]*)::", re.M)
_ROLE = re.compile(r"(?<![\w`]):([A-Za-z0-9][\w:.+-]*):`")


@lru_cache(maxsize=1)
def _docutils() -> None:
    """Registers Sphinx's directives and roles with docutils (once per process)."""
    from docutils.parsers.rst import directives

    from .rst_directives import DIRECTIVES
    from .rst_includes import INCLUDES
    from .rst_roles import register_roles

    table = {**DIRECTIVES, **INCLUDES}
    for name in list(table):
        if ":" not in name:  # the Python domain is the default one
            table.setdefault(f"py:{name}", table[name])
            table.setdefault(f"std:{name}", table[name])
    for name, directive in table.items():
        directives.register_directive(name, directive)
    register_roles()


def _prepare(text: str) -> None:
    """Registers the directives and roles `text` uses that nobody registered, as plain
    content (a directive) or their text (a role)."""
    _docutils()
    from docutils.parsers.rst import directives, languages, roles

    from .rst_directives import Generic
    from .rst_roles import generic_role

    english = languages.get_language("en")
    for name in set(_DIRECTIVE.findall(text)):
        low = name.lower()
        if low not in directives._directives and low not in english.directives:
            directives.register_directive(low, Generic)
    for name in set(_ROLE.findall(text)):
        low = name.lower()
        if low not in roles._roles and low not in english.roles:
            roles.register_local_role(low, generic_role)


def parse_rst(data: bytes, doc_id: str, *, path: str | None = None,
              project: Project | None = None, file: Path | None = None
              ) -> tuple[Document, list[Problem]]:
    """Parse one reStructuredText file. `project` holds the corpus folder and the other
    files' titles and labels, `file` where this one is (for relative includes). Raises
    InputError when it cannot become a document."""
    where = str(path) if path else doc_id
    if not data.strip():
        raise InputError(where, "empty file")
    if b"\x00" in data and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError(where, "binary file (contains NUL bytes), not reStructuredText")
    text, problems = decode_html(data, where)
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    optional.load("rst", where)
    from docutils.core import publish_doctree
    _prepare(text)
    project = project or Project()
    state = ParseState(project, file.resolve() if file else None, doc_id, where)
    # conf.py's substitutions, where the file does not define them itself (definitions may
    # come last: appending keeps the line numbers)
    used = set(re.findall(r"\|(version|release|today)\|", text))
    defined = set(re.findall(r"^\.\. \|(version|release|today)\|", text, re.M))
    extra = [f".. |{name}| replace:: {project.conf[name]}" for name in sorted(used - defined)
             if project.conf.get(name)]
    missing = sorted(name for name in used - defined if not project.conf.get(name))
    if extra:
        text = text + "\n\n" + "\n".join(extra) + "\n"
    settings = {"report_level": 3, "halt_level": 5, "file_insertion_enabled": True,
                "raw_enabled": False, "doctitle_xform": False, "sectsubtitle_xform": False,
                "_disable_config": True, "warning_stream": False, "input_encoding": "utf-8-sig",
                "syntax_highlight": "none", "chunkeval_state": state,
                "root_prefix": str(project.root or "/nonexistent")}
    source_path = str(state.source) if state.source else where
    try:
        tree = publish_doctree(text, source_path=source_path, settings_overrides=settings)
    except Exception as e:  # docutils raises on input it cannot even start on
        raise InputError(where, f"not readable as reStructuredText ({str(e)[:200]})") from None
    for dependency in tree.settings.record_dependencies.list:
        project.read[str(dependency)] = sha256(Path(dependency))
    problems += _errors(tree, where, source_path, set(missing))
    for name in missing:
        _blank_substitution(tree, name)
    _drop_messages(tree)
    _trim_doctest_flags(tree)
    walk = Walk()
    walk.walk(tree, 0, False)
    if not walk.parts:
        raise InputError(where, "no text: the file holds only markup")
    problems += state.problems
    if state.unknown:
        problems.append(Problem(where, f"{len(state.unknown)} directive(s) chunkeval does not "
                                       f"know read as plain text: "
                                       f"{', '.join(sorted(set(state.unknown)))}",
                                kind="rst-unknown-directive", names=tuple(state.unknown)))
    if state.autodoc:
        problems.append(Problem(where, f"{len(state.autodoc)} autodoc directive(s) read as "
                                       "their signature line only (their text is in the "
                                       "project's code)",
                                kind="rst-autodoc", names=tuple(state.autodoc)))
    if missing:
        problems.append(Problem(where, "|" + "|, |".join(missing) + "| come from conf.py, "
                                "which is not run; read as nothing", kind="rst-conf-value",
                                names=tuple(missing)))
    if not any(p.kind.startswith("heading") for p in walk.parts):
        problems.append(Problem(where, "no sections: the file has no structure, it is read as "
                                       "one section", kind="no-sections"))
    title = walk.title or doc_id
    parts = [p if p.headings[0] else Part(p.kind, p.text, (title, *p.headings[1:]), p.rows,
                                          p.header_rows) for p in walk.parts]
    return Document.from_parts(doc_id, title, parts, source=where), problems


def _errors(tree, where: str, source_path: str, conf_names: set[str]) -> list[Problem]:
    """docutils' errors (level 3 and above) as problems naming the file and line."""
    from docutils import nodes
    found = []
    for message in tree.findall(nodes.system_message):
        if message.get("level", 0) < 3:
            continue
        text = " ".join(message.children[0].astext().split()) if message.children else ""
        name = re.match(r'Undefined substitution referenced: "(\w+)"', text)
        if name and name.group(1) in conf_names:
            continue
        source = message.get("source") or source_path
        shown = where if source == source_path else source
        found.append(Problem(shown, f"reStructuredText error, the rest of the file is kept: "
                                    f"{text[:200]}", message.get("line"), kind="rst-error"))
    return found


def _drop_messages(tree) -> None:
    """docutils' messages stay out of the text, also where they sit inside a table cell."""
    from docutils import nodes
    for message in list(tree.findall(nodes.system_message)):
        message.parent.remove(message)


_DOCTEST_FLAG = re.compile(r"[ \t]*#\s*doctest:.+$", re.M)
_BLANKLINE = re.compile(r"^\s*<BLANKLINE>\s*$", re.M)


def _trim_doctest_flags(tree) -> None:
    """As Sphinx does by default (trim_doctest_flags): `# doctest: +SKIP` comments and
    <BLANKLINE> markers go from interactive Python sessions."""
    from docutils import nodes
    for block in list(tree.findall(lambda n: isinstance(n, (nodes.literal_block,
                                                             nodes.doctest_block)))):
        text = block.astext()
        if not text.lstrip().startswith(">>>"):
            continue
        trimmed = _BLANKLINE.sub("", _DOCTEST_FLAG.sub("", text))
        if trimmed != text:
            block.children = []
            block += nodes.Text(trimmed)


def _blank_substitution(tree, name: str) -> None:
    """An undefined |version| (its value is in conf.py) reads as nothing."""
    from docutils import nodes
    for node in list(tree.findall(nodes.problematic)):
        if node.astext() == f"|{name}|":
            node.parent.replace(node, nodes.Text(""))
