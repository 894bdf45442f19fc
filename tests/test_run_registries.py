"""A run owns its registries: what a pytest session or a command registers (a team's splitter,
a strategy made from a spec) is gone when it ends, and an evaluation finds a hybrid's parts
among the retrievers it was handed."""

from __future__ import annotations

import dataclasses
import textwrap

import pytest

from chunkeval import retrieval, strategies
from chunkeval.cli import main
from chunkeval.corpus import readers
from chunkeval.evaluate import Evaluation
from chunkeval.registry import Components, Registry
from chunkeval.report import findings
from chunkeval.results import Settings
from chunkeval.retrieval import registry as retriever_registry
from chunkeval.retrieval.registry import Retriever
from chunkeval.strategies import families
from chunkeval.strategies import registry as strategy_registry
from helpers import NO_LANGSMITH, corpus_pages, project_toml, tiny_corpus

pytest_plugins = ["pytester"]

TEAM = """\
from chunkeval import Chunk


def split(doc):
    return [Chunk(doc.id, 0, len(doc.text), doc.text)] if doc.text else []


split.strategy_name = "team-split"
"""

KNOWS = """\
from chunkeval import strategies


def test_the_session_knows_its_splitter():
    assert "team-split" in strategies.names(all=True)
    assert "fixed(size=333)" not in strategies.names(all=True)
    assert strategies.canonical("fixed(size=333)") in strategies.names(all=True)
"""

KNOWS_NOT = """\
from chunkeval import strategies


def test_a_later_session_starts_from_the_built_ins():
    assert "team-split" not in strategies.names(all=True)
    assert strategies.params.name_of("fixed(size=333)") not in strategies.names(all=True)
"""

LIBRARY = [strategy_registry.STRATEGIES, retriever_registry.RETRIEVERS, findings.FINDINGS,
           readers.READERS, families.FAMILIES]


def everything(registries: list[Registry]) -> list[dict]:
    """Every name of each registry, with the object it gives and whether it is a built-in."""
    return [{n: (r.get(n), r.is_builtin(n)) for n in r.names(all=True)} for r in registries]


@pytest.fixture
def team(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path_factory):
    monkeypatch.setenv("CHUNKEVAL_CACHE", str(tmp_path_factory.mktemp("cache")))
    docs = pytester.path / "docs"
    docs.mkdir()
    for name, text in corpus_pages(3).items():
        (docs / name).write_text(text, encoding="utf-8")
    pytester.makepyfile(team=TEAM)
    return pytester


def run_session(pytester: pytest.Pytester, tests: str, passed: int = 1, **chunkeval) -> None:
    (pytester.path / "pyproject.toml").write_text(project_toml("team", **chunkeval),
                                                  encoding="utf-8")
    pytester.makepyfile(test_names=tests)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", *NO_LANGSMITH, "test_names.py")
    result.assert_outcomes(passed=passed)


def test_a_second_session_in_the_process_does_not_know_the_first_ones_splitter(team):
    library, ours = everything(LIBRARY), everything([strategy_registry.current()])
    run_session(team, KNOWS, splitters=["team:split"], strategies=["fixed(size=333)"])
    run_session(team, KNOWS_NOT)
    # what the sessions registered went with them: the library's registries hold what they
    # held before (the same objects), and so does the session these tests run in
    assert everything(LIBRARY) == library
    assert everything([strategy_registry.current()]) == ours
    assert everything(LIBRARY) == everything([r.builtins() for r in LIBRARY])
    assert "team-split" not in strategy_registry.STRATEGIES


def test_a_command_registers_nothing_that_outlives_it(team, capsys):
    library, ours = everything(LIBRARY), everything([strategy_registry.current()])
    (team.path / "pyproject.toml").write_text(project_toml("team"), encoding="utf-8")
    assert main(["strategies", "--splitter", "team:split"]) == 0
    assert "team-split" in capsys.readouterr().out
    assert everything(LIBRARY) == library
    assert everything([strategy_registry.current()]) == ours


def test_a_run_starts_from_a_copy_of_the_built_ins():
    run = Components()
    with run.used():
        copy = strategy_registry.current()
        assert copy is not strategy_registry.STRATEGIES
        assert everything([copy]) == everything([strategy_registry.STRATEGIES])
        strategies.register(strategies.Strategy("mine", "external", split=lambda doc: []))
        assert "mine" in strategies.names(all=True)
        assert family_weight_of_a_new_family(run) == 3.0
    assert "mine" not in strategies.names(all=True)
    assert "mine" not in strategy_registry.STRATEGIES
    assert families.weight("tables") == families.DEFAULT_WEIGHT


def family_weight_of_a_new_family(run: Components) -> float:
    run.of(families.FAMILIES).register(families.Family("tables", ("ordered",), 3.0))
    return families.weight("tables")


def test_a_hybrid_finds_its_parts_among_the_retrievers_handed_in():
    words = dataclasses.replace(retrieval.get("bm25"), name="words", version="w1")
    topics = dataclasses.replace(retrieval.get("lsa"), name="topics", version="t1")
    mix = Retriever("mix", "1", fuses=("words", "topics"))
    assert not {"words", "topics", "mix"} & set(retrieval.names(all=True))
    evaluation = Evaluation(tiny_corpus(), Settings(), ["section-titles"],
                            retrievers=[words, topics, mix], result_cache=False)
    results = evaluation.run(["fixed-200"], ["mix", "hybrid"])
    mixed, built_in = (next(r for r in results.results if r.retriever == name)
                       for name in ("mix", "hybrid"))
    assert mixed.retriever_version == "1(w1+t1)"
    # the same parts under other names rank the same
    assert mixed.metrics == built_in.metrics
    assert results.retrievers["mix"]["version"] == "1(w1+t1)"


def test_the_plugin_keeps_its_registries_from_before_the_conftest_files(team):
    # a conftest imported before the session starts may register a splitter of its own
    team.makeconftest(textwrap.dedent("""\
        from chunkeval import strategies
        from team import split

        strategies.register(strategies.Strategy("conftest-split", "external", split=split))
    """))
    run_session(team, KNOWS_NOT + textwrap.dedent("""\


        def test_the_conftest_registered_into_the_session():
            assert "conftest-split" in strategies.names(all=True)
    """), passed=2)
    assert "conftest-split" not in strategy_registry.STRATEGIES
    assert "conftest-split" not in strategy_registry.current()
