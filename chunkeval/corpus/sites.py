"""Built documentation sites: a folder of Sphinx HTML (html, dirhtml, singlehtml) or a MkDocs
`site/`, recognised from the files its generator always writes.

A recognised site is read as its pages: the generator's own files (`_sources/`, `_static/`,
the search page, the general and module indexes, the 404 page, MkDocs' `search/` and
`assets/`) are left out, and each page is read from its main content area, not from the
navigation around it. Anything else is a folder of HTML files like any other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

# The content area of a page, most specific first; the first that matches is read.
SPHINX_MAIN = ("[role=main]", "div.body", "div.document", "main", "article")
MKDOCS_MAIN = ("article.md-content__inner", "div.md-content", "[role=main]", "main", "article")

_SPHINX_DIRS = {"_sources", "_static", "_images", "_downloads", "_modules"}
_MKDOCS_DIRS = {"search", "assets", "css", "js", "fonts", "img", "images"}
_GENERATED = re.compile(r"^(?:search|genindex(?:-.+)?|.*modindex|404)(?:\.html?)?$", re.I)
_FILES = re.compile(r"^(?:objects\.inv|searchindex\.js|\.buildinfo|sitemap\.xml(?:\.gz)?"
                    r"|.*\.devhelp2?(?:\.gz)?)$", re.I)
_SPHINX_FOOTER = re.compile(rb"Created using\s*<a[^>]*sphinx", re.I)
_GENERATOR = re.compile(rb"""<meta\s+name=["']generator["']\s+content=["']([^"']+)""", re.I)
_SINGLE = re.compile(rb"""<span id=["']document-""")


@dataclass(frozen=True)
class Site:
    generator: str  # "Sphinx" or "MkDocs"
    build: str      # what the line says: "HTML build", "single-page HTML build", ...
    main: tuple[str, ...]

    def skips(self, rel: str) -> bool:
        """Whether the file at `rel` (a POSIX path under the site's root) is the
        generator's own, not a page of the documentation."""
        parts = PurePosixPath(rel).parts
        dirs = _SPHINX_DIRS if self.generator == "Sphinx" else _MKDOCS_DIRS
        if any(p in dirs for p in parts[:-1]):
            return True
        name = parts[-1]
        if _FILES.match(name):
            return True
        if name.lower() in ("index.html", "index.htm") and len(parts) > 1:
            name = parts[-2]  # dirhtml: search/index.html
        return bool(_GENERATED.match(name))

    def describe(self, pages: int, skipped: int) -> str:
        return (f"recognised a {self.generator} {self.build}: read the main content area of "
                f"its {pages} page(s), left out {skipped} file(s) of the generator's own "
                f"(sources, static files, search, indexes)")


def recognise(root: Path) -> Site | None:
    """The site built into `root`, or None when it is not a site this reader knows."""
    index = _head(root / "index.html")
    generator = _GENERATOR.search(index)
    made_by = generator.group(1).decode("ascii", "replace").lower() if generator else ""
    if made_by.startswith("mkdocs") or (root / "search" / "search_index.json").is_file():
        return Site("MkDocs", "site", MKDOCS_MAIN)
    sphinx = (made_by.startswith("sphinx") or _SPHINX_FOOTER.search(index)
              or (root / "_static" / "documentation_options.js").is_file()
              or (root / "searchindex.js").is_file())
    if not sphinx:
        return None
    if _SINGLE.search(_head(root / "index.html", None)):
        return Site("Sphinx", "single-page HTML build", SPHINX_MAIN)
    dirhtml = (root / "genindex" / "index.html").is_file() or (
        root / "search" / "index.html").is_file()
    return Site("Sphinx", "dirhtml build" if dirhtml else "HTML build", SPHINX_MAIN)


def _head(path: Path, size: int | None = 1 << 16) -> bytes:
    """The first `size` bytes of a file (all of it with None); b"" when unreadable."""
    try:
        with path.open("rb") as f:
            return f.read(size if size is not None else -1)
    except OSError:
        return b""
