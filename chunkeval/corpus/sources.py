"""Corpus sources: a built-in corpus (debian.py) or a directory of HTML, Markdown, text, PDF,
Word (.docx) and reStructuredText files.

Files become documents through the parser of their format (html.py, markdown.py, pdf.py,
word.py, rst.py). Parsed corpora are cached under cache_root()/corpus, keyed by the parser
code, the exact versions of the libraries each format is read with, the inputs' hashes and
the settings, so a second load reads one file.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import importlib.util
import io
import json
import os
import re
import stat
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..errors import CorpusError, InputError, Problem
from ..model import Corpus, Document
from ..progress import Progress
from ..store import atomic_write, cache_root, cannot_write
from ..store.keys import code_digest
from .debian import (BUILTIN_CORPORA, DEFAULT_CORPUS, builtin_packages, fetch_builtin,
                     language_pages)
from .html import DEFAULT_DROP, PARSER_VERSION, check_selectors
from .markdown import TEXT_PARSER_VERSION
from .optional import LIBRARIES
from .pdf import PDF_PARSER_VERSION
from .readers import current as readers_in_use, format_of, reader_of
from .rst import RST_PARSER_VERSION, Project
from .sites import Site, recognise
from .word import DOCX_PARSER_VERSION

CACHE_FORMAT = 1
# A page larger than this (read, or once decompressed) is skipped with a warning: parsing a
# page and building its query sets take a few tens of times its size in memory
# (bench/big_document.py), so 20 MB keeps one page within a few hundred MB.
MAX_DOCUMENT_MB = 20
GZIP_MAGIC = b"\x1f\x8b"


def _library(fmt: str) -> str | None:
    """The installed version of the library a format is read with; None when it is not
    installed (or the format needs none: then "")."""
    if fmt not in LIBRARIES:
        return ""
    module, dist, _ = LIBRARIES[fmt]
    if importlib.util.find_spec(module) is None:
        return None
    return library_version(dist) or "unknown"


# chunkeval's own code a parse runs: the parsers, the document model and the problem lines
# that are cached with the documents.
PARSER_MODULES = ("corpus/*.py", "model.py", "errors.py")


def library_version(dist: str) -> str | None:
    """The exact version of an installed distribution as the running Python finds it (a
    copy earlier on the path wins, as its import does); None when it is not installed."""
    import importlib.metadata
    if dist == "libxml2":
        try:
            import lxml.etree
        except ImportError:
            return None
        return ".".join(map(str, lxml.etree.LIBXML_VERSION))
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def parser_libraries(formats) -> dict[str, str | None]:
    """The versions of the libraries the `formats` are parsed with (None: not installed)."""
    known = readers_in_use()
    names = sorted({d for f in formats if f in known for d in known.get(f).libraries})
    return {name: library_version(name) for name in names}


# --- loading --------------------------------------------------------------------------

@dataclass
class _Input:
    doc_id: str
    display: str  # how messages name the file
    source: str   # Document.source: machine-independent
    data: bytes | OSError  # an unreadable file is reported, not raised
    gz_name: bool = False  # named *.gz: its bytes should be gzip


def unpack(data: bytes, where: str, max_bytes: int, gz_name: bool = False
           ) -> tuple[bytes, list[str]]:
    """The page's bytes, decompressed when they are gzip (known by content, not by name),
    never more than `max_bytes`; and the warnings. InputError when over the limit."""
    notes = []
    if data[:2] != GZIP_MAGIC:
        if gz_name:
            notes.append("named .gz but not gzip-compressed; read as plain HTML")
    else:
        # A gzip file may hold several members one after the other: all are the page.
        out, rest = b"", data
        while rest[:2] == GZIP_MAGIC:
            inflate = zlib.decompressobj(wbits=31)  # gzip header and trailer
            try:
                out += inflate.decompress(rest, max_bytes + 1 - len(out))
            except zlib.error as e:
                raise InputError(where, f"not a readable gzip file: {e}") from None
            if len(out) > max_bytes:
                raise InputError(where, f"decompresses to more than the "
                                        f"{_mb(max_bytes)} limit on a document; skipped (raise "
                                        "the limit with --max-document-mb)")
            if not inflate.eof:
                raise InputError(where, "not a readable gzip file: it ends early")
            rest = inflate.unused_data
        if rest.strip(b"\0"):
            raise InputError(where, f"not a readable gzip file: {len(rest)} bytes after its "
                                    "last member are not gzip")
        data = out
    if len(data) > max_bytes:
        raise InputError(where, f"{_mb(len(data))}, over the {_mb(max_bytes)} limit on a "
                                "document; skipped (raise the limit with --max-document-mb)")
    return data, notes


def check_archive(data: bytes, where: str, max_bytes: int) -> None:
    """InputError when a zip (a Word file) would decompress to more than `max_bytes`, known
    from its directory before any part is inflated. Python's zip reader stops each part at
    the size the directory gives it (a part that holds more fails its checksum), so these
    sizes bound what the parser reads. An unreadable zip is left to the parser to report."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            size = sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return
    if size > max_bytes:
        raise InputError(where, f"decompresses to {_mb(size)}, over the {_mb(max_bytes)} "
                                "limit on a document; skipped (raise the limit with "
                                "--max-document-mb)")


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def escaped(name: str) -> str:
    """A file name as the filesystem gave it, printable on one line: bytes that are not
    UTF-8, and control characters (a newline in a name would forge a line of the log), as
    \\xNN."""
    text = os.fsencode(name).decode("utf-8", "backslashreplace")
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                        else f"\\u{ord(m.group()):04x}", text)


# C0, DEL and C1 controls, and the Unicode line and paragraph separators: each ends a line
# in some terminal or log viewer
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _debian_inputs(name: str, debs: Sequence[Path]) -> list[_Input]:
    inputs = []
    lang = BUILTIN_CORPORA[name][0]
    for pkg, path in zip(builtin_packages(name), debs):
        for doc_id, data, member in language_pages(pkg, path, lang):
            inputs.append(_Input(doc_id, doc_id, f"{pkg.name} {pkg.version}: /{member}", data))
    return inputs


def _directory_inputs(root: Path, given: str, max_bytes: int = MAX_DOCUMENT_MB * 10**6,
                      site: Site | None = None
                      ) -> tuple[list[_Input], list[Problem], list[str]]:
    """The HTML, Markdown and text files under root, warnings about what was skipped, and
    the files of other kinds. A symlink whose target leaves the corpus directory is skipped;
    a directory symlink is not followed. In a built `site`, the generator's own files are
    left out (one line says how many)."""
    if not root.exists():
        raise CorpusError(f"corpus directory {given} does not exist "
                          f"(the built-in corpora are {', '.join(BUILTIN_CORPORA)})")
    if not root.is_dir():
        raise CorpusError(f"{given} is not a directory; --corpus takes a directory of HTML files "
                          f"or one of {', '.join(BUILTIN_CORPORA)}")
    inputs: list[_Input] = []
    problems: list[Problem] = []
    unsupported: list[str] = []
    real_root = root.resolve()

    def shown(path: Path) -> str:
        return escaped(str(Path(given) / path.relative_to(root)))

    def unlisted(e: OSError) -> None:
        problems.append(Problem(escaped(str(Path(given) / Path(e.filename).relative_to(root))),
                                f"cannot list this directory: {e.strerror or e}; its files "
                                "are not in the corpus", kind="not-read"))

    def leaves(path: Path) -> bool:
        try:
            return path.is_symlink() and not path.resolve().is_relative_to(real_root)
        except (OSError, RuntimeError):  # a symlink loop leads nowhere
            return True

    ids: dict[str, str] = {}  # document id -> the file it came from
    generated = 0
    for folder, dirs, files in os.walk(root, onerror=unlisted):
        for d in [d for d in dirs if not d.startswith(".") and leaves(Path(folder) / d)]:
            problems.append(Problem(shown(Path(folder) / d), "a symlink to outside the corpus "
                                                             "directory; not followed",
                                    kind="not-read"))
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith("."):
                continue
            if site and site.skips((Path(folder) / name).relative_to(root).as_posix()):
                generated += 1
                continue
            if format_of(name) is None:
                unsupported.append(escaped((Path(folder) / name).relative_to(root).as_posix()))
                continue
            path = Path(folder) / name
            rel = escaped(path.relative_to(root).as_posix())
            display = shown(path)
            try:
                kind = path.stat().st_mode
            except OSError as e:  # a symlink loop or a dangling symlink
                problems.append(Problem(display, f"cannot be read: {e.strerror or e}; skipped",
                                        kind="not-read"))
                continue
            if not stat.S_ISREG(kind):  # a FIFO would block the read for ever
                problems.append(Problem(display, "not a regular file (a FIFO, socket or "
                                                 "device); skipped", kind="not-read"))
                continue
            if leaves(path):
                problems.append(Problem(display, "a symlink to outside the corpus directory; "
                                                 "skipped", kind="not-read"))
                continue
            try:
                size = path.stat().st_size
                if size > max_bytes:
                    problems.append(Problem(display, f"{_mb(size)}, over the {_mb(max_bytes)} "
                                                     "limit on a document; skipped (raise the "
                                                     "limit with --max-document-mb)",
                                            kind="not-read"))
                    continue
                data = path.read_bytes()
            except OSError as e:
                data = e
            if rel in ids:  # claimed only by a file that is read, not by a skipped one
                problems.append(Problem(display, f"named {rel!r} once escaped, like "
                                                 f"{ids[rel]}; skipped", kind="not-read"))
                continue
            ids[rel] = display
            if rel != path.relative_to(root).as_posix():
                problems.append(Problem(display, "file name is not valid UTF-8 or holds "
                                                 "control characters; the document is named "
                                                 f"{rel!r}"))
            inputs.append(_Input(rel, display, f"{escaped(root.name)}/{rel}", data,
                                 gz_name=name.lower().endswith(".gz")))
    if site:
        problems.insert(0, Problem(escaped(given), site.describe(len(inputs), generated),
                                   kind="site"))
    if not inputs:
        known = ", ".join("*" + s for r in readers_in_use().items() for s in r.suffixes)
        raise CorpusError(f"no HTML, Markdown, text, PDF, Word or reStructuredText files "
                          f"({known}) under {given}"
                          + (f" ({problems[0]})" if problems else ""))
    return inputs, problems, unsupported


def _cache_key(name: str, inputs: Sequence[tuple[str, str]], drop: Sequence[str],
               max_bytes: int, main: Sequence[str] = ()) -> str:
    """Everything a parse depends on: the inputs' hashes, the settings (boilerplate selectors,
    size limit, a built site's content areas), chunkeval's parser code and the exact versions
    of the libraries the corpus's formats are read with."""
    formats = sorted({format_of(doc_id) or "html" for doc_id, _ in inputs})
    documents = [[PDF_PARSER_VERSION, DOCX_PARSER_VERSION, RST_PARSER_VERSION]] \
        if set(formats) & set(LIBRARIES) else []
    # the parsers' code itself: a checkout edited in place keeps its version numbers
    code = code_digest(PARSER_MODULES)
    blob = json.dumps([PARSER_VERSION, TEXT_PARSER_VERSION, code, name, sorted(inputs),
                       sorted(drop), max_bytes, parser_libraries(formats)] + documents
                      + ([list(main)] if main else []), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _cache_path(key: str) -> Path:
    return cache_root() / "corpus" / f"{key}.json.gz"


# A problem as cached: (doc id, message, line, kind, names).
_Found = tuple[str, str, int | None, str, tuple[str, ...]]


def _read_cache(path: Path, name: str) -> tuple[list[Document], list[_Found]] | None:
    """The cached parse, or None when it is missing or unreadable (then we parse again)."""
    try:
        data = json.loads(gzip.decompress(path.read_bytes()))
        if data["format"] != CACHE_FORMAT or data["name"] != name:
            return None
        docs = [Document.from_json(d) for d in data["documents"]]
        problems = [(p["doc"], p["message"], p.get("line"), p.get("kind", ""),
                     tuple(p.get("names", ()))) for p in data["problems"]]
        if not _unchanged(data.get("read", {})):
            return None
        return docs, problems
    except FileNotFoundError:
        return None
    except (OSError, EOFError, zlib.error, ValueError, KeyError, TypeError, AttributeError):
        return None


def _unchanged(read: dict[str, str]) -> bool:
    """Whether the files the documents included (path -> sha256) are still as they were."""
    for file, sha in read.items():
        try:
            if hashlib.sha256(Path(file).read_bytes()).hexdigest() != sha:
                return False
        except OSError:
            return False
    return True


def _write_cache(path: Path, name: str, docs, problems, read: dict[str, str]) -> None:
    data = {"format": CACHE_FORMAT, "name": name, "parser": PARSER_VERSION,
            "documents": [d.to_json() for d in docs], "read": read,
            "problems": [{"doc": doc, "message": msg, "line": line, "kind": kind,
                          "names": list(names)}
                         for doc, msg, line, kind, names in problems]}
    raw = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    try:
        atomic_write(path, gzip.compress(raw, compresslevel=6))
    except OSError as e:
        cannot_write(e)  # a read-only cache only costs time


def _parse_all(name: str, inputs: Sequence[_Input], drop: Sequence[str], progress: bool | None,
               max_bytes: int = MAX_DOCUMENT_MB * 10**6, root: Path | None = None,
               main: Sequence[str] = ()):
    """The documents, the problems, and the files outside the inputs that documents included
    (path -> sha256: a change to one makes the cached parse stale). `main`: the content
    area of a built site's pages (sites.py)."""
    docs, problems = [], []
    project = None
    if any(format_of(i.doc_id) == "rst" for i in inputs):
        project = Project.of(root, {i.doc_id: i.data.decode("utf-8", "replace")
                                    for i in inputs if format_of(i.doc_id) == "rst"
                                    and isinstance(i.data, bytes)})
    # A format whose library is missing: one line for all its files, not one per file.
    missing: dict[str, list[str]] = {}
    absent = {f for f in {format_of(i.doc_id) or "html" for i in inputs} if _library(f) is None}
    for item in inputs:
        fmt = format_of(item.doc_id) or "html"
        if fmt in absent:
            missing.setdefault(fmt, []).append(item.doc_id)
    for fmt, ids in missing.items():
        shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
        problems.append((ids[0], f"{len(ids)} {fmt} file(s) not read ({shown}): reading them "
                                 f"needs {LIBRARIES[fmt][1]}; pip install 'chunkeval[documents]'",
                         None, "not-read", ()))
    skipped = {doc_id for ids in missing.values() for doc_id in ids}
    with Progress(f"parsing {name}", len(inputs), enabled=progress) as bar:
        for item in inputs:
            if item.doc_id in skipped:
                pass
            elif isinstance(item.data, OSError):
                reason = item.data.strerror or str(item.data)
                problems.append((item.doc_id, f"cannot read: {reason}", None, "not-read", ()))
            else:
                try:
                    data, notes = unpack(item.data, item.display, max_bytes, item.gz_name)
                    problems += [(item.doc_id, note, None, "", ()) for note in notes]
                    reader = reader_of(item.doc_id)
                    if reader.name == "word":  # a zip: bounded before a part is inflated
                        check_archive(data, item.display, max_bytes)
                    kwargs = {"drop": drop, "main": main} if reader.name == "html" else {}
                    if reader.name == "rst":
                        kwargs = {"project": project,
                                  "file": root / item.doc_id if root else None}
                    doc, found = reader.parse(data, item.doc_id, path=item.display, **kwargs)
                    docs.append(dataclasses.replace(doc, source=item.source))
                    problems += [(item.doc_id if p.path == item.display else p.path, p.message,
                                  p.line, p.kind, p.names) for p in found]
                except InputError as e:
                    problems.append((item.doc_id, e.message, e.line, "not-read", ()))
            bar.step(item.doc_id)
    return docs, problems, (project.read if project else {})


def load_corpus(source: str = DEFAULT_CORPUS, *, drop: Sequence[str] | None = None,
                progress: bool | None = None, use_cache: bool = True,
                max_document_mb: float = MAX_DOCUMENT_MB) -> Corpus:
    """Load a built-in corpus (fetched and parsed) or a directory of HTML files.

    Files that cannot be read, or are larger than `max_document_mb` (read or decompressed),
    become Corpus.problems; the rest still load. Raises CorpusError when there is no corpus
    at all."""
    if not max_document_mb > 0:
        raise CorpusError(f"the document size limit must be above 0 MB, got {max_document_mb}")
    max_bytes = int(max_document_mb * 10**6)
    walk_problems: list[Problem] = []
    drop = tuple(DEFAULT_DROP if drop is None else drop)
    try:
        # a project's own selectors; the parser's defaults are checked by its tests, and
        # compiling them would import lxml into every run, a Markdown corpus's too
        if drop != DEFAULT_DROP:
            check_selectors(drop)
    except ValueError as e:
        raise CorpusError(f"boilerplate selectors: {e}") from None

    source = str(source)
    if source in BUILTIN_CORPORA:
        name = source
        debs = fetch_builtin(name, progress=progress)
        keyed = [(pkg.file_name, pkg.sha256) for pkg in builtin_packages(name)]  # verified
        inputs = None  # unpacked only when the cache misses
        display, unsupported, root, main = {}, [], None, ()
    else:
        root = Path(source).expanduser()
        name = root.resolve().name or "corpus"
        site = recognise(root) if root.is_dir() else None
        main = site.main if site else ()
        inputs, walk_problems, unsupported = _directory_inputs(root, source, max_bytes, site)
        keyed = [(i.doc_id, hashlib.sha256(i.data).hexdigest() if isinstance(i.data, bytes)
                  else f"unreadable: {i.data}") for i in inputs]
        display = {i.doc_id: i.display for i in inputs}

    path = _cache_path(_cache_key(name, keyed, drop, max_bytes, main))
    cached = _read_cache(path, name) if use_cache else None
    if cached is not None:
        docs, problems = cached
    else:
        if inputs is None:
            inputs = _debian_inputs(name, debs)
        docs, problems, read = _parse_all(name, inputs, drop, progress, max_bytes,
                                          root, main)
        if use_cache:
            _write_cache(path, name, docs, problems, read)

    problem_list = tuple(walk_problems) + tuple(
        Problem(display.get(doc, doc), msg, line, kind, names)
        for doc, msg, line, kind, names in problems)
    if unsupported:  # one line for all of them: a docs folder holds many images
        shown = ", ".join(unsupported[:20]) + (f" and {len(unsupported) - 20} more"
                                               if len(unsupported) > 20 else "")
        problem_list += (Problem(source, f"{len(unsupported)} unsupported file(s) not read "
                                         f"(not HTML, Markdown, text, PDF, Word or "
                                         f"reStructuredText): {shown}", kind="unsupported"),)
    if not docs:
        shown = "; ".join(str(p) for p in problem_list[:5])
        raise CorpusError(f"no document in {source} could be read: {shown}")
    docs.sort(key=lambda d: d.id)
    return Corpus(name, tuple(docs), problem_list)
