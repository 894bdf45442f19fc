"""Strategies named with their parameters: `fixed(size=300, overlap=30)`,
`recursive(size=500, overlap=0.1)`, `structure(size=600, prefix=true)`,
`headings(level=3)`, and the token-sized forms with `tokens=true`.

A spec is read with `ast` (literal values only, `true`/`false` as TOML writes them), never
run as code. It makes the strategy of its family under the family's own name, so
`fixed(size=400, overlap=40)` *is* `fixed-400-ov40`: the names of the default matrix are the
aliases of these specs, with the same chunks, the same results and the same baseline
entries. An overlap under 1 is a share of the size (rounded to whole characters, or units).

A project's splitter factory is named the same way, `chunking:make(size=300, overlap=30)`:
`specs.call_spec` reads the arguments and `registry.load_splitter` calls the factory with them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..errors import ConfigError
from .families import spec_parameters
from .specs import call_spec

# family -> {parameter: default}; None: required (the family table's, families.py)
FAMILIES: dict[str, dict[str, Any]] = spec_parameters()
LEVELS = (2, 3)


def is_spec(text: str) -> bool:
    """True for `family(...)` of a built-in family (not a MODULE:ATTR factory)."""
    head = str(text).partition("(")[0].strip()
    return head in FAMILIES and str(text).rstrip().endswith(")")


def resolve_overlap(size: int, overlap: Any, spec: str) -> int:
    """The overlap in the size's units: a number under 1 is a share of the size."""
    if isinstance(overlap, bool) or not isinstance(overlap, (int, float)):
        raise ConfigError(f"strategy {spec!r}: parameter 'overlap' must be a number, got "
                          f"{overlap!r}")
    if overlap < 0:
        raise ConfigError(f"strategy {spec!r}: parameter 'overlap' must be >= 0, got {overlap}")
    if overlap < 1:
        return int(round(size * overlap))
    if float(overlap) != int(overlap):
        raise ConfigError(f"strategy {spec!r}: parameter 'overlap' of 1 or more is a count "
                          f"and must be whole, got {overlap}")
    if overlap >= size:
        raise ConfigError(f"strategy {spec!r}: parameter 'overlap' ({int(overlap)}) must be "
                          f"smaller than the size ({size})")
    return int(overlap)


def arguments(spec: str) -> tuple[str, dict[str, Any]]:
    """(family, its parameters with defaults filled in and the overlap in units), checked."""
    family, given = call_spec(spec)
    if family not in FAMILIES:
        raise ConfigError(f"strategy {spec!r}: no family {family!r}; known: "
                          f"{', '.join(FAMILIES)}")
    known = FAMILIES[family]
    for key in given:
        if key not in known:
            raise ConfigError(f"strategy {spec!r}: parameter {key!r} is not one of "
                              f"{family}'s ({', '.join(known)})")
    values = {k: given.get(k, d) for k, d in known.items()}
    missing = [k for k, v in values.items() if v is None]
    if missing:
        raise ConfigError(f"strategy {spec!r}: parameter {missing[0]!r} is required")
    for key in ("prefix", "tokens"):
        if key in values and not isinstance(values[key], bool):
            raise ConfigError(f"strategy {spec!r}: parameter {key!r} must be true or false, "
                              f"got {values[key]!r}")
    if "size" in values:
        size = values["size"]
        if isinstance(size, bool) or not isinstance(size, (int, float)) or size != int(size) \
                or size < 1:
            raise ConfigError(f"strategy {spec!r}: parameter 'size' must be a whole number of "
                              f"at least 1, got {size!r}")
        values["size"] = int(size)
    if "overlap" in values:
        values["overlap"] = resolve_overlap(values["size"], values["overlap"], spec)
    if family == "headings" and values["level"] not in LEVELS:
        raise ConfigError(f"strategy {spec!r}: parameter 'level' must be 2 (h2) or 3 (h2 and "
                          f"h3), got {values['level']!r}")
    return family, values


def name_of(spec: str) -> str:
    """The registered name a spec's strategy has: the matrix's own names for its members."""
    family, v = arguments(spec)
    if family == "headings":
        return {2: "heading-h2", 3: "heading-h2h3"}[v["level"]]
    t = "t" if v["tokens"] else ""
    name = f"{family}-{v['size']}{t}"
    if family == "structure":
        return name + ("+prefix" if v["prefix"] else "")
    return name + (f"-ov{v['overlap']}{t}" if v["overlap"] else "")


def make(spec: str):
    """The spec's strategy, registered under name_of(spec) (an existing one is reused: the
    named strategies are these), or None when `spec` is not a built-in family's spec."""
    from . import registry, sized

    strategy = build(spec)
    if strategy is None or strategy.name in registry.current():
        return strategy
    if arguments(spec)[1].get("tokens"):
        return sized.make(strategy.name)  # registered as the "t" names are
    # chunkeval's own code: its chunks may be cached as the matrix's are. Known by name from
    # now on, but not added to the default set that a run without names evaluates.
    return registry.register(strategy, builtin=True, opt_in=True)


# the strategies `build` made: one object per name, as an evaluation takes another object
# under a name it has evaluated for another strategy and evaluates it again
_built: dict[str, Any] = {}


def build(spec: str):
    """The spec's strategy without registering it (the registered one when its name is
    known), or None when `spec` is not a built-in family's spec."""
    from . import registry, sized
    from .fixed import fixed
    from .headings import headings
    from .recursive import recursive
    from .structure import structure

    if not is_spec(spec):
        return None
    family, v = arguments(spec)
    name = name_of(spec)
    if name in registry.current():
        return registry.get(name)
    if v.get("tokens"):
        made = sized.build(name)  # the configured length's units, as fixed-400t is made
        if made is None:
            raise ConfigError(f"strategy {spec!r}: no token-sized form of {family}")
        return made
    if name not in _built:
        if family == "fixed":
            strategy = fixed(v["size"], v["overlap"])
        elif family == "recursive":
            strategy = recursive(v["size"], v["overlap"])
        elif family == "structure":
            strategy = structure(v["size"], prefix=v["prefix"])
        else:
            strategy = headings(v["level"])
        _built[name] = dataclasses.replace(strategy, identity="chunkeval")
    return _built[name]
