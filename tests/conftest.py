"""What every test module may ask for: a hypothesis profile, a cache of the test's own, the
throwaway corpora of helpers.py written into a temporary folder, and a folder every xdist
worker of the run shares. Every test leaves the strategy and retriever registries as it
found them."""

import os

import pytest
from hypothesis import settings

from chunkeval.retrieval import registry as retriever_registry
from chunkeval.strategies import registry as strategy_registry
from helpers import corpus_pages, write_manuals

# "dev" keeps local runs quick; CI sets $CI and gets the thorough profile.
settings.register_profile("dev", max_examples=25, deadline=None)
settings.register_profile("ci", max_examples=150, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


# The registries are this pytest session's: what one test registers (a project's splitter or
# retriever) would change what the next one in the same worker lists and runs.
def _as_found():
    """Put back the registries as they were before."""
    registries = [strategy_registry.current(), retriever_registry.current()]
    kept = [r.snapshot() for r in registries]
    yield
    for registry, before in zip(registries, kept):
        registry.restore(before)


# around every test, and around every module: a module's fixture may register too
registries_as_found = pytest.fixture(autouse=True)(_as_found)
registries_as_found_by_module = pytest.fixture(autouse=True, scope="module")(_as_found)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A chunkeval cache of this test's own: nothing read from, or left to, another test."""
    monkeypatch.setenv("CHUNKEVAL_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def docs(tmp_path, cache_dir):
    """A folder of 24 generated HTML pages (helpers.corpus_pages), 72 section titles."""
    root = tmp_path / "docs"
    root.mkdir()
    for name, text in corpus_pages(24).items():
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def manuals(tmp_path, cache_dir):
    """helpers.write_manuals into tmp_path/docs: call it with the shape the test needs."""
    def write(**shape):
        return write_manuals(tmp_path / "docs", **shape)
    return write


@pytest.fixture(scope="session")
def run_dir(request, tmp_path_factory):
    """A folder of this test run that all its xdist workers see (each worker's tmp_path is
    its own): what helpers.once_per_run makes goes here."""
    base = tmp_path_factory.getbasetemp()
    # a worker's base is <the run's>/popen-gwN
    return (base.parent if hasattr(request.config, "workerinput") else base) / "shared"
