"""The Strategy type (the splitter contract) and the registry that maps stable names to it.

Names are what tests, baselines and reports use, so a name never changes meaning. The
package registers the built-in matrix (defaults.py) first; outside splitters come in as
"module:attribute" (`load_splitter`). A built-in may be registered to run only when named
(`opt_in`): it is known by name but is not part of the default set (`names()`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, NamedTuple

from .. import outside
from ..errors import ConfigError
from ..model import Chunk, Document
from ..registry import InUse, Registry
from .chonkie_specs import chonkie_splitter, is_spec
from .families import keeps_structure
from .specs import call_spec, factory_name


@dataclass(frozen=True)
class Strategy:
    """A named splitter: `split(doc)` returns the document's chunks in order.

    The contract a splitter keeps (chunkeval.invariants.contract, on every document of every
    run): every chunk belongs to `doc`, 0 <= start <= end <= len(doc.text), chunks come in
    order of their offsets, each chunk's text is doc.text[start:end] unless `slices` is
    False (rewritten text: a repeated table header, a converter's output), and a document
    with text gets a chunk. `params` declares the size and overlap it promises.
    """

    name: str
    family: str
    split: Callable[[Document], list[Chunk]] = field(repr=False, compare=False)
    params: dict[str, Any] = field(default_factory=dict)
    # True when every chunk is a slice of the source: doc.text[start:end] == chunk.text.
    slices: bool = True
    # True when the strategy promises to keep tables and code blocks whole: it then gets a
    # cut-rate test and the table-row invariant.
    keeps_structure: bool = False
    # False only for chunkeval's own perturbations of a strategy that keeps the contract
    # (calibration's variants move boundaries across rewritten chunks on purpose).
    checked: bool = field(default=True, compare=False, repr=False)
    # Whose code the chunks come from, when chunkeval knows it whole: "chunkeval" (its own;
    # the chunk cache adds its source digest and library versions) or "chonkie" (a chonkie
    # spec: its version is in `params`). None for a team's splitter or a function registered
    # in code: it may read files, the environment or modules no key can see, so it is run
    # every time and its chunks compared by content (store/keys.py).
    identity: str | None = field(default=None, compare=False, repr=False)
    # A splitter that cuts by the vectors of the model params["model"] names (the semantic
    # ones): given the function an evaluation embeds with, the split that uses it, so that
    # the evaluation's cache settings keep its vectors (strategies/semantic.py).
    embedded: Callable[[Callable], Callable[[Document], list[Chunk]]] | None = field(
        default=None, compare=False, repr=False)

    def __call__(self, doc: Document) -> list[Chunk]:
        return self.split(doc)

    def describe(self) -> dict:
        return {"name": self.name, "family": self.family, "params": dict(self.params),
                "slices": self.slices, "keeps_structure": self.keeps_structure}


class Unit(NamedTuple):
    """What a size counts when it is not characters: the configured `length` (its spec, as
    params["unit"] records it, and the function)."""

    spec: str
    count: Callable[[str], int]


# Every strategy known by name outside any run: the default matrix, those run only when named
# (and the built-ins whose library is not installed here: they then say what is missing
# before any work), and those plain library code registers. A run works on its own copy of
# the built-ins (`current()`, registry.Components).
STRATEGIES: Registry[Strategy] = Registry(
    "strategy", rename="a `strategy_name` attribute on the function", sort_known=True)

# the module's functions, as projects and the package call them: on the run's registry
_in_use = InUse(STRATEGIES)
current, register, unregister, get, names = (_in_use.current, _in_use.register,
                                             _in_use.unregister, _in_use.get, _in_use.names)
missing, require, is_builtin = _in_use.missing, _in_use.require, _in_use.is_builtin
all_strategies = _in_use.items


def load_splitter(spec: str, root=None) -> list[Strategy]:
    """Import "module:attribute" (with `root` first on the path) and register what it names
    (`read_splitter`): a project's splitters are known by name from then on, in this run."""
    return current().register_loaded(read_splitter(spec, root), f"splitter {spec!r}")


def read_splitter(spec: str, root=None) -> list[Strategy]:
    """The Strategies "module:attribute" names (imported with `root` first on the path),
    checked as `load_splitter` registers them but not registered: to evaluate and drop.

    The attribute may be a Strategy, an iterable of Strategies, or a plain callable
    `f(Document) -> list[Chunk]`; a plain callable is named after the attribute, takes
    its family from `f.family` (default "external"), its slice promise from `f.slices`
    (default True) and its structure promise from `f.keeps_structure` (default: whether the
    family is "structure" or "prefix"). Re-loading the same spec is harmless.

    "chonkie:Class(key=value, ...)" names one of chonkie's chunkers instead (chonkie_specs).
    "module:factory(key=value, ...)" names a factory: it is called with those arguments
    (literals, params.call_spec) and what it returns is the splitter, named after the factory
    and its arguments unless it names itself, with the arguments among its params.
    """
    made_with: dict[str, Any] | None = None
    if is_spec(spec):
        obj: Any = chonkie_splitter(spec)
    else:
        target, made_with = call_spec(spec, "splitter")
        obj = outside.load(target, "splitter", root)
        if "(" in spec:
            obj = _made(spec, obj, made_with)
        else:
            made_with = None
    attr = spec.partition(":")[2].partition("(")[0].strip()
    if isinstance(obj, Strategy):
        found = [obj]
    elif callable(obj):
        family = getattr(obj, "family", "external")
        params = getattr(obj, "params", {}) or {}
        if not isinstance(params, dict):
            raise ConfigError(f"splitter {spec!r}: params {params!r} is not a dict")
        default_name = attr.rsplit(".", 1)[-1]
        if made_with is not None:
            params = {**made_with, **params}
            default_name = factory_name(attr, made_with)
        found = [Strategy(name=getattr(obj, "strategy_name", default_name),
                          family=family, split=obj, params=dict(params),
                          slices=bool(getattr(obj, "slices", True)),
                          keeps_structure=bool(getattr(obj, "keeps_structure",
                                                       keeps_structure(family))))]
    elif isinstance(obj, Iterable) and all(isinstance(s, Strategy) for s in obj):
        found = list(obj)
    else:
        raise ConfigError(f"splitter {spec!r}: not a Strategy, a list of them, or a callable")
    # Only chunkeval's own objects keep their identity: a project's Strategy made with
    # dataclasses.replace(built-in, split=...) is the project's code.
    known = current()
    found = [s if s.identity == (own := "chonkie" if is_spec(spec) else
                                 s.identity if s.name in known
                                 and known.get(s.name) is s else None)
             else dataclasses.replace(s, identity=own) for s in found]
    return known.check_loaded(found, f"splitter {spec!r}")


def _made(spec: str, factory: Any, kwargs: dict[str, Any]) -> Any:
    """What a splitter factory returns for `kwargs`; ConfigError naming the spec when it is
    not callable or refuses them (a bad parameter is the factory's to name)."""
    if not callable(factory):
        raise ConfigError(f"splitter {spec!r}: {spec.partition('(')[0]!r} is not callable, so "
                          "it cannot be given parameters")
    try:
        return factory(**kwargs)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"splitter {spec!r}: the factory refused its parameters: "
                          f"{type(e).__name__}: {e}") from None
