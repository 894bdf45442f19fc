"""The pytest plugin: options, session fixtures, parametrisation, the summary table."""

from __future__ import annotations

import pytest

from . import strategies
from .config import configured_splitters


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("chunkeval", "chunking evaluation")
    group.addoption("--splitter", action="append", default=[], metavar="MODULE:ATTR",
                    help="register an outside splitter (repeatable); it joins every "
                         "metric and invariant test")
    parser.addini("chunkeval_splitters", type="linelist", default=[],
                  help="splitters to register, one MODULE:ATTR a line")


def pytest_configure(config: pytest.Config) -> None:
    specs = [*configured_splitters(config.rootpath), *config.getini("chunkeval_splitters"),
             *config.getoption("splitter")]
    loaded = []
    for spec in dict.fromkeys(specs):
        try:
            loaded += strategies.load_splitter(spec)
        except strategies.SplitterError as e:
            raise pytest.UsageError(str(e)) from None
    config._chunkeval_external = [s.name for s in loaded]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "strategy_name" in metafunc.fixturenames:
        metafunc.parametrize("strategy_name", strategies.names())
