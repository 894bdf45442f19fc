"""The items chunkeval adds itself, collected from the project's pyproject.toml: a case's
metric test (`test_recall`, `test_cut_rate`) and a splitter's invariants (`test_invariants`)."""

from __future__ import annotations

import json

import pytest

from .. import strategies
from ..errors import ChunkevalError, StrategyFailed
from ..session import Case, Session
from ..strategies.semantic import vectors_on_disk
from .checker import Checker
from .state import HELD_BACK, State, or_fail, state_of


def worker_group(strategy: str) -> str:
    """The xdist group of a strategy's tests: one worker builds its chunks and indexes."""
    return f"chunkeval:{strategy}"


class ChunkevalFile(pytest.File):
    """The project's pyproject.toml, collected as the home of chunkeval's own items."""

    def collect(self):
        state = state_of(self.config)
        try:
            retrieval, cut = state.session.cases()
        except ChunkevalError as e:
            raise self.CollectError(f"chunkeval: {e}") from None
        for case in retrieval:
            yield CaseItem.from_parent(self, name=f"test_recall[{case.id}]", case=case,
                                       check="check_retrieval")
        for case in cut:
            yield CaseItem.from_parent(self, name=f"test_cut_rate[{case.id}]", case=case,
                                       check="check_cut_rate")
        for name in state.strategies:
            # A built-in strategy's invariants are chunkeval's own tests, on the same generated
            # documents: rerunning them in every project would only cost its CI time.
            if not strategies.is_builtin(name):
                yield InvariantsItem.from_parent(self, name=f"test_invariants[{name}]",
                                                 strategy=name)


class CaseItem(pytest.Item):
    def __init__(self, *, case: Case, check: str, **kw):
        super().__init__(**kw)
        self.case, self.check = case, check
        self.add_marker(pytest.mark.xdist_group(worker_group(case.strategy)))
        self.add_marker(pytest.mark.corpus)

    def runtest(self) -> None:
        getattr(Checker(state_of(self.config), self), self.check)(self.case)

    def reportinfo(self):  # line 0: a skip is reported at the configuration file
        return self.path, 0, self.name


class InvariantsItem(pytest.Item):
    """The splitter's invariants (`chunkeval.invariants`): on every document of each query
    set's view, checked against the chunks the evaluation scored, then on
    `invariant_examples` hypothesis-generated documents, which reach what a corpus may lack
    (tables longer than any size, words with nowhere to break, Japanese without spaces)."""

    SHOWN = 10  # violations named in a failure; the count says how many in all

    def __init__(self, *, strategy: str, **kw):
        super().__init__(**kw)
        self.strategy = strategy
        self.uses: list[tuple[str, str]] = []  # set when collection is done
        self.add_marker(pytest.mark.xdist_group(worker_group(strategy)))

    def runtest(self) -> None:
        state = state_of(self.config)
        strategy = strategies.get(self.strategy)
        try:
            # without the cache, a semantic chunker's vectors are not kept on disk here either
            with vectors_on_disk(state.session.config.cache):
                self._on_corpus(state, strategy)
                examples = state.session.config.invariant_examples
                if examples:
                    self._on_generated(strategy, examples)
        except AssertionError:
            self.user_properties.append((HELD_BACK, json.dumps([self.strategy, None])))
            raise

    def _on_corpus(self, state: State, strategy) -> None:
        from ..invariants import check

        session = state.session
        found = []
        for spec in or_fail(session.query_specs):
            view = or_fail(lambda: session.query_set(spec)).view
            made = or_fail(lambda: self._made(session, spec))
            for doc in view.documents:
                found += check(strategy, doc, None if made is None else made.get(doc.id, []))
        if found:
            more = (f"\n(and {len(found) - self.SHOWN} more)" if len(found) > self.SHOWN
                    else "")
            raise AssertionError(f"on the documents of corpus {session.corpus.name!r}:\n"
                                 + "\n".join(str(v) for v in found[:self.SHOWN]) + more)

    def _made(self, session: Session, spec: str) -> dict[str, list] | None:
        """doc id -> the evaluation's chunks of it (made, or read from the chunk cache, for
        the metric tests anyway); None when the strategy failed there: its metric test says
        why, and the checks here which property."""
        try:
            chunked = session.evaluation.chunked(self.strategy, spec)
        except StrategyFailed:
            return None
        made: dict[str, list] = {}
        for c in chunked.searched:
            made.setdefault(c.doc_id, []).append(c)
        return made

    def _on_generated(self, strategy, examples: int) -> None:
        from hypothesis import given, settings

        from ..testing import assert_keeps_invariants, documents

        # The number of examples is the project's setting, the rest its hypothesis profile's;
        # a splitter's speed on a shared CI machine must not fail it, so no deadline.
        @settings(max_examples=examples, deadline=None)
        @given(doc=documents())
        def keeps_invariants(doc):
            assert_keeps_invariants(strategy, doc)

        keeps_invariants()

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, AssertionError):
            notes = getattr(excinfo.value, "__notes__", [])
            return "\n".join([str(excinfo.value), *notes])
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, self.name
