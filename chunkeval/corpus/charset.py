"""Bytes -> str for HTML and the other text formats: the charset a file declares (BOM, XML
declaration, <meta>), UTF-8 when none, and a fallback with a Problem when it does not decode."""

from __future__ import annotations

import codecs
import re

from ..errors import InputError, Problem

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
