"""Which tests run where: the explicit tests' parametrisation, the collection of chunkeval's
own items, xdist's grouping by strategy, a shard's selection, and the release of a strategy's
chunks once the last test using them has run."""

from __future__ import annotations

import gc
from collections import Counter
from pathlib import Path

import pytest

from .. import shard
from ..errors import ChunkevalError
from ..session import Case
from .items import CaseItem, ChunkevalFile, InvariantsItem, worker_group
from .state import STATE, State, state_of


def parametrize(metafunc: pytest.Metafunc) -> None:
    """The explicit tests' fixtures, parametrised over the configured matrix."""
    wanted = {"strategy_name", "retrieval_case", "cut_case"} & set(metafunc.fixturenames)
    if not wanted:
        return
    state = state_of(metafunc.config)
    if "strategy_name" in wanted:
        metafunc.parametrize("strategy_name", state.strategies)
    if wanted - {"strategy_name"}:
        try:
            retrieval, cut = state.session.cases()
        except ChunkevalError as e:
            raise pytest.UsageError(f"chunkeval: {e}") from None
        for name, cases in (("retrieval_case", retrieval), ("cut_case", cut)):
            if name in wanted:
                metafunc.parametrize(name, cases, ids=[c.id for c in cases])


def case_of(item: pytest.Item) -> Case | None:
    if isinstance(item, CaseItem):
        return item.case
    spec = getattr(item, "callspec", None)
    case = spec.params.get("retrieval_case") or spec.params.get("cut_case") if spec else None
    return case if isinstance(case, Case) else None


def strategy_scheduler(config: pytest.Config, log):
    """xdist's loadgroup, a strategy's tests one group, read from their test ids. xdist
    passes a group to the controller as a suffix its workers write into the node id, which
    pytest 9.2 no longer lets them change; and a worker started by `-n` alone does not write
    it at all. Only the strategies' names are used: the controller builds no query set (an
    unconfigured project's would be the default corpus, fetched)."""
    state = config.stash.get(STATE, None)
    if config.getvalue("dist") != "loadgroup" or state is None:
        return None
    from xdist.scheduler import LoadGroupScheduling

    longest_first = sorted(state.strategies, key=len, reverse=True)

    class StrategyGroups(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            param = nodeid[nodeid.rfind("[") + 1:-1] if nodeid.endswith("]") else ""
            # a case id starts with its strategy's name: fixed-400-ov40-bm25-faq-headings
            # an invariant item's id is test_invariants[STRATEGY]
            strategy = next((s for s in longest_first if param.startswith(s + "-")
                             or (param == s and "::test_invariants[" in nodeid)), None)
            return worker_group(strategy) if strategy else super()._split_scope(nodeid)

    return StrategyGroups(config, log)


def mark_items(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each case of an explicit test on its strategy's worker; another shard's left out."""
    for item in items:
        case = case_of(item)
        if case is not None and not isinstance(item, CaseItem):
            item.add_marker(pytest.mark.xdist_group(worker_group(case.strategy)))
            item.add_marker(pytest.mark.corpus)
    state = config.stash.get(STATE, None)
    if state is not None and state.session.shard is not None:
        keep_shard(config, state, items)


def keep_shard(config: pytest.Config, state: State, items: list[pytest.Item]) -> None:
    """Deselect what another shard runs: a strategy x query set case goes where the cost plan
    puts its task (the same plan as `chunkeval run --shard`), any other test by a hash of
    its id."""
    session = state.session
    part, cases = session.shard, {item: case_of(item) for item in items}
    mine: set = set()
    if any(cases.values()):
        try:
            tasks = [(q, s) for q in session.query_specs() for s in state.strategies]
            mine = set(shard.select(part, session.evaluation, tasks, session.timings))
        except ChunkevalError as e:
            raise pytest.UsageError(f"chunkeval: {e}") from None
    keep = [item for item in items
            if ((c.query_set, c.strategy) in mine if (c := cases[item])
                else shard.item_shard(item.nodeid, part.count) == part.index)]
    if len(keep) < len(items):
        kept = set(keep)
        config.hook.pytest_deselected(items=[i for i in items if i not in kept])
        items[:] = keep


def uses(item: pytest.Item) -> list[tuple[str, str]]:
    """The (strategy, query set) chunks and indexes an item uses."""
    if (case := case_of(item)) is not None:
        return [(case.strategy, case.query_set)]
    return getattr(item, "uses", [])


def collected(session: pytest.Session) -> None:
    count_uses(session)
    freeze_collected(session)


def count_uses(session: pytest.Session) -> None:
    # How many tests use each strategy's chunks and indexes on each query set: once they have
    # all run here, those are released, so memory does not grow with the number of
    # strategies. (Under xdist a strategy's tests all go to one worker.) An invariant item
    # uses its strategy's chunks on every query set its metric tests run on.
    state = session.config.stash.get(STATE, None)
    if state is None:
        return
    state.pending = Counter(use for item in session.items for use in uses(item))
    for item in session.items:
        if isinstance(item, InvariantsItem):
            item.uses = [u for u in state.pending if u[0] == item.strategy]
            state.pending.update(item.uses)


def freeze_collected(session: pytest.Session) -> None:
    """Once the tests are collected, when they are all chunkeval's (a gate), what is alive
    (the imported modules, the plugins, the configuration, the items) lives until the process
    ends, so Python's cycle collector is told to stop walking it (gc.freeze): each later
    collection walks only what the tests make. Over the modules a gate imports, the full
    collections (pytest runs two as it ends) cost about a tenth of a warm gate. Left alone
    beside a team's own tests (one may count on the collector freeing what it made at
    import), and when objects are frozen already (a second session in one process, e.g.
    pytester's: the first freeze stands, and the second session's objects stay
    collectable)."""
    state = session.config.stash.get(STATE, None)
    if (state is not None and session.items and not gc.get_freeze_count()
            and all(case_of(i) is not None or isinstance(i, InvariantsItem)
                    for i in session.items)):
        gc.freeze()


def release_after(item: pytest.Item) -> None:
    """Chunks and indexes no test still to run here needs are let go."""
    state = item.config.stash.get(STATE, None)
    if state is None:
        return
    for use in uses(item):
        if use not in state.pending:
            continue
        state.pending[use] -= 1
        if state.pending[use] == 0 and state.session._evaluation is not None:
            state.session.evaluation.release(*use)


def collect_file(file_path: Path, parent: pytest.Collector):
    """The project's pyproject.toml, when it configures chunkeval's own items."""
    state = parent.config.stash.get(STATE, None)
    if state is not None and state.items and \
            file_path == state.session.config.root / "pyproject.toml":
        return ChunkevalFile.from_parent(parent, path=file_path)
    return None
