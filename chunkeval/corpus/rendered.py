"""Markdown as a reader sees it: the file's text without what the rendered page does not show.

A docs site renders Markdown; HTML comments, front matter, link reference definitions, the
tags of raw HTML, attribute lists and the markers of includes, containers and directives
never reach its reader, nor a RAG pipeline that renders or strips Markdown. They are cut
from the file's text here; everything else (Markdown markup, code blocks, tables) stays, so
the rest is the file's text in runs, and a map of those runs takes a file offset to the
text's. Inside code, only include markers are cut: docs tools substitute them before
rendering, even in a fence.

Each cut is found from markdown-it's tokens of the file (what is code, HTML or a heading)
and named by its rule, so `corpus info` can count what each rule removed.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

# The rules, in the order `corpus info` lists them.
RULES = {
    "comment": "HTML comments",
    "front-matter": "front matter",
    "link-definition": "link reference definitions",
    "html-tag": "raw HTML tags (their text kept)",
    "attributes": "attribute lists ({ #id .class })",
    "include": "include and snippet markers (--8<--, {* … *}, {{#include …}})",
    "container": "container markers (::: tip, /// note)",
    "directive": "directive markers (```{note} fences)",
    "admonition": 'admonition, collapsible and tab markers (!!! note, ??? tip, === "Tab") and '
                  "their content's indent",
}
# `=== "Tab"` (or ===+ / ===!): a content tab, its title quoted, its content indented
_TAB = re.compile(r'^[ \t]*===[+!]?[ \t]+"(.*)"[ \t]*$')
_QUOTED = re.compile(r'"(.*)"')

_CODE_DIRECTIVES = {"code", "code-block", "code-cell", "sourcecode", "literalinclude", "math",
                    "mermaid", "eval-rst"}
# One attribute of an attribute list: #id, .class or key=value.
_ATTR = r"""(?:[#.][\w:-]+|[\w:-]+=(?:"[^"\n]*"|'[^'\n]*'|[^\s{}"']+))"""
_ATTRS = rf"\{{:?[ \t]*{_ATTR}(?:[ \t]+{_ATTR})*[ \t]*\}}"
_ATTRS_ALONE = re.compile(rf"^[ \t>]*{_ATTRS}[ \t]*$")
_ATTRS_AT_END = re.compile(rf"[ \t]*{_ATTRS}[ \t]*$")
_ATTRS_AFTER_LINK = re.compile(rf"(?<=[)\]]){_ATTRS}")
_INCLUDES = re.compile(r"\{\*[^\n]*?\*\}"  # FastAPI's docs
                       r"|\{\{#(?:include|rustdoc_include|playground|title|template)\b[^\n]*?\}\}")
_SNIPPET = re.compile(r"^[ \t>]*--8<--(?:[ \t]+\S.*)?[ \t]*$")  # MkDocs snippets
_SNIPPET_BLOCK = re.compile(r"^[ \t>]*--8<--[ \t]*$")
# ::: tip Title / :::note[Title] / :::{note} Title / ::: module.name ; /// note | Title
_COLONS = re.compile(r"^[ \t>]*:{3,}[ \t]*(?:\{[\w:-]+\}|[\w.:-]+)?[ \t]*\[?")
_SLASHES = re.compile(r"^[ \t>]*/{3,}[ \t]*(?:[\w-]+)?[ \t]*(?:\|[ \t]*)?")
_LINK_DEFINITION = re.compile(r"^[ \t>]*\[(?:[^\]\\\n]|\\.)+\]:")
_HTML = re.compile(r"<!--[\s\S]*?(?:-->|$(?![\s\S]))"
                   r"|<(script|style)\b[^>]*>[\s\S]*?</\1\s*>"
                   r"|<![A-Za-z][^>]*>|<\?[\s\S]*?\?>|<!\[CDATA\[[\s\S]*?\]\]>"
                   r"|</?[A-Za-z][\w-]*(?:\s[^<>]*)?/?>", re.I)
_MYST = re.compile(r"\{[\w:-]+\}")  # ```{note}, not ```{ .python .annotate }
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)[\s\S]*?[^`]\1(?!`)")
_LEAVES = {"paragraph_open", "heading_open", "fence", "code_block", "html_block",
           "table_open", "hr", "front_matter"}


@dataclass
class Rendered:
    text: str
    file_map: tuple[tuple[int, int, int], ...]
    removed: Counter = field(default_factory=Counter)  # rule -> characters cut


class _Cuts:
    def __init__(self, raw: str):
        self.raw = raw
        self.starts = [0] + [m.end() for m in re.finditer("\n", raw)]
        self.found: list[tuple[int, int, str]] = []

    def line(self, i: int) -> tuple[int, int]:
        """[start, end) of line i, without its line end."""
        start = self.starts[i]
        end = self.starts[i + 1] - 1 if i + 1 < len(self.starts) else len(self.raw)
        return start, end

    def cut(self, start: int, end: int, rule: str) -> None:
        if end > start:
            self.found.append((start, end, rule))

    def cut_lines(self, first: int, last: int, rule: str) -> None:
        """Lines first..last (inclusive), line end and all."""
        end = self.starts[last + 1] if last + 1 < len(self.starts) else len(self.raw)
        self.cut(self.starts[first], end, rule)


def _masked(text: str) -> str:
    """The text with inline code spans blanked out (same length), so that no rule cuts
    inside them."""
    return _CODE_SPAN.sub(lambda m: "\0" * len(m.group()), text)


def render(raw: str, tokens) -> Rendered:
    """The text a reader sees of `raw`, given markdown-it's tokens of it."""
    cuts = _Cuts(raw)
    code: set[int] = set()  # lines inside fences and indented code
    html: set[int] = set()
    covered: set[int] = set()  # lines of leaf blocks
    headings: set[int] = set()
    for tok in tokens:
        if tok.map is None:
            continue
        first, end = tok.map
        if tok.type in _LEAVES:
            covered.update(range(first, end))
        if tok.type == "front_matter":
            cuts.cut_lines(first, end - 1, "front-matter")
        elif tok.type == "fence" and _MYST.match(tok.info.strip()):
            _directive(cuts, tok, code)
        elif tok.type in ("fence", "code_block"):
            code.update(range(first, end))
        elif tok.type == "html_block":
            html.update(range(first, end))
            s, e = cuts.line(first)[0], cuts.line(end - 1)[1]
            _html(cuts, s, cuts.raw[s:e])
        elif tok.type == "heading_open":
            headings.update(range(first, end))
        elif tok.type in ("admonition_open", "tab_open"):
            _admonition(cuts, tok)
        elif tok.type == "inline" and tok.children:
            _inline_html(cuts, tok)

    _lines(cuts, code, html, covered, headings)
    return _apply(raw, cuts.found)


def _directive(cuts: _Cuts, tok, code: set[int]) -> None:
    """A MyST directive fence (```{note}): its opening and closing lines and leading
    `:option:` lines are markers; the content stays. A code directive stays a fence."""
    first, end = tok.map
    info = tok.info.strip()
    name = info[1:info.find("}")]
    last = end - 1
    closed = last > first and cuts.raw[slice(*cuts.line(last))].strip().startswith(tok.markup)
    k = first + 1
    while k < (last if closed else end) and re.match(r"^[ \t>]*:[\w-]+:", cuts.raw[
            slice(*cuts.line(k))]):
        k += 1
    if k > first + 1:
        cuts.cut_lines(first + 1, k - 1, "directive")
    if name in _CODE_DIRECTIVES:
        s, e = cuts.line(first)
        at = cuts.raw.find("{", s, e)
        stop = cuts.raw.find("}", at, e)
        if at >= 0 and stop >= 0:
            while stop + 1 < e and cuts.raw[stop + 1] in " \t":
                stop += 1
            cuts.cut(at, stop + 1, "directive")
        code.update(range(first, end))
    else:
        cuts.cut_lines(first, first, "directive")
        if closed:
            cuts.cut_lines(last, last, "directive")


def _admonition(cuts: _Cuts, tok) -> None:
    """`!!! note "Title"`, `???+ tip`, `=== "Tab"`: the marker goes and the title stays
    (the type's name when there is no title, nothing for an empty one); the content loses
    the indent that made it the block's."""
    first, end = tok.map
    s, e = cuts.line(first)
    line = cuts.raw[s:e]
    col = len(line) - len(line.lstrip(" "))
    quoted = _QUOTED.search(line)
    if quoted:
        keep = quoted.span(1)
    else:
        # the type names the title ("!!! note inline end" shows "Note"); the marker goes
        words = [m.span() for m in re.finditer(r"\S+", line)][1:]
        keep = words[0] if words else (0, 0)
    # the indent of the block around it (a list item, an outer admonition) stays
    if keep[1] > keep[0] and line[keep[0]:keep[1]].strip():
        cuts.cut(s + col, s + keep[0], "admonition")
        cuts.cut(s + keep[1], e, "admonition")
    else:
        cuts.cut_lines(first, first, "admonition")
    for n in range(first + 1, end):
        s, e = cuts.line(n)
        body = cuts.raw[s:e]
        lead = len(body) - len(body.lstrip(" "))
        if body.strip() and lead > col:
            cuts.cut(s + col, s + min(lead, col + 4), "admonition")


def content_tab(state, start_line: int, end_line: int, silent: bool) -> bool:
    """A markdown-it block rule for MkDocs' content tabs: `=== "Title"`, then the tab's
    content indented by four spaces (read as blocks, as an admonition's)."""
    if state.sCount[start_line] - state.blkIndent >= 4:
        return False  # indented code
    begin = state.bMarks[start_line] + state.tShift[start_line]
    m = _TAB.match(state.src[state.bMarks[start_line]:state.eMarks[start_line]])
    if state.src[begin:begin + 3] != "===" or not m:
        return False
    if silent:
        return True
    old = state.parentType, state.lineMax, state.blkIndent
    state.parentType = "tab"
    state.blkIndent = state.sCount[start_line] + 4
    line, was_empty = start_line, False
    while True:
        line += 1
        if line >= end_line:
            break
        empty = state.isEmpty(line)
        if empty and was_empty:
            break
        was_empty = empty
        if not empty and state.sCount[line] < state.blkIndent:
            break
    state.lineMax = line
    token = state.push("tab_open", "div", 1)
    token.block, token.map, token.content = True, [start_line, line], m.group(1)
    state.md.block.tokenize(state, start_line + 1, line)
    state.push("tab_close", "div", -1).block = True
    state.parentType, state.lineMax, state.blkIndent = old
    state.line = line
    return True


# --8<-- "name" (or 'name', or bare), name optionally ending in :first:last line numbers
_SNIPPET_FILE = re.compile(r"""^([ \t]*)--8<--[ \t]+(["']?)([^"'\s][^"'\n]*?)\2[ \t]*$""")
_LINES = re.compile(r"^(.*?)(?::(\d*)(?::(\d*))?)?$")
_MAX_DEPTH = 4


@dataclass
class Expanded:
    text: str
    # (offset in text, offset in the file or None for included text, length)
    segments: list[tuple[int, int | None, int]]
    problems: list[tuple[str, int, str]]  # message, 1-based line, kind (problems.py)
    removed: int = 0  # characters of the markers replaced by their files


def expand_snippets(raw: str, root: Path | None, here: Path | None, depth: int = 0
                    ) -> Expanded:
    """MkDocs snippets (`--8<-- "file"`, one per line or a block of names between two
    `--8<--` lines) replaced by the file's text, indented as the marker, when the file lies
    inside the corpus folder `root`. Any other marker stays (the include rule cuts it) and a
    problem names its line."""
    out = Expanded("", [], [])
    pieces: list[str] = []
    pos = at = 0
    block = False  # between two bare --8<-- lines: a name on each line

    def replace(start: int, end: int, body: str) -> None:
        nonlocal pos, at
        if start > pos:
            out.segments.append((at, pos, start - pos))
            pieces.append(raw[pos:start])
            at += start - pos
        if body:
            out.segments.append((at, None, len(body)))
            pieces.append(body)
            at += len(body)
        out.removed += end - start
        pos = end

    offset = 0
    for number, line in enumerate(raw.split("\n"), 1):
        start, offset = offset, offset + len(line) + 1
        end = min(offset, len(raw))
        if line.strip() == "--8<--":
            block = not block
            replace(start, end, "")
            continue
        m = _SNIPPET_FILE.match(line)
        if not m and not block:
            continue
        name, indent = (m.group(3), m.group(1)) if m else (line.strip().strip("\"'"), "")
        if not name:
            continue
        included, why = _snippet(name, root, here, depth)
        if included is None:
            kind = ("include-outside" if "outside" in why else
                    "include-missing" if "no such file" in why else "not-read")
            out.problems.append((f"snippet {name!r} not included: {why}; its marker is "
                                 "skipped", number, kind))
            if block:
                replace(start, end, "")
            continue
        body = "\n".join(indent + l if l.strip() else l for l in included.split("\n"))
        replace(start, end, body + "\n" if end > start + len(line) else body)
    if pos < len(raw):
        out.segments.append((at, pos, len(raw) - pos))
        pieces.append(raw[pos:])
    out.text = "".join(pieces)
    return out


def _snippet(name: str, root: Path | None, here: Path | None, depth: int
             ) -> tuple[str | None, str]:
    """The text a snippet marker names, or None and why not."""
    if "://" in name:
        return None, "a remote snippet is not fetched"
    if root is None:
        return None, "the corpus folder is not known"
    if depth >= _MAX_DEPTH:
        return None, f"snippets nested more than {_MAX_DEPTH} deep"
    path_name, first, last = _LINES.match(name).groups()
    top = root.resolve()
    for base in (root, here.parent if here else None):
        if base is None:
            continue
        candidate = base / path_name
        if not candidate.is_file():
            continue
        if not candidate.resolve().is_relative_to(top):
            return None, "the file lies outside the corpus folder"
        try:
            text = candidate.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            return None, f"cannot read it ({e})"
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        if first or last:
            rows = text.split("\n")
            text = "\n".join(rows[int(first or 1) - 1:int(last) if last else None])
        inner = expand_snippets(text, root, candidate, depth + 1)
        return inner.text.rstrip("\n"), ""
    outside = any(base is not None and (base / path_name).resolve().exists()
                  and not (base / path_name).resolve().is_relative_to(top)
                  for base in (root, here.parent if here else None))
    return None, ("the file lies outside the corpus folder" if outside
                  else "no such file in the corpus folder")


def compose(runs: tuple[tuple[int, int, int], ...], segments: list[tuple[int, int | None, int]]
            ) -> tuple[tuple[int, int, int], ...]:
    """The runs of a text rendered from an expanded file, taken back to the file: parts
    of a run that lie in included text have no place in the file and drop out."""
    out = []
    for t, x, n in runs:
        for sx, f, sn in segments:
            lo, hi = max(x, sx), min(x + n, sx + sn)
            if f is None or hi <= lo:
                continue
            out.append((t + lo - x, f + lo - sx, hi - lo))
    return tuple(out)


def _html(cuts: _Cuts, start: int, segment: str) -> None:
    for m in _HTML.finditer(segment):
        cuts.cut(start + m.start(), start + m.end(),
                 "comment" if m.group().startswith("<!--") else "html-tag")


def _inline_html(cuts: _Cuts, tok) -> None:
    """The raw HTML markdown-it found in a paragraph or heading, located in the file in
    order (code spans blanked, so `<br>` in backticks is not taken for the tag)."""
    pieces = [c.content for c in tok.children if c.type == "html_inline"]
    if not pieces:
        return
    s, e = cuts.line(tok.map[0])[0], cuts.line(tok.map[1] - 1)[1]
    region = _masked(cuts.raw[s:e])
    pos = 0
    for piece in pieces:
        # container prefixes ("> ", indents) were taken out of a piece that spans lines
        pattern = r"\n[ \t>]*".join(re.escape(p.lstrip(" \t")) for p in piece.split("\n"))
        m = re.compile(pattern).search(region, pos)
        if m is None:
            continue  # not where we look: keep it rather than cut the wrong text
        cuts.cut(s + m.start(), s + m.end(),
                 "comment" if piece.startswith("<!--") else "html-tag")
        pos = m.end()


def _lines(cuts: _Cuts, code: set[int], html: set[int], covered: set[int],
           headings: set[int]) -> None:
    """The rules that read line by line: includes, snippets, container markers, attribute
    lists and link reference definitions."""
    raw = cuts.raw
    in_snippets = False
    options_indent = -1  # after "::: name" followed by "options:", its indented lines
    definition = False  # inside a link reference definition that spans lines
    for n in range(len(cuts.starts)):
        s, e = cuts.line(n)
        line = raw[s:e]
        if in_snippets:
            cuts.cut_lines(n, n, "include")
            in_snippets = not _SNIPPET_BLOCK.match(line)
            continue
        if _SNIPPET.match(line):
            cuts.cut_lines(n, n, "include")
            in_snippets = bool(_SNIPPET_BLOCK.match(line)) and n not in code
            continue
        masked = line if n in code else _masked(line)
        for m in _INCLUDES.finditer(masked):
            cuts.cut(s + m.start(), s + m.end(), "include")
        if n in code or n in html:
            continue
        indent = len(line) - len(line.lstrip(" \t"))
        if options_indent >= 0:
            if line.strip() and indent > options_indent:
                cuts.cut_lines(n, n, "container")
                continue
            options_indent = -1
        if n not in covered and line.strip():
            if _LINK_DEFINITION.match(line) or definition:
                cuts.cut_lines(n, n, "link-definition")
                definition = True
                continue
        definition = False
        colons = _COLONS.match(line) or _SLASHES.match(line)
        if colons:
            title = line[colons.end():].rstrip()
            if colons.group().endswith("[") and title.endswith("]"):
                title = title[:-1]  # Docusaurus's :::note[Title]
            if title.strip():  # the title is shown; only the marker goes
                cuts.cut(s, s + colons.end(), "container")
                cuts.cut(s + colons.end() + len(title), e, "container")
            else:
                cuts.cut_lines(n, n, "container")
            following = cuts.line(n + 1) if n + 1 < len(cuts.starts) else (e, e)
            if raw[slice(*following)].strip() == "options:":
                options_indent = indent
            continue
        if _ATTRS_ALONE.match(masked):
            cuts.cut_lines(n, n, "attributes")
            continue
        if n in headings:
            m = _ATTRS_AT_END.search(masked)
            if m:
                cuts.cut(s + m.start(), s + m.end(), "attributes")
        for m in _ATTRS_AFTER_LINK.finditer(masked):
            cuts.cut(s + m.start(), s + m.end(), "attributes")


def _apply(raw: str, found: list[tuple[int, int, str]]) -> Rendered:
    """Merge the cuts (a line left blank by them goes too), and the runs between them."""
    found.sort()
    merged: list[list] = []  # [start, end, rule]
    for start, end, rule in found:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        elif merged and not raw[merged[-1][1]:start].strip(" \t"):
            merged[-1][1] = max(merged[-1][1], end)  # only spaces between: one cut
        else:
            merged.append([start, end, rule])
    removed: Counter = Counter()
    for cut in merged:
        start, end, rule = cut
        line_start = raw.rfind("\n", 0, start) + 1
        line_end = raw.find("\n", end)
        line_end = len(raw) if line_end < 0 else line_end
        if (not raw[line_start:start].strip(" \t") and not raw[end:line_end].strip(" \t")
                and not (end > start and raw[end - 1] == "\n")):
            # the cut leaves its line blank: the line goes, line end and all
            start, end = line_start, min(line_end + 1, len(raw))
        if end > start and raw[end - 1] == "\n" and raw[end:end + 1] == "\n" and (
                start == 0 or raw[start - 1] == "\n" and (start < 2 or raw[start - 2] == "\n")):
            end += 1  # blank before and after: keep one blank line, not two
        cut[0], cut[1] = start, end
    # widening may have made cuts touch
    runs, kept, pos, text_pos = [], [], 0, 0
    for start, end, rule in merged:
        start = max(start, pos)
        if end <= start:
            continue
        removed[rule] += end - start
        if start > pos:
            runs.append((text_pos, pos, start - pos))
            kept.append(raw[pos:start])
            text_pos += start - pos
        pos = end
    if pos < len(raw):
        runs.append((text_pos, pos, len(raw) - pos))
        kept.append(raw[pos:])
    return Rendered("".join(kept), tuple(runs), removed)
