"""Chonkie's chunkers as strategies, named by a spec: `chonkie:RecursiveChunker(chunk_size=400)`.

The spec is a chunker class of the installed chonkie and its keyword arguments, each a Python
literal. They are read with `ast.literal_eval`, never run as code, so a spec in a shared
pyproject.toml can construct a chunker and do nothing else.

Names. A strategy is named after what it is: `chonkie-` and the class without "Chunker",
the chunk size the chunker ended up with, `-ovN` for an overlap, then every other argument
that differs from the class's default as `key=value` (a value that is not a plain word or
number as its short digest). Two argument lists that chunk differently so get two names,
which is what tells their results and baseline entries apart; an argument given at its
default makes no new name.

Params. The full arguments and chonkie's version are recorded with the strategy, so a
baseline whose chunks changed shows which version made them. `size` and `overlap` are
declared where chonkie's own are counted in characters, or in bytes (never fewer than the
characters): the invariants then check them as they do for any splitter. `size` only for the
chunkers that hold it as a hard limit; the sentence chunker, for one, keeps a long sentence
whole. A chunker that counts in another unit (tokenizer="word", a model's tokens) declares no
size, and an overlap only when it has none: its overlap in characters is not known in advance.

Offsets. Chunks are chonkie's text at chonkie's start_index/end_index, declared as slices:
the splitter contract then checks on every document that each text is doc.text[start:end],
so wrong offsets fail the strategy with the document named instead of being scored. On the
default corpora every chunk of the recursive, token and sentence chunkers is an exact slice.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import json
import re
from typing import Any

from ..errors import ConfigError
from ..model import Chunk, Document

PREFIX = "chonkie:"
INSTALL = "pip install 'chunkeval[chonkie]'"
# Sizes counted in these units never fall below the count of characters.
CHAR_BOUNDED = ("character", "byte")
# The chunkers whose chunk_size no chunk exceeds, whatever the text.
HARD_SIZE = ("RecursiveChunker", "TokenChunker")
_PLAIN = re.compile(r"[A-Za-z0-9_./-]{1,40}")


def is_spec(spec: str) -> bool:
    return str(spec).startswith(PREFIX)


def parse(spec: str) -> tuple[str, dict[str, Any]]:
    """(chunker class name, keyword arguments) of a spec; ConfigError naming it when it is
    not `chonkie:Class` or `chonkie:Class(key=literal, ...)`."""
    body = spec[len(PREFIX):].strip()
    usage = "expected chonkie:ChunkerClass(keyword=value, ...) with literal values"
    try:
        tree = ast.parse(body, mode="eval").body
    except SyntaxError:
        raise ConfigError(f"splitter {spec!r}: {usage}") from None
    if isinstance(tree, ast.Name):
        return tree.id, {}
    if not isinstance(tree, ast.Call) or not isinstance(tree.func, ast.Name):
        raise ConfigError(f"splitter {spec!r}: {usage}")
    if tree.args or any(k.arg is None for k in tree.keywords):
        raise ConfigError(f"splitter {spec!r}: keyword arguments only ({usage})")
    kwargs: dict[str, Any] = {}
    for k in tree.keywords:
        if k.arg in kwargs:
            raise ConfigError(f"splitter {spec!r}: {k.arg}= is given twice")
        try:
            kwargs[k.arg] = ast.literal_eval(k.value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise ConfigError(f"splitter {spec!r}: {k.arg}= must be a literal (a number, a "
                              "string, True/False/None, or a list of them)") from None
    return tree.func.id, kwargs


def chonkie_splitter(spec: str):
    """The splitter a `chonkie:` spec names, its chunker constructed once here: a callable
    with the attributes an outside splitter declares itself by (`strategy_name`, `family`,
    `params`, `slices`), which load_splitter turns into a Strategy."""
    cls_name, kwargs = parse(spec)
    try:
        import chonkie
    except ImportError:
        raise ConfigError(f"splitter {spec!r} needs chonkie: {INSTALL}") from None
    version = _version(chonkie)
    cls = getattr(chonkie, cls_name, None)
    if not (isinstance(cls, type) and issubclass(cls, chonkie.BaseChunker)):
        known = sorted(n for n in dir(chonkie) if n.endswith("Chunker") and n != "BaseChunker")
        raise ConfigError(f"splitter {spec!r}: chonkie {version} has no chunker {cls_name!r}; "
                          f"it has {', '.join(known)}")
    try:
        arguments = json.loads(json.dumps(kwargs))
    except (TypeError, ValueError):
        raise ConfigError(f"splitter {spec!r}: arguments must be numbers, strings, "
                          "True/False/None, lists or dicts") from None
    try:
        chunker = cls(**kwargs)
    except Exception as e:  # chonkie's own check of its arguments, or a model it cannot load
        raise ConfigError(f"splitter {spec!r}: {cls_name} refused its arguments: "
                          f"{type(e).__name__}: {_first_line(e)}") from None

    defaults = _defaults(cls)
    size = getattr(chunker, "chunk_size", None)
    overlap = getattr(chunker, "chunk_overlap", 0) or 0
    unit = kwargs.get("tokenizer", defaults.get("tokenizer"))
    params: dict[str, Any] = {"chunker": cls_name, "arguments": arguments, "chonkie": version}
    if isinstance(size, int) and unit in CHAR_BOUNDED and cls_name in HARD_SIZE:
        params["size"] = size
    if not overlap or unit in CHAR_BOUNDED:
        params["overlap"] = overlap

    def split(doc: Document) -> list[Chunk]:
        return [Chunk(doc.id, c.start_index, c.end_index, c.text)
                for c in chunker.chunk(doc.text)]

    split.strategy_name = _name(cls_name, size, overlap, kwargs, defaults)
    split.family = "chonkie"
    split.params = params
    split.slices = True
    split.keeps_structure = False
    return split


def _name(cls_name: str, size, overlap: int, kwargs: dict, defaults: dict) -> str:
    parts = ["chonkie", cls_name.removesuffix("Chunker").lower() or cls_name.lower()]
    if isinstance(size, int):
        parts.append(str(size))
    if overlap:
        parts.append(f"ov{overlap}")
    for key in sorted(kwargs):
        value = kwargs[key]
        if key in ("chunk_size", "chunk_overlap") or _same(value, defaults.get(key, _NONE)):
            continue
        parts.append(f"{key}={_shown(value)}")
    return "-".join(parts)


_NONE = object()


def _same(value, default) -> bool:
    try:
        return default is not _NONE and json.dumps(value) == json.dumps(default)
    except (TypeError, ValueError):
        return False


def _shown(value) -> str:
    """A value as a name shows it: a plain word or number as written, else a short digest
    (a name holds no '|', comma or quote, and stays one line)."""
    text = value if isinstance(value, str) else json.dumps(value)
    if _PLAIN.fullmatch(text):
        return text
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:8]


def _defaults(cls) -> dict[str, Any]:
    try:
        parameters = inspect.signature(cls.__init__).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in parameters if p.default is not inspect.Parameter.empty}


def _version(module) -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("chonkie")
    except PackageNotFoundError:
        return str(getattr(module, "__version__", "unknown"))


def _first_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return lines[0] if lines else "(no message)"
