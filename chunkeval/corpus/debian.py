"""The built-in corpora: Debian's documentation packages, pinned by version and sha256.

A built-in corpus is four Debian documentation packages in one language, fetched with
`apt-get download` into cache_root()/debs, checked against pinned hashes and unpacked in
Python (a .deb is an `ar` archive holding a compressed tar).
"""

from __future__ import annotations

import hashlib
import io
import lzma
import os
import shutil
import subprocess
import tarfile
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterator

from ..errors import CorpusError
from ..progress import Progress
from ..store import cache_root
from .html import HTML_SUFFIXES

DEFAULT_CORPUS = "debian-ja"


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


def _page_stem(name: str) -> str:
    stem = name.lower()
    for suffix in (".gz", ".html", ".htm", ".xhtml", ".ja", ".en"):
        stem = stem.removesuffix(suffix)
    return stem


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


def apt_update() -> None:
    """Refresh apt's package lists (a fresh machine's may be empty or stale)."""
    try:
        done = subprocess.run(["apt-get", "update"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    except FileNotFoundError:
        raise CorpusError("apt-get is not installed: the default corpus needs Debian's apt; "
                          "or evaluate your own documents with --corpus DIR") from None
    if done.returncode != 0:
        raise CorpusError(f"`apt-get update` failed (exit {done.returncode}): "
                          f"{done.stderr.strip()[-500:]}")
