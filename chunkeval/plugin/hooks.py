"""The hooks and fixtures pytest sees (through `chunkeval.plugin`), each a short call into the
session's State or the modules beside this one."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import collection, options, start
from .checker import Checker
from .state import State, or_fail, state_of


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    start.own_components(early_config)


def pytest_configure(config: pytest.Config) -> None:
    start.start(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    start.stop(config)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    collection.parametrize(metafunc)


@pytest.hookimpl(optionalhook=True, tryfirst=True)  # an xdist hook: absent without it
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    return collection.strategy_scheduler(config, log)


def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    return collection.collect_file(file_path, parent)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    collection.mark_items(config, items)


def pytest_collection_finish(session: pytest.Session) -> None:
    collection.collected(session)


def pytest_runtest_teardown(item: pytest.Item) -> None:
    collection.release_after(item)


@pytest.fixture(scope="session")
def chunkeval_state(request: pytest.FixtureRequest) -> State:
    return state_of(request.config)


@pytest.fixture(scope="session")
def corpus(chunkeval_state: State):
    return or_fail(lambda: chunkeval_state.session.corpus)


@pytest.fixture(scope="session")
def evaluation(chunkeval_state: State):
    return or_fail(lambda: chunkeval_state.session.evaluation)


@pytest.fixture
def chunkeval(chunkeval_state: State, request: pytest.FixtureRequest) -> Checker:
    return Checker(chunkeval_state, request.node)
