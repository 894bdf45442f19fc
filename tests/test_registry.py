"""The one registry every kind of named component lives in."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from chunkeval.errors import ConfigError, UnknownName
from chunkeval.registry import Registry
from chunkeval.report import findings
from chunkeval.retrieval import registry as retrievers
from chunkeval.strategies import registry as strategies


@dataclass(frozen=True)
class Part:
    name: str
    works: bool = True


def test_a_taken_name_is_refused_unless_replaced():
    parts: Registry[Part] = Registry("part")
    first = parts.register(Part("a"))
    assert parts.register(first) is first  # the same one again is harmless
    with pytest.raises(ConfigError, match="a part named 'a' is already registered"):
        parts.register(Part("a", works=False))
    parts.register(Part("a", works=False), replace=True)
    assert parts.get("a").works is False


def test_a_built_in_name_is_never_taken_over_from_outside():
    parts: Registry[Part] = Registry("part", rename="a `part_name` attribute")
    parts.register(Part("a"), builtin=True)
    with pytest.raises(ConfigError, match=r"built-in part; give yours another \(a `part_name`"):
        parts.register(Part("a", works=False), replace=True)
    assert parts.is_builtin("a") and parts.get("a").works


def test_what_a_user_loaded_replaces_an_earlier_load_and_a_refusal_names_what_they_named():
    parts: Registry[Part] = Registry("part")
    parts.register(Part("a"), builtin=True)
    parts.register(Part("b"))
    loaded = [Part("b", works=False), Part("c")]
    assert parts.register_loaded(loaded, "part 'mine:parts'") == loaded
    assert parts.get("b").works is False and "c" in parts
    with pytest.raises(ConfigError, match=r"^part 'mine:a': 'a' is the name of a built-in"):
        parts.register_loaded([Part("a", works=False)], "part 'mine:a'")


def test_the_default_set_leaves_out_what_runs_only_when_named():
    parts: Registry[Part] = Registry("part", usable=lambda p: p.works)
    parts.register(Part("b"))
    parts.register(Part("a"), opt_in=True)
    parts.register(Part("c", works=False))
    parts.register(Part("d"), missing="pip install d")
    assert parts.names() == ["b"]
    assert parts.names(all=True) == ["b", "a", "c", "d"]
    assert parts.missing("d") == "pip install d" and parts.missing("b") is None
    with pytest.raises(ConfigError, match="part 'd' needs an optional package: pip install d"):
        parts.require("d")
    parts.require("b")


def test_an_unknown_name_lists_the_known_ones():
    parts: Registry[Part] = Registry("part", sort_known=True)
    parts.register(Part("b"))
    parts.register(Part("a"))
    with pytest.raises(UnknownName, match="unknown part 'x'; known: a, b"):
        parts.get("x")


def test_a_snapshot_puts_back_what_was_registered_since():
    parts: Registry[Part] = Registry("part")
    parts.register(Part("a"), builtin=True)
    kept = parts.snapshot()
    parts.register(Part("b"), opt_in=True)
    parts.unregister("a")
    parts.restore(kept)
    assert parts.names(all=True) == ["a"] and parts.is_builtin("a")


def test_every_kind_is_one_registry():
    assert all(isinstance(r, Registry) for r in (strategies.STRATEGIES, retrievers.RETRIEVERS,
                                                  findings.FINDINGS))
    assert strategies.get("fixed-400") is strategies.STRATEGIES.get("fixed-400")
    assert retrievers.names()[:2] == ["bm25", "lsa"]


def test_one_family_table_gives_parameters_invariants_weights_and_structure():
    from chunkeval import invariants, shard
    from chunkeval.strategies import families, params
    from chunkeval.strategies.registry import Strategy

    assert list(params.FAMILIES) == ["fixed", "recursive", "structure", "headings"]
    kept = families.current().snapshot()
    try:
        families.current().register(families.Family("tables", ("ordered", "table_rows"), 3.0,
                                                   keeps_structure=True))
        strategy = Strategy("t", "tables", split=lambda doc: [], slices=False)
        assert invariants.properties(strategy) == ("ordered", "table_rows")
        assert shard.weight("tables") == 3.0 and shard.weight("unknown") == 1.5
        assert families.keeps_structure("tables") and not families.keeps_structure("fixed")
    finally:
        families.current().restore(kept)
    assert "tables" not in families.current()
