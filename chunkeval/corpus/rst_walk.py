"""A parsed reStructuredText tree -> Parts, as a Sphinx build shows it: sections as headings
(level by nesting), paragraphs, list items (numbered as the reader sees them), literal blocks
as `pre`, tables one row per line, definition and field lists as "term: definition",
admonitions and footnotes with their label."""

from __future__ import annotations

from ..model import TABLE_CELL_SEP, Part, heading_path
from .html_blocks import define

_SKIP = {"comment", "substitution_definition", "target", "raw", "pending", "meta",
         "decoration", "footer", "header", "subtitle"}
_ADMONITIONS = {"attention": "Attention", "caution": "Caution", "danger": "Danger",
                "error": "Error", "hint": "Hint", "important": "Important", "note": "Note",
                "tip": "Tip", "warning": "Warning"}


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


class Walk:
    """Walks a parsed tree once, keeping the heading path in force."""

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
