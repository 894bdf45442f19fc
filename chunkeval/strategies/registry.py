"""The Strategy type and the registry that maps stable names to strategies.

Names are what tests, baselines and reports use, so a name never changes meaning.
Outside splitters come in as "module:attribute" (see `load_splitter`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ..model import Chunk, Document


@dataclass(frozen=True)
class Strategy:
    name: str
    family: str
    split: Callable[[Document], list[Chunk]] = field(repr=False, compare=False)
    params: dict[str, Any] = field(default_factory=dict)
    # True when every chunk is a slice of the source: doc.text[start:end] == chunk.text.
    slices: bool = True
    # True when the strategy promises to keep tables and code blocks whole: it then gets a
    # cut-rate test and the table-row invariant.
    keeps_structure: bool = False

    def __call__(self, doc: Document) -> list[Chunk]:
        return self.split(doc)

    def describe(self) -> dict:
        return {"name": self.name, "family": self.family, "params": dict(self.params),
                "slices": self.slices, "keeps_structure": self.keeps_structure}


_REGISTRY: dict[str, Strategy] = {}


def register(strategy: Strategy, *, replace: bool = False) -> Strategy:
    if strategy.name in _REGISTRY and not replace and _REGISTRY[strategy.name] is not strategy:
        raise ValueError(f"a strategy named {strategy.name!r} is already registered")
    _REGISTRY[strategy.name] = strategy
    return strategy


def unregister(name: str) -> None:
    _REGISTRY.pop(name, None)


def get(name: str) -> Strategy:
    _ensure_defaults()
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise KeyError(f"unknown strategy {name!r}; known: {known}") from None


def names() -> list[str]:
    _ensure_defaults()
    return list(_REGISTRY)


def is_builtin(name: str) -> bool:
    """True for a strategy of the default matrix, as chunkeval ships it."""
    from .defaults import DEFAULTS
    strategy = get(name)
    return any(s is strategy for s in DEFAULTS)


def all_strategies() -> list[Strategy]:
    _ensure_defaults()
    return list(_REGISTRY.values())


def _ensure_defaults() -> None:
    # Importing the package registers the default matrix exactly once.
    from . import defaults  # noqa: F401


class SplitterError(Exception):
    pass


def load_splitter(spec: str) -> list[Strategy]:
    """Import "module:attribute" and register what it names.

    The attribute may be a Strategy, an iterable of Strategies, or a plain callable
    `f(Document) -> list[Chunk]`; a plain callable is named after the attribute, takes
    its family from `f.family` (default "external"), its slice promise from `f.slices`
    (default True) and its structure promise from `f.keeps_structure` (default: whether the
    family is "structure" or "prefix"). Re-loading the same spec is harmless.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise SplitterError(f"{spec!r}: expected 'module:attribute'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise SplitterError(f"{spec!r}: cannot import {module_name!r} ({e})") from None
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise SplitterError(f"{spec!r}: {module_name!r} has no attribute {attr!r}") from None
    if isinstance(obj, Strategy):
        found = [obj]
    elif callable(obj):
        family = getattr(obj, "family", "external")
        found = [Strategy(name=getattr(obj, "strategy_name", attr.rsplit(".", 1)[-1]),
                          family=family, split=obj,
                          params=dict(getattr(obj, "params", {}) or {}),
                          slices=bool(getattr(obj, "slices", True)),
                          keeps_structure=bool(getattr(obj, "keeps_structure",
                                                       family in ("structure", "prefix"))))]
    elif isinstance(obj, Iterable) and all(isinstance(s, Strategy) for s in obj):
        found = list(obj)
    else:
        raise SplitterError(f"{spec!r}: not a Strategy, a list of them, or a callable")
    _ensure_defaults()
    for s in found:
        register(s, replace=True)
    return found
