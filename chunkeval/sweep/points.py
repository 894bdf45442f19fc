"""The sweep's grid: sizes and overlaps as given, and the configurations (Points) they make of
one strategy, each with its Strategy, made for the sweep and never registered."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import strategies
from ..errors import ConfigError
from ..strategies import params as strategy_params
from ..strategies.registry import Strategy
from ..strategies.specs import call_spec


def parse_sizes(text: str, where: str = "--size") -> list[int]:
    """"100:2000:100" (start:stop:step, stop included), "200,400,800", or both mixed."""
    sizes: list[int] = []
    for part in [p.strip() for p in str(text).split(",") if p.strip()]:
        try:
            if ":" in part:
                bits = [int(b) for b in part.split(":")]
                if len(bits) not in (2, 3):
                    raise ValueError
                start, stop, step = bits if len(bits) == 3 else (*bits, 100)
                if step < 1 or stop < start:
                    raise ValueError
                sizes += list(range(start, stop + 1, step))
            else:
                sizes.append(int(part))
        except ValueError:
            raise ConfigError(f"{where}: {part!r} is not a size, a list of sizes or "
                              "START:STOP:STEP of whole numbers") from None
    bad = [s for s in sizes if s < 1]
    if not sizes or bad:
        raise ConfigError(f"{where}: sizes must be whole numbers of at least 1, got {text!r}")
    return list(dict.fromkeys(sizes))


def parse_overlaps(text: str, where: str = "--overlap") -> list[float]:
    """"0,0.1,0.2": a value under 1 is a share of the size, 1 or more a count."""
    out: list[float] = []
    for part in [p.strip() for p in str(text).split(",") if p.strip()]:
        try:
            v = float(part)
        except ValueError:
            raise ConfigError(f"{where}: {part!r} is not a number") from None
        if v < 0 or (v >= 1 and not v.is_integer()):
            raise ConfigError(f"{where}: {part!r}: an overlap is a share from 0 to under 1, "
                              "or a whole count")
        out.append(int(v) if v >= 1 else v)
    return list(dict.fromkeys(out)) or [0]


@dataclass(frozen=True)
class Point:
    """One configuration of the grid: the spec that makes it, its strategy's name and the
    strategy (handed to the evaluation, not registered)."""

    spec: str
    name: str
    size: int
    overlap: int  # in the size's units
    share: float  # overlap / size
    strategy: Strategy | None = field(default=None, compare=False, repr=False)

    def to_json(self) -> dict:
        return {"spec": self.spec, "strategy": self.name, "size": self.size,
                "overlap": self.overlap, "share": round(self.share, 4)}


def _literal(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v) if isinstance(v, str) else f"{v:g}" if isinstance(v, float) else str(v)


def _call(head: str, kwargs: dict[str, Any]) -> str:
    return f"{head}({', '.join(f'{k}={_literal(v)}' for k, v in kwargs.items())})"


def _units(size: int, overlap: float) -> int:
    return int(round(size * overlap)) if overlap < 1 else int(overlap)


def grid(strategy: str, sizes: list[int], overlaps: list[float], root=None) -> list[Point]:
    """The configurations of `strategy` (a built-in family, `chonkie:Class` or a project's
    factory `module:attr`, each maybe with fixed parameters) at every size and overlap,
    each with its strategy made (not registered). A family without an overlap takes only
    0; an overlap of a size or more is left out of the grid (it would never advance)."""
    head, fixed_args = call_spec(strategy, "sweep strategy")
    for k in ("size", "overlap", "chunk_size", "chunk_overlap"):
        if k in fixed_args:
            raise ConfigError(f"sweep strategy {strategy!r}: parameter {k!r} is the grid's "
                              "(--size, --overlap), not the strategy's")
    if head in strategy_params.FAMILIES:
        takes = strategy_params.FAMILIES[head]
        if "size" not in takes:
            raise ConfigError(f"sweep strategy {strategy!r}: {head} has no size to sweep")
        if "overlap" not in takes and any(overlaps):
            raise ConfigError(f"sweep strategy {strategy!r}: parameter 'overlap': {head} "
                              "has none; sweep it with --overlap 0")
    elif ":" not in head:
        raise ConfigError(f"sweep strategy {strategy!r}: expected a built-in family "
                          f"({', '.join(strategy_params.FAMILIES)}), chonkie:Class or "
                          "module:factory")
    points: dict[str, Point] = {}
    for size in sizes:
        for ov in overlaps:
            units = _units(size, ov)
            if units >= size:
                continue
            if head.startswith("chonkie:"):
                args = {**fixed_args, "chunk_size": size} | (
                    {"chunk_overlap": units} if units else {})
            elif head in strategy_params.FAMILIES:
                args = {"size": size} | ({"overlap": units} if units else {}) | fixed_args
            else:
                args = {"size": size, "overlap": units, **fixed_args}
            spec = _call(head, args)
            made = strategy_of(spec, root)
            name = made.name
            if name in points and head not in strategy_params.FAMILIES \
                    and points[name].spec != spec:
                # a built-in's name is what it does (0.5 and 50 of 100 are one); another
                # splitter that names itself so would hide every configuration but one
                raise ConfigError(f"sweep strategy {strategy!r}: {points[name].spec} and "
                                  f"{spec} are both named {name!r}; a swept splitter must "
                                  "not set its own strategy_name")
            if name not in points:
                points[name] = Point(spec, name, size, units, units / size, made)
    if not points:
        raise ConfigError(f"sweep of {strategy!r}: no configuration (every overlap is as "
                          "large as its size)")
    return list(points.values())


def strategy_of(spec: str, root=None) -> Strategy:
    """The strategy of a built-in spec, a chonkie spec, a factory spec or a name, made (or
    read) for the sweep without registering it."""
    if strategy_params.is_spec(spec):
        return strategies.build(spec)
    if ":" in spec:
        found = strategies.read_splitter(spec, root)
        if len(found) != 1:
            raise ConfigError(f"splitter {spec!r}: makes {len(found)} strategies; a sweep "
                              "needs one per configuration")
        return found[0]
    return strategies.build(spec)  # a plain name: known, sized, or UnknownName
