"""The start and the end of a pytest session (or of one xdist worker) for chunkeval."""

from __future__ import annotations

import pytest

from ..errors import ChunkevalError
from ..registry import Components
from ..session import Session
from .options import load_config, update_mode
from .state import STATE, State
from .summary import Summary

COMPONENTS = pytest.StashKey[Components]()


def own_components(config: pytest.Config) -> None:
    """The session's own registries, current from before the project's conftest files are
    imported (one may register a splitter) until the session ends; what it registers is then
    dropped, so a later session in the same process starts from the built-ins."""
    if COMPONENTS in config.stash:
        return
    components = config.stash[COMPONENTS] = Components()
    token = components.activate()
    config.add_cleanup(lambda: Components.deactivate(token))


def start(config: pytest.Config) -> None:
    """The session's State from the settings, a base revision's run started, xdist's
    grouping and, on the controller, the Summary registered."""
    own_components(config)  # when pytest_load_initial_conftests came before the plugin
    config.addinivalue_line("markers", "corpus: needs the evaluated corpus (the default one is "
                                       "fetched on first use)")
    config.addinivalue_line("markers", "xdist_group(name): run these tests on one xdist worker")
    update_mode(config)
    if config.getoption("chunkeval_no_xdist", None) is not None:
        raise pytest.UsageError("-n runs tests on several processes with pytest-xdist, which "
                                "is not installed here: pip install pytest-xdist")
    try:
        state = State(config, Session(load_config(config)).check())
    except ChunkevalError as e:
        raise pytest.UsageError(f"chunkeval: {e}") from None
    config.stash[STATE] = state
    base = state.session.config.base
    # started now, to run beside this side's work; an xdist controller checks nothing itself
    if base and not state.update and (hasattr(config, "workerinput")
                                       or not getattr(config.option, "numprocesses", None)):
        try:
            state.start_base(base)
        except ChunkevalError as e:
            raise pytest.UsageError(f"chunkeval: {e}") from None
    if state.items and config.args_source == pytest.Config.ArgsSource.TESTPATHS:
        # testpaths name the project's test folders; the items live in pyproject.toml.
        pyproject = str(state.session.config.root / "pyproject.toml")
        if pyproject not in config.args:
            config.args.append(pyproject)
    # Under xdist, keep every test of one strategy on one worker so its chunks and indexes
    # are built once, not once per worker (pytest_xdist_make_scheduler).
    if getattr(config.option, "dist", "no") == "load":
        config.option.dist = "loadgroup"
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(Summary(config, state), "chunkeval-summary")


def stop(config: pytest.Config) -> None:
    """A base revision's run, if one was started, ended."""
    state = config.stash.get(STATE, None)
    if state is not None:
        state.close()
