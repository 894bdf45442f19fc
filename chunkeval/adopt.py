"""`chunkeval sweep --adopt`: the recommendation written into the project's own
[tool.chunkeval], as a small edit of the file's text (its comments, order and spelling kept).

The recommended configuration joins the strategies the project gates: appended to
`strategies` when the project lists them, else to `reference` (written out with the default
reference strategies when the project had none, so that those stay). When the swept strategy
is the team's own factory and the project's `splitters` names it with parameters (the
sweep's `against`), those parameters are replaced by the recommended ones instead. Every
other line stays as it is: splitters, retrievers with their MODULE:ATTR spelling, query
sets, tests. The edited text is parsed again and must equal the old table with only that
change, or nothing is written.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from . import store
from .errors import ConfigError
from .strategies import REFERENCE
from .sweep import Sweep, adopted_point, adopted_verdict, differ_note, factory_call

HEADER = re.compile(r"^[ \t]*\[[ \t]*tool[ \t]*\.[ \t]*chunkeval[ \t]*\][ \t]*(#.*)?$", re.M)
ANY_HEADER = re.compile(r"^[ \t]*\[", re.M)


@dataclass(frozen=True)
class Patch:
    path: Path
    old: str
    new: str
    shown: list[str]  # a unified diff of the file, with a note on what was chosen


def _toml_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _table_span(text: str, path: Path) -> tuple[int, int]:
    found = HEADER.search(text)
    if not found:
        raise ConfigError(f"{path}: no [tool.chunkeval] table header to add the "
                          "recommendation under; add it by hand from sweep.md")
    end = ANY_HEADER.search(text, found.end())
    return found.end(), end.start() if end else len(text)


def _array_end(text: str, start: int, path: Path, key: str) -> tuple[int, int]:
    """(position of the closing bracket, position just after the last element or the opening
    bracket or comma) of the array whose "[" is at `start`: strings and comments skipped."""
    depth, i, last, quote = 0, start, start, None
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 2
                continue
            if text.startswith(quote, i):
                i += len(quote)
                last, quote = i, None
                continue
        elif c == "#":
            i = text.find("\n", i)
            i = len(text) if i < 0 else i
            continue
        elif c in "\"'":
            quote = c * 3 if text.startswith(c * 3, i) else c
            i += len(quote)
            continue
        elif c == "[":
            depth += 1
            last = i + 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                return i, last
            last = i + 1
        elif not c.isspace():
            last = i + 1
        i += 1
    raise ConfigError(f"{path} [tool.chunkeval] {key}: the list does not end")


def _append(text: str, span: tuple[int, int], key: str, item: str, default: tuple[str, ...],
            path: Path) -> str:
    """`item` appended to the array `key` of the table at `span`; the key written (with
    `default` before the item) when the table has none."""
    body = text[span[0]:span[1]]
    found = re.search(rf"^[ \t]*{re.escape(key)}[ \t]*=[ \t]*(\[)", body, re.M)
    if found is None:
        if re.search(rf"^[ \t]*[\"']?{re.escape(key)}[\"']?[ \t]*[.=]", body, re.M):
            raise ConfigError(f"{path} [tool.chunkeval] {key}: not a plain list; add "
                              f"{item!r} to it by hand")
        line = f"{key} = [{', '.join(_toml_string(s) for s in (*default, item))}]"
        return text[:span[0]] + "\n" + line + text[span[0]:]
    open_at = span[0] + found.start(1)
    close, last = _array_end(text, open_at, path, key)
    glue = {"[": "", ",": " "}.get(text[last - 1], ", ")
    return text[:last] + glue + _toml_string(item) + text[last:]


def _replace_in(text: str, span: tuple[int, int], key: str, old: str, new: str) -> str | None:
    """The quoted `old` in the array `key` of the table replaced by `new`; None when the
    table's `key` does not hold it so spelled."""
    body = text[span[0]:span[1]]
    found = re.search(rf"^[ \t]*{re.escape(key)}[ \t]*=", body, re.M)
    if found is None:
        return None
    for quoted in (_toml_string(old), f"'{old}'"):
        at = body.find(quoted, found.end())
        if at >= 0:
            at += span[0]
            return text[:at] + _toml_string(new) + text[at + len(quoted):]
    return None


def _section(text: str, path: Path) -> dict:
    try:
        return tomllib.loads(text).get("tool", {}).get("chunkeval", {})
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: the edited text is not valid TOML ({e}); nothing written, "
                          "add the recommendation by hand from sweep.md") from None


def plan(sweep: Sweep, pyproject: Path | None) -> Patch | None:
    """The edit that adopts the sweep's recommendation into `pyproject` (None without a
    [tool.chunkeval] there, or without a recommendation)."""
    v = adopted_verdict(sweep)
    if v is None or pyproject is None or not pyproject.is_file():
        return None
    old = pyproject.read_text(encoding="utf-8")
    before = _section(old, pyproject)
    if not HEADER.search(old):
        return None
    point = adopted_point(sweep, v)
    against = sweep.settings.get("against")
    call = factory_call(against, point)
    new, expect = None, dict(before)
    if call and against in before.get("splitters", []):
        new = _replace_in(old, _table_span(old, pyproject), "splitters", against, call)
        expect["splitters"] = [call if s == against else s for s in before["splitters"]]
    if new is None:
        spec = call or point.spec
        # a MODULE:ATTR or chonkie spec is a splitter; a built-in's spec a strategy; where the
        # project lists its strategies, only those listed are gated
        keys = ["splitters"] if ":" in spec.partition("(")[0] else []
        if "strategies" in before or not keys:
            keys.append("strategies" if "strategies" in before else "reference")
        new = old
        for key in keys:
            listed = before.get(key)
            if listed is not None and not isinstance(listed, list):
                raise ConfigError(f"{pyproject} [tool.chunkeval] {key}: not a list; add "
                                  f"{spec!r} by hand")
            if spec in (listed or []):
                continue
            default = REFERENCE if key == "reference" and listed is None else ()
            new = _append(new, _table_span(new, pyproject), key, spec, default, pyproject)
            expect[key] = [*(listed or default), spec]
    if _section(new, pyproject) != expect:
        raise ConfigError(f"{pyproject}: the edit would change more than the recommendation; "
                          "nothing written, add it by hand from sweep.md")
    diff = list(difflib.unified_diff(old.splitlines(), new.splitlines(),
                                     f"{pyproject.name} (now)", f"{pyproject.name} (adopted)",
                                     n=2, lineterm=""))
    note = [f"# recommended: {point.spec} = {point.name}", *differ_note(sweep, v, point)]
    return Patch(pyproject, old, new, note + (diff or ["# already in the file: no change"]))


def write(patch: Patch) -> Path:
    """Write the patched file, the file before kept as pyproject.toml.bak; refused when the
    file changed since the patch was made."""
    now = patch.path.read_text(encoding="utf-8")
    if now != patch.old:
        raise ConfigError(f"{patch.path}: changed while the sweep ran; nothing written, run "
                          "the sweep again to adopt")
    backup = patch.path.with_name(patch.path.name + ".bak")
    store.atomic_write(backup, patch.old)
    store.atomic_write(patch.path, patch.new)
    return backup
