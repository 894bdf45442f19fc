"""Corpus sources: the pinned Debian manuals (`debian-ja`, `debian-en`) or a directory of HTML.

A built-in corpus is four Debian documentation packages in one language, fetched with `apt-get download`,
checked against pinned hashes and unpacked in Python (a .deb is an `ar` archive holding a
compressed tar). Parsed corpora are cached under cache_root()/corpus, keyed by the parser
version, the inputs' hashes and the boilerplate selectors, so a second load reads one file.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import json
import lzma
import os
import shutil
import subprocess
import tarfile
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterator, Sequence

from .cache import atomic_write, cache_root
from .model import Corpus, Document, InputError, Problem
from .parse import DEFAULT_DROP, PARSER_VERSION, check_selectors, parse_html
from .parse_text import TEXT_PARSER_VERSION, parse_markdown, parse_plain
from .progress import Progress

DEFAULT_CORPUS = "debian-ja"
HTML_SUFFIXES = (".html", ".htm", ".xhtml", ".html.gz")
# The file formats a corpus directory may hold, by suffix.
FORMATS = {"html": HTML_SUFFIXES, "markdown": (".md", ".markdown"), "text": (".txt",)}
CACHE_FORMAT = 1
# A page larger than this (read, or once decompressed) is skipped with a warning. Parsing a
# page and building its query sets peak at about 25 times its size (bench/big_document.py:
# 10 MB, 260 MB RSS; 50 MB, 1 GB), so 20 MB keeps one page within a few hundred MB.
MAX_DOCUMENT_MB = 20
GZIP_MAGIC = b"\x1f\x8b"


class CorpusError(Exception):
    """The corpus cannot be had at all; the message tells the user what to do."""

    def __init__(self, message: str):
        self.message = message
        super().__init__(message)


@dataclass(frozen=True)
class DebPackage:
    name: str
    version: str
    sha256: str
    skip: tuple[str, ...] = ()  # pages besides the index pages that repeat others
    unmarked: bool = False  # its pages carry no language mark: all are in the corpus language

    @property
    def file_name(self) -> str:
        return f"{self.name}_{self.version}.deb"


DEBIAN_JA: tuple[DebPackage, ...] = (
    DebPackage("debian-reference-ja", "2.100",
               "f67140e0b994409413bd5fcc8dfcce832445c99d724401f0275fa238daf30325"),
    DebPackage("developers-reference-ja", "12.18",
               "fdcd6ac4ade8b3a68449c7ba881195e37f429c64b8067ee7269404d1b86fa229",
               skip=("developers-reference.html",)),  # the single-page edition
    DebPackage("maint-guide-ja", "1.2.53",
               "67e9020818b7664b465239d96316a13af5f8cbd9a8bed5e8773c74e31ca24c97"),
    DebPackage("debian-faq-ja", "11.1",
               "7e2a2f200a963e41dead4dd8645e0dd6550e2eda4cd88041b8e880046ca924a2"),
)

DEBIAN_EN: tuple[DebPackage, ...] = (
    DebPackage("debian-reference-en", "2.100",
               "9f31d3a17df505de09689ca255512ea58c1fc47c59bb1b0c7bf1c23362e9743f"),
    DebPackage("developers-reference", "12.18",
               "0dba82f6fa16e373f2a84ad07e7971aa9264ad2e7d2ae46b37edbc9c5fd57e2e",
               skip=("developers-reference.html",), unmarked=True),
    DebPackage("maint-guide", "1.2.53",
               "762c8a400a36668d2eb814a3ba356b06488fd889dfce478eb11d5cfb189a47b5"),
    DebPackage("debian-faq", "11.1",
               "427426e0cfa6888622fc1d72631071cb4b5a1f86ccde722e7820bcef284de5d0"),
)

# Built-in corpora: name -> (language of its pages, name of its package table in this module).
# The table is looked up when used, so tests can swap it.
BUILTIN_CORPORA = {"debian-ja": ("ja", "DEBIAN_JA"), "debian-en": ("en", "DEBIAN_EN")}


def builtin_packages(name: str) -> tuple[DebPackage, ...]:
    return globals()[BUILTIN_CORPORA[name][1]]


# Tables of contents, search and index pages only repeat what the chapters say.
NAVIGATION_PAGES = {"index", "search", "genindex", "py-modindex", "contents"}


# --- fetching -------------------------------------------------------------------------

def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _apt_download(pkg: DebPackage, into: Path) -> Path:
    """`apt-get download NAME=VERSION` into a fresh temporary directory beside `into`."""
    apt = shutil.which("apt-get")
    if apt is None:
        raise CorpusError(
            "the built-in corpora are fetched with apt-get, which is not installed. "
            "Use a Debian or Ubuntu machine (apt), or pass --corpus DIR with your own HTML files.")
    tmp = Path(tempfile.mkdtemp(prefix=".download-", dir=into))
    try:
        try:
            run = subprocess.run([apt, "download", f"{pkg.name}={pkg.version}"], cwd=tmp,
                                 capture_output=True, text=True, timeout=900,
                                 env={**os.environ, "LC_ALL": "C"})
        except subprocess.TimeoutExpired:
            raise CorpusError(f"apt-get download {pkg.name}={pkg.version} took over 15 minutes; "
                              "check the network or pass --corpus DIR") from None
        errors = [ln for ln in run.stderr.splitlines() if ln.startswith("E:")]
        if run.returncode != 0:
            said = "; ".join(errors) or run.stderr.strip()[-500:] or f"exit status {run.returncode}"
            if any(s in run.stderr for s in ("Unable to locate package", "Can't find a source",
                                             "was not found")):
                raise CorpusError(
                    f"apt-get cannot find {pkg.name}={pkg.version} ({said}). Run `apt-get update` "
                    "first: on a fresh machine apt's package lists may be empty. If it is still "
                    "missing, this Debian release does not carry that version; pass --corpus DIR "
                    "to use your own HTML files instead.")
            raise CorpusError(f"apt-get download {pkg.name}={pkg.version} failed: {said}. "
                              "Pass --corpus DIR to use your own HTML files instead.")
        debs = list(tmp.glob("*.deb"))
        if len(debs) != 1:
            raise CorpusError(f"apt-get download {pkg.name}={pkg.version} left {len(debs)} .deb "
                              f"files, expected one")
        return _verified_move(pkg, debs[0], into / pkg.file_name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _verified_move(pkg: DebPackage, got: Path, final: Path) -> Path:
    actual = sha256_file(got)
    if actual != pkg.sha256:
        got.unlink()
        raise CorpusError(
            f"{got.name}: sha256 {actual} does not match the pinned {pkg.sha256}; the download "
            "was removed. The archive may carry a rebuilt package or the download was damaged: "
            "try again, or pass --corpus DIR to use your own HTML files.")
    os.replace(got, final)
    return final


def fetch_debian_ja(*, progress: bool | None = None) -> list[Path]:
    return fetch_builtin(DEFAULT_CORPUS, progress=progress)


def fetch_builtin(name: str, *, progress: bool | None = None) -> list[Path]:
    """A built-in corpus's pinned .deb files under cache_root()/debs, downloaded once and
    verified."""
    debs = cache_root() / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    paths = []
    packages = builtin_packages(name)
    with Progress(f"fetching {name}", len(packages), enabled=progress) as bar:
        for pkg in packages:
            final = debs / pkg.file_name
            if final.is_file() and sha256_file(final) != pkg.sha256:
                final.unlink()  # damaged or replaced by hand: fetch it again
            if not final.is_file():
                _apt_download(pkg, debs)
            paths.append(final)
            bar.step(pkg.name)
    return paths


# --- unpacking a .deb -----------------------------------------------------------------

def read_ar(data: bytes, where: str) -> Iterator[tuple[str, bytes]]:
    """Members (name, bytes) of an `ar` archive, the container format of a .deb."""
    if not data.startswith(b"!<arch>\n"):
        raise CorpusError(f"{where}: not a .deb file (no ar archive header)")
    pos = 8
    while pos < len(data):
        header = data[pos:pos + 60]
        if len(header) < 60 or header[58:60] != b"`\n":
            raise CorpusError(f"{where}: damaged ar archive (bad member header at byte {pos})")
        name = header[:16].decode("ascii", "replace").rstrip()
        try:
            size = int(header[48:58].decode("ascii").strip())
        except ValueError:
            raise CorpusError(f"{where}: damaged ar archive (bad member size at byte {pos})"
                              ) from None
        body = data[pos + 60:pos + 60 + size]
        if len(body) < size:
            raise CorpusError(f"{where}: truncated ar archive (member {name!r})")
        if name.startswith("#1/"):  # BSD ar keeps long names in front of the data
            n = int(name[3:])
            name, body = body[:n].decode("utf-8", "replace").rstrip("\0"), body[n:]
        yield name.rstrip("/"), body
        pos += 60 + size + size % 2  # members are aligned to even offsets


def deb_files(path: Path) -> Iterator[tuple[str, bytes]]:
    """(path inside the package, bytes) of each regular file in a .deb's data archive."""
    where = str(path)
    members = dict(read_ar(path.read_bytes(), where))
    name = next((n for n in members if n.startswith("data.tar")), None)
    if name is None:
        raise CorpusError(f"{where}: no data.tar member; is this a .deb?")
    if name.endswith(".zst"):
        raise CorpusError(f"{where}: its data is zstd-compressed ({name}), which this Python "
                          "cannot unpack; extract the HTML yourself and pass --corpus DIR")
    try:
        with tarfile.open(fileobj=io.BytesIO(members[name]), mode="r:*") as tar:
            for member in tar:
                if member.isfile():  # links would repeat a page
                    yield member.name.removeprefix("./"), tar.extractfile(member).read()
    except (tarfile.TarError, lzma.LZMAError, zlib.error, EOFError, OSError) as e:
        raise CorpusError(f"{where}: cannot unpack {name}: {e}") from None


def _is_html(name: str) -> bool:
    return name.lower().endswith(HTML_SUFFIXES)


def format_of(name: str) -> str | None:
    """"html", "markdown" or "text" by the file name's suffix; None when unsupported."""
    lower = name.lower()
    return next((f for f, suffixes in FORMATS.items() if lower.endswith(suffixes)), None)


def _parser(doc_id: str):
    fmt = format_of(doc_id)
    return {"markdown": parse_markdown, "text": parse_plain}.get(fmt, parse_html)


def _page_stem(name: str) -> str:
    stem = name.lower()
    for suffix in (".gz", ".html", ".htm", ".xhtml", ".ja", ".en"):
        stem = stem.removesuffix(suffix)
    return stem


def japanese_pages(pkg: DebPackage, path: Path) -> list[tuple[str, bytes, str]]:
    return language_pages(pkg, path, "ja")


def language_pages(pkg: DebPackage, path: Path, lang: str) -> list[tuple[str, bytes, str]]:
    """(doc id, bytes, member path) of the package's chapter pages in `lang`, each once."""
    pages = []
    for member, data in deb_files(path):
        p = PurePosixPath(member)
        ours = f".{lang}." in p.name or lang in p.parts[:-1] or pkg.unmarked
        if not (_is_html(p.name) and ours):
            continue
        if _page_stem(p.name) in NAVIGATION_PAGES or p.name in pkg.skip:
            continue
        pages.append((f"{pkg.name}/{p.name}", data, member))
    ids = [doc_id for doc_id, _, _ in pages]
    if len(set(ids)) != len(ids):
        raise CorpusError(f"{path}: two pages share a file name; doc ids would clash")
    return pages


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
        inflate = zlib.decompressobj(wbits=31)  # gzip header and trailer
        try:
            data = inflate.decompress(data, max_bytes + 1)
        except zlib.error as e:
            raise InputError(where, f"not a readable gzip file: {e}") from None
        if len(data) > max_bytes:
            raise InputError(where, f"decompresses to more than the "
                                    f"{_mb(max_bytes)} limit on a document; skipped (raise "
                                    "the limit with --max-document-mb)")
        if not inflate.eof:
            raise InputError(where, "not a readable gzip file: it ends early")
    if len(data) > max_bytes:
        raise InputError(where, f"{_mb(len(data))}, over the {_mb(max_bytes)} limit on a "
                                "document; skipped (raise the limit with --max-document-mb)")
    return data, notes


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def escaped(name: str) -> str:
    """A file name as the filesystem gave it, printable: bytes that are not UTF-8 as \\xNN."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def _debian_inputs(name: str, debs: Sequence[Path]) -> list[_Input]:
    inputs = []
    lang = BUILTIN_CORPORA[name][0]
    for pkg, path in zip(builtin_packages(name), debs):
        for doc_id, data, member in language_pages(pkg, path, lang):
            inputs.append(_Input(doc_id, doc_id, f"{pkg.name} {pkg.version}: /{member}", data))
    return inputs


def _directory_inputs(root: Path, given: str, max_bytes: int = MAX_DOCUMENT_MB * 10**6
                      ) -> tuple[list[_Input], list[Problem], list[str]]:
    """The HTML, Markdown and text files under root, warnings about what was skipped, and
    the files of other kinds. A symlink whose target leaves the corpus directory is skipped;
    a directory symlink is not followed."""
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
                                "are not in the corpus"))

    def leaves(path: Path) -> bool:
        return path.is_symlink() and not path.resolve().is_relative_to(real_root)

    for folder, dirs, files in os.walk(root, onerror=unlisted):
        for d in [d for d in dirs if not d.startswith(".") and leaves(Path(folder) / d)]:
            problems.append(Problem(shown(Path(folder) / d), "a symlink to outside the corpus "
                                                             "directory; not followed"))
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith("."):
                continue
            if format_of(name) is None:
                unsupported.append(escaped((Path(folder) / name).relative_to(root).as_posix()))
                continue
            path = Path(folder) / name
            rel = escaped(path.relative_to(root).as_posix())
            display = shown(path)
            if rel != path.relative_to(root).as_posix():
                problems.append(Problem(display, "file name is not valid UTF-8; the document "
                                                 f"is named {rel!r}"))
            if leaves(path):
                problems.append(Problem(display, "a symlink to outside the corpus directory; "
                                                 "skipped"))
                continue
            try:
                size = path.stat().st_size
                if size > max_bytes:
                    problems.append(Problem(display, f"{_mb(size)}, over the {_mb(max_bytes)} "
                                                     "limit on a document; skipped (raise the "
                                                     "limit with --max-document-mb)"))
                    continue
                data = path.read_bytes()
            except OSError as e:
                data = e
            inputs.append(_Input(rel, display, f"{escaped(root.name)}/{rel}", data,
                                 gz_name=name.lower().endswith(".gz")))
    if not inputs:
        known = ", ".join("*" + s for suffixes in FORMATS.values() for s in suffixes)
        raise CorpusError(f"no HTML, Markdown or text files ({known}) under {given}"
                          + (f" ({problems[0]})" if problems else ""))
    return inputs, problems, unsupported


def _cache_key(name: str, inputs: Sequence[tuple[str, str]], drop: Sequence[str],
               max_bytes: int) -> str:
    blob = json.dumps([PARSER_VERSION, TEXT_PARSER_VERSION, name, sorted(inputs), sorted(drop),
                       max_bytes], ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _cache_path(key: str) -> Path:
    return cache_root() / "corpus" / f"{key}.json.gz"


# A problem as cached: (doc id, message, line).
_Found = tuple[str, str, int | None]


def _read_cache(path: Path, name: str) -> tuple[list[Document], list[_Found]] | None:
    """The cached parse, or None when it is missing or unreadable (then we parse again)."""
    try:
        data = json.loads(gzip.decompress(path.read_bytes()))
        if data["format"] != CACHE_FORMAT or data["name"] != name:
            return None
        docs = [Document.from_json(d) for d in data["documents"]]
        problems = [(p["doc"], p["message"], p.get("line")) for p in data["problems"]]
        return docs, problems
    except FileNotFoundError:
        return None
    except (OSError, EOFError, zlib.error, ValueError, KeyError, TypeError, AttributeError):
        return None


def _write_cache(path: Path, name: str, docs, problems) -> None:
    data = {"format": CACHE_FORMAT, "name": name, "parser": PARSER_VERSION,
            "documents": [d.to_json() for d in docs],
            "problems": [{"doc": doc, "message": msg, "line": line} for doc, msg, line in problems]}
    raw = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    try:
        atomic_write(path, gzip.compress(raw, compresslevel=6))
    except OSError:
        pass  # a read-only cache only costs time


def _parse_all(name: str, inputs: Sequence[_Input], drop: Sequence[str], progress: bool | None,
               max_bytes: int = MAX_DOCUMENT_MB * 10**6):
    docs, problems = [], []
    with Progress(f"parsing {name}", len(inputs), enabled=progress) as bar:
        for item in inputs:
            if isinstance(item.data, OSError):
                reason = item.data.strerror or str(item.data)
                problems.append((item.doc_id, f"cannot read: {reason}", None))
            else:
                try:
                    data, notes = unpack(item.data, item.display, max_bytes, item.gz_name)
                    problems += [(item.doc_id, note, None) for note in notes]
                    parse = _parser(item.doc_id)
                    kwargs = {"drop": drop} if parse is parse_html else {}
                    doc, found = parse(data, item.doc_id, path=item.display, **kwargs)
                    docs.append(dataclasses.replace(doc, source=item.source))
                    problems += [(item.doc_id, p.message, p.line) for p in found]
                except InputError as e:
                    problems.append((item.doc_id, e.message, e.line))
            bar.step(item.doc_id)
    return docs, problems


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
        check_selectors(drop)
    except ValueError as e:
        raise CorpusError(f"boilerplate selectors: {e}") from None

    source = str(source)
    if source in BUILTIN_CORPORA:
        name = source
        debs = fetch_builtin(name, progress=progress)
        keyed = [(pkg.file_name, pkg.sha256) for pkg in builtin_packages(name)]  # verified
        inputs = None  # unpacked only when the cache misses
        display, unsupported = {}, []
    else:
        root = Path(source).expanduser()
        name = root.resolve().name or "corpus"
        inputs, walk_problems, unsupported = _directory_inputs(root, source, max_bytes)
        keyed = [(i.doc_id, hashlib.sha256(i.data).hexdigest() if isinstance(i.data, bytes)
                  else f"unreadable: {i.data}") for i in inputs]
        display = {i.doc_id: i.display for i in inputs}

    path = _cache_path(_cache_key(name, keyed, drop, max_bytes))
    cached = _read_cache(path, name) if use_cache else None
    if cached is not None:
        docs, problems = cached
    else:
        if inputs is None:
            inputs = _debian_inputs(name, debs)
        docs, problems = _parse_all(name, inputs, drop, progress, max_bytes)
        if use_cache:
            _write_cache(path, name, docs, problems)

    problem_list = tuple(walk_problems) + tuple(
        Problem(display.get(doc, doc), msg, line) for doc, msg, line in problems)
    if unsupported:  # one line for all of them: a docs folder holds many images
        shown = ", ".join(unsupported[:20]) + (f" and {len(unsupported) - 20} more"
                                               if len(unsupported) > 20 else "")
        problem_list += (Problem(source, f"{len(unsupported)} unsupported file(s) not read "
                                         f"(not HTML, Markdown or text): {shown}"),)
    if not docs:
        shown = "; ".join(str(p) for p in problem_list[:5])
        raise CorpusError(f"no document in {source} could be read: {shown}")
    docs.sort(key=lambda d: d.id)
    return Corpus(name, tuple(docs), problem_list)
