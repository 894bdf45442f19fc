"""The small subset of CSS selectors that names boilerplate and content areas, as XPath:
tag, .class, #id, [attr], [attr=value] (also ~= ^= $= *=), joined by descendant (space) or
child (>) combinators, several joined by commas."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:  # imported where a page is parsed: the commands that parse none need no parser
    import lxml.etree

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
def compiled_xpath(selectors: tuple[str, ...]) -> lxml.etree.XPath | None:
    """One XPath finding what any of `selectors` matches; None for no selectors."""
    import lxml.etree

    return lxml.etree.XPath(" | ".join(css_to_xpath(s) for s in selectors)) if selectors \
        else None


def check_selectors(drop: Sequence[str]) -> None:
    """Raise ValueError for a selector this parser cannot use (before parsing any file)."""
    compiled_xpath(tuple(drop))

