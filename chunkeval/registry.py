"""One registry for every kind of named component: strategies, retrievers, the seed's findings,
the corpus readers.

A name is what tests, baselines and reports use, so a name never changes meaning: a second
component under a taken name is refused unless it is asked to replace the first, and a built-in's
name is never taken over from outside. A built-in may be known by name but left out of the
default set (`opt_in`: too costly for every run), or known but not runnable here (`missing`:
its optional library is not installed; the text says how to install it).

Each kind's module keeps one registry of it for plain library use: its built-ins and what code
outside any run registers. A run (a pytest session, a command) owns its `Components`: while
it is in use, every kind's `current()` registry is the run's own copy of the built-ins, and
what the run loads (a project's splitters and retrievers, a spec made on the way) goes there
and is dropped with it.
"""

from __future__ import annotations

import copy
from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import Callable, Generic, Iterator, TypeVar

from .errors import ConfigError, UnknownName

T = TypeVar("T")


class Registry(Generic[T]):
    """Names -> components of one kind (`kind` is what messages call one: "strategy")."""

    def __init__(self, kind: str, *, rename: str = "", sort_known: bool = False,
                 usable: Callable[[T], bool] | None = None):
        """`rename`: how a user names their component otherwise, said when its name is a
        built-in's; `sort_known`: an unknown name lists the known ones sorted, not in the
        order they were registered; `usable(item)`: False leaves it out of `names()`."""
        self.kind = kind
        self._rename = f" ({rename})" if rename else ""
        self._sort_known = sort_known
        self._usable = usable
        self._items: dict[str, T] = {}
        self._builtin: set[str] = set()  # never taken over from outside
        self._opt_in: set[str] = set()  # run only when named
        self._missing: dict[str, str] = {}  # name -> how to install what it needs

    def register(self, item: T, *, name: str | None = None, replace: bool = False,
                 builtin: bool = False, opt_in: bool = False, missing: str | None = None) -> T:
        """Add `item` under `name` (default: its `name` attribute) and return it."""
        name = item.name if name is None else name  # type: ignore[attr-defined]
        self._admit(item, name, replace, builtin)
        self._items[name] = item
        if builtin:
            self._builtin.add(name)
        if opt_in or missing:
            self._opt_in.add(name)
        if missing:
            self._missing[name] = missing
        return item

    def register_loaded(self, items: list[T], named: str) -> list[T]:
        """Register every component loaded from what the user named (`named`, as messages
        say it: "splitter 'pkg.mod:split'"), each replacing an earlier load of its name; a
        refusal is a ConfigError that says `named` first."""
        for item in self.check_loaded(items, named):
            self.register(item, replace=True)
        return items

    def check_loaded(self, items: list[T], named: str) -> list[T]:
        """`items` when register_loaded would take them, without registering them: for
        components used once and dropped (a sweep's configurations), which must not pass
        for a built-in all the same."""
        for item in items:
            try:
                self._admit(item, item.name, True, False)  # type: ignore[attr-defined]
            except ConfigError as e:
                raise ConfigError(f"{named}: {e}") from None
        return items

    def _admit(self, item: T, name: str, replace: bool, builtin: bool) -> None:
        """ConfigError when `item` may not take `name`."""
        old = self._items.get(name)
        if old is not None and not replace and old is not item:
            raise ConfigError(f"a {self.kind} named {name!r} is already registered")
        if name in self._builtin and not builtin and old is not item:
            raise ConfigError(f"{name!r} is the name of a built-in {self.kind}; give yours "
                              f"another{self._rename}")

    def snapshot(self) -> tuple:
        """What `restore` puts back: every name and what is known of it."""
        return dict(self._items), set(self._builtin), set(self._opt_in), dict(self._missing)

    def restore(self, snapshot: tuple) -> None:
        items, builtin, opt_in, missing = snapshot
        self._items, self._builtin = dict(items), set(builtin)
        self._opt_in, self._missing = set(opt_in), dict(missing)

    def builtins(self) -> "Registry[T]":
        """A new registry of this kind holding only the built-ins (the same objects)."""
        fresh = copy.copy(self)  # the kind's settings; restore gives it containers of its own
        fresh.restore(({n: item for n, item in self._items.items() if n in self._builtin},
                       self._builtin, self._opt_in & self._builtin,
                       {n: how for n, how in self._missing.items() if n in self._builtin}))
        return fresh

    def unregister(self, name: str) -> None:
        self._items.pop(name, None)

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            known = sorted(self._items) if self._sort_known else list(self._items)
            raise UnknownName(self.kind, name, known) from None

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names(all=True))

    def names(self, *, all: bool = False) -> list[str]:
        """The default set, in the order registered: every name but those run only when named
        and those `usable` refuses; with all=True, every name `get` knows."""
        return [n for n, item in self._items.items()
                if all or (n not in self._opt_in
                           and (self._usable is None or self._usable(item)))]

    def items(self, *, all: bool = False) -> list[T]:
        return [self._items[n] for n in self.names(all=all)]

    def is_builtin(self, name: str) -> bool:
        """True for a component chunkeval ships; UnknownName for a name it does not know."""
        self.get(name)
        return name in self._builtin

    def missing(self, name: str) -> str | None:
        """How to install what the built-in `name` needs, when that is not installed here."""
        return self._missing.get(name)

    def require(self, name: str) -> None:
        """ConfigError saying what to install, for a built-in whose library is missing."""
        if name in self._missing:
            raise ConfigError(f"{self.kind} {name!r} needs an optional package: "
                              f"{self._missing[name]}")


class Components:
    """One run's registries, one of each kind: a kind's is made on first use as a copy of its
    built-ins, so that a run registers nothing any other run or plain library use sees.

    Kept by kind rather than as attributes: the kinds live in rooms above this one (the
    findings in report/), which a run that never renders a report does not import."""

    def __init__(self) -> None:
        self._registries: dict[str, Registry] = {}
        self._memory: dict[str, dict] = {}  # see memory()

    def of(self, default: Registry[T]) -> Registry[T]:
        """This run's registry of `default`'s kind (`default`: the kind's library registry)."""
        if default.kind not in self._registries:
            self._registries[default.kind] = default.builtins()
        return self._registries[default.kind]

    @staticmethod
    def in_use() -> "Components | None":
        """The run's components in use here; None outside any run."""
        return _CURRENT.get()

    def activate(self) -> Token:
        """Make these the current registries; `deactivate(token)` puts back the ones before."""
        return _CURRENT.set(self)

    @staticmethod
    def deactivate(token: Token) -> None:
        _CURRENT.reset(token)

    @contextmanager
    def used(self) -> Iterator["Components"]:
        """These registries current within the block."""
        token = self.activate()
        try:
            yield self
        finally:
            self.deactivate(token)


# The run's components in use; None outside any run, where the kinds' library registries are.
_CURRENT: ContextVar[Components | None] = ContextVar("chunkeval_components", default=None)


# memory() outside any run
_LIBRARY_MEMORY: dict[str, dict] = {}


def memory(name: str) -> dict:
    """What the run under way keeps in memory under `name` (a module's name), dropped with the
    run; outside any run, what plain library use keeps for the process."""
    run = _CURRENT.get()
    return (_LIBRARY_MEMORY if run is None else run._memory).setdefault(name, {})


def current(default: Registry[T]) -> Registry[T]:
    """The registry of `default`'s kind in use: the current run's, else `default` itself."""
    run = _CURRENT.get()
    return default if run is None else run.of(default)


class InUse(Generic[T]):
    """A kind's module functions, as projects and the package call them
    (`strategies.register/get/names`): each a method of the registry in use (`current`)."""

    def __init__(self, default: Registry[T]):
        self.default = default

    def current(self) -> Registry[T]:
        return current(self.default)

    def register(self, item: T, **how) -> T:
        return self.current().register(item, **how)

    def unregister(self, name: str) -> None:
        self.current().unregister(name)

    def get(self, name: str) -> T:
        return self.current().get(name)

    def names(self, *, all: bool = False) -> list[str]:
        return self.current().names(all=all)

    def items(self, *, all: bool = False) -> list[T]:
        return self.current().items(all=all)

    def is_builtin(self, name: str) -> bool:
        return self.current().is_builtin(name)

    def missing(self, name: str) -> str | None:
        return self.current().missing(name)

    def require(self, name: str) -> None:
        self.current().require(name)
