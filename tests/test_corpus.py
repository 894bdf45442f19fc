"""Corpus sources: directories of HTML, the .deb reader, fetching (with a stand-in apt-get)
and the parse cache. Hermetic: no network, no real Debian packages."""

import gzip
import hashlib
import io
import os
import stat
import tarfile
from pathlib import Path

import pytest

from chunkeval.store import cache_root
from chunkeval.corpus import debian, load_corpus, sources
from chunkeval.corpus.readers import READERS
from chunkeval.corpus.debian import DebPackage, deb_files, language_pages, read_ar
from chunkeval.errors import CorpusError
from chunkeval.corpus.html import DEFAULT_DROP, check_selectors

DATA = Path(__file__).parent / "data"
PAGE = "<html><head><title>{0}</title></head><body><h1>{0}</h1><p>{1}</p></body></html>"


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    path = tmp_path / "cache"
    monkeypatch.setenv("CHUNKEVAL_CACHE", str(path))
    return path


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


@pytest.fixture
def html_dir(tmp_path):
    root = tmp_path / "docs"
    write(root / "b.html", PAGE.format("Bee", "second page"))
    write(root / "a.html", PAGE.format("Ay", "first page"))
    write(root / "sub" / "c.htm", PAGE.format("Sea", "in a folder"))
    write(root / "sub" / "d.xhtml", PAGE.format("Dee", "xhtml page"))
    write(root / "sub" / "e.html.gz", gzip.compress(PAGE.format("Ee", "zipped").encode()))
    write(root / "sub" / "sjis.html", (DATA / "parse_shift_jis.html").read_bytes())
    write(root / "notes.odt", "not a format we read")
    write(root / ".hidden" / "x.html", PAGE.format("Hidden", "skipped"))
    return root


def test_directory_corpus(html_dir):
    corpus = load_corpus(str(html_dir))
    assert corpus.name == "docs"
    assert [d.id for d in corpus.documents] == [
        "a.html", "b.html", "sub/c.htm", "sub/d.xhtml", "sub/e.html.gz", "sub/sjis.html"]
    assert corpus["sub/e.html.gz"].title == "Ee"
    assert "シフトJISで書かれた本文" in corpus["sub/sjis.html"].text
    assert corpus["a.html"].source == "docs/a.html"
    assert [p.message for p in corpus.problems] == [
        "1 unsupported file(s) not read (not HTML, Markdown, text, PDF, Word or "
        "reStructuredText): notes.odt"]


BAD_FILES = {
    "empty.html": (b"", "empty file"),
    "binary.html": (b"\x00\x01\x02PNG" * 50, "binary file"),
    "wrong-encoding.html": ('<meta charset="utf-8"><h1>偽りの宣言</h1>'.encode("euc_jp"),
                            "does not decode"),
    "malformed.html": (b"<h1>Broken<p>still <b>read</div></td>", None),
    "no-text.html": (b"<html><body><div><img src='x.png'></div></body></html>", "no text"),
    "no-headings.html": (b"<p>plain text, no headings</p>", "no headings"),
}


def test_bad_files_become_problems_naming_the_file(tmp_path, html_dir):
    for name, (data, _) in BAD_FILES.items():
        write(html_dir / "bad" / name, data)
    corpus = load_corpus(str(html_dir))
    ids = {d.id for d in corpus.documents}
    assert {"a.html", "b.html", "sub/c.htm", "sub/sjis.html"} <= ids  # good files still load
    assert {"bad/wrong-encoding.html", "bad/malformed.html", "bad/no-headings.html"} <= ids
    assert not ids & {"bad/empty.html", "bad/binary.html", "bad/no-text.html"}
    for name, (_, message) in BAD_FILES.items():
        said = [p for p in corpus.problems if p.path == str(html_dir / "bad" / name)]
        if message is None:
            assert said == []
        else:
            assert len(said) == 1 and message in said[0].message, (name, said)
            assert str(said[0]).startswith(str(html_dir / "bad" / name) + ": ")


def test_unreadable_file_is_a_problem(html_dir, monkeypatch):
    locked = write(html_dir / "locked.html", PAGE.format("L", "x"))
    locked.chmod(0)
    if os.geteuid() == 0:  # root reads every file: its read fails as anyone else's would
        read_bytes = Path.read_bytes

        def refused(path: Path) -> bytes:
            if path.name == locked.name:
                raise PermissionError(13, "Permission denied", str(path))
            return read_bytes(path)
        monkeypatch.setattr(Path, "read_bytes", refused)
    corpus = load_corpus(str(html_dir))
    assert any(p.path.endswith("locked.html") and p.message == "cannot read: Permission denied"
               for p in corpus.problems)
    assert len(corpus.documents) == 6 and "locked.html" not in {d.id for d in corpus.documents}


def test_missing_directory(tmp_path):
    with pytest.raises(CorpusError, match="does not exist"):
        load_corpus(str(tmp_path / "nowhere"))


def test_file_is_not_a_directory(tmp_path):
    f = write(tmp_path / "one.html", PAGE.format("x", "y"))
    with pytest.raises(CorpusError, match="not a directory"):
        load_corpus(str(f))


def test_directory_without_html(tmp_path):
    write(tmp_path / "empty" / "readme.odt", "nothing")
    with pytest.raises(CorpusError, match=r"no HTML, Markdown, text, PDF, Word or "
                                          r"reStructuredText files .*\*\.html"):
        load_corpus(str(tmp_path / "empty"))


def test_directory_where_nothing_parses(tmp_path):
    write(tmp_path / "d" / "x.html", b"")
    with pytest.raises(CorpusError, match=r"no document in .* could be read: .*x\.html: empty"):
        load_corpus(str(tmp_path / "d"))


def test_bad_drop_selector_is_a_corpus_error(html_dir):
    with pytest.raises(CorpusError, match="selectors"):
        load_corpus(str(html_dir), drop=["div:hover"])


def test_the_default_selectors_hold_and_are_not_compiled_again_for_each_load(html_dir,
                                                                            monkeypatch):
    check_selectors(DEFAULT_DROP)

    def compiled(drop):
        raise AssertionError(f"compiled {drop}")
    monkeypatch.setattr(sources, "check_selectors", compiled)
    assert load_corpus(str(html_dir)).documents
    with pytest.raises(AssertionError, match="compiled"):
        load_corpus(str(html_dir), drop=["div.tip"])


def test_drop_override(html_dir):
    write(html_dir / "nav.html", '<h1>N</h1><div class="navheader">NAVTEXT</div><p>body</p>')
    assert "NAVTEXT" not in load_corpus(str(html_dir))["nav.html"].text
    assert "NAVTEXT" in load_corpus(str(html_dir), drop=())["nav.html"].text


# --- the parse cache ---------------------------------------------------------------------

def _refuse(*args, **kwargs):
    raise AssertionError("parsed although the cache should have answered")


def test_second_load_comes_from_the_cache(html_dir, monkeypatch, cache_dir):
    write(html_dir / "bad" / "no-headings.html", BAD_FILES["no-headings.html"][0])
    first = load_corpus(str(html_dir))
    assert len(list((cache_dir / "corpus").glob("*.json.gz"))) == 1
    monkeypatch.setattr(READERS.get("html"), "parse", _refuse)
    second = load_corpus(str(html_dir))
    assert second.documents == first.documents
    assert second.problems == first.problems and second.problems  # problems are cached too
    assert second.fingerprint == first.fingerprint


def test_changed_input_or_selectors_miss_the_cache(html_dir, monkeypatch):
    load_corpus(str(html_dir))
    write(html_dir / "a.html", PAGE.format("Ay", "changed text"))
    assert "changed text" in load_corpus(str(html_dir))["a.html"].text
    monkeypatch.setattr(READERS.get("html"), "parse", _refuse)
    with pytest.raises(AssertionError, match="parsed although"):
        load_corpus(str(html_dir), drop=DEFAULT_DROP + ("p",))


def test_use_cache_false_neither_reads_nor_writes(html_dir, cache_dir):
    load_corpus(str(html_dir), use_cache=False)
    assert not (cache_dir / "corpus").exists()


# mtime=0: gzip stamps the time into its header, and xdist workers must collect equal ids.
@pytest.mark.parametrize("damage", [b"", b"not gzip", gzip.compress(b"{not json", mtime=0),
                                    gzip.compress(b'{"format": 1}', mtime=0)],
                         ids=["empty", "not-gzip", "not-json", "wrong-format"])
def test_corrupt_cache_is_ignored(html_dir, cache_dir, damage):
    good = load_corpus(str(html_dir))
    [cached] = (cache_dir / "corpus").glob("*.json.gz")
    cached.write_bytes(damage)
    again = load_corpus(str(html_dir))
    assert again.documents == good.documents
    assert gzip.decompress(cached.read_bytes()).startswith(b"{")  # rewritten


def test_cache_root_follows_the_environment(cache_dir):
    assert cache_root() == cache_dir


# --- .deb files ---------------------------------------------------------------------------

def ar_archive(members: list[tuple[str, bytes]], bsd_names: bool = False) -> bytes:
    out = [b"!<arch>\n"]
    for name, data in members:
        if bsd_names:
            raw = name.encode()
            field, data = f"#1/{len(raw)}", raw + data
        else:
            field = name + "/" if not name.endswith("/") else name
        header = f"{field:<16}{0:<12}{0:<6}{0:<6}{'100644':<8}{len(data):<10}`\n".encode()
        assert len(header) == 60
        out += [header, data, b"\n" if len(data) % 2 else b""]
    return b"".join(out)


def tar_bytes(files: dict[str, bytes], mode: str = "w:xz", links: dict[str, str] = {}) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name, target in links.items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return buf.getvalue()


FAQ_FILES = {
    "./usr/share/doc/faq/ja/basic.ja.html": PAGE.format("基本", "基本の説明です。").encode(),
    "./usr/share/doc/faq/ja/more.ja.html": PAGE.format("続き", "続きの説明です。").encode(),
    "./usr/share/doc/faq/ja/index.ja.html": PAGE.format("目次", "目次").encode(),
    "./usr/share/doc/faq/ja/single.html": PAGE.format("全部", "一枚版").encode(),
    "./usr/share/doc/faq/en/basic.en.html": PAGE.format("Basics", "English").encode(),
    "./usr/share/doc/faq/ja/style.css": b"body {}",
}


def make_deb(path: Path, files=FAQ_FILES, compression="xz", bsd_names=False) -> Path:
    data = tar_bytes(files, f"w:{compression}",
                     links={"./usr/share/doc/faq/ja/link.ja.html": "basic.ja.html"})
    members = [("debian-binary", b"2.0\n"), ("control.tar.xz", tar_bytes({"./control": b"x"})),
               (f"data.tar.{compression}", data)]
    return write(path, ar_archive(members, bsd_names))


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("bsd_names", [False, True])
def test_ar_reader(bsd_names):
    data = ar_archive([("odd", b"abc"), ("even", b"abcd"), ("empty", b"")], bsd_names)
    assert list(read_ar(data, "x.deb")) == [("odd", b"abc"), ("even", b"abcd"), ("empty", b"")]


@pytest.mark.parametrize("data, message", [
    (b"PK\x03\x04 zip", "not a .deb"),
    (b"!<arch>\nshort", "damaged"),
    (ar_archive([("data.tar.xz", b"0123456789")])[:-4], "truncated"),
])
def test_ar_reader_rejects_damage(data, message):
    with pytest.raises(CorpusError, match=message):
        list(read_ar(data, "x.deb"))


@pytest.mark.parametrize("compression", ["xz", "gz", "bz2"])
def test_deb_files_reads_the_data_archive(tmp_path, compression):
    deb = make_deb(tmp_path / "faq.deb", compression=compression)
    files = dict(deb_files(deb))
    page = "usr/share/doc/faq/ja/basic.ja.html"
    assert files[page] == FAQ_FILES["./" + page]
    assert "usr/share/doc/faq/ja/link.ja.html" not in files  # links would repeat a page


def test_zstd_data_is_a_clear_error(tmp_path):
    deb = write(tmp_path / "z.deb", ar_archive([("debian-binary", b"2.0\n"),
                                                 ("data.tar.zst", b"\x28\xb5\x2f\xfd")]))
    with pytest.raises(CorpusError, match="zstd"):
        list(deb_files(deb))


def test_damaged_data_archive(tmp_path):
    deb = write(tmp_path / "d.deb", ar_archive([("data.tar.xz", b"garbage")]))
    with pytest.raises(CorpusError, match="cannot unpack data.tar.xz"):
        list(deb_files(deb))


def test_japanese_pages_take_each_chapter_once(tmp_path):
    deb = make_deb(tmp_path / "faq.deb")
    pkg = DebPackage("faq-ja", "1.0", sha(deb), skip=("single.html",))
    pages = language_pages(pkg, deb, "ja")
    assert [doc_id for doc_id, _, _ in pages] == ["faq-ja/basic.ja.html", "faq-ja/more.ja.html"]
    assert pages[0][2] == "usr/share/doc/faq/ja/basic.ja.html"


# --- fetching with a stand-in apt-get ---------------------------------------------------------

@pytest.fixture
def fake_apt(tmp_path, monkeypatch):
    """Puts an `apt-get` on PATH that copies $FAKE_DEB, or fails as told by $FAKE_APT_FAIL."""
    bin_dir = tmp_path / "bin"
    script = write(bin_dir / "apt-get", """#!/bin/sh
echo "$@" >> "$FAKE_APT_CALLS"
if [ -n "$FAKE_APT_FAIL" ]; then echo "$FAKE_APT_FAIL" >&2; exit 100; fi
name="${2%%=*}"
cp "$FAKE_DEB" "./${name}_all.deb"
""")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    calls = tmp_path / "calls"
    calls.touch()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_APT_CALLS", str(calls))
    monkeypatch.delenv("FAKE_APT_FAIL", raising=False)
    deb = make_deb(tmp_path / "src" / "faq.deb")
    monkeypatch.setenv("FAKE_DEB", str(deb))
    pkg = DebPackage("faq-ja", "1.0", sha(deb), skip=("single.html",))
    monkeypatch.setattr(debian, "DEBIAN_JA", (pkg,))
    return calls


def test_fetch_downloads_verifies_and_reuses(fake_apt, cache_dir):
    [path] = debian.fetch_builtin("debian-ja")
    assert path == cache_dir / "debs" / "faq-ja_1.0.deb"
    assert sha(path) == debian.DEBIAN_JA[0].sha256
    assert fake_apt.read_text().split() == ["download", "faq-ja=1.0"]
    assert list((cache_dir / "debs").iterdir()) == [path]  # no temporary left behind
    debian.fetch_builtin("debian-ja")
    assert len(fake_apt.read_text().splitlines()) == 1  # reused, not downloaded again


def test_fetch_replaces_a_damaged_cached_file(fake_apt, cache_dir):
    [path] = debian.fetch_builtin("debian-ja")
    path.write_bytes(b"damaged")
    [again] = debian.fetch_builtin("debian-ja")
    assert sha(again) == debian.DEBIAN_JA[0].sha256
    assert len(fake_apt.read_text().splitlines()) == 2


def test_hash_mismatch_names_file_and_hashes(fake_apt, cache_dir, monkeypatch):
    pinned = "0" * 64
    monkeypatch.setattr(debian, "DEBIAN_JA", (DebPackage("faq-ja", "1.0", pinned),))
    with pytest.raises(CorpusError) as err:
        debian.fetch_builtin("debian-ja")
    message = str(err.value)
    actual = hashlib.sha256(Path(os.environ["FAKE_DEB"]).read_bytes()).hexdigest()
    assert "faq-ja_all.deb" in message and pinned in message and actual in message
    assert "removed" in message
    assert list((cache_dir / "debs").iterdir()) == []


@pytest.mark.parametrize("apt_says", ["E: Unable to locate package faq-ja",
                                      "E: Can't find a source to download version '1.0' of "
                                      "'faq-ja:all'"])
def test_unknown_package_says_to_run_apt_get_update(fake_apt, monkeypatch, apt_says):
    monkeypatch.setenv("FAKE_APT_FAIL", apt_says)
    with pytest.raises(CorpusError) as err:
        debian.fetch_builtin("debian-ja")
    assert "apt-get update" in str(err.value) and "--corpus DIR" in str(err.value)
    assert apt_says in str(err.value)


def test_other_apt_failure_is_reported(fake_apt, monkeypatch):
    monkeypatch.setenv("FAKE_APT_FAIL", "E: Failed to fetch http://example.invalid/x 404")
    with pytest.raises(CorpusError, match="failed: E: Failed to fetch"):
        debian.fetch_builtin("debian-ja")


def test_missing_apt_get(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    with pytest.raises(CorpusError) as err:
        debian.fetch_builtin("debian-ja")
    assert "apt" in str(err.value) and "--corpus DIR" in str(err.value)


def test_load_debian_ja_end_to_end_and_cached(fake_apt, monkeypatch):
    corpus = load_corpus("debian-ja")
    assert corpus.name == "debian-ja"
    assert [d.id for d in corpus.documents] == ["faq-ja/basic.ja.html", "faq-ja/more.ja.html"]
    source = corpus["faq-ja/basic.ja.html"].source
    assert source == "faq-ja 1.0: /usr/share/doc/faq/ja/basic.ja.html"
    monkeypatch.setattr(READERS.get("html"), "parse", _refuse)
    monkeypatch.setattr(debian, "deb_files", _refuse)  # not even unpacked again
    assert load_corpus("debian-ja").documents == corpus.documents


# -- bounded reading, names as the filesystem gives them, symlinks, unlistable folders -------

def _said(corpus, end: str) -> list[str]:
    return [p.message for p in corpus.problems if p.path.endswith(end)]


def test_a_gzip_bomb_is_skipped_with_a_warning_while_the_rest_loads(html_dir):
    # 8 MB of zeros compress to about 8 KB; the limit is 1 MB
    write(html_dir / "bomb.html.gz", gzip.compress(b"\0" * 8_000_000))
    write(html_dir / "big.html", PAGE.format("Big", "word " * 300_000))  # 1.5 MB as read
    corpus = load_corpus(str(html_dir), max_document_mb=1)
    assert "decompresses to more than the 1.0 MB limit" in _said(corpus, "bomb.html.gz")[0]
    assert "1.5 MB, over the 1.0 MB limit" in _said(corpus, "big.html")[0]
    assert {"a.html", "sub/e.html.gz"} <= {d.id for d in corpus.documents}
    assert "big.html" in {d.id for d in load_corpus(str(html_dir)).documents}


def test_gzip_is_known_by_content_not_by_name(html_dir):
    write(html_dir / "plain.html.gz", PAGE.format("Plain", "not compressed at all"))
    write(html_dir / "zipped.html", gzip.compress(PAGE.format("Zipped", "named html").encode()))
    corpus = load_corpus(str(html_dir))
    assert corpus["plain.html.gz"].title == "Plain"
    assert _said(corpus, "plain.html.gz") == ["named .gz but not gzip-compressed; read as "
                                              "plain HTML"]
    assert corpus["zipped.html"].title == "Zipped" and not _said(corpus, "zipped.html")
    write(html_dir / "cut.html.gz", gzip.compress(PAGE.format("C", "x" * 999).encode())[:60])
    assert "not a readable gzip file" in _said(load_corpus(str(html_dir)), "cut.html.gz")[0]


def test_an_undecodable_file_name_is_named_escaped_and_the_rest_loads(html_dir):
    raw = os.fsencode(str(html_dir)) + b"/caf\xe9.html"  # Latin-1, not UTF-8
    with open(raw, "wb") as f:
        f.write(PAGE.format("Cafe", "latin-1 name").encode())
    corpus = load_corpus(str(html_dir))
    assert corpus["caf\\xe9.html"].title == "Cafe"
    (said,) = _said(corpus, "caf\\xe9.html")
    assert "not valid UTF-8" in said
    assert {"a.html", "sub/c.htm"} <= {d.id for d in corpus.documents}
    assert load_corpus(str(html_dir)).documents == corpus.documents  # and it caches


def test_symlinks_leaving_the_corpus_are_skipped_with_a_warning(tmp_path, html_dir):
    outside = write(tmp_path / "secret.html", PAGE.format("Secret", "outside the corpus"))
    write(tmp_path / "elsewhere" / "f.html", PAGE.format("Far", "outside too"))
    (html_dir / "link.html").symlink_to(outside)
    (html_dir / "inside.html").symlink_to(html_dir / "a.html")
    (html_dir / "folder").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    corpus = load_corpus(str(html_dir))
    ids = {d.id for d in corpus.documents}
    assert "link.html" not in ids and not any(i.startswith("folder") for i in ids)
    assert "inside.html" in ids
    assert "outside the corpus directory; skipped" in _said(corpus, "link.html")[0]
    assert "not followed" in _said(corpus, "folder")[0]
    assert all("outside" not in d.text for d in corpus.documents)


def test_an_unlistable_folder_is_reported(html_dir, monkeypatch):
    real = os.scandir

    def scandir(path="."):
        if str(path).endswith("sub"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    corpus = load_corpus(str(html_dir))
    assert _said(corpus, "sub") == ["cannot list this directory: Permission denied; its files "
                                    "are not in the corpus"]
    assert {d.id for d in corpus.documents} == {"a.html", "b.html"}
