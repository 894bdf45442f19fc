"""The pytest plugin: options, test items, fixtures, baselines and the summary.

Registered as the `chunkeval` pytest11 entry point, so a project that installs chunkeval
gets it. Settings come from `chunkeval.config` (command line, ini, `[tool.chunkeval]`).

With a `[tool.chunkeval]` section in the project's pyproject.toml, the plugin adds its own
items to the run, collected from that file, so the project needs no test module:

- `test_recall[STRATEGY-RETRIEVER-QUERYSET]`: every metric against the baseline;
- `test_cut_rate[STRATEGY-QUERYSET]`: for every strategy that keeps structure;
- `test_invariants[STRATEGY]`: hypothesis-generated documents (`chunkeval.testing`), for
  the project's own splitters.

A project that prefers its own test modules asks for the fixtures instead:
`retrieval_case`, `cut_case` and `strategy_name` are parametrised over the configured
matrix, and `chunkeval` is a checker (`check_retrieval(case)`, `check_cut_rate(case)`).

Results travel as test-report user properties, so the controller of an xdist run sees every
worker's numbers; only the controller writes the baseline file and the summary.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from . import config as chunkeval_config
from . import strategies
from .baselines import (UPDATE_MODES, Baseline, BaselineError, baseline_path,
                        check_same_retriever, compare, corpus_identity, first_span, update_file)
from .cache import atomic_write
from .config import SETTINGS, ConfigError
from .model import InputError

PROPERTY = "chunkeval"
PROBLEMS = "chunkeval-problems"
STATE = pytest.StashKey["State"]()


def _dest(name: str) -> str:
    return "chunkeval_" + name


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("chunkeval", "chunkeval: chunking metrics as tests (each also an "
                                         "ini setting chunkeval_NAME and a [tool.chunkeval] key)")
    for s in SETTINGS:
        listed = s.kind in ("list", "paths")
        help = s.help + (" (comma-separated)" if listed else "")
        if s.flag and s.kind == "bool":  # on by default: the option turns it off
            group.addoption(s.pytest_option, dest=_dest(s.name), action="store_const",
                            const=not s.default, default=None,
                            help=f"turn off (default on): {help}" if s.default else help)
        elif s.flag:
            group.addoption(s.pytest_option, dest=_dest(s.name), default=None,
                            metavar=s.name.upper(), help=help)
        parser.addini(s.ini, type="args" if listed else "string", default=None, help=s.help)
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
        cfg = load_config(config)
        names = cfg.strategy_names()
        cfg.settings()  # a bad length function is a usage error now, not in every test
        state = State(config, cfg, names, cfg.retriever_plan(names))
        from .shard import from_config
        state.shard, state.timings = from_config(cfg)
    except (ConfigError, InputError) as e:
        raise pytest.UsageError(f"chunkeval: {e}") from None
    config.stash[STATE] = state
    if state.items and config.args_source == pytest.Config.ArgsSource.TESTPATHS:
        # testpaths name the project's test folders; the items live in pyproject.toml.
        pyproject = str(cfg.root / "pyproject.toml")
        if pyproject not in config.args:
            config.args.append(pyproject)
    # Under xdist, keep every test of one strategy on one worker so its chunks and indexes
    # are built once, not once per worker.
    if getattr(config.option, "dist", "no") == "load":
        config.option.dist = "loadgroup"
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(Summary(config, state), "chunkeval-summary")


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


@dataclass(frozen=True)
class Case:
    strategy: str
    retriever: str | None
    query_set: str  # a builder name or a JSONL path, as configured

    @property
    def id(self) -> str:
        parts = [self.strategy, self.retriever, Path(self.query_set).stem]
        return "-".join(p for p in parts if p)

    @property
    def group(self) -> str:
        return f"{self.strategy}|{self.query_set}"


# -- session state ----------------------------------------------------------------------------
class ChunkevalError(Exception):
    """The corpus or a query set cannot be had; the message says what to do."""


class State:
    """What one session (or one xdist worker) builds once: corpus, evaluation, baseline."""

    def __init__(self, config: pytest.Config, cfg: chunkeval_config.Config,
                 strategy_names: list[str], plan: dict[str, list[str]]):
        self.config, self.cfg = config, cfg
        self.strategies, self.plan = strategy_names, plan  # plan: strategy -> retrievers
        self.items = cfg.configured and cfg.items
        self.update = config.getoption("update_baselines")
        self.tolerance = cfg.tolerance()  # a bad gate is a usage error here
        self._corpus = self._evaluation = self._baseline = None
        self.problems_sent = False
        self.pending: Counter[str] = Counter()  # group -> tests still to run here
        self.shard = self.timings = None  # this session's shard.Shard and its cost timings

    @property
    def corpus(self):
        if self._corpus is None:
            from .corpus import CorpusError, load_corpus
            try:
                self._corpus = load_corpus(self.cfg.corpus,
                                           max_document_mb=self.cfg.max_document_mb)
            except (CorpusError, InputError) as e:
                raise ChunkevalError(f"chunkeval: cannot load the corpus {self.cfg.corpus}: "
                                     f"{e}") from None
        return self._corpus

    @property
    def evaluation(self):
        if self._evaluation is None:
            from .evaluate import Evaluation
            try:
                self._evaluation = Evaluation(self.corpus, self.cfg.settings(),
                                              query_specs=self.cfg.query_sets or None,
                                              result_cache=self.cfg.result_cache)
                self._evaluation.analyzer  # a bad name fails here, once
            except (InputError, ValueError, ConfigError) as e:
                raise ChunkevalError(f"chunkeval: {e}") from None
        return self._evaluation

    def query_specs(self) -> list[str]:
        """Configured query sets, else every builder that yields queries on the corpus (the
        CLI's default too), which needs the corpus."""
        return list(self.cfg.query_sets) or self.evaluation.query_specs

    def query_set(self, spec: str):
        try:
            return self.evaluation.query_set(spec)
        except InputError as e:
            raise ChunkevalError(f"chunkeval: query set {e}") from None

    def tolerance_for(self, strategy: str):
        """Bonferroni over the strategy's family: every gated comparison of it in this session
        (its retrievers x query sets x gated metrics), so that a harmless change fails any of
        them with probability at most alpha."""
        family = len(self.plan[strategy]) * len(self.query_specs()) * len(self.tolerance.gated)
        return self.cfg.tolerance(family)

    def problems(self) -> list[str]:
        found = [str(p) for p in self.corpus.problems]
        for spec in self.query_specs():
            found += [str(p) for p in self.query_set(spec).problems]
        return found

    def cases(self) -> tuple[list[Case], list[Case]]:
        specs = self.query_specs()
        retrieval = [Case(s, r, q) for q, s in itertools.product(specs, self.strategies)
                     for r in self.plan[s]]
        structured = [s for s in self.strategies if strategies.get(s).keeps_structure]
        cut = [Case(s, None, q) for q, s in itertools.product(specs, structured)]
        return retrieval, cut

    @property
    def baseline_path(self) -> Path:
        return baseline_path(self.cfg.baselines, self.corpus.name)

    @property
    def corpus_record(self) -> dict:
        from .evaluate import corpus_summary
        return {**corpus_summary(self.corpus),
                "identity": corpus_identity(self.cfg.corpus, self.cfg.root)}

    @property
    def baseline(self) -> Baseline:
        if self._baseline is None:
            try:
                self._baseline = Baseline.load(self.baseline_path)
            except InputError as e:
                raise ChunkevalError(str(e)) from None
        return self._baseline


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
            retrieval, cut = state.cases()
        except ChunkevalError as e:
            raise pytest.UsageError(str(e)) from None
        for name, cases in (("retrieval_case", retrieval), ("cut_case", cut)):
            if name in wanted:
                metafunc.parametrize(name, cases, ids=[c.id for c in cases])


def _case(item: pytest.Item) -> Case | None:
    if isinstance(item, CaseItem):
        return item.case
    spec = getattr(item, "callspec", None)
    case = spec.params.get("retrieval_case") or spec.params.get("cut_case") if spec else None
    return case if isinstance(case, Case) else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        case = _case(item)
        if case is not None and not isinstance(item, CaseItem):
            item.add_marker(pytest.mark.xdist_group(case.group))
            item.add_marker(pytest.mark.corpus)
    state = config.stash.get(STATE, None)
    if state is not None and state.shard is not None:
        _keep_shard(config, state, items)


def _keep_shard(config: pytest.Config, state: "State", items: list[pytest.Item]) -> None:
    """Deselect what another shard runs: a strategy x query set case goes where the cost plan
    puts its task (the same plan as `chunkeval run --shard`), any other test by a hash of
    its id."""
    from . import shard
    part, cases = state.shard, {item: _case(item) for item in items}
    mine: set = set()
    if any(cases.values()):
        tasks = [(q, s) for q in state.query_specs() for s in state.strategies]
        try:
            mine = set(shard.select(part, state.evaluation, tasks, state.timings))
        except ChunkevalError as e:
            raise pytest.UsageError(str(e)) from None
    keep = [item for item in items
            if ((c.query_set, c.strategy) in mine if (c := cases[item])
                else shard.item_shard(item.nodeid, part.count) == part.index)]
    if len(keep) < len(items):
        kept = set(keep)
        config.hook.pytest_deselected(items=[i for i in items if i not in kept])
        items[:] = keep


def pytest_collection_finish(session: pytest.Session) -> None:
    # How many tests use each strategy's chunks and indexes on each query set: once they have
    # all run here, those are released, so memory does not grow with the number of
    # strategies. (Under xdist a group's tests all go to one worker.)
    state = session.config.stash.get(STATE, None)
    if state is not None:
        state.pending = Counter(c.group for item in session.items if (c := _case(item)))


def pytest_runtest_teardown(item: pytest.Item) -> None:
    state = item.config.stash.get(STATE, None)
    case = _case(item)
    if state is None or case is None or case.group not in state.pending:
        return
    state.pending[case.group] -= 1
    if state.pending[case.group] == 0 and state._evaluation is not None:
        state._evaluation.release(case.strategy, case.query_set)


@pytest.fixture(scope="session")
def chunkeval_state(request: pytest.FixtureRequest) -> State:
    return _state(request.config)


@pytest.fixture(scope="session")
def corpus(chunkeval_state: State):
    return _or_fail(lambda: chunkeval_state.corpus)


@pytest.fixture(scope="session")
def evaluation(chunkeval_state: State):
    return _or_fail(lambda: chunkeval_state.evaluation)


def _or_fail(get):
    """get(), or a test failure saying why (raised outside the except block, so that the
    message is not printed a second time as the context of the failure)."""
    try:
        return get()
    except ChunkevalError as e:
        message = str(e)
    pytest.fail(message, pytrace=False)


@pytest.fixture
def chunkeval(chunkeval_state: State, request: pytest.FixtureRequest) -> "Checker":
    return Checker(chunkeval_state, request.node)


# -- the items chunkeval adds itself ------------------------------------------------------------
def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    state = parent.config.stash.get(STATE, None)
    if state is not None and state.items and file_path == state.cfg.root / "pyproject.toml":
        return ChunkevalFile.from_parent(parent, path=file_path)
    return None


class ChunkevalFile(pytest.File):
    """The project's pyproject.toml, collected as the home of chunkeval's own items."""

    def collect(self):
        state = _state(self.config)
        try:
            retrieval, cut = state.cases()
        except ChunkevalError as e:
            raise self.CollectError(str(e)) from None
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
        self.add_marker(pytest.mark.xdist_group(case.group))
        self.add_marker(pytest.mark.corpus)

    def runtest(self) -> None:
        getattr(Checker(_state(self.config), self), self.check)(self.case)

    def reportinfo(self):
        return self.path, None, self.name


class InvariantsItem(pytest.Item):
    """The splitter's invariants on hypothesis-generated documents."""

    def __init__(self, *, strategy: str, **kw):
        super().__init__(**kw)
        self.strategy = strategy

    def runtest(self) -> None:
        from hypothesis import given, settings

        from .testing import assert_keeps_invariants, documents
        strategy = strategies.get(self.strategy)

        # The project's hypothesis profile decides how many examples; a splitter's speed on
        # a shared CI machine must not fail it, so no deadline.
        @settings(deadline=None)
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

    def _emit(self, row: dict) -> None:
        self.node.user_properties.append((PROPERTY, json.dumps(row, ensure_ascii=False)))

    def _emit_problems(self) -> None:
        # Once per process: the controller of an xdist run only sees what reports carry.
        if not self.state.problems_sent:
            self.state.problems_sent = True
            self.node.user_properties.append((PROBLEMS, json.dumps(self.state.problems())))

    def _where(self) -> str:
        c = self.state.corpus
        return f"corpus {c.name!r} ({c.fingerprint})"

    def _comparable(self, query_set) -> Baseline:
        st = self.state
        baseline = st.baseline
        if not baseline.exists:
            pytest.fail(f"no baseline file at {baseline.path}: run `pytest --update-baselines` "
                        "to record one from this run, then commit it", pytrace=False)
        try:
            baseline.check_comparable(st.corpus_record, st.evaluation.settings.to_json(),
                                      query_set.name, query_set.fingerprint)
        except BaselineError as e:
            raise ChunkevalError(str(e)) from None
        return baseline

    def check_retrieval(self, case: Case) -> None:
        _or_fail(lambda: self._check_retrieval(case))

    def _check_retrieval(self, case: Case) -> None:
        st = self.state
        ev = st.evaluation
        qs = st.query_set(case.query_set)
        self._emit_problems()
        result = ev.result(case.strategy, case.retriever, case.query_set)
        corpus = st.corpus_record
        row = {"strategy": case.strategy, "retriever": case.retriever, "query_set": qs.name,
               "corpus": {k: corpus[k] for k in ("name", "fingerprint")},
               "metrics": {m: v["value"] for m, v in result["metrics"].items()}}
        if st.update:
            row["record"] = {"path": str(st.baseline_path), "corpus": corpus,
                             "settings": ev.settings.to_json(),
                             "query_sets": {qs.name: {"fingerprint": qs.fingerprint}},
                             "result": result_for_baseline(result)}
            self._emit(row)
            return
        baseline = self._comparable(qs)
        entry = baseline.entry(case.strategy, case.retriever, qs.name)
        what = f"strategy {case.strategy!r}, retriever {case.retriever!r}, query set {qs.name!r}"
        if entry is None:
            pytest.fail(f"no baseline entry for {what} in {baseline.path}: run `pytest "
                        "--update-baselines` to record it, then commit the file", pytrace=False)
        try:
            check_same_retriever(result, entry, str(baseline.path))
        except BaselineError as e:
            raise ChunkevalError(f"{what}: {e}") from None
        try:
            verdicts = compare(result, entry, ev.settings.complete_at,
                               st.tolerance_for(case.strategy))
        except (KeyError, ValueError) as e:
            raise ChunkevalError(f"{what}: the entry in {baseline.path} does not match this "
                                 f"run ({e!s}); re-record it with `pytest --update-baselines`"
                                 ) from None
        from . import diffs
        queries = diffs.per_query(result, entry, qs)
        row["verdicts"] = [v.to_json() for v in verdicts]
        row["per_query"] = queries
        if entry.get("chunks_hash") and entry["chunks_hash"] != result["chunks"].get("hash"):
            row["chunks_changed"] = {"params": entry.get("params"),
                                     "now": strategies.get(case.strategy).describe()["params"]}
        self._emit(row)
        bad = [v for v in verdicts if v.status == "regressed"]
        if bad:
            lines = "\n  ".join(v.describe() for v in bad)
            pytest.fail(f"{what} regressed on {self._where()}:\n  {lines}\n"
                        f"{diffs.describe(queries, qs.view)}", pytrace=False)

    def check_cut_rate(self, case: Case) -> None:
        _or_fail(lambda: self._check_cut_rate(case))

    def _check_cut_rate(self, case: Case) -> None:
        st = self.state
        qs = st.query_set(case.query_set)
        self._emit_problems()
        cut = st.evaluation.chunked(case.strategy, case.query_set).cut
        value = float(cut["value"])
        what = f"strategy {case.strategy!r} on query set {qs.name!r}"
        problems = []
        if value > st.tolerance.cut_ceiling:
            problems.append(f"cut rate {value * 100:.1f}% is above the ceiling "
                            f"{st.tolerance.cut_ceiling * 100:.1f}% ({cut['cut']} of "
                            f"{cut['blocks']} table/pre blocks cut)")
        if not st.update:
            baseline = self._comparable(qs)
            # The cut rate does not depend on the retriever: any recorded one holds it.
            entry = next((e for r in baseline.retrievers(case.strategy, qs.name)
                          if (e := baseline.entry(case.strategy, r, qs.name)) is not None), None)
            if entry is None:
                pytest.fail(f"no baseline entry for {what} in {baseline.path}: run `pytest "
                            "--update-baselines`", pytrace=False)
            if value > entry["cut_rate"] + st.tolerance.cut_slack:
                problems.append(f"cut rate {value * 100:.1f}% rose from baseline "
                                f"{entry['cut_rate'] * 100:.1f}%")
        if problems:
            pytest.fail(f"{what} on {self._where()}: " + "; ".join(problems), pytrace=False)


def result_for_baseline(result: dict) -> dict:
    """Only what a baseline keeps: spans and texts stay out of the report stream."""
    keep = ("strategy", "retriever", "query_set", "metrics", "chunks", "retriever_version",
            "analyzer")
    return {k: result[k] for k in keep if k in result} | {
        "params": strategies.get(result["strategy"]).describe()["params"],
        "per_query": [{k: q[k] for k in ("coverage", "budget_coverage", "doc_hit", "rr", "ndcg")
                       if k in q} | {"first": first_span(q)} for q in result["per_query"]]}


# -- the controller's side: collect rows, write baselines, print the summary --------------------
class Summary:
    def __init__(self, config: pytest.Config, state: State):
        self.config, self.state = config, state
        self.rows: list[dict] = []
        self.problems: list[str] = []
        self.written: str | None = None
        self.error: str | None = None
        self.stale: list[str] = []

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for name, value in report.user_properties:
            if name == PROPERTY and report.when == "call":
                self.rows.append(json.loads(value))
            elif name == PROBLEMS and report.when == "call":
                self.problems += [p for p in json.loads(value) if p not in self.problems]

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.config.getoption("update_baselines"):
            self._write_baselines(session)
        if self.problems and self.state.cfg.strict and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        path = self.state.cfg.json
        if path:
            atomic_write(path, json.dumps({"rows": self.rows, "problems": self.problems},
                                          ensure_ascii=False, indent=1))
        page = self.state.cfg.html
        if page and any("verdicts" in r for r in self.rows):
            from .report import render_comparison_html
            atomic_write(page, render_comparison_html(self.rows))

    def _write_baselines(self, session: pytest.Session) -> None:
        records = [r["record"] for r in self.rows if "record" in r]
        if not records:
            return
        try:
            done = update_file(records[0]["path"], records,
                               self.config.getoption("update_baselines"),
                               identity=records[0]["corpus"].get("identity"),
                               tolerance=self.state.tolerance,
                               known_strategies=set(strategies.names()))
        except (InputError, BaselineError) as e:
            self.error = f"baselines NOT written: {e}"
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
            return
        self.written, self.stale = done.describe(), done.stale

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter) -> None:
        tr = terminalreporter
        if not self.rows and not self.written and not self.problems and not self.error:
            return
        tr.section("chunkeval")
        corpora = {(r["corpus"]["name"], r["corpus"]["fingerprint"]) for r in self.rows}
        for name, fingerprint in sorted(corpora):
            tr.write_line(f"corpus {name} (fingerprint {fingerprint})")
        for p in self.problems:
            tr.write_line(f"problem: {p}")
        if self.problems and self.state.cfg.strict:
            tr.write_line(f"{len(self.problems)} problem(s) in the input and strict mode: "
                          "the session fails")
        table = [r for r in self.rows if "verdicts" in r]
        if table:
            tr.write_line(format_summary(table))
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


def format_summary(rows: list[dict]) -> str:
    """One line a case: Recall@k and budget recall (baseline, now, difference and its
    interval, in points) and the worst verdict."""
    order = {"regressed": 0, "improved": 1, "ok": 2}

    def cell(v: dict | None) -> str:
        if v is None:
            return " " * 37
        ci = f"[{v['low'] * 100:+.1f}, {v['high'] * 100:+.1f}]"
        return (f"{v['baseline'] * 100:>6.1f}{v['value'] * 100:>6.1f}{v['diff'] * 100:>+7.1f} "
                f"{ci:<17}")

    names = f"{'strategy':<26}{'retriever':<10}{'query set':<16}"
    group = f"{'base':>6}{'now':>6}{'diff':>7} {'95% CI':<17}"
    head = f"{'':<52}{'Recall@k':<38}budget recall\n{names}{group} {group} verdict"
    lines = [head, "-" * len(head.splitlines()[-1])]
    for r in sorted(rows, key=lambda r: (r["query_set"], r["strategy"], r["retriever"])):
        by = {v["metric"]: v for v in r["verdicts"]}
        worst = min(r["verdicts"], key=lambda v: order[v["status"]])
        flagged = "" if worst["status"] == "ok" else f" ({worst['metric']})"
        lines.append(f"{r['strategy']:<26}{r['retriever']:<10}{r['query_set']:<16}"
                     f"{cell(by.get('recall_at_k'))} {cell(by.get('budget_recall'))} "
                     f"{worst['status']}{flagged}")
    return "\n".join(lines)
