"""The directives that read other files (include, literalinclude, csv-table :file:), for
files inside the corpus folder only: a file outside is skipped with a problem, nothing of it
read. literalinclude selects the file's lines as Sphinx does (pyobject, lines, start-after,
end-before...). Imported only once docutils is needed."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from docutils.parsers.rst import Directive, directives
from docutils.parsers.rst.directives.misc import Include
from docutils.parsers.rst.directives.tables import CSVTable

from ..errors import Problem
from .rst_directives import code_block, code_options, dedent, place
from .rst_project import state_of


def inside(directive, name: str) -> Path | None:
    """The file `name` refers to, when it is inside the corpus folder; else None, with
    a problem (nothing is read)."""
    state = state_of(directive.state.document)
    root = state.project.root
    where, line = place(directive)
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
        state = state_of(self.state.document)
        try:
            text = path.read_bytes().decode(self.options.get("encoding", "utf-8-sig"),
                                            "replace")
            text = _clip(text, self.options)
        except ValueError as e:
            state.problems.append(Problem(state.where, f"literalinclude of "
                                          f"{self.arguments[0]}: {e}; skipped",
                                          place(self)[1], kind="rst-error"))
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
            root = state_of(self.state.document).project.root
            self.arguments[0] = "/" + path.relative_to(root).as_posix()
            self.options.pop("parser", None)  # another parser could read beyond
        return super().run()


class SafeCSVTable(CSVTable):
    """csv-table without :url: (nothing is downloaded); :file: inside the corpus folder only."""

    def run(self):
        if "url" in self.options:
            state = state_of(self.state.document)
            state.problems.append(Problem(state.where, "csv-table :url: is not downloaded; "
                                          "table skipped", place(self)[1],
                                          kind="include-outside", names=("csv-table",)))
            return []
        if "file" in self.options:
            path = inside(self, self.options["file"])
            if path is None:
                return []
            self.options["file"] = str(path)
        return super().run()


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
        text = dedent(text, options["dedent"])
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


INCLUDES = {"literalinclude": LiteralInclude, "include": SafeInclude, "csv-table": SafeCSVTable}
