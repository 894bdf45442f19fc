"""Sphinx's directives as docutils directives, so that a docs project reads without Sphinx:
each gives the text a Sphinx build shows for it (code blocks and their captions, "Added in
version 2.0: ...", Python objects' signature lines, tabs and cards as their content) or none
(toctree, index and other markers). Imported only once docutils is needed."""

from __future__ import annotations

from docutils import nodes
from docutils.parsers.rst import Directive, directives

from .rst_project import ParseState, state_of

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


def _dedent_option(value: str | None) -> str:
    """:dedent: takes a number of spaces, or nothing (the common indent)."""
    value = (value or "").strip()
    if value and not value.isdigit():
        raise ValueError(f"{value!r} is not a number of spaces")
    return value


def dedent(text: str, amount: str) -> str:
    lines = text.split("\n")
    if amount.strip():
        n = int(amount)
        return "\n".join(line[n:] if not line[:n].strip() else line.lstrip() for line in lines)
    indents = [len(line) - len(line.lstrip()) for line in lines if line.strip()]
    n = min(indents, default=0)
    return "\n".join(line[n:] for line in lines)


class AnyOption(dict):
    """An option table that takes every option (and drops it): for directives whose
    options never show."""
    def __missing__(self, key):
        return directives.unchanged

    def __bool__(self):
        return True


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
            state_of(self.state.document).module = "" if arg == "None" else arg
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
        state_of(self.state.document).unknown.append(self.name)
        return super().run()


def place(directive) -> tuple[str, int | None]:
    """The file (the one being read, or a file it included) and line of a directive:
    docutils' own line counts the included lines."""
    state = state_of(directive.state.document)
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
            text = dedent(text, self.options["dedent"])
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
        state = state_of(self.state.document)
        kind = self.kind()
        box = nodes.container(classes=["desc"])
        for sig in " ".join(self.arguments).split("\n") if self.arguments else ():
            if sig.strip():
                box += nodes.paragraph(text=self.signature(state, kind, sig.strip()))
        state.in_object += 1
        self.state.nested_parse(self.content, self.content_offset, box)
        state.in_object -= 1
        return [box]

    def signature(self, state: ParseState, kind: str, sig: str) -> str:
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
        state_of(self.state.document).autodoc.append(self.name)
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


# name -> directive; the reading of files (include, literalinclude, csv-table) is in
# rst_includes.py
DIRECTIVES = {name: Dropped for name in _DROPPED}
DIRECTIVES.update({name: Wrapper for name in _WRAPPERS})
DIRECTIVES.update({name: CodeBlock for name in _CODE})
DIRECTIVES.update({name: DoctestBlock for name in _DOCTEST})
DIRECTIVES.update({name: VersionChange for name in _VERSION_LABELS})
DIRECTIVES.update({name: PyObject for name in _PY_OBJECTS})
DIRECTIVES.update({name: AutoDoc for name in _AUTODOC})
DIRECTIVES.update({name: Describe for name in _DESCRIBE})
DIRECTIVES.update({"seealso": SeeAlso, "glossary": Glossary, "centered": Centered,
                   "productionlist": ProductionList})
