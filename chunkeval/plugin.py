"""The pytest plugin: options, test items, fixtures, baselines and the summary.

Registered as the `chunkeval` pytest11 entry point, so a project that installs chunkeval
gets it. Settings come from `chunkeval.config` (command line, ini, `[tool.chunkeval]`), and
what they select is one `chunkeval.session.Session`, as for the chunkeval command.

With a `[tool.chunkeval]` section in the project's pyproject.toml, the plugin adds its own
items to the run, collected from that file, so the project needs no test module:

- `test_recall[STRATEGY-RETRIEVER-QUERYSET]`: every metric against the baseline;
- `test_cut_rate[STRATEGY-QUERYSET]`: for every strategy that keeps structure;
- `test_invariants[STRATEGY]`: for the project's own splitters, the invariants
  (`chunkeval.invariants`) on every document of the corpus, then on `invariant_examples`
  hypothesis-generated ones (`chunkeval.testing`).

A project that prefers its own test modules asks for the fixtures instead:
`retrieval_case`, `cut_case` and `strategy_name` are parametrised over the configured
matrix, and `chunkeval` is a checker (`check_retrieval(case)`, `check_cut_rate(case)`).

Results travel as test-report user properties, so the controller of an xdist run sees every
worker's numbers; only the controller writes the baseline file and the summary.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

import pytest

from . import config as chunkeval_config
from . import problems as reported
from . import shard, strategies
from .cache import atomic_write
from .config import SETTINGS
from .errors import EXIT_NOT_COMPARED, BaselineError, ChunkevalError, StrategyFailed
from .gate import diffs
from .gate.baselines import (UPDATE_MODES, Baseline, Record, check_same_retriever, key,
                              update_file)
from .gate.outcome import Paired, decide, pair
from .gate.verdict import DEFAULT_TOLERANCE, family_note, level
from .results import BaselineEntry
from .session import Case, Session
from .strategies.semantic import vectors_on_disk

# The scoring (metrics) and the reports are imported where they are used: this module is
# loaded by every pytest run of a project that installs chunkeval.

PROPERTY = "chunkeval"
PROBLEMS = "chunkeval-problems"
# A strategy (and retriever) that failed its contract, its invariants or a retriever on its
# chunks in this session: [strategy, retriever or null]. Its entries are never recorded.
HELD_BACK = "chunkeval-held-back"
# A test that failed because no comparison could be made (no baseline, no base, a corpus and
# its chunking changed with no base to measure against): the session's exit code says so.
NOT_COMPARED = "chunkeval-not-compared"
STATE = pytest.StashKey["State"]()


def _dest(name: str) -> str:
    return "chunkeval_" + name


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("chunkeval", "chunkeval: chunking metrics as tests (each also an "
                                         "ini setting chunkeval_NAME and a [tool.chunkeval] key)")
    for s in SETTINGS:
        listed = s.kind in ("list", "paths")
        comma = " (comma-separated)" if listed and "comma-separated" not in s.help else ""
        help = s.help + comma + s.shown_default
        if s.flag and s.kind == "bool":  # on by default: the option turns it off
            group.addoption(s.pytest_option, dest=_dest(s.name), action="store_const",
                            const=not s.default, default=None,
                            help=f"turn off (default on): {help}" if s.default else help)
        elif s.flag:
            group.addoption(s.pytest_option, dest=_dest(s.name), default=None,
                            metavar=s.name.upper(), help=help)
        if not s.table:  # a table's keys ([tool.chunkeval.sweep]) are the CLI's alone
            parser.addini(s.ini, type="args" if listed else "string", default=None,
                          help=s.help)
    group.addoption("--splitter", action="append", default=[], metavar="MODULE:ATTR",
                    help="register an outside splitter (repeatable); the same as "
                         "--chunkeval-splitters")
    group.addoption("--retriever", action="append", default=[], metavar="MODULE:ATTR",
                    help="register an outside retriever (repeatable); the same as "
                         "--chunkeval-outside-retrievers")
    group.addoption("--update-baselines", nargs="?", const="all", default=None,
                    metavar="MODE",
                    help="record this run's metrics as the new baselines (merged into the file "
                         "under a lock at the end of the session) instead of comparing against "
                         "them. MODE: all (default: every selected entry), failing (only "
                         "selected entries that fail, changed their chunks or are missing), "
                         "replace (like all, and may replace an unreadable baseline file)")
    group.addoption("--shard", dest=_dest("shard"), default=None, metavar="I/N",
                    help="the same as --chunkeval-shard")
    if importlib.util.find_spec("xdist") is None:
        # Without pytest-xdist, `pytest -n 2` would only say "unrecognized arguments".
        group.addoption("-n", "--numprocesses", dest="chunkeval_no_xdist", default=None,
                        help="(needs pytest-xdist, which is not installed)")


def load_config(config: pytest.Config) -> chunkeval_config.Config:
    given = {s.name: config.getoption(_dest(s.name)) for s in SETTINGS if s.flag}
    given["splitters"] = [*(given["splitters"] or "").split(","), *config.getoption("splitter")]
    given["outside_retrievers"] = [*(given["outside_retrievers"] or "").split(","),
                                   *config.getoption("retriever")]
    pyproject = config.inipath if config.inipath and config.inipath.name == "pyproject.toml" \
        else config.rootpath / "pyproject.toml"
    return chunkeval_config.load(root=config.rootpath, command_line=given,
                                 ini=lambda name: config.getini(name), pyproject=pyproject)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "corpus: needs the evaluated corpus (the default one is "
                                       "fetched on first use)")
    config.addinivalue_line("markers", "xdist_group(name): run these tests on one xdist worker")
    _update_mode(config)
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


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is not None:
        state.close()


def _update_mode(config: pytest.Config) -> None:
    """`--update-baselines` takes an optional MODE, so in `pytest --update-baselines tests/`
    argparse hands it the path: give the path back to the run and take the default mode."""
    given = config.option.update_baselines
    if given is None or given in UPDATE_MODES:
        return
    if not Path(given.split("::")[0]).exists():
        raise pytest.UsageError(f"--update-baselines={given}: not a mode ({', '.join(UPDATE_MODES)})"
                                " nor a test path")
    config.option.update_baselines = "all"
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        config.args.append(given)
    else:
        config.args[:] = [given]
        config.args_source = pytest.Config.ArgsSource.ARGS


# -- session state ----------------------------------------------------------------------------
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
        from .gate.base import head

        return head(self.session.config.root)

    @property
    def whose(self) -> str:
        """Whose documents and questions a summary says were measured."""
        return "this branch's" if self.head else "this run's"

    def document_hashes(self, strategy: str, spec: str) -> dict[str, str]:
        """doc id -> the hash of the strategy's chunks of it on the set's view, once."""
        if (strategy, spec) not in self._hashes:
            from .evaluate import document_hashes

            self._hashes[strategy, spec] = document_hashes(
                self.session.evaluation.chunked(strategy, spec))
        return self._hashes[strategy, spec]

    def start_base(self, revision: str):
        """The base revision's run, started in a child process on first call."""
        if revision not in self.runs:
            from .gate.base import BaseRun, measuring_settings

            self.runs[revision] = BaseRun(self.session.config.root, revision,
                                          measuring_settings(self.session.config))
        return self.runs[revision]

    def close(self) -> None:
        for run in self.runs.values():
            run.close()


def _state(config: pytest.Config) -> State:
    return config.stash[STATE]


# -- explicit tests: fixtures and parametrisation -----------------------------------------------
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    wanted = {"strategy_name", "retrieval_case", "cut_case"} & set(metafunc.fixturenames)
    if not wanted:
        return
    state = _state(metafunc.config)
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


def _case(item: pytest.Item) -> Case | None:
    if isinstance(item, CaseItem):
        return item.case
    spec = getattr(item, "callspec", None)
    case = spec.params.get("retrieval_case") or spec.params.get("cut_case") if spec else None
    return case if isinstance(case, Case) else None


def _worker_group(strategy: str) -> str:
    return f"chunkeval:{strategy}"


@pytest.hookimpl(optionalhook=True, tryfirst=True)  # an xdist hook: absent without it
def pytest_xdist_make_scheduler(config: pytest.Config, log):
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
            return _worker_group(strategy) if strategy else super()._split_scope(nodeid)

    return StrategyGroups(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        case = _case(item)
        if case is not None and not isinstance(item, CaseItem):
            item.add_marker(pytest.mark.xdist_group(_worker_group(case.strategy)))
            item.add_marker(pytest.mark.corpus)
    state = config.stash.get(STATE, None)
    if state is not None and state.session.shard is not None:
        _keep_shard(config, state, items)


def _keep_shard(config: pytest.Config, state: "State", items: list[pytest.Item]) -> None:
    """Deselect what another shard runs: a strategy x query set case goes where the cost plan
    puts its task (the same plan as `chunkeval run --shard`), any other test by a hash of
    its id."""
    session = state.session
    part, cases = session.shard, {item: _case(item) for item in items}
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


def _uses(item: pytest.Item) -> list[tuple[str, str]]:
    """The (strategy, query set) chunks and indexes an item uses."""
    if (case := _case(item)) is not None:
        return [(case.strategy, case.query_set)]
    return getattr(item, "uses", [])


def pytest_collection_finish(session: pytest.Session) -> None:
    # How many tests use each strategy's chunks and indexes on each query set: once they have
    # all run here, those are released, so memory does not grow with the number of
    # strategies. (Under xdist a strategy's tests all go to one worker.) An invariant item
    # uses its strategy's chunks on every query set its metric tests run on.
    state = session.config.stash.get(STATE, None)
    if state is None:
        return
    state.pending = Counter(use for item in session.items for use in _uses(item))
    for item in session.items:
        if isinstance(item, InvariantsItem):
            item.uses = [u for u in state.pending if u[0] == item.strategy]
            state.pending.update(item.uses)


def pytest_runtest_teardown(item: pytest.Item) -> None:
    state = item.config.stash.get(STATE, None)
    if state is None:
        return
    for use in _uses(item):
        if use not in state.pending:
            continue
        state.pending[use] -= 1
        if state.pending[use] == 0 and state.session._evaluation is not None:
            state.session.evaluation.release(*use)


@pytest.fixture(scope="session")
def chunkeval_state(request: pytest.FixtureRequest) -> State:
    return _state(request.config)


@pytest.fixture(scope="session")
def corpus(chunkeval_state: State):
    return _or_fail(lambda: chunkeval_state.session.corpus)


@pytest.fixture(scope="session")
def evaluation(chunkeval_state: State):
    return _or_fail(lambda: chunkeval_state.session.evaluation)


def _or_fail(get, node: pytest.Item | None = None):
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


@pytest.fixture
def chunkeval(chunkeval_state: State, request: pytest.FixtureRequest) -> "Checker":
    return Checker(chunkeval_state, request.node)


# -- the items chunkeval adds itself ------------------------------------------------------------
def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    state = parent.config.stash.get(STATE, None)
    if state is not None and state.items and \
            file_path == state.session.config.root / "pyproject.toml":
        return ChunkevalFile.from_parent(parent, path=file_path)
    return None


class ChunkevalFile(pytest.File):
    """The project's pyproject.toml, collected as the home of chunkeval's own items."""

    def collect(self):
        state = _state(self.config)
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
        self.add_marker(pytest.mark.xdist_group(_worker_group(case.strategy)))
        self.add_marker(pytest.mark.corpus)

    def runtest(self) -> None:
        getattr(Checker(_state(self.config), self), self.check)(self.case)

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
        self.add_marker(pytest.mark.xdist_group(_worker_group(strategy)))

    def runtest(self) -> None:
        state = _state(self.config)
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
        from .invariants import check

        session = state.session
        found = []
        for spec in _or_fail(session.query_specs):
            view = _or_fail(lambda: session.query_set(spec)).view
            made = _or_fail(lambda: self._made(session, spec))
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

        from .testing import assert_keeps_invariants, documents

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


# -- checks -------------------------------------------------------------------------------------
class Checker:
    def __init__(self, state: State, node: pytest.Item):
        self.state, self.node = state, node
        self.session = state.session

    def _emit(self, row: dict) -> None:
        self.node.user_properties.append((PROPERTY, json.dumps(row, ensure_ascii=False)))

    def _emit_problems(self) -> None:
        # Once per process: the controller of an xdist run only sees what reports carry.
        if not self.state.problems_sent:
            self.state.problems_sent = True
            self.node.user_properties.append(
                (PROBLEMS, json.dumps([reported.to_json(p) for p in self.session.problems()])))

    def _where(self) -> str:
        c = self.session.corpus
        return f"corpus {c.name!r} ({c.fingerprint})"

    def _not_compared(self, message: str) -> None:
        """Fail this test as one whose comparison could not be made (EXIT_NOT_COMPARED)."""
        self.node.user_properties.append((NOT_COMPARED, "1"))
        pytest.fail(message, pytrace=False)

    def _against(self, qs, case: Case) -> "Against":
        """What this case is compared with: the base revision's run, or the baseline file
        (on the questions both have; on a changed corpus, as information when the chunking
        of the unchanged documents is the same, else against the baseline's commit)."""
        session = self.session
        if session.config.base:
            return self._base_side(session.config.base, qs)
        baseline = self.state.baseline
        if not baseline.exists:
            self._not_compared(f"no baseline file at {baseline.path}: run `pytest "
                               "--update-baselines` to record one from this run, then commit "
                               "it, or gate against the base branch with `pytest "
                               "--chunkeval-base REV`")
        from .scoring import coverage_rule

        corpus = session.corpus_record
        coverage = coverage_rule(qs, session.settings.coverage)
        baseline.check_measured_alike(corpus, session.settings.to_json(), qs.name, coverage)
        if baseline.data["corpus"].get("fingerprint") != corpus["fingerprint"]:
            return self._changed_corpus(baseline, qs, case)
        recorded = baseline.data["query_sets"].get(qs.name, {}).get("fingerprint")
        if recorded is not None and recorded != qs.fingerprint:
            keys = baseline.query_keys(qs.name)
            if keys is None:  # recorded before questions were kept: the old refusal
                baseline.check_comparable(corpus, session.settings.to_json(), qs.name,
                                          qs.fingerprint, coverage)
            return Against(baseline, _label(baseline),
                           paired=pair([q.key for q in qs.queries], keys))
        return Against(baseline, _label(baseline))

    def _changed_corpus(self, baseline: Baseline, qs, case: Case) -> "Against":
        session = self.session
        then, view_then = baseline.data.get("documents"), baseline.view_documents(qs.name)
        entry = next((e for r in baseline.retrievers(case.strategy, qs.name)
                      if (e := baseline.entry(case.strategy, r, qs.name)) is not None), None)
        if then is None or view_then is None or entry is None or entry.documents is None:
            # recorded before documents were fingerprinted: the old refusal
            baseline.check_comparable(session.corpus_record, session.settings.to_json(),
                                      qs.name, qs.fingerprint)
        changed, total, how = documents_changed(then, session.corpus.document_fingerprints)
        view_now = qs.view.document_fingerprints
        kept = [d for d, f in view_now.items() if view_then.get(d) == f]
        now = self.state.document_hashes(case.strategy, case.query_set)
        if all(entry.documents.get(d) == now.get(d) for d in kept):
            return Against(baseline, _label(baseline), info=(
                f"corpus changed in {changed} of {total} documents ({how}); chunking unchanged "
                f"on the other {total - changed}"))
        from .gate.base import committed_with, has_commit

        commit = committed_with(baseline.path) or baseline.commit
        if commit and has_commit(session.config.root, commit):
            return self._base_side(commit, qs, f"the baseline's commit {commit[:7]}")
        why = (f"its commit {commit[:7]} is not in this repository" if commit
               else "the baseline records no commit to measure that code at")
        self._not_compared(
            f"{baseline.path}: the corpus changed in {changed} of {total} documents and "
            f"strategy {case.strategy!r} now chunks the unchanged ones differently, so the "
            f"recorded numbers are not comparable, and {why}: gate against the base branch "
            "with `pytest --chunkeval-base REV` (e.g. origin/main), or re-baseline with "
            "`pytest --update-baselines`")
        raise AssertionError  # not reached: _not_compared fails the test

    def _base_side(self, revision: str, qs, label: str | None = None) -> "Against":
        side = self.state.start_base(revision).side()
        keys = side.baseline.query_keys(qs.name)
        recorded = side.baseline.data["query_sets"].get(qs.name, {}).get("fingerprint")
        paired = (pair([q.key for q in qs.queries], keys)
                  if keys is not None and recorded != qs.fingerprint else None)
        return Against(side.baseline, label or side.label, paired, failed=side.failed,
                       base=side.strategies, same=side.same)

    def check_retrieval(self, case: Case) -> None:
        _or_fail(lambda: self._check_retrieval(case), self.node)

    def _check_retrieval(self, case: Case) -> None:
        session = self.session
        ev = session.evaluation
        qs = session.query_set(case.query_set)
        self._emit_problems()
        result = ev.result(case.strategy, case.retriever, case.query_set)
        corpus = session.corpus_record
        row = {"strategy": case.strategy, "retriever": case.retriever, "query_set": qs.name,
               "corpus": {k: corpus[k] for k in ("name", "fingerprint")},
               "metrics": {m: v.value for m, v in result.metrics.items()}
               | {"cut_rate": result.cut_rate.value}}
        if session.config.html:  # the per-query page's data, travelling with the row
            from .report import queries_page

            row["retrieved"] = queries_page.retrieved(result, qs.view, ev.settings.k)
        if self.state.update:
            from .scoring import coverage_rule

            params = strategies.get(case.strategy).describe()["params"]
            entry = BaselineEntry.from_result(result, ev.settings.complete_at, params)
            entry.documents = self.state.document_hashes(case.strategy, case.query_set)
            corpus = corpus | {"document_fingerprints": session.corpus.document_fingerprints}
            row["record"] = {"path": str(session.baseline_path), **Record(
                case.strategy, case.retriever, qs.name, entry, corpus, ev.settings.to_json(),
                qs.fingerprint, coverage_rule(qs, ev.settings.coverage),
                [q.key for q in qs.queries], qs.view.document_fingerprints,
                self.state.head).to_json()}
            self._emit(row)
            return
        against = self._against(qs, case)
        row |= against.describe(len(session.corpus), len(qs)) | {"whose": self.state.whose}
        what = f"strategy {case.strategy!r}, retriever {case.retriever!r}, query set {qs.name!r}"
        if case.strategy in against.failed:
            self._not_compared(f"{what}: at {against.label} it failed, so there is nothing to "
                               f"compare with: {against.failed[case.strategy]}")
        baseline = against.baseline
        entry = baseline.entry(case.strategy, case.retriever, qs.name)
        if entry is None and key(case.strategy, case.retriever, qs.name) in against.same:
            entry = BaselineEntry.from_result(result, ev.settings.complete_at)
        if entry is None and against.base is not None:
            self._emit(row | {"new": True})  # new on this side: reported, not gated
            return
        if entry is None:
            self._not_compared(f"no baseline entry for {what} in {baseline.path}: run `pytest "
                               "--update-baselines` to record it, then commit the file")
        try:  # a base revision's retriever may differ: that is what is gated then
            if against.base is None:
                check_same_retriever(result, entry, str(baseline.path))
        except BaselineError as e:
            raise BaselineError(f"{what}: {e}") from None
        if against.info:  # the corpus changed, the chunking did not: information only
            self._emit(row | {"info": against.info, "recorded": entry.metrics})
            return
        power = session.power(case.query_set)
        if not power.gates:  # measured and shown, but passing it would say nothing
            self._emit(row | {"not_gated": power.reason()})
            # shown at the item, not at this line of the plugin
            raise pytest.skip.Exception(power.reason(), _use_item_location=True)
        try:
            outcomes = decide(result, entry, ev.settings.complete_at,
                              session.tolerance_for(case.strategy), against.paired)
        except BaselineError as e:
            raise BaselineError(f"{what}: the entry in {baseline.path} does not match this "
                                f"run ({e}); re-record it with `pytest --update-baselines`"
                                ) from None
        verdicts = [o.verdict for o in outcomes]
        queries = diffs.per_query(*against.paired_view(result, entry, qs))
        row["verdicts"] = [o.to_json() for o in outcomes]
        row["per_query"] = queries
        if entry.chunks_hash and entry.chunks_hash != result.chunks.hash:
            row["chunks_changed"] = {"params": entry.params,
                                     "now": strategies.get(case.strategy).describe()["params"]}
        self._emit(row)
        for v in verdicts:  # for --junitxml: the numbers, where a CI report reads them
            self.node.user_properties += [
                (v.metric, round(v.value, 6)), (f"{v.metric}_baseline", round(v.baseline, 6)),
                (f"{v.metric}_diff", round(v.diff, 6)), (f"{v.metric}_status", v.status)]
        bad = [v for v in verdicts if v.status == "regressed"]
        if bad:
            lines = "\n  ".join(v.describe() for v in bad)
            note = family_note((v.confidence for v in bad), session.config.alpha)
            versus = f" against {against.label}" if against.base is not None else ""
            pytest.fail(f"{what} regressed{versus} on {self._where()}:\n  {lines}\n"
                        + (f"  ({note})\n" if note else "")
                        + diffs.describe(queries, qs.view), pytrace=False)

    def check_cut_rate(self, case: Case) -> None:
        _or_fail(lambda: self._check_cut_rate(case), self.node)

    def _check_cut_rate(self, case: Case) -> None:
        session = self.session
        qs = session.query_set(case.query_set)
        self._emit_problems()
        chunked = session.evaluation.chunked(case.strategy, case.query_set)
        cut = chunked.cut
        what = f"strategy {case.strategy!r} on query set {qs.name!r}"
        problems = []
        ceiling = session.tolerance.cut_ceiling
        if cut.value > ceiling:
            problems.append(f"cut rate {cut.value * 100:.1f}% is above the ceiling "
                            f"{ceiling * 100:.1f}% ({cut.cut} of {cut.blocks} table/pre "
                            "blocks cut)")
        if not self.state.update:
            against = self._against(qs, case)
            baseline = against.baseline
            if case.strategy in against.failed:
                self._not_compared(f"{what}: at {against.label} it failed, so there is "
                                   f"nothing to compare with: {against.failed[case.strategy]}")
            # The cut rate does not depend on the retriever: any recorded one holds it.
            entry = next((e for r in baseline.retrievers(case.strategy, qs.name)
                          if (e := baseline.entry(case.strategy, r, qs.name)) is not None), None)
            if entry is None and against.base is None:
                self._not_compared(f"no baseline entry for {what} in {baseline.path}: run "
                                   "`pytest --update-baselines`")
            if (entry is not None and not against.info
                    and cut.value > entry.cut_rate + session.tolerance.cut_slack):
                versus = (f"{against.label}'s" if against.base is not None else "baseline")
                problems.append(f"cut rate {cut.value * 100:.1f}% rose from {versus} "
                                f"{entry.cut_rate * 100:.1f}%")
        if problems:
            from .scoring import cut_blocks

            cuts = diffs.describe_cuts(cut_blocks(qs.view.documents, chunked.handed))
            pytest.fail(f"{what} on {self._where()}: " + "; ".join(problems) + "\n" + cuts,
                        pytrace=False)


@dataclass
class Against:
    """The other side of a case's comparison, as the checks use it and the outputs name it."""

    baseline: Baseline  # its entries: a baseline file's, or a base revision's run
    label: str  # "baselines/docs.json", "main at 1a2b3c4", "the baseline's commit 1a2b3c4"
    paired: Paired | None = None  # the questions both sides have, when they differ
    info: str | None = None  # corpus changed, chunking not: numbers shown, not judged
    failed: dict[str, str] = field(default_factory=dict)  # at the base: strategy -> error
    base: list[str] | None = None  # a base revision's strategies (None: a baseline file)
    same: set[str] = field(default_factory=set)  # cases whose base result is this side's

    def describe(self, documents: int, questions: int) -> dict:
        """What a row says about the comparison (compared_line reads it)."""
        out = {"against": self.label, "documents": documents, "questions": questions}
        if self.base is not None:
            out["base_strategies"] = self.base
        if self.paired is not None and self.paired.partial:
            out["paired"] = self.paired.describe()
        return out

    def paired_view(self, result, entry, qs):
        """The result, entry and query set on the questions both sides have."""
        if self.paired is None or not self.paired.partial:
            return result, entry, qs
        from .gate.outcome import subset_entry, subset_result

        return (subset_result(result, self.paired.now), subset_entry(entry, self.paired.other),
                replace(qs, queries=tuple(qs.queries[i] for i in self.paired.now)))


def _label(baseline: Baseline) -> str:
    """A baseline file as the summaries name it: relative to the working directory."""
    try:
        return f"baseline {baseline.path.resolve().relative_to(Path.cwd())}"
    except ValueError:
        return f"baseline {baseline.path}"


def documents_changed(then: dict[str, str], now: dict[str, str]) -> tuple[int, int, str]:
    """How many documents were added, removed or edited, of how many in all, and how."""
    names = then.keys() | now.keys()
    count = Counter("added" if d not in then else "removed" if d not in now else "edited"
                    for d in names if then.get(d) != now.get(d))
    how = ", ".join(f"{count[k]} {k}" for k in ("edited", "added", "removed") if count[k])
    return sum(count.values()), len(names), how


# -- the controller's side: collect rows, write baselines, print the summary --------------------
class Summary:
    def __init__(self, config: pytest.Config, state: State):
        self.config, self.state = config, state
        self.rows: list[dict] = []
        self.problems: list[dict] = []  # reported.to_json of each
        self.written: str | None = None
        self.error: str | None = None
        self.stale: list[str] = []
        # (strategy, retriever or None) whose invariants, contract or retriever failed in
        # this session: never recorded as a baseline
        self.failed: set[tuple[str, str | None]] = set()
        self.held_back: list[str] = []
        self.failed_tests: set[str] = set()
        self.not_compared: set[str] = set()

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed:
            self.failed_tests.add(report.nodeid)
        for name, value in report.user_properties:
            if name == NOT_COMPARED:
                self.not_compared.add(report.nodeid)
            if name == PROPERTY and report.when == "call":
                self.rows.append(json.loads(value))
            elif name == PROBLEMS and report.when == "call":
                self.problems += [p for p in json.loads(value) if p not in self.problems]
            elif name == HELD_BACK and report.when == "call":
                self.failed.add(tuple(json.loads(value)))

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.config.getoption("update_baselines"):
            self._write_baselines(session)
        if self.state.session.config.strict and session.exitstatus == 0 and \
                reported.strict_failure([reported.from_json(p) for p in self.problems]):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if (session.exitstatus == pytest.ExitCode.TESTS_FAILED and self.failed_tests
                and self.failed_tests <= self.not_compared):
            session.exitstatus = EXIT_NOT_COMPARED  # failed only for want of a comparison
        path = self.state.session.config.json
        if path:
            atomic_write(path, json.dumps({"rows": self.rows, "problems": [
                str(reported.from_json(p)) for p in self.problems]},
                                          ensure_ascii=False, indent=1))
        page = self.state.session.config.html
        if page and any("verdicts" in r for r in self.rows):
            from .report import render_comparison_html

            atomic_write(page, render_comparison_html(self.rows))
        if page and any("retrieved" in r for r in self.rows):
            from .report import queries_page

            ours = self.state.session
            queries_page.write_baseline_page(
                self.rows, [ours.query_set(s) for s in ours.query_specs()], ours.settings,
                queries_page.sibling(page))
        self._write_markdown()

    def _write_markdown(self) -> None:
        """The verdict as Markdown: into the `markdown` file, and appended to GitHub's job
        summary when the job has one (GitHub collects what every step appends)."""
        step = os.environ.get("GITHUB_STEP_SUMMARY")
        shown = ("verdicts", "not_gated", "info")
        if not any(k in r for r in self.rows for k in shown) or not (
                step or self.state.session.config.markdown):
            return
        from .report.comparison import render_summary_markdown

        text = render_summary_markdown(self.rows, self.state.session.config.alpha)
        if self.state.session.config.markdown:
            atomic_write(self.state.session.config.markdown, text)
        if step:
            try:
                with open(step, "a", encoding="utf-8") as f:
                    f.write(text + "\n")
            except OSError as e:
                self.error = f"chunkeval: could not append to GITHUB_STEP_SUMMARY ({step}): {e}"

    def _write_baselines(self, session: pytest.Session) -> None:
        self.held_back = sorted(s + (f" with {r}" if r else "") for s, r in self.failed)
        raw = [r["record"] for r in self.rows if "record" in r
               and not {(r["record"]["strategy"], None),
                        (r["record"]["strategy"], r["record"]["retriever"])} & self.failed]
        if not raw:
            return
        records = [Record.from_json(r) for r in raw]
        try:
            done = update_file(raw[0]["path"], records,
                               self.config.getoption("update_baselines"),
                               identity=records[0].corpus.get("identity"),
                               tolerance=self.state.session.tolerance,
                               known_strategies=set(strategies.names(all=True)))
        except ChunkevalError as e:
            self.error = f"baselines NOT written: {e}"
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
            return
        self.written, self.stale = done.describe(), done.stale

    def _write_comparison(self, tr) -> None:
        """What was compared with what, first; then what the comparison could not judge:
        strategies new or removed at the base, numbers on a changed corpus, questions on one
        side only."""
        from .report.comparison import compared_line

        if compared_line(self.rows):
            tr.write_line(compared_line(self.rows))
        new = sorted({r["strategy"] for r in self.rows if r.get("new")})
        for against in dict.fromkeys(r["against"] for r in self.rows if r.get("new")):
            tr.write_line(f"new since {against} (not gated): {', '.join(new)}")
        for against in dict.fromkeys(r["against"] for r in self.rows if "base_strategies" in r):
            then = {s for r in self.rows if r.get("against") == against
                    for s in r["base_strategies"]}
            gone = sorted(then - set(self.state.strategies))
            if gone:
                tr.write_line(f"removed since {against}: {', '.join(gone)}")
        for r in self.rows:
            if "paired" in r:
                tr.write_line(f"{r['strategy']} {r['retriever']} {r['query_set']}: "
                              f"{r['paired']}")
        info = [r for r in self.rows if "info" in r]
        for line in dict.fromkeys(r["info"] for r in info):
            tr.write_line(f"{line}; re-baseline when convenient; numbers now, as information:")
            for r in (r for r in info if r["info"] == line):
                numbers = ", ".join(f"{m} {r['metrics'][m] * 100:.1f} (recorded "
                                    f"{r['recorded'][m] * 100:.1f})"
                                    for m in ("recall_at_k", "budget_recall") if m in r["recorded"])
                tr.write_line(f"  {r['strategy']} {r['retriever']} {r['query_set']}: {numbers}")

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter) -> None:
        tr = terminalreporter
        if not (self.rows or self.written or self.problems or self.error or self.held_back):
            return
        tr.section("chunkeval")
        self._write_comparison(tr)
        corpora = {(r["corpus"]["name"], r["corpus"]["fingerprint"]) for r in self.rows}
        for name, fingerprint in sorted(corpora):
            tr.write_line(f"corpus {name} (fingerprint {fingerprint})")
        if self.rows and self.state.session.left_out:
            tr.write_line(self.state.session.left_out)
        found = [reported.from_json(p) for p in self.problems]
        for line in reported.summary(found):
            tr.write_line(f"problem: {line}")
        failing = reported.strict_failure(found) if self.state.session.config.strict else None
        if failing:
            tr.write_line(f"{failing}; the session fails")
        table = [r for r in self.rows if "verdicts" in r]
        if table:
            tr.write_line(format_summary(table, self.state.session.config.alpha,
                                         every_row=self.config.option.verbose > 0))
        for reason in dict.fromkeys(r["not_gated"] for r in self.rows if "not_gated" in r):
            tr.write_line(f"not gated: {reason}")
        if self.error:
            tr.write_line(self.error, red=True)
        for r in table:
            if "chunks_changed" not in r:
                continue
            within = all(v["status"] != "regressed" for v in r["verdicts"])
            params = r["chunks_changed"]
            what = ("params unchanged" if params["params"] == params["now"] else
                    f"params {params['params']} -> {params['now']}")
            tr.write_line(f"{r['strategy']} {r['retriever']} {r['query_set']}: chunks changed, "
                          f"{'metrics within bounds' if within else 'metrics regressed'} "
                          f"({what})")
        if self.held_back:
            tr.write_line(f"baselines NOT recorded for {', '.join(self.held_back)}: it failed "
                          "its contract, its invariants or a retriever in this session; fix "
                          "it and record again", red=True)
        if self.written:
            tr.write_line(f"baselines written: {self.written}")
            if self.stale:
                tr.write_line("baseline entries for strategies not registered in this run "
                              f"(kept; remove them by hand if the strategy is gone): "
                              f"{', '.join(self.stale)}")
        regressed = {r["strategy"] for r in table
                     if any(v["status"] == "regressed" for v in r["verdicts"])}
        improved = [(r, v) for r in table if r["strategy"] not in regressed
                    for v in r["verdicts"] if v["status"] == "improved"]
        if improved:
            tr.write_line(f"{len(improved)} metric(s) improved beyond the noise bounds; consider "
                          "`pytest --update-baselines` to raise the bar:")
            for r, v in improved:
                tr.write_line(f"  {r['strategy']} {r['retriever']} {r['query_set']} "
                              f"{v['metric']} {v['baseline'] * 100:.1f} -> "
                              f"{v['value'] * 100:.1f}")


def format_summary(rows: list[dict], alpha: float = DEFAULT_TOLERANCE.alpha,
                   every_row: bool = False) -> str:
    """The summary's table, answer first: the cases that regressed, then those that improved,
    then one line counting the cases that are ok (with `every_row`, pytest's -v, their rows
    too). A row holds Recall@k and budget recall (baseline, now, difference and its interval,
    in points) and the verdict, naming every metric that moved beyond its bounds; each
    interval's level in the header (or at the interval, when they differ), and once why it is
    wider than 95%. Columns are as wide as the longest name in them."""
    order = {"regressed": 0, "improved": 1, "ok": 2}
    shown = [v for r in rows for v in r["verdicts"]
             if v["metric"] in ("recall_at_k", "budget_recall")]
    levels = {level(v.get("confidence", 0.95)) for v in shown}
    one = levels.pop() if len(levels) == 1 else None
    width = 23 if one is None else 17  # an interval, and its level when they differ

    def cell(v: dict | None) -> str:
        if v is None:
            return " " * (20 + width)
        ci = f"[{v['low'] * 100:+.1f}, {v['high'] * 100:+.1f}]"
        if one is None:
            ci += f" {level(v.get('confidence', 0.95)).removesuffix(' CI')}"
        return (f"{v['baseline'] * 100:>6.1f}{v['value'] * 100:>6.1f}{v['diff'] * 100:>+7.1f} "
                f"{ci:<{width}}")

    def status(r: dict) -> tuple[int, str]:
        worst = min(order[v["status"]] for v in r["verdicts"])
        name = next(s for s, i in order.items() if i == worst)
        moved = [v["metric"] for v in r["verdicts"] if v["status"] == name]
        return worst, name if name == "ok" else f"{name} ({', '.join(moved)})"

    wide = [max([len(header)] + [len(str(r[key])) for r in rows]) + 2
            for key, header in (("strategy", "strategy"), ("retriever", "retriever"),
                                ("query_set", "query set"))]

    def names(*cells) -> str:
        return "".join(f"{c:<{w}}" for c, w in zip(cells, wide))

    group = f"{'base':>6}{'now':>6}{'diff':>7} {one or 'CI (level)':<{width}}"
    head = (f"{'':<{sum(wide)}}{'Recall@k':<{len(group) + 1}}budget recall\n"
            f"{names('strategy', 'retriever', 'query set')}{group} {group} verdict")
    ranked = sorted(rows, key=lambda r: (status(r)[0], r["query_set"], r["strategy"],
                                         r["retriever"]))
    fine = [r for r in ranked if status(r)[0] == order["ok"]]
    # no header over no rows: a run where every case is ok is one line
    lines = [head, "-" * len(head.splitlines()[-1])] if every_row or len(fine) < len(rows) \
        else []
    for r in ranked if every_row else [r for r in ranked if r not in fine]:
        by = {v["metric"]: v for v in r["verdicts"]}
        lines.append(f"{names(r['strategy'], r['retriever'], r['query_set'])}"
                     f"{cell(by.get('recall_at_k'))} {cell(by.get('budget_recall'))} "
                     f"{status(r)[1]}")
    if fine and not every_row:
        lines.append(f"{len(fine)} of {len(rows)} cases ok: every gated metric within its "
                     "bounds (-v lists them)")
    note = family_note((v.get("confidence", 0.95) for v in shown), alpha)
    return "\n".join(lines + ([note] if note else []))
