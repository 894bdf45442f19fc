"""The size-based families sized in the unit of the configured `length` (a tokenizer's count):
fixed-400t, fixed-400t-ov40t, recursive-400t, recursive-400t-ov40t, structure-400t and
structure-400t+prefix.

A "t" after a number says it counts units of `length`, not characters; the names without it
keep their meaning, so baselines recorded in characters stay valid. These strategies are
made when first named (any size) with the length the session was configured with
(`size_by`), because the unit is a setting of the run and not of the name: a baseline
records the `length` it was measured with and is compared only under the same one.
"""

from __future__ import annotations

import dataclasses

import re
from typing import Callable

from ..errors import ConfigError
from ..registry import memory
from .fixed import fixed
from .recursive import recursive
from .registry import Strategy, Unit, get, register, unregister
from .structure import structure

PATTERN = re.compile(r"(fixed|recursive|structure)-([1-9][0-9]*)t"
                     r"(?:-ov([1-9][0-9]*)t)?(\+prefix)?")

Load = Callable[[], Callable[[str], int]]


def _state() -> dict:
    """The run's configured length, its spec and what imports its function (imported on the
    first "t" name only: a bad spec is the session's to report, where it checks its settings),
    and the strategies made with it; kept by the run, so the next run starts in characters."""
    state = memory(__name__)
    if not state:
        state.update(length=("chars", None), made={})
    return state


def size_by(spec: str, load: Load | None = None) -> None:
    """Make the "t" strategies with this length (`load()` gives its function) from now on;
    those made with another are dropped from the registry."""
    if spec != "chars" and load is None:
        raise ValueError(f"size_by({spec!r}) needs the function that loads it")
    state = _state()
    if (spec, load) == state["length"]:
        return
    for name, strategy in state["made"].items():
        try:
            if get(name) is strategy:
                unregister(name)
        except LookupError:
            pass
    state["made"] = {}
    state["length"] = (spec, load)


def make(name: str) -> Strategy | None:
    """The strategy `name` means when it is one of the "t" names, registered; else None."""
    strategy = build(name)
    return None if strategy is None else register(strategy, replace=True)


def build(name: str) -> Strategy | None:
    """The strategy `name` means when it is one of the "t" names, not registered (the same
    object each time under one length); else None. ConfigError when the length is
    characters: such a name would mean its "t"-less twin."""
    made = _state()["made"]
    if name in made:
        return made[name]
    m = PATTERN.fullmatch(name)
    if m is None:
        return None
    family, size, overlap, prefix = m.group(1), int(m.group(2)), int(m.group(3) or 0), m.group(4)
    spec, load = _state()["length"]
    if spec == "chars" or load is None:
        twin = re.sub(r"([0-9])t", r"\1", name)
        raise ConfigError(f"strategy {name!r} is sized in units of the `length` setting, which "
                          f"is chars: set length (--length MODULE:ATTR), or name {twin!r}")
    unit = Unit(spec, load())
    if family == "fixed" and not prefix:
        strategy = fixed(size, overlap, unit)
    elif family == "recursive" and not prefix:
        strategy = recursive(size, overlap, unit)
    elif family == "structure" and not overlap:
        strategy = structure(size, prefix=bool(prefix), unit=unit)
    else:
        return None
    # its chunks depend on the length measure too, whose spec the params record and
    # whose module the chunk cache digests
    made[name] = dataclasses.replace(strategy, identity="chunkeval")
    return made[name]
