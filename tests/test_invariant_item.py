"""The invariant item a project gets for its own splitter: the corpus's documents first, then
a budget of generated ones (`invariant_examples`). Each run is a fresh pytest process in a
team's folder, as in test_journey.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_journey import PYPROJECT, pytest_in, team, write_parapack  # noqa: F401

# A splitter that loses the first chunk of some documents, and writes down every generated
# document it is given (one line each), so that the budget can be counted.
LEAKY = '''\
from pathlib import Path

from parapack import parapack

LOSES = {loses!r}  # "corpus": the team's own documents; "generated": hypothesis's


def leaky(doc):
    chunks = parapack(doc)
    generated = doc.id == "generated.html"
    if generated:
        with open(Path(__file__).parent / "generated.log", "a") as f:
            f.write(str(len(doc.text)) + "\\n")
    if LOSES == ("generated" if generated else "corpus"):
        return chunks[1:]  # the first chunk's text is in none
    return chunks
'''


def configure(root: Path, loses: str, examples: int | None) -> None:
    (root / "leaky.py").write_text(LEAKY.format(loses=loses), encoding="utf-8")
    text = PYPROJECT.replace('splitters = ["parapack:parapack"]', 'splitters = ["leaky:leaky"]')
    text += 'reference = []\n'
    if examples is not None:
        text += f"invariant_examples = {examples}\n"
    (root / "pyproject.toml").write_text(text, encoding="utf-8")


def generated(root: Path) -> int:
    log = root / "generated.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_a_splitter_that_loses_text_of_the_corpus_fails_on_the_corpus_alone(team: Path):
    write_parapack(team, 400)
    configure(team, "corpus", 0)
    out = pytest_in(team, "--update-baselines", "-k", "invariants")
    assert out.returncode == 1, out.stdout
    assert re.search(r"^FAILED pyproject\.toml::test_invariants\[leaky\]", out.stdout, re.M)
    assert "on the documents of corpus 'docs'" in out.stdout
    assert re.search(r"strategy 'leaky' broke 'coverage': page\d+\.html: text .* is in no chunk",
                     out.stdout), out.stdout
    assert generated(team) == 0  # budget 0: no generated document


def test_a_splitter_that_breaks_only_on_generated_documents_fails_there(team: Path):
    write_parapack(team, 400)
    configure(team, "generated", 10)
    out = pytest_in(team, "--update-baselines", "-k", "invariants")
    assert out.returncode == 1, out.stdout
    assert "on the documents of corpus" not in out.stdout  # the corpus phase passed
    assert re.search(r"strategy 'leaky' broke 'coverage': generated\.html: text", out.stdout), \
        out.stdout
    assert "baselines NOT recorded for leaky" in out.stdout


@pytest.mark.parametrize("examples", [3, 12])
def test_the_generated_phase_runs_at_most_its_budget(team: Path, examples: int):
    write_parapack(team, 400)
    configure(team, "nothing", examples)
    out = pytest_in(team, "-k", "invariants", "--update-baselines")
    assert out.returncode == 0, out.stdout
    # each generated document is split twice (the `deterministic` property)
    assert 2 <= generated(team) <= 2 * examples
    assert generated(team) % 2 == 0


def test_the_budget_is_a_setting_of_the_command_line_too(team: Path):
    write_parapack(team, 400)
    configure(team, "nothing", None)
    out = pytest_in(team, "-k", "invariants", "--chunkeval-invariant-examples", "2")
    assert out.returncode == 0, out.stdout
    assert 2 <= generated(team) <= 4
    bad = pytest_in(team, "-k", "invariants", "--chunkeval-invariant-examples", "-1")
    assert bad.returncode != 0
    assert "--chunkeval-invariant-examples: expected a whole number of at least 0" in \
        bad.stdout + bad.stderr


TEAM_TESTS = '''\
import sys

from _pytest.assertion.rewrite import AssertionRewritingHook

import chunkeval.invariants
import hypothesis


def test_chunkeval_and_hypothesis_are_not_rewritten_and_this_module_is():
    assert not isinstance(chunkeval.invariants.__loader__, AssertionRewritingHook)
    assert not isinstance(hypothesis.__loader__, AssertionRewritingHook)
    assert isinstance(sys.modules[__name__].__loader__, AssertionRewritingHook)


def test_a_failing_assert_of_the_team_explains_itself():
    found = [1, 2, 3]
    assert found == [1, 2, 4]
'''


def test_the_teams_own_asserts_are_still_rewritten(team: Path):
    (team / "test_team.py").write_text(TEAM_TESTS, encoding="utf-8")
    out = pytest_in(team, "test_team.py")
    assert out.returncode == 1, out.stdout
    assert "1 failed, 1 passed" in out.stdout, out.stdout
    assert "At index 2 diff: 3 != 4" in out.stdout, out.stdout  # pytest's introspection
