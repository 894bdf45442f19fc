"""The strategy families chunkeval knows, each once: the parameters its spec takes, the
invariants its chunks keep, what a shard plan estimates it costs, and whether it keeps tables
and code blocks whole. A family not here (a team's splitter, chonkie's, the semantic ones)
gets the base invariants and the default weight."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..registry import InUse, Registry

# The invariants (invariants.py) every family keeps.
BASE = ("slice", "ordered", "coverage", "deterministic")
# A shard plan's weight of a family not in the table: an outside splitter is assumed a little
# slower than plain windows.
DEFAULT_WEIGHT = 1.5


@dataclass(frozen=True)
class Family:
    name: str
    properties: tuple[str, ...]  # the invariants its chunks keep
    # Relative seconds per character (split + index + search), rough estimates from the seed's
    # timings, for shard plans without measured ones: LangChain's HTML splitters re-parse the
    # HTML; parent-child indexes small children and searches them deeper.
    weight: float
    # Its chunks keep tables and code blocks whole; a piece of a split table repeats the
    # header, so its chunks are slices but for that header.
    keeps_structure: bool = False
    # The parameters of its spec, `fixed(size=300, overlap=30)`: name -> default (None:
    # required); None when the family has no spec.
    params: dict[str, Any] | None = field(default=None, compare=False)


FAMILIES: Registry[Family] = Registry("family")
for _family in (
    Family("fixed", BASE + ("size", "overlap"), 1.0,
           params={"size": None, "overlap": 0, "tokens": False}),
    Family("recursive", BASE + ("size", "overlap"), 1.5,
           params={"size": None, "overlap": 0, "tokens": False}),
    Family("structure", BASE + ("size", "table_rows", "headings", "header_repeated"), 1.2,
           keeps_structure=True, params={"size": None, "prefix": False, "tokens": False}),
    Family("headings", BASE + ("table_rows", "headings"), 0.8, params={"level": 2}),
    Family("prefix", BASE + ("size", "table_rows", "headings", "header_repeated", "prefix"),
           1.3, keeps_structure=True),
    Family("langchain-html", ("ordered", "coverage", "deterministic"), 4.0),
    Family("parent-child", BASE + ("size", "overlap", "parent"), 2.5),
):
    FAMILIES.register(_family, builtin=True)


current = InUse(FAMILIES).current  # the families of the run under way, else FAMILIES


def family(name: str) -> Family | None:
    """The family `name`, None for one not in the table."""
    known = current()
    return known.get(name) if name in known else None


def keeps_structure(name: str) -> bool:
    found = family(name)
    return found is not None and found.keeps_structure


def weight(name: str) -> float:
    found = family(name)
    return DEFAULT_WEIGHT if found is None else found.weight


def spec_parameters() -> dict[str, dict[str, Any]]:
    """family -> {parameter: default} of the families with a spec, in the table's order."""
    return {f.name: dict(f.params) for f in current().items() if f.params is not None}
