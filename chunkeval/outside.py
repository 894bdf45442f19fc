"""Code from the user's project, named as MODULE:ATTR: splitters, retrievers, length measures.

One loader for all of them. The module is imported with the project root first on sys.path,
and only while it is imported, so a project needs no path settings and chunkeval leaves
sys.path as it found it. Whatever goes wrong is one ConfigError naming the spec (and, for an
error raised inside the module, its file and line), never a traceback from the import
machinery.
"""

from __future__ import annotations

import hashlib
import importlib
import sys
import traceback
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from .errors import ConfigError, ContractError

Length = Callable[[str], int]


class on_path:
    """The project root first on sys.path while its modules are imported."""

    def __init__(self, root: str | Path | None):
        self.root = str(root) if root is not None else None

    def __enter__(self):
        if self.root is not None:
            sys.path.insert(0, self.root)

    def __exit__(self, *exc):
        if self.root is None:
            return
        try:
            sys.path.remove(self.root)
        except ValueError:
            pass


def split_spec(spec: str, what: str) -> tuple[str, str]:
    module_name, sep, attr = str(spec).partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"{what} {spec!r}: expected 'module:attribute'")
    return module_name, attr


def load(spec: str, what: str, root: str | Path | None = None) -> Any:
    """The object `spec` ("module:attr", attr may be dotted) names, its module imported with
    `root` first on sys.path; `what` names the kind of thing in messages."""
    module_name, attr = split_spec(spec, what)
    root = str(Path(root).resolve()) if root is not None else None
    with on_path(root):
        try:
            module = importlib.import_module(module_name)
        except ImportError as e:
            if e.name == module_name or (e.name and module_name.startswith(e.name + ".")):
                raise ConfigError(f"{what} {spec!r}: cannot import {module_name!r} ({e})"
                                  ) from None
            raise ConfigError(f"{what} {spec!r}: {module_name!r} failed to import: "
                              f"{_where(e)}") from None
        except Exception as e:  # a user's module that raises (or does not parse) on import
            raise ConfigError(f"{what} {spec!r}: {module_name!r} failed to import: "
                              f"{_where(e)}") from None
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(f"{what} {spec!r}: {module_name!r} has no attribute {attr!r}"
                              ) from None
    return obj


def _where(e: BaseException) -> str:
    """`file:line: Type: message` of an exception raised inside a user's module."""
    if isinstance(e, SyntaxError) and e.filename:
        return f"{e.filename}:{e.lineno}: SyntaxError: {e.msg}"
    frames = [f for f in traceback.extract_tb(e.__traceback__)
              if "importlib" not in f.filename and f.filename != __file__]
    place = f"{frames[-1].filename}:{frames[-1].lineno}: " if frames else ""
    return f"{place}{type(e).__name__}: {e}"


def spec_digest(spec: str) -> str | None:
    """sha256 of the source of the module a loaded MODULE:ATTR names: what the object's own
    module is, even when it is a library's (a bound method, a functools.partial)."""
    return source_digest(sys.modules.get(str(spec).partition(":")[0]))


def source_digest(obj: Any) -> str | None:
    """sha256 of the file the module of `obj` (a function, a class, or a module) was loaded
    from; None when it has no file, or for chunkeval's own code (which its own digest covers):
    code that changed without a new version number must not reuse old results."""
    module = obj if hasattr(obj, "__file__") and not callable(obj) else \
        sys.modules.get(getattr(obj, "__module__", None) or "")
    if module is None or module.__name__.split(".")[0] == __package__:
        return None
    path = getattr(module, "__file__", None)
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest() if path else None
    except OSError:
        return None


@lru_cache(maxsize=8)
def length_function(spec: str, root: str | None = None) -> Length:
    """The length measure a spec names: "chars" (len), or "module:attr", a callable
    text -> int (a tokenizer's count, say) importable from `root`, else from the working
    directory. ConfigError says what is wrong with the spec."""
    if spec == "chars":
        return len
    if ":" not in spec:
        raise ConfigError(f"length {spec!r}: expected 'chars' or 'module:attribute'")
    obj = load(spec, "length", root or ".")
    if not callable(obj):
        raise ConfigError(f"length {spec!r}: {spec.partition(':')[2]!r} is not callable")

    def length(text: str) -> int:
        n = obj(text)
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ContractError(f"length {spec!r} returned {n!r} for a text of {len(text)} "
                                "characters; it must return an int >= 0")
        return n
    return length
