"""What one pytest session (or one xdist worker) holds, and the names of what its test reports
carry to the controller."""

from __future__ import annotations

import json
from collections import Counter
from functools import cached_property

import pytest

from ..errors import BaselineError, ChunkevalError, StrategyFailed
from ..gate.baselines import Baseline
from ..session import Session

PROPERTY = "chunkeval"
PROBLEMS = "chunkeval-problems"
# A strategy (and retriever) that failed its contract, its invariants or a retriever on its
# chunks in this session: [strategy, retriever or null]. Its entries are never recorded.
HELD_BACK = "chunkeval-held-back"
# A test that failed because no comparison could be made (no baseline, no base, a corpus and
# its chunking changed with no base to measure against): the session's exit code says so.
NOT_COMPARED = "chunkeval-not-compared"
STATE = pytest.StashKey["State"]()


class State:
    """What one pytest session (or one xdist worker) holds: the chunkeval session, the
    baseline file once read, and how many tests still use each strategy's chunks."""

    def __init__(self, config: pytest.Config, session: Session):
        self.config, self.session = config, session
        self.strategies, self.plan = session.strategies, session.plan
        self.items = session.config.configured and session.config.items
        self.update = config.getoption("update_baselines")
        self._baseline: Baseline | None = None
        self.problems_sent = False
        self.pending: Counter[str] = Counter()  # group -> tests still to run here
        self.runs: dict[str, object] = {}  # revision -> its BaseRun (gate.base)
        self._hashes: dict[tuple[str, str], dict[str, str]] = {}

    @property
    def baseline(self) -> Baseline:
        if self._baseline is None:
            self._baseline = Baseline.load(self.session.baseline_path)
        return self._baseline

    @cached_property
    def head(self) -> str | None:
        """The git commit the project is at (None outside a repository)."""
        from ..gate.base import head

        return head(self.session.config.root)

    @property
    def whose(self) -> str:
        """Whose documents and questions a summary says were measured."""
        return "this branch's" if self.head else "this run's"

    def document_hashes(self, strategy: str, spec: str) -> dict[str, str]:
        """doc id -> the hash of the strategy's chunks of it on the set's view, once."""
        if (strategy, spec) not in self._hashes:
            from ..evaluate import document_hashes

            self._hashes[strategy, spec] = document_hashes(
                self.session.evaluation.chunked(strategy, spec))
        return self._hashes[strategy, spec]

    def start_base(self, revision: str):
        """The base revision's run, started in a child process on first call."""
        if revision not in self.runs:
            from ..gate.base import BaseRun, measuring_settings

            self.runs[revision] = BaseRun(self.session.config.root, revision,
                                          measuring_settings(self.session.config))
        return self.runs[revision]

    def close(self) -> None:
        for run in self.runs.values():
            run.close()


def state_of(config: pytest.Config) -> State:
    return config.stash[STATE]


def or_fail(get, node: pytest.Item | None = None):
    """get(), or a test failure saying why (raised outside the except block, so that the
    message is not printed a second time as the context of the failure). A strategy that
    failed is marked on `node`, so that no baseline is recorded for it."""
    try:
        return get()
    except StrategyFailed as e:  # the user's own frames only: pytest's would bury them
        if node is not None:
            node.user_properties.append((HELD_BACK, json.dumps([e.strategy, e.retriever])))
        message = f"chunkeval: {e}" + (f"\n{e.detail}" if e.detail else "")
    except BaselineError as e:  # this run and its baseline could not be compared
        if node is not None:
            node.user_properties.append((NOT_COMPARED, "1"))
        message = f"chunkeval: {e}"
    except ChunkevalError as e:
        message = f"chunkeval: {e}"
    pytest.fail(message, pytrace=False)
