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
"""

from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..errors import InputError, Problem
from ..model import TABLE_CELL_SEP, Document, Part, heading_path
from . import optional
from .charset import decode_html
from .html_blocks import define

# Bump whenever the output for the same bytes may change: it keys the parse cache.
RST_PARSER_VERSION = "2"

RST_SUFFIXES = (".rst", ".rest")
_DIRECTIVE = re.compile(r"^[ \t]*\.\.[ \t]+([A-Za-z0-9][\w:.+-]*)::", re.M)
_ROLE = re.compile(r"(?<![\w`]):([A-Za-z0-9][\w:.+-]*):`")
_SKIP = {"comment", "substitution_definition", "target", "raw", "pending", "meta",
         "decoration", "footer", "header", "subtitle"}
_ADMONITIONS = {"attention": "Attention", "caution": "Caution", "danger": "Danger",
                "error": "Error", "hint": "Hint", "important": "Important", "note": "Note",
                "tip": "Tip", "warning": "Warning"}
_VERSION_LABELS = {"versionadded": "Added in version", "versionchanged": "Changed in version",
                   "deprecated": "Deprecated since version",
                   "versionremoved": "Removed in version"}
# Markers and navigation: Sphinx shows nothing of them in the page's text.
_DROPPED = {"toctree", "index", "highlight", "currentmodule", "module", "only", "tabularcolumns",
            "sectionauthor", "moduleauthor", "codeauthor", "default-domain", "rst-class",
            "cssclass", "todo", "todolist", "ifconfig", "testsetup", "testcleanup",
            "graphviz", "graph", "digraph", "inheritance-diagram", "spelling:word-list",
            "automodsumm", "autosummary", "plot", "mermaid", "jinja"}
# Wrappers whose content is the text (tabs, cards): the argument is the tab's title.
_WRAPPERS = {"tabs", "tab", "group-tab", "tab-set", "tab-item", "grid", "grid-item",
             "grid-item-card", "card", "dropdown", "hlist", "container", "rst-class-content"}
_CODE = {"code-block", "sourcecode", "code"}
_DOCTEST = {"doctest", "testcode", "testoutput"}
# Python domain objects: the word Sphinx puts before the name.
_PY_OBJECTS = {"function": "", "class": "class ", "method": "", "classmethod": "classmethod ",
               "staticmethod": "static ", "attribute": "", "property": "property ",
               "data": "", "exception": "exception ", "decorator": "@",
               "decoratormethod": "@", "type": "type "}
_AUTODOC = {"autoclass": "class", "autofunction": "function", "automethod": "method",
            "autoattribute": "attribute", "autoexception": "exception", "autodata": "data",
            "automodule": "module", "autoproperty": "property", "autodecorator": "decorator",
            "autonewtypedata": "data", "autotypevar": "data"}
# Other domains' and std's objects: the signature as written.
_DESCRIBE = {"describe", "object", "option", "cmdoption", "envvar", "confval", "program",
             "js:function", "js:class", "js:method", "js:data", "js:attribute", "js:module",
             "c:function", "c:macro", "c:type", "c:member", "c:var", "c:struct",
             "cpp:function", "cpp:class", "cpp:member", "cpp:type", "cpp:enum",
             "rst:directive", "rst:role", "rst:directive:option"}
_XREF_ROLES = {"ref", "doc", "class", "meth", "func", "attr", "exc", "mod", "data", "const",
               "obj", "any", "term", "option", "envvar", "keyword", "token", "numref",
               "download", "program", "type", "deco", "confval", "dir", "role", "member",
               "var", "macro", "struct", "enum", "enumerator", "union", "expr", "texpr"}
_TEXT_ROLES = {"abbr", "command", "dfn", "file", "guilabel", "kbd", "mailheader", "makevar",
               "manpage", "menuselection", "mimetype", "newsgroup", "program", "regexp",
               "samp", "pep", "rfc", "index", "eq"}
_PARENS = {"func", "meth"}
_CONF_SUBSTITUTIONS = ("version", "release", "today")


@dataclass
class Project:
    """What a file's markup refers to beyond itself: the corpus folder (for include and
    literalinclude), every file's title and its labelled sections' titles (for :doc: and
    :ref:), and conf.py's version strings."""
    root: Path | None = None
    titles: dict[str, str] = field(default_factory=dict)  # doc path without suffix -> title
    labels: dict[str, str] = field(default_factory=dict)  # label -> section title
    conf: dict[str, str] = field(default_factory=dict)  # substitution -> value
    # the files include and literalinclude read (path -> sha256), beside the corpus's own
    read: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, root: Path | None, sources: dict[str, str]) -> "Project":
        """The project of the reStructuredText `sources` (doc id -> text) under `root`."""
        project = cls(root.resolve() if root else None)
        for doc_id, text in sources.items():
            title, labels = _titles(text)
            if title:
                project.titles[_stem(doc_id)] = title
            project.labels.update(labels)
        conf = project.root / "conf.py" if project.root else None
        if conf and conf.is_file():
            project.conf = _conf_strings(conf)
            project.read[str(conf)] = _sha256(conf)  # a new version string: parse again
        return project


def _stem(doc_id: str) -> str:
    for suffix in RST_SUFFIXES:
        if doc_id.lower().endswith(suffix):
            return doc_id[:-len(suffix)]
    return doc_id


_UNDERLINE = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}\s*$")
_LABEL = re.compile(r"^\.\. _([^:`]+|`[^`]+`):\s*$")


def _plain(title: str) -> str:
    """A title's text without its inline markup."""
    title = re.sub(r":[\w:.+-]+:`([^`]*)`", lambda m: _role_title(m.group(1)), title)
    title = re.sub(r"``(.+?)``", r"\1", title)
    title = re.sub(r"(\*\*|\*|`)(.+?)\1_?", r"\2", title)
    return " ".join(title.split())


def _role_title(text: str) -> str:
    m = re.match(r"^(.+?)\s*<[^<>]*>$", text, re.S)
    return m.group(1) if m else text.lstrip("~!.")


def _titles(text: str) -> tuple[str, dict[str, str]]:
    """The file's first section title and its labels' section titles, read from the lines
    (an underlined line is a title; a `.. _label:` before it names it)."""
    lines = text.splitlines()
    first, labels, pending = "", {}, []
    for i, line in enumerate(lines):
        m = _LABEL.match(line)
        if m:
            pending.append(m.group(1).strip("`").lower())
            continue
        if not line.strip() or _UNDERLINE.match(line) and i + 1 < len(lines) and \
                lines[i + 1].strip() and i + 2 < len(lines) and _UNDERLINE.match(lines[i + 2]):
            continue  # a blank line, or the overline of a title
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if not line.startswith((" ", "\t")) and _UNDERLINE.match(nxt) and \
                len(nxt.rstrip()) >= len(line.rstrip()) - 1:
            title = _plain(line)
            first = first or title
            for label in pending:
                labels[label] = title
        pending = []
    return first, labels


def _conf_strings(conf: Path) -> dict[str, str]:
    """The plain strings conf.py assigns to version, release and today (it is not run)."""
    try:
        tree = ast.parse(conf.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return {}
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and \
                isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id in _CONF_SUBSTITUTIONS:
                    found[target.id] = node.value.value
    return found


@dataclass
class _State:
    """One parse's context, reached from directives and roles through the settings."""
    project: Project
    source: Path | None  # the file being read, for relative include paths
    doc_id: str
    where: str
    problems: list[Problem] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # uses of directives read as plain
    autodoc: list[str] = field(default_factory=list)
    module: str = ""
    in_object: int = 0  # nesting inside a Python object's body


def _state(document) -> _State:
    return document.settings.chunkeval_state


@lru_cache(maxsize=1)
def _docutils():
    """docutils with Sphinx's directives and roles registered (once per process)."""
    from docutils import nodes
    from docutils.parsers.rst import Directive, directives, roles
    from docutils.parsers.rst.directives.misc import Include
    from docutils.parsers.rst.directives.tables import CSVTable

    class AnyOption(dict):
        """An option table that takes every option (and drops it): for directives whose
        options never show."""
        def __missing__(self, key):
            return directives.unchanged

        def __bool__(self):
            return True

    def inside(directive, name: str) -> Path | None:
        """The file `name` refers to, when it is inside the corpus folder; else None, with
        a problem (nothing is read)."""
        state = _state(directive.state.document)
        root = state.project.root
        where, line = _place(directive)
        if root is None:
            state.problems.append(Problem(where, f"{directive.name} of {name}: no "
                                          "corpus folder to read it from; skipped", line,
                                          kind="include-outside", names=(directive.name,)))
            return None
        current = directive.state.document.current_source
        base = Path(current).parent if current else (state.source.parent if state.source
                                                     else root)
        path = (root / name.lstrip("/")) if name.startswith("/") else base / name
        try:
            real = path.resolve()
        except (OSError, RuntimeError):
            real = None
        if real is None or not real.is_relative_to(root):
            state.problems.append(Problem(where, f"{directive.name} of {name}: outside "
                                          "the corpus folder; skipped, nothing read", line,
                                          kind="include-outside", names=(directive.name,)))
            return None
        if not real.is_file():
            state.problems.append(Problem(where, f"{directive.name} of {name}: no such "
                                          "file in the corpus folder; skipped", line,
                                          kind="include-missing", names=(directive.name,)))
            return None
        return real

    class Loose(Directive):
        """Any arguments, content and options (the options show nothing)."""
        optional_arguments = 100
        final_argument_whitespace = True
        has_content = True
        option_spec = AnyOption()

    class Dropped(Loose):

        def run(self):
            if self.name in ("module", "currentmodule", "py:module", "py:currentmodule"):
                arg = self.arguments[0].strip() if self.arguments else ""
                _state(self.state.document).module = "" if arg == "None" else arg
            return []

    class Wrapper(Loose):
        """A tab, card or similar box: its title (the argument) and its content."""

        def run(self):
            box = nodes.container()
            if self.arguments:
                box += nodes.paragraph(text=" ".join(self.arguments))
            self.state.nested_parse(self.content, self.content_offset, box)
            return [box]

    class Generic(Wrapper):
        """A directive chunkeval does not know: its argument and content as text."""

        def run(self):
            _state(self.state.document).unknown.append(self.name)
            return super().run()

    def _place(directive) -> tuple[str, int | None]:
        """The file (the one being read, or a file it included) and line of a directive:
        docutils' own line counts the included lines."""
        state = _state(directive.state.document)
        source, line = directive.state_machine.get_source_and_line(directive.lineno)
        shown = state.where if not source or source == str(state.source) else source
        return shown, line

    def code_block(directive, text: str, language: str = ""):
        literal = nodes.literal_block(text, text)
        literal["language"] = language
        literal.line = directive.lineno
        caption = directive.options.get("caption")
        if not caption:
            return [literal]
        box = nodes.container(classes=["literal-block-wrapper"])
        box += nodes.caption(caption, caption)
        box += literal
        return [box]

    code_options = {"linenos": directives.flag, "lineno-start": int,
                    "emphasize-lines": directives.unchanged_required,
                    "caption": directives.unchanged_required, "class": directives.class_option,
                    "name": directives.unchanged, "dedent": _dedent_option,
                    "force": directives.flag, "number-lines": directives.unchanged,
                    "language": directives.unchanged, "hide": directives.flag,
                    "options": directives.unchanged, "trim": directives.flag}

    class CodeBlock(Directive):
        optional_arguments = 1
        final_argument_whitespace = False
        has_content = True
        option_spec = code_options

        def run(self):
            text = "\n".join(self.content)
            if "dedent" in self.options:
                text = _dedent(text, self.options["dedent"])
            return code_block(self, text, self.arguments[0] if self.arguments else "")

    class DoctestBlock(Directive):
        """sphinx.ext.doctest's blocks: code, unless hidden."""
        optional_arguments = 1
        final_argument_whitespace = True
        has_content = True
        option_spec = {"hide": directives.flag, "options": directives.unchanged,
                       "pyversion": directives.unchanged_required,
                       "skipif": directives.unchanged_required,
                       "trim-doctest-flags": directives.flag,
                       "no-trim-doctest-flags": directives.flag}

        def run(self):
            if "hide" in self.options:
                return []
            return code_block(self, "\n".join(self.content), "python")

    class LiteralInclude(Directive):
        required_arguments = 1
        final_argument_whitespace = True
        option_spec = {**code_options, "tab-width": int, "encoding": directives.encoding,
                       "pyobject": directives.unchanged_required,
                       "lines": directives.unchanged_required,
                       "start-after": directives.unchanged_required,
                       "end-before": directives.unchanged_required,
                       "start-at": directives.unchanged_required,
                       "end-at": directives.unchanged_required,
                       "prepend": directives.unchanged_required,
                       "append": directives.unchanged_required,
                       "lineno-match": directives.flag, "diff": directives.unchanged_required}

        def run(self):
            path = inside(self, self.arguments[0].strip())
            if path is None:
                return []
            state = _state(self.state.document)
            try:
                text = path.read_bytes().decode(self.options.get("encoding", "utf-8-sig"),
                                                "replace")
                text = _clip(text, self.options)
            except ValueError as e:
                state.problems.append(Problem(state.where, f"literalinclude of "
                                              f"{self.arguments[0]}: {e}; skipped",
                                              _place(self)[1], kind="rst-error"))
                return []
            self.state.document.settings.record_dependencies.add(str(path))
            return code_block(self, text.expandtabs(self.options.get("tab-width", 8)),
                              self.options.get("language", ""))

    class SafeInclude(Include):
        """docutils' include, for files inside the corpus folder only."""

        def run(self):
            name = self.arguments[0].strip()
            # docutils' own files (<isonum.txt>) by their bare name only
            if not re.fullmatch(r"<[\w.-]+>", name) or ".." in name:
                path = inside(self, name)
                if path is None:
                    return []
                # docutils reads a path starting with / under root_prefix: the corpus folder
                root = _state(self.state.document).project.root
                self.arguments[0] = "/" + path.relative_to(root).as_posix()
                self.options.pop("parser", None)  # another parser could read beyond
            return super().run()

    class SafeCSVTable(CSVTable):
        """csv-table without :url: (nothing is downloaded); :file: inside the corpus folder only."""

        def run(self):
            if "url" in self.options:
                state = _state(self.state.document)
                state.problems.append(Problem(state.where, "csv-table :url: is not downloaded; "
                                              "table skipped", _place(self)[1],
                                              kind="include-outside", names=("csv-table",)))
                return []
            if "file" in self.options:
                path = inside(self, self.options["file"])
                if path is None:
                    return []
                self.options["file"] = str(path)
            return super().run()

    class VersionChange(Directive):
        required_arguments = 1
        optional_arguments = 1
        final_argument_whitespace = True
        has_content = True
        option_spec = {}

        def run(self):
            label = f"{_VERSION_LABELS[self.name]} {self.arguments[0]}"
            box = nodes.container()
            if len(self.arguments) > 1:
                inline, messages = self.state.inline_text(self.arguments[1], self.lineno)
                box += nodes.paragraph("", "", *inline)
                box += messages
            if self.content:
                self.state.nested_parse(self.content, self.content_offset, box)
            first = box.children[0] if box.children else None
            if isinstance(first, nodes.paragraph):
                first.insert(0, nodes.Text(label + ": "))
            else:
                box.insert(0, nodes.paragraph(text=label + "."))
            return [box]

    class SeeAlso(Directive):
        optional_arguments = 1
        final_argument_whitespace = True
        has_content = True

        def run(self):
            box = nodes.admonition(classes=["seealso"])
            if self.arguments:
                inline, messages = self.state.inline_text(self.arguments[0], self.lineno)
                box += nodes.paragraph("", "", *inline)
            self.state.nested_parse(self.content, self.content_offset, box)
            return [box]

    class PyObject(Loose):
        """A Python object's description: its signature line(s), then its body."""

        def kind(self) -> str:
            return self.name.split(":")[-1]

        def run(self):
            state = _state(self.state.document)
            kind = self.kind()
            box = nodes.container(classes=["desc"])
            for sig in " ".join(self.arguments).split("\n") if self.arguments else ():
                if sig.strip():
                    box += nodes.paragraph(text=self.signature(state, kind, sig.strip()))
            state.in_object += 1
            self.state.nested_parse(self.content, self.content_offset, box)
            state.in_object -= 1
            return [box]

        def signature(self, state: _State, kind: str, sig: str) -> str:
            if kind == "module":
                return ""
            name, args = (sig.split("(", 1) + [""])[:2]
            args = f"({args}" if "(" in sig else ""
            module = self.options.get("module", state.module)
            if "." not in name and module and not state.in_object:
                name = f"{module}.{name}"
            prefix = _PY_OBJECTS.get(kind, "")
            if "async" in self.options:
                prefix = "async " + prefix
            if "type" in self.options:
                args += f": {self.options['type']}"
            if "value" in self.options:
                args += f" = {self.options['value']}"
            if "annotation" in self.options:
                args += f" {self.options['annotation']}"
            return f"{prefix}{name.strip()}{args}"

    class AutoDoc(PyObject):
        """An autodoc directive: the object's text is in the project's code, which is not
        run; its signature line and the content written beside it stay."""

        def kind(self) -> str:
            return _AUTODOC[self.name.split(":")[-1]]

        def run(self):
            _state(self.state.document).autodoc.append(self.name)
            return super().run()

    class Describe(Loose):
        """Another domain's object (or std's option, envvar...): the signature as written."""

        def run(self):
            box = nodes.container(classes=["desc"])
            for sig in " ".join(self.arguments).split("\n") if self.arguments else ():
                if sig.strip():
                    box += nodes.paragraph(text=sig.strip())
            self.state.nested_parse(self.content, self.content_offset, box)
            return [box]

    class Glossary(Directive):
        has_content = True
        option_spec = {"sorted": directives.flag}

        def run(self):
            box = nodes.container()
            self.state.nested_parse(self.content, self.content_offset, box)
            return [box]

    class Centered(Directive):
        required_arguments = 1
        final_argument_whitespace = True

        def run(self):
            inline, messages = self.state.inline_text(self.arguments[0], self.lineno)
            return [nodes.paragraph("", "", *inline), *messages]

    class ProductionList(Directive):
        has_content = True
        optional_arguments = 100
        final_argument_whitespace = True

        def run(self):
            text = "\n".join(" ".join(self.arguments).split("\n"))
            return [nodes.literal_block(text, text)]

    table = {name: Dropped for name in _DROPPED}
    table.update({name: Wrapper for name in _WRAPPERS})
    table.update({name: CodeBlock for name in _CODE})
    table.update({name: DoctestBlock for name in _DOCTEST})
    table.update({name: VersionChange for name in _VERSION_LABELS})
    table.update({name: PyObject for name in _PY_OBJECTS})
    table.update({name: AutoDoc for name in _AUTODOC})
    table.update({name: Describe for name in _DESCRIBE})
    table.update({"literalinclude": LiteralInclude, "include": SafeInclude,
                  "csv-table": SafeCSVTable, "seealso": SeeAlso, "glossary": Glossary,
                  "centered": Centered, "productionlist": ProductionList})
    for name in list(table):
        if ":" not in name:  # the Python domain is the default one
            table.setdefault(f"py:{name}", table[name])
            table.setdefault(f"std:{name}", table[name])
    for name, directive in table.items():
        directives.register_directive(name, directive)

    def xref(name, rawtext, text, lineno, inliner, options=None, content=None):
        from docutils.utils import unescape
        kind = name.lower().split(":")[-1]
        text = unescape(text)
        explicit = re.match(r"^(.+?)\s*<([^<>]*)>$", text, re.S)
        if explicit:
            shown = explicit.group(1)
        else:
            shown = _xref_title(_state(inliner.document), kind, text)
        node = nodes.inline if kind in ("ref", "doc", "term", "numref", "download") \
            else nodes.literal
        return [node(rawtext, " ".join(shown.split()))], []

    def text_role(name, rawtext, text, lineno, inliner, options=None, content=None):
        from docutils.utils import unescape
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

    for name in _XREF_ROLES:
        for full in (name, f"py:{name}", f"std:{name}", f"c:{name}", f"cpp:{name}",
                     f"js:{name}", f"rst:{name}"):
            roles.register_local_role(full, xref)
    for name in _TEXT_ROLES:
        roles.register_local_role(name, text_role)
    return nodes, directives, roles, Generic, text_role


def _xref_title(state: _State, kind: str, target: str) -> str:
    """What Sphinx shows for a reference without an explicit title."""
    target = target.lstrip("!")
    if kind == "ref":
        return state.project.labels.get(target.lower(), target)
    if kind == "doc":
        here = _stem(state.doc_id).rsplit("/", 1)[0] if "/" in state.doc_id else ""
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


def _dedent_option(value: str | None) -> str:
    """:dedent: takes a number of spaces, or nothing (the common indent)."""
    value = (value or "").strip()
    if value and not value.isdigit():
        raise ValueError(f"{value!r} is not a number of spaces")
    return value


def _dedent(text: str, amount: str) -> str:
    lines = text.split("\n")
    if amount.strip():
        n = int(amount)
        return "\n".join(line[n:] if not line[:n].strip() else line.lstrip() for line in lines)
    indents = [len(line) - len(line.lstrip()) for line in lines if line.strip()]
    n = min(indents, default=0)
    return "\n".join(line[n:] for line in lines)


def _clip(text: str, options: dict) -> str:
    """literalinclude's selection of the file's lines, as Sphinx makes it."""
    lines = text.splitlines(keepends=True)
    if "pyobject" in options:
        lines = _pyobject(text, options["pyobject"])
    if "lines" in options:
        lines = [lines[i] for i in _line_numbers(options["lines"], len(lines))]
    for option, after, inclusive in (("start-after", True, False), ("start-at", True, True),
                                     ("end-before", False, False), ("end-at", False, True)):
        if option not in options:
            continue
        at = next((i for i, line in enumerate(lines) if options[option] in line), None)
        if at is None:
            raise ValueError(f"{option} text {options[option]!r} not found")
        if after:
            lines = lines[at if inclusive else at + 1:]
        else:
            lines = lines[:at + 1 if inclusive else at]
    if "prepend" in options:
        lines.insert(0, options["prepend"] + "\n")
    if "append" in options:
        lines.append(options["append"] + "\n")
    text = "".join(lines)
    if "dedent" in options:
        text = _dedent(text, options["dedent"])
    return text.rstrip("\n")


def _pyobject(text: str, name: str) -> list[str]:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        raise ValueError("pyobject: the file is not Python") from None
    body, found = tree.body, None
    for part in name.split("."):
        found = next((n for n in body if isinstance(n, (ast.ClassDef, ast.FunctionDef,
                                                        ast.AsyncFunctionDef))
                      and n.name == part), None)
        if found is None:
            raise ValueError(f"pyobject {name!r} not found")
        body = found.body
    first = min([found.lineno] + [d.lineno for d in found.decorator_list])
    return text.splitlines(keepends=True)[first - 1:found.end_lineno]


def _line_numbers(spec: str, count: int) -> list[int]:
    out = []
    for piece in spec.split(","):
        piece = piece.strip()
        if "-" in piece:
            start, end = piece.split("-", 1)
            first, last = int(start or 1), int(end) if end.strip() else count
            out.extend(range(first - 1, min(last, count)))
        elif piece:
            out.append(int(piece) - 1)
    if not out or any(not 0 <= i < count for i in out):
        raise ValueError(f"lines {spec!r} are not in the file")
    return out


def _prepare(text: str) -> None:
    """Registers the directives and roles `text` uses that nobody registered, as plain
    content (a directive) or their text (a role)."""
    nodes, directives, roles, Generic, text_role = _docutils()
    from docutils.parsers.rst import languages
    english = languages.get_language("en")
    for name in set(_DIRECTIVE.findall(text)):
        low = name.lower()
        if low not in directives._directives and low not in english.directives:
            directives.register_directive(low, Generic)
    for name in set(_ROLE.findall(text)):
        low = name.lower()
        if low not in roles._roles and low not in english.roles:
            roles.register_local_role(low, _generic_role)


def _generic_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    from docutils import nodes
    from docutils.utils import unescape
    # ":issue:`Title <123>`" reads as "Title"
    return [nodes.literal(rawtext, _role_title(unescape(text)) or text)], []


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


def _enumerator(kind: str, n: int) -> str:
    if kind in ("loweralpha", "upperalpha") and 1 <= n <= 26:
        letter = chr(ord("a") + n - 1)
        return letter if kind == "loweralpha" else letter.upper()
    if kind in ("lowerroman", "upperroman") and 1 <= n < 40:
        numeral = ""
        for value, digits in ((10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i")):
            while n >= value:
                numeral, n = numeral + digits, n - value
        return numeral if kind == "lowerroman" else numeral.upper()
    return str(n)


class _Walk:
    def __init__(self):
        self.parts: list[Part] = []
        self.path = ["", "", ""]
        self.title = ""
        self.label = ""  # an admonition's label, put before its first paragraph

    def emit(self, kind: str, text: str, rows: tuple[str, ...] = (), header: int = 0) -> None:
        if self.label:
            label, self.label = self.label, ""
            glue = " " if label.endswith((".", ")", "]")) else ": "
            if kind in ("paragraph", "item"):
                text = f"{label}{glue}{text}"
            else:
                self.emit("item" if glue == " " else "paragraph", label + glue.strip())
        if text.strip():
            self.parts.append(Part(kind, text, tuple(self.path), rows, header))

    def walk(self, node, depth: int, item: bool) -> None:
        for child in node.children:
            t = child.tagname
            if t == "#text":
                continue  # text outside a paragraph is a part of some markup, not the page's
            if t in _SKIP or (t == "topic" and "contents" in child.get("classes", ())) or \
                    t == "system_message" or "system-messages" in child.get("classes", ()):
                continue
            if t == "title":
                if node.tagname != "section":  # a topic's, sidebar's or admonition's
                    self.emit("paragraph", _text(child))
            elif t == "section":
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
            elif t == "bullet_list":
                for li in child.children:
                    self.walk(li, depth, True)
            elif t == "enumerated_list":  # numbered as the reader sees it: "1. first"
                for n, li in enumerate(child.children, child.get("start", 1)):
                    self.label = child.get("prefix", "") + \
                        _enumerator(child.get("enumtype", "arabic"), n) + child.get("suffix", ".")
                    self.walk(li, depth, True)
                    self.label = ""
            elif t in ("definition_list", "field_list", "option_list"):
                for entry in child.children:
                    head = [c for c in entry.children
                            if c.tagname in ("term", "field_name", "option_group")]
                    body = [c for c in entry.children
                            if c.tagname in ("definition", "field_body", "description")]
                    term = " ".join(_text(c) for c in head)
                    self.emit("dl", define(term, " ".join(_text(c) for c in body)))
            elif t == "image":
                if child.get("alt"):
                    self.emit("paragraph", f"[image: {child['alt']}]")
            elif t in ("footnote", "citation"):  # "[1] The note.", as Sphinx prints it
                labels = [c for c in child.children if c.tagname == "label"]
                self.label = f"[{_text(labels[0])}]" if labels else ""
                self.walk(child, depth, item)
                self.label = ""
            elif t in _ADMONITIONS or "seealso" in child.get("classes", ()):
                self.label = _ADMONITIONS.get(t, "See also")
                self.walk(child, depth, item)
                self.label = ""
            else:  # containers: admonitions, block quotes, directives' content
                self.walk(child, depth, item)


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
    state = _State(project, file.resolve() if file else None, doc_id, where)
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
        project.read[str(dependency)] = _sha256(Path(dependency))
    problems += _errors(tree, where, source_path, set(missing))
    for name in missing:
        _blank_substitution(tree, name)
    _drop_messages(tree)
    _trim_doctest_flags(tree)
    walk = _Walk()
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


def _sha256(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


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
