"""HTML -> Document: the page read (gzip, charset), its boilerplate removed and its main
content area chosen; html_blocks.py then cuts the text into ordered blocks with heading paths.

One page becomes a sequence of Parts (heading, paragraph, item, table, pre, dl, other);
Document.from_parts lays them out with offsets. Bad input that cannot become a document
raises InputError naming the file; anything merely doubtful comes back as a Problem.
"""

from __future__ import annotations

import gzip
import re
import zlib
from typing import Sequence

from ..errors import InputError, Problem
from ..model import Document
from .charset import decode_html
from .css import check_selectors, compiled_xpath, css_to_xpath
from .html_blocks import CONTROL_RE, Walker, normalize, text_of

# Where tests and the other readers import them from
__all__ = ["DEFAULT_DROP", "HTML_SUFFIXES", "PARSER_VERSION", "check_selectors", "css_to_xpath",
           "decode_html", "normalize", "parse_html"]

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
    text = CONTROL_RE.sub(" ", text)  # libxml2 refuses them; and BREAK must be ours alone
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
    xpath = compiled_xpath(tuple(drop))
    if xpath is not None:
        for el in xpath(root):
            if el.getparent() is not None:
                try:
                    el.drop_tree()
                except ValueError:  # its tail holds a character lxml will not set
                    el.tail = None
                    el.drop_tree()
    for selector in main:
        found = compiled_xpath((selector,))(root)
        if found:
            root = found[0]
            break
    else:
        if main:
            problems.append(Problem(where, "no main content area (" + ", ".join(main)
                                    + ") on this page of a built site: the whole page is read"))
    h1 = next((t for t in (text_of(h) for h in root.iter("h1")) if t), "")
    title = h1 or page_title

    walker = Walker(title)
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
