"""HTML -> Document: boilerplate removed, text cut into ordered blocks with heading paths.

One page becomes a sequence of Parts (heading, paragraph, item, table, pre, dl, other);
Document.from_parts lays them out with offsets. Bad input that cannot become a document
raises InputError naming the file; anything merely doubtful comes back as a Problem.
"""

from __future__ import annotations

import codecs
import gzip
import re
import zlib
from contextlib import contextmanager
from functools import lru_cache
from typing import TYPE_CHECKING, Sequence

from ..errors import InputError, Problem
from ..model import TABLE_CELL_SEP, Document, Part, heading_path

if TYPE_CHECKING:  # imported where a page is parsed: the commands that parse none need no parser
    import lxml.etree

HTML_SUFFIXES = (".html", ".htm", ".xhtml", ".html.gz")

# Bump whenever the parser's output for the same bytes may change: it keys the parse cache.
PARSER_VERSION = "3"

# Removed before anything is read. Simple CSS: tag, .class, #id, [attr], [attr=value]
# (also ~= ^= $= *=), joined by descendant (space) or child (>) combinators.
DEFAULT_DROP: tuple[str, ...] = (
    # markup that is never text
    "head", "script", "style", "noscript", "template",
    # DocBook navigation and tables of contents
    "div.navheader", "div.navfooter", "div.toc", "div.list-of-tables", "div.list-of-figures",
    "div.list-of-examples", "div.list-of-equations", "div.list-of-procedures",
    # Sphinx chrome
    "div.related", "div.sphinxsidebar", "div.footer", "#searchbox", "a.headerlink",
    "div.toctree-wrapper", "div.contents", "nav.contents",
    # generic navigation
    "nav", "[role=navigation]",
    # Mermaid diagram source is not prose
    "pre.mermaid", "div.mermaid", "code.language-mermaid",
)

# Never text, whatever the drop selectors say.
_NOT_TEXT = {"head", "title", "script", "style", "template", "meta", "link"}
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 4, "h6": 4}
_LISTS = {"ul", "ol", "menu", "dir"}
# Elements that end a run of text: what is inside them is a block of its own or part of one.
_BLOCK_TAGS = {
    "address", "article", "aside", "blockquote", "body", "center", "details", "dialog",
    "div", "fieldset", "figcaption", "figure", "footer", "form", "header", "hgroup", "hr",
    "html", "legend", "main", "p", "section", "summary", "caption", "tr", "td", "th",
    "thead", "tbody", "tfoot", "li", "dt", "dd",
} | set(_HEADINGS) | _LISTS | {"dl", "table", "pre"}
# Containers whose loose text reads as prose.
_PROSE_CLASSES = {
    "note", "tip", "warning", "caution", "important", "admonition", "attention", "danger",
    "error", "hint", "seealso", "footnote", "footnotes", "sidebar", "topic",
}
# DocBook draws admonitions with a layout table (icon cell, title cell, body cell).
_ADMONITION_CLASSES = _PROSE_CLASSES - {"footnote", "footnotes", "sidebar", "topic"}

_CJK = (r"\u2e80-\u2fdf\u3001-\u303f\u3040-\u30ff\u3100-\u312f\u31f0-\u31ff\u3400-\u4dbf"
        r"\u4e00-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0003ffff")
_CJK_RE = re.compile(f"[{_CJK}]")
# A break the markup made (<br>, a block edge inside flattened text): always a space.
BREAK = "\x1f"
_WS_RE = re.compile(r"[ \t\n\f\v\xa0\x1f]+")


# A whitespace run holding a line break and no BREAK, between two CJK characters.
_CJK_WRAP_RE = re.compile(f"(?<=[{_CJK}])[ \\t\\f\\v\\xa0]*\\n[ \\t\\n\\f\\v\\xa0]*(?=[{_CJK}])")


def normalize(text: str) -> str:
    """Collapse whitespace to one space, but drop a line break between two CJK characters:
    DocBook wraps Japanese lines inside <p>, and Japanese has no spaces between words.
    (Two substitutions without a Python callback: a callback per whitespace run made this
    the slowest step of parsing a large page.)"""
    return _WS_RE.sub(" ", _CJK_WRAP_RE.sub("", text)).strip()


# --- CSS selectors (a small subset) -> XPath ------------------------------------------

_TOKEN = re.compile(r"""
    (?P<child>\s*>\s*) | (?P<desc>\s+) | (?P<tag>\*|[A-Za-z][\w-]*)
  | \.(?P<cls>[\w-]+) | \#(?P<id>[\w-]+)
  | \[\s*(?P<attr>[\w-]+)\s*(?:(?P<op>[~^$*]?=)\s*
        (?:"(?P<v1>[^"]*)"|'(?P<v2>[^']*)'|(?P<v3>[^\]\s"']+))\s*)?\]
""", re.X)


def _literal(value: str, selector: str) -> str:
    if "'" not in value:
        return f"'{value}'"
    if '"' not in value:
        return f'"{value}"'
    raise ValueError(f"CSS selector {selector!r}: a value may not hold both quote kinds")


def _word_test(attr: str, lit: str) -> str:
    return f"contains(concat(' ', normalize-space({attr}), ' '), concat(' ', {lit}, ' '))"


def _compound_xpath(tag: str | None, tests: list[str]) -> str:
    return (tag or "*") + "".join(f"[{t}]" for t in tests)


@lru_cache(maxsize=64)
def css_to_xpath(selector: str) -> str:
    """Translate one selector (commas allowed) to XPath; ValueError names what is unsupported."""
    paths = []
    for group in selector.split(","):
        text = group.strip()
        if not text:
            raise ValueError(f"CSS selector {selector!r} has an empty part")
        xpath, axis, tag, tests, pos = "", "//", None, [], 0
        started = False
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise ValueError(f"unsupported CSS selector {selector!r} at {text[pos:]!r}: use "
                                 "tag, .class, #id, [attr], [attr=value] with space or > between")
            pos, kind = m.end(), m.lastgroup
            if kind in ("child", "desc"):
                if not started:
                    raise ValueError(f"CSS selector {selector!r} starts with a combinator")
                xpath += axis + _compound_xpath(tag, tests)
                axis, tag, tests, started = ("/" if kind == "child" else "//"), None, [], False
                continue
            if kind == "tag":
                if started:
                    raise ValueError(f"CSS selector {selector!r}: tag name must come first")
                tag = m["tag"].lower()
            elif kind == "cls":
                tests.append(_word_test("@class", _literal(m["cls"], selector)))
            elif kind == "id":
                tests.append(f"@id={_literal(m['id'], selector)}")
            else:
                attr, op = "@" + m["attr"].lower(), m["op"]
                value = next((v for v in (m["v1"], m["v2"], m["v3"]) if v is not None), None)
                if op is None:
                    tests.append(attr)
                else:
                    lit = _literal(value, selector)
                    tests.append({
                        "=": f"{attr}={lit}",
                        "~=": _word_test(attr, lit),
                        "^=": f"starts-with({attr}, {lit})",
                        "*=": f"contains({attr}, {lit})",
                        "$=": f"substring({attr}, string-length({attr}) - string-length({lit}) + 1)"
                              f"={lit}",
                    }[op])
            started = True
        if not started:
            raise ValueError(f"CSS selector {selector!r} ends with a combinator")
        paths.append(xpath + axis + _compound_xpath(tag, tests))
    return " | ".join(paths)


@lru_cache(maxsize=16)
def _drop_xpath(drop: tuple[str, ...]) -> lxml.etree.XPath | None:
    import lxml.etree

    return lxml.etree.XPath(" | ".join(css_to_xpath(s) for s in drop)) if drop else None


def check_selectors(drop: Sequence[str]) -> None:
    """Raise ValueError for a selector this parser cannot use (before parsing any file)."""
    _drop_xpath(tuple(drop))


# --- bytes -> str ------------------------------------------------------------------------

_XML_DECL = re.compile(rb"""^\s*<\?xml[^>]*?encoding\s*=\s*["']([\w.:-]+)["']""")
_META_CHARSET = re.compile(rb"""<meta\b[^>]*?charset\s*=\s*["']?\s*([\w.:-]+)""", re.I)
# Names pages use for codecs Python knows under another name (as browsers read them).
_CHARSET_ALIASES = {
    "shift_jis": "cp932", "shift-jis": "cp932", "sjis": "cp932", "x-sjis": "cp932",
    "ms_kanji": "cp932", "csshiftjis": "cp932", "windows-31j": "cp932",
    "x-euc-jp": "euc_jp", "iso-8859-1": "cp1252", "latin1": "cp1252", "us-ascii": "cp1252",
    "ascii": "cp1252",
}
_FALLBACKS = ("utf-8", "euc_jp", "cp932")  # EUC-JP first: Shift_JIS bytes rarely pass as it


def declared_charset(data: bytes) -> str | None:
    """The charset a page names for itself (BOM, XML declaration, <meta>), or None."""
    if data.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    head = data[:4096]
    m = _XML_DECL.match(head) or _META_CHARSET.search(head)
    return m.group(1).decode("ascii").lower() if m else None


def _codec(label: str) -> str | None:
    try:
        return codecs.lookup(_CHARSET_ALIASES.get(label, label)).name
    except LookupError:
        return None


def decode_html(data: bytes, where: str) -> tuple[str, list[Problem]]:
    """Decode with the declared charset (UTF-8 when none); fall back with a Problem."""
    problems: list[Problem] = []
    label = declared_charset(data)
    codec = _codec(label) if label else "utf-8"
    if codec is None:
        problems.append(Problem(where, f"unknown charset {label!r}; reading it as UTF-8"))
        codec = "utf-8"
    if b"\x00" in data and not codec.startswith("utf-16"):
        raise InputError(where, "binary file (contains NUL bytes), not an HTML page")
    try:
        return data.decode(codec), problems
    except UnicodeDecodeError as e:
        error = e
    said = f"declared charset {label!r}" if label else "no declared charset, so UTF-8"
    what = f"{said}, but byte {error.start} does not decode ({error.reason})"
    for other in _FALLBACKS:
        if _codec(other) == codec:
            continue
        try:
            text = data.decode(other)
        except UnicodeDecodeError:
            continue
        problems.append(Problem(where, f"{what}; read it as {other} instead"))
        return text, problems
    text = data.decode(codec, errors="replace")
    bad = text.count("\ufffd") + sum(1 for c in text if c < " " and c not in "\t\n\r\f")
    if bad > max(8, len(text) // 100):
        raise InputError(where, f"binary or undecodable data, not an HTML page ({what})")
    problems.append(Problem(where, f"{what}; undecodable bytes replaced by U+FFFD"))
    return text, problems


# --- the tree -> Parts ---------------------------------------------------------------

def _classes(el) -> set[str]:
    return set((el.get("class") or "").split())


def _gather(el, out: list[str], verbatim: bool = False) -> None:
    """All text under `el` (not its tail); block elements and <br> separate words."""
    if el.text:
        out.append(el.text)
    for child in el:
        tag = child.tag if isinstance(child.tag, str) else None
        if tag == "br":
            out.append("\n" if verbatim else BREAK)
        elif tag is not None and tag not in _NOT_TEXT:
            block = tag in _BLOCK_TAGS
            if block and not verbatim:
                out.append(BREAK)
            _gather(child, out, verbatim)
            if block and not verbatim:
                out.append(BREAK)
        if child.tail:
            out.append(child.tail)


def raw_text(el, verbatim: bool = False) -> str:
    out: list[str] = []
    _gather(el, out, verbatim)
    return "".join(out)


def text_of(el) -> str:
    return normalize(raw_text(el))


def _has_blocks(el) -> bool:
    return any(isinstance(d.tag, str) and d.tag in _BLOCK_TAGS for d in el.iterdescendants())


class _Walker:
    """Walks the body once, keeping the heading path in force and a buffer of running text.

    A context is the block being filled: its kind, whether <p>/<div> inside it merge into
    it (list items, definitions, paragraphs) or start blocks of their own (containers), and
    whether tables in it are layout (admonitions) rather than data.
    """

    def __init__(self, title: str):
        self.parts: list[Part] = []
        self.path = [title, "", ""]
        self.buf: list[str] = []
        self.kind, self.merge, self.prefix, self.layout = "other", False, None, False

    def emit(self, kind: str, text: str, rows: tuple[str, ...] = (), header_rows: int = 0):
        self.parts.append(Part(kind, text, tuple(self.path), rows, header_rows))

    def flush(self) -> None:
        text = normalize("".join(self.buf))
        self.buf.clear()
        if self.prefix is not None:
            text = _define(self.prefix, text)
            self.prefix = None
        if text:
            self.emit(self.kind, text)

    @contextmanager
    def context(self, kind: str, merge: bool, prefix: str | None = None, layout: bool = False):
        self.flush()
        saved = (self.buf, self.kind, self.merge, self.prefix, self.layout)
        self.buf, self.kind, self.merge, self.prefix, self.layout = [], kind, merge, prefix, layout
        try:
            yield
        finally:
            self.flush()
            self.buf, self.kind, self.merge, self.prefix, self.layout = saved

    def walk(self, el) -> None:
        if el.text:
            self.buf.append(el.text)
        for child in el:
            if isinstance(child.tag, str):
                self.visit(child)
            if child.tail:
                self.buf.append(child.tail)

    def visit(self, el) -> None:
        tag = el.tag
        if tag in _NOT_TEXT:
            return
        if tag in _HEADINGS:
            self.heading(el, _HEADINGS[tag])
        elif tag == "pre":
            self.flush()
            self.pre(el)
        elif tag == "table":
            self.flush()
            if self.layout:
                self.layout_table(el)
            else:
                self.table(el)
        elif tag in _LISTS:
            self.list(el)
        elif tag == "dl":
            self.dl(el)
        elif tag == "li":
            with self.context("item", True):
                self.walk(el)
        elif tag in ("dt", "dd"):
            with self.context("dl", True):
                self.walk(el)
        elif tag in _BLOCK_TAGS:
            classes = _classes(el)
            if self.merge:
                self.buf.append(BREAK)
                self.walk(el)
                self.buf.append(BREAK)
            elif tag == "p" or "footnote" in classes:
                with self.context("paragraph", True):  # a footnote's label joins its text
                    self.walk(el)
            else:
                prose = tag == "blockquote" or bool(classes & _PROSE_CLASSES)
                with self.context("paragraph" if prose else self.kind, False,
                                  layout=bool(classes & _ADMONITION_CLASSES)):
                    self.walk(el)
        elif tag == "br":
            self.buf.append(BREAK)
        elif _has_blocks(el):
            self.walk(el)  # an inline element wrapped around blocks: see through it
        else:
            self.buf.append(raw_text(el))  # normalised with its neighbours

    def heading(self, el, level: int) -> None:
        text = text_of(el)
        if not text:
            return
        self.flush()
        self.path = heading_path(self.path, level, text)
        self.emit(f"heading{level}", text)

    def pre(self, el) -> None:
        text = _CONTROL_RE.sub(" ", raw_text(el, verbatim=True))  # from &#x1f; and the like
        text = text[1:] if text.startswith("\n") else text
        text = text[:-1] if text.endswith("\n") else text
        if text.strip():
            self.emit("pre", text)

    def table(self, el) -> None:
        for caption in el.findall("caption"):
            with self.context("paragraph", True):
                self.walk(caption)
        rows, header_rows, leading = [], 0, True
        for tr, in_head in _table_rows(el):
            cells = [c for c in tr if c.tag in ("td", "th")]
            texts = [text_of(c) for c in cells]
            if not any(texts):
                continue
            rows.append(TABLE_CELL_SEP.join(texts))
            leading = leading and (in_head or all(c.tag == "th" for c in cells))
            header_rows += leading
        if rows:
            self.emit("table", "\n".join(rows), tuple(rows), header_rows)

    def layout_table(self, el) -> None:
        """An admonition's table is layout: each cell's content is prose."""
        for tr, _ in _table_rows(el):
            for cell in tr:
                if cell.tag in ("td", "th"):
                    with self.context("paragraph", False):
                        self.walk(cell)

    def list(self, el) -> None:
        self.flush()
        with self.context("item", True):
            self.walk(el)  # each <li> opens its own item context

    def dl(self, el) -> None:
        self.flush()
        terms: list[str] = []
        for child in _dl_children(el):
            if child.tag == "dt":
                terms.append(text_of(child))
            elif child.tag == "dd":
                prefix = ", ".join(t for t in terms if t) or None
                terms = []
                with self.context("dl", True, prefix=prefix):
                    self.walk(child)
            else:
                with self.context("dl", True):
                    self.visit(child)
        if any(terms):
            self.emit("dl", ", ".join(t for t in terms if t))


def _table_rows(el) -> list[tuple]:
    """(tr, in_thead) of this table (not of tables nested in its cells), in reading
    order: thead, then tbody and bare rows, then tfoot."""
    head, body, foot = [], [], []
    for child in el:
        if child.tag == "thead":
            head += [(tr, True) for tr in child if tr.tag == "tr"]
        elif child.tag == "tbody":
            body += [(tr, False) for tr in child if tr.tag == "tr"]
        elif child.tag == "tfoot":
            foot += [(tr, False) for tr in child if tr.tag == "tr"]
        elif child.tag == "tr":
            body.append((child, False))
    return head + body + foot


def _define(term: str, definition: str) -> str:
    """"term: definition", without doubling a colon the term already ends with."""
    if not definition:
        return term
    return f"{term} {definition}" if term.endswith((":", "：")) else f"{term}: {definition}"


def _dl_children(el):
    """dt/dd children of a <dl>, looking through <div> groups (allowed by HTML)."""
    for child in el:
        if not isinstance(child.tag, str):
            continue
        if child.tag == "div" and any(c.tag in ("dt", "dd") for c in child):
            yield from _dl_children(child)
        else:
            yield child


# --- the entry point -------------------------------------------------------------------

_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_CONTROL_REF_RE = re.compile(
    r"&#(?:[xX]0*(?:[0-8b-fB-F]|1[0-9a-fA-F]|7[fF])|0*(?:[0-8]|1[1-9]|2\d|3[01]|127));")


def _unpack(data: bytes, where: str) -> bytes:
    if data[:2] != b"\x1f\x8b":
        return data
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as e:
        raise InputError(where, f"not a readable gzip file: {e}") from None


def _toctrees_with_sections(root) -> list:
    return root.xpath("//div[contains(concat(' ', normalize-space(@class), ' '), "
                      "' toctree-wrapper ')][.//section | .//h1 | .//h2 | .//h3]")


def parse_html(data: bytes, doc_id: str, *, path: str | None = None,
               drop: Sequence[str] = DEFAULT_DROP, main: Sequence[str] = ()
               ) -> tuple[Document, list[Problem]]:
    """Parse one page. Raises InputError when it cannot become a document; returns the
    document and the Problems (warnings) found on the way. `main`: selectors of the page's
    content area, the first that matches is read alone (a built site's pages, sites.py)."""
    import lxml.etree
    import lxml.html

    where = str(path) if path else doc_id
    data = _unpack(data, where)
    if not data.strip():
        raise InputError(where, "empty file")
    text, problems = decode_html(data, where)
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    text = re.sub(r"^\s*<\?xml[^>]*\?>", "", text)  # lxml refuses str with an encoding declaration
    text = _CONTROL_RE.sub(" ", text)  # libxml2 refuses them; and BREAK must be ours alone
    text = _CONTROL_REF_RE.sub(" ", text)  # the same written as &#31; or &#x1f;
    parser = lxml.html.HTMLParser()
    try:
        root = lxml.html.document_fromstring(text, parser=parser)
    except (lxml.etree.ParserError, ValueError) as e:
        raise InputError(where, f"no HTML content: {e}") from None
    for e in parser.error_log:
        if e.type_name == "ERR_RESOURCE_LIMIT":  # libxml2 drops what lies too deep
            problems.append(Problem(where, f"markup too deeply nested, some text was lost: "
                                           f"{e.message}", e.line))
            break

    title_el = root.find(".//title")
    page_title = text_of(title_el) if title_el is not None else ""
    # Sphinx's single-page build puts the whole manual inside the toctree wrappers that are
    # navigation on every other page: a wrapper holding sections is content.
    for el in _toctrees_with_sections(root):
        el.set("class", (el.get("class") or "").replace("toctree-wrapper", "toctree-content"))
    xpath = _drop_xpath(tuple(drop))
    if xpath is not None:
        for el in xpath(root):
            if el.getparent() is not None:
                try:
                    el.drop_tree()
                except ValueError:  # its tail holds a character lxml will not set
                    el.tail = None
                    el.drop_tree()
    for selector in main:
        found = _drop_xpath((selector,))(root)
        if found:
            root = found[0]
            break
    else:
        if main:
            problems.append(Problem(where, "no main content area (" + ", ".join(main)
                                    + ") on this page of a built site: the whole page is read"))
    h1 = next((t for t in (text_of(h) for h in root.iter("h1")) if t), "")
    title = h1 or page_title

    walker = _Walker(title)
    try:
        walker.walk(root)
        walker.flush()
    except RecursionError:
        raise InputError(where, "markup nested too deeply to read") from None
    if not walker.parts:
        raise InputError(where, "no text: the page is empty once markup and boilerplate "
                                "are removed")
    if not any(p.kind.startswith("heading") for p in walker.parts):
        problems.append(Problem(where, "no headings (h1-h6): the page has no structure, "
                                       "it is read as one section"))
    doc = Document.from_parts(doc_id, title or doc_id, walker.parts, source=where)
    return doc, problems
