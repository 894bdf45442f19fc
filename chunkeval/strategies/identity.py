"""What a strategy's chunks are kept under: whether they are a function of code chunkeval
knows, and the digest of that code. The chunk cache's key itself is store/keys.py's."""

from __future__ import annotations

import functools

from ..model import digest
from ..store import keys
from ..store.keys import file_digest, imported_files
from .registry import Strategy

# The package whose modules a strategy's code is read from (the strategies' own is below it).
PACKAGE = __package__.rpartition(".")[0]


def is_own_strategy(strategy: Strategy) -> bool:
    """True for chunkeval's built-in strategies and chonkie specs: their chunks are a function
    of code chunkeval knows (its own, and library versions). A team's splitter, a strategy
    registered in code and a calibration variant are not."""
    return bool(strategy.checked and strategy.identity
                and strategy.identity.partition("+")[0] in ("chunkeval", "chonkie"))


def strategy_code(strategy: Strategy) -> str:
    """sha256 of the source of chunkeval's modules a strategy's chunks come from: those of
    the functions its split reaches through closures (a parent-child strategy holds two
    others), with the package modules each imports. Editing one built-in strategy then
    re-chunks the strategies that use its code, not all."""
    package = PACKAGE
    modules: set[str] = set()
    seen: set[int] = set()

    def reach(obj) -> None:
        if id(obj) in seen or obj is None:
            return
        seen.add(id(obj))
        if isinstance(obj, Strategy):
            reach(obj.split)
        elif isinstance(obj, functools.partial):
            reach(obj.func)
            for value in (*obj.args, *obj.keywords.values()):
                reach(value)
        elif isinstance(obj, (list, tuple)):
            for value in obj:
                reach(value)
        elif hasattr(obj, "__code__"):
            modules.add(getattr(obj, "__module__", "") or "")
            for cell in obj.__closure__ or ():
                try:
                    reach(cell.cell_contents)
                except ValueError:  # an empty cell
                    pass
            for value in obj.__defaults__ or ():
                reach(value)
        elif hasattr(obj, "__func__"):  # a bound method
            reach(obj.__func__)
            reach(obj.__self__)
        elif type(obj).__module__.startswith(package + "."):
            modules.add(type(obj).__module__)

    reach(strategy)
    files = set()
    for name in modules:
        if name == package or name.startswith(package + "."):
            files |= imported_files(name)
    return digest(sorted((f, file_digest(f)) for f in files))


def chunk_key(strategy: Strategy, view_fingerprint: str, length: str,
              model: dict | None) -> str | None:
    """The chunk cache's key for a strategy's chunks of a corpus view; None when they cannot
    be kept: a strategy that is not chunkeval's own, an outside length measure (a team's
    tokenizer may size the chunks), or a semantic chunker on an outside model."""
    if not is_own_strategy(strategy) or length != "chars":
        return None
    if strategy.params.get("model") is not None and model is None:
        return None
    return keys.chunk_key(code=strategy_code(strategy), identity=strategy.identity,
                          strategy=strategy.describe(), model=model, view=view_fingerprint)
