"""The pytest plugin: options, session fixtures, parametrisation, baselines and the summary.

Registered as the `chunkeval` pytest11 entry point, so any repository that installs
chunkeval gets the options and fixtures. Tests ask for:

- `strategy_name`: parametrised over every registered strategy (outside ones included);
- `retrieval_case`: (strategy, retriever, query set) over the whole matrix;
- `cut_case`: (strategy, query set) over the structure-aware strategies;
- `chunkeval`: a checker (`check_retrieval(case)`, `check_cut_rate(case)`) that compares a
  case against the baseline file, or records it under `--update-baselines`;
- `corpus`, `evaluation`: the session's corpus and its lazy, memoised evaluation.

Results travel as test-report user properties, so the controller of an xdist run sees every
worker's numbers; only the controller writes the baseline file and the summary.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from . import strategies
from .baselines import (GATED, METRICS, Baseline, BaselineError, Tolerance, compare,
                        first_span)
from .cache import atomic_write
from .config import configured_splitters
from .model import InputError
from .retrieval import RETRIEVERS

PROPERTY = "chunkeval"
STRUCTURE_FAMILIES = ("structure", "prefix")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("chunkeval", "chunkeval: chunking metrics as tests")

    def option(name, ini_type=None, default=None, help="", **kw):
        group.addoption(f"--{name}", dest=name.replace("-", "_"), default=None, help=help, **kw)
        ini = name.replace("-", "_")
        parser.addini(ini, type=ini_type or "string", default=default, help=help)

    group.addoption("--splitter", action="append", default=[], metavar="MODULE:ATTR",
                    help="register an outside splitter (repeatable); it joins every metric "
                         "and invariant test. Also [tool.chunkeval] splitters in pyproject.toml "
                         "and the chunkeval_splitters ini setting.")
    parser.addini("chunkeval_splitters", type="linelist", default=[],
                  help="splitters to register, one MODULE:ATTR a line")
    group.addoption("--update-baselines", action="store_true", default=False,
                    help="record this run's metrics as the new baselines (written atomically "
                         "at the end of the session) instead of comparing against them")
    option("chunkeval-corpus", default="debian-ja", metavar="NAME|DIR",
           help="corpus to evaluate: 'debian-ja' (default) or a directory of HTML files")
    option("chunkeval-query-sets", ini_type="args", default=[], metavar="NAMES",
           help="query sets (comma-separated on the command line): builder names or JSONL "
                "files; default: faq-headings,section-titles on debian-ja, section-titles "
                "on any other corpus")
    option("chunkeval-strategies", ini_type="args", default=[], metavar="NAMES",
           help="only these strategies (comma-separated), in metric and invariant tests; "
                "default: all")
    option("chunkeval-retrievers", ini_type="args", default=[], metavar="NAMES",
           help="only these retrievers (comma-separated: bm25,lsa,hybrid); default: all")
    option("chunkeval-baselines", default="baselines", metavar="DIR",
           help="directory of baseline files, relative to the rootdir (default: baselines)")
    option("chunkeval-json", metavar="PATH", help="also write the summary table as JSON here "
                                                   "(with the per-query comparison of each case)")
    option("chunkeval-html", metavar="PATH",
           help="also write the comparison with the baseline as an HTML page here: verdicts "
                "and every query's coverage before and now")
    option("chunkeval-min-effect", default="0.02", metavar="X",
           help="smallest drop of a mean metric (0-1) that counts as a regression (default 0.02)")
    option("chunkeval-alpha", default="0.05", metavar="P",
           help="family-wise false-alarm level: the chance that a harmless change fails any "
                "of a strategy's gated comparisons (default 0.05)")
    option("chunkeval-gate", ini_type="args", default=[], metavar="METRICS",
           help="gated metrics (comma-separated); the others are reported only. Default: "
                "recall_at_k,budget_recall,complete_rate,doc_hit_at_k")
    option("chunkeval-cut-ceiling", default="0.25", metavar="X",
           help="absolute ceiling on the cut rate of structure-aware strategies (default 0.25)")


def _setting(config: pytest.Config, name: str):
    value = config.getoption(name)
    return value if value is not None else config.getini(name)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "corpus: needs the evaluated corpus (the default one is "
                                       "fetched on first use)")
    try:
        specs = [*configured_splitters(config.rootpath), *config.getini("chunkeval_splitters"),
                 *config.getoption("splitter")]
        for spec in dict.fromkeys(specs):
            strategies.load_splitter(spec)
    except (strategies.SplitterError, InputError) as e:
        raise pytest.UsageError(str(e)) from None
    for name in ("chunkeval_min_effect", "chunkeval_alpha", "chunkeval_cut_ceiling"):
        try:
            float(_setting(config, name))
        except (TypeError, ValueError):
            raise pytest.UsageError(f"--{name.replace('_', '-')}: expected a number, got "
                                    f"{_setting(config, name)!r}") from None
    _selected(config, "chunkeval_gate", list(METRICS))  # an unknown metric is a usage error
    # Under xdist, keep every test of one strategy on one worker so its chunks and indexes
    # are built once, not once per worker.
    if getattr(config.option, "dist", "no") == "load":
        config.option.dist = "loadgroup"
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(Summary(config), "chunkeval-summary")


def _listed(config: pytest.Config, name: str) -> list[str]:
    """A comma-separated command-line value, else the ini list, else []."""
    value = config.getoption(name)
    if value is not None:
        return [v.strip() for v in value.split(",") if v.strip()]
    return list(config.getini(name))


def _selected(config: pytest.Config, name: str, known: list[str]) -> list[str]:
    chosen = _listed(config, name) or known
    unknown = [c for c in chosen if c not in known]
    if unknown:
        raise pytest.UsageError(f"--{name.replace('_', '-')}: unknown {', '.join(unknown)}; "
                                f"known: {', '.join(known)}")
    return chosen


def _query_sets(config: pytest.Config) -> list[str]:
    configured = _listed(config, "chunkeval_query_sets")
    if configured:
        return configured
    corpus = str(_setting(config, "chunkeval_corpus"))
    return ["faq-headings", "section-titles"] if corpus == "debian-ja" else ["section-titles"]


@dataclass(frozen=True)
class Case:
    strategy: str
    retriever: str | None
    query_set: str

    @property
    def id(self) -> str:
        parts = [self.strategy, self.retriever, Path(self.query_set).stem]
        return "-".join(p for p in parts if p)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    config = metafunc.config
    names = _selected(config, "chunkeval_strategies", strategies.names())
    if "strategy_name" in metafunc.fixturenames:
        metafunc.parametrize("strategy_name", names)
    if "retrieval_case" in metafunc.fixturenames:
        rets = _selected(config, "chunkeval_retrievers", list(RETRIEVERS))
        cases = [Case(s, r, q) for q, s, r in
                 itertools.product(_query_sets(config), names, rets)]
        metafunc.parametrize("retrieval_case", cases, ids=[c.id for c in cases])
    if "cut_case" in metafunc.fixturenames:
        structured = [n for n in names if strategies.get(n).family in STRUCTURE_FAMILIES]
        cases = [Case(s, None, q) for q, s in itertools.product(_query_sets(config), structured)]
        metafunc.parametrize("cut_case", cases, ids=[c.id for c in cases])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        spec = getattr(item, "callspec", None)
        case = spec.params.get("retrieval_case") or spec.params.get("cut_case") if spec else None
        if isinstance(case, Case):
            item.add_marker(pytest.mark.xdist_group(f"{case.strategy}|{case.query_set}"))
            item.add_marker(pytest.mark.corpus)


# -- session state and fixtures -------------------------------------------------------------
class State:
    """What one session (or one xdist worker) builds once: corpus, evaluation, baseline."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self._corpus = self._evaluation = self._baseline = None
        self.update = config.getoption("update_baselines")
        gated = tuple(_selected(config, "chunkeval_gate", list(METRICS))
                      if _listed(config, "chunkeval_gate") else GATED)
        # The family: every gated comparison of one strategy in this session.
        family = (len(_selected(config, "chunkeval_retrievers", list(RETRIEVERS)))
                  * len(_query_sets(config)) * len(gated))
        self.tolerance = Tolerance(
            min_effect=float(_setting(config, "chunkeval_min_effect")),
            alpha=float(_setting(config, "chunkeval_alpha")), family=family, gated=gated,
            cut_ceiling=float(_setting(config, "chunkeval_cut_ceiling")))

    @property
    def corpus(self):
        if self._corpus is None:
            from .corpus import CorpusError, load_corpus
            try:
                self._corpus = load_corpus(str(_setting(self.config, "chunkeval_corpus")))
            except (CorpusError, InputError) as e:
                pytest.fail(f"chunkeval: cannot load the corpus: {e}", pytrace=False)
        return self._corpus

    @property
    def evaluation(self):
        if self._evaluation is None:
            from .evaluate import Evaluation
            self._evaluation = Evaluation(self.corpus, query_specs=_query_sets(self.config))
        return self._evaluation

    @property
    def baseline_path(self) -> Path:
        root = Path(self.config.rootpath) / str(_setting(self.config, "chunkeval_baselines"))
        return root / f"{_safe(self.corpus.name)}.json"

    @property
    def baseline(self) -> Baseline:
        if self._baseline is None:
            try:
                self._baseline = Baseline.load(self.baseline_path)
            except InputError as e:
                pytest.fail(str(e), pytrace=False)
        return self._baseline


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(name).name) or "corpus"


@pytest.fixture(scope="session")
def chunkeval_state(request: pytest.FixtureRequest) -> State:
    return State(request.config)


@pytest.fixture(scope="session")
def corpus(chunkeval_state: State):
    return chunkeval_state.corpus


@pytest.fixture(scope="session")
def evaluation(chunkeval_state: State):
    return chunkeval_state.evaluation


class Checker:
    def __init__(self, state: State, node: pytest.Item):
        self.state, self.node = state, node

    def _emit(self, row: dict) -> None:
        self.node.user_properties.append((PROPERTY, json.dumps(row, ensure_ascii=False)))

    def _comparable(self, query_set) -> Baseline:
        st = self.state
        ev = st.evaluation
        from .evaluate import corpus_summary
        baseline = st.baseline
        if not baseline.exists:
            pytest.fail(f"no baseline file at {baseline.path}: run `pytest --update-baselines` "
                        "to record one from this run, then commit it", pytrace=False)
        try:
            baseline.check_comparable(corpus_summary(st.corpus), ev.settings.to_json(),
                                      query_set.name, query_set.fingerprint)
        except BaselineError as e:
            pytest.fail(str(e), pytrace=False)
        return baseline

    def check_retrieval(self, case: Case) -> None:
        st = self.state
        ev = st.evaluation
        qs = ev.query_set(case.query_set)
        result = ev.result(case.strategy, case.retriever, case.query_set)
        row = {"strategy": case.strategy, "retriever": case.retriever, "query_set": qs.name,
               "metrics": {m: v["value"] for m, v in result["metrics"].items()}}
        if st.update:
            from .evaluate import corpus_summary
            row["record"] = {"corpus": corpus_summary(st.corpus), "settings": ev.settings.to_json(),
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
            verdicts = compare(result, entry, ev.settings.complete_at, st.tolerance)
        except (KeyError, ValueError) as e:
            pytest.fail(f"{what}: the entry in {baseline.path} does not match this run "
                        f"({e!s}); re-record it with `pytest --update-baselines`", pytrace=False)
        from . import diffs
        queries = diffs.per_query(result, entry, qs)
        row["verdicts"] = [v.to_json() for v in verdicts]
        row["per_query"] = queries
        self._emit(row)
        bad = [v for v in verdicts if v.status == "regressed"]
        if bad:
            lines = "\n  ".join(v.describe() for v in bad)
            pytest.fail(f"{what} regressed:\n  {lines}\n{diffs.describe(queries, qs.view)}",
                        pytrace=False)

    def check_cut_rate(self, case: Case) -> None:
        st = self.state
        ev = st.evaluation
        qs = ev.query_set(case.query_set)
        cut = ev.chunked(case.strategy, case.query_set).cut
        value = float(cut["value"])
        what = f"strategy {case.strategy!r} on query set {qs.name!r}"
        problems = []
        if value > st.tolerance.cut_ceiling:
            problems.append(f"cut rate {value:.4f} is above the ceiling "
                            f"{st.tolerance.cut_ceiling} ({cut['cut']} of {cut['blocks']} "
                            "table/pre blocks cut)")
        if not st.update:
            baseline = self._comparable(qs)
            # The cut rate does not depend on the retriever: any recorded one holds it.
            entry = next((e for r in RETRIEVERS
                          if (e := baseline.entry(case.strategy, r, qs.name)) is not None), None)
            if entry is None:
                pytest.fail(f"no baseline entry for {what} in {baseline.path}: run `pytest "
                            "--update-baselines`", pytrace=False)
            if value > entry["cut_rate"] + st.tolerance.cut_slack:
                problems.append(f"cut rate {value:.4f} rose from baseline {entry['cut_rate']:.4f}")
        if problems:
            pytest.fail(f"{what}: " + "; ".join(problems), pytrace=False)


def result_for_baseline(result: dict) -> dict:
    """Only what a baseline keeps: spans and texts stay out of the report stream."""
    return {k: result[k] for k in ("strategy", "retriever", "query_set", "metrics", "chunks")} | {
        "per_query": [{k: q[k] for k in ("coverage", "budget_coverage", "doc_hit", "rr", "ndcg")
                       if k in q} | {"first": first_span(q)} for q in result["per_query"]]}


@pytest.fixture
def chunkeval(chunkeval_state: State, request: pytest.FixtureRequest) -> Checker:
    return Checker(chunkeval_state, request.node)


# -- the controller's side: collect rows, write baselines, print the summary --------------------
class Summary:
    def __init__(self, config: pytest.Config):
        self.config = config
        self.rows: list[dict] = []
        self.written: str | None = None
        self.stale: list[str] = []

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        for name, value in report.user_properties:
            if name == PROPERTY:
                self.rows.append(json.loads(value))

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.config.getoption("update_baselines"):
            self._write_baselines()
        path = _setting(self.config, "chunkeval_json")
        if path:
            atomic_write(path, json.dumps({"rows": self.rows}, ensure_ascii=False, indent=1))
        page = _setting(self.config, "chunkeval_html")
        if page and any("verdicts" in r for r in self.rows):
            from .report import render_comparison_html
            atomic_write(page, render_comparison_html(self.rows))

    def _write_baselines(self) -> None:
        records = [r["record"] for r in self.rows if "record" in r]
        if not records:
            return
        name = _safe(records[0]["corpus"]["name"])
        root = Path(self.config.rootpath) / str(_setting(self.config, "chunkeval_baselines"))
        path = root / f"{name}.json"
        try:
            baseline = Baseline.load(path)
        except InputError:
            baseline = Baseline(path)  # unreadable: replaced whole by this run
        for rec in records:
            baseline.record(rec["corpus"], rec["settings"], rec["query_sets"], rec["result"])
        baseline.save()
        self.written = f"{path} ({len(records)} entries recorded, {len(baseline.data['entries'])} in the file)"
        self.stale = baseline.stale(set(strategies.names()))

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter) -> None:
        tr = terminalreporter
        if not self.rows and not self.written:
            return
        tr.section("chunkeval")
        table = [r for r in self.rows if "verdicts" in r]
        if table:
            tr.write_line(format_summary(table))
        if self.written:
            tr.write_line(f"baselines written: {self.written}")
            if self.stale:
                tr.write_line("baseline entries for strategies not registered in this run "
                              f"(kept; remove them by hand if the strategy is gone): "
                              f"{', '.join(self.stale)}")
        improved = [(r, v) for r in table for v in r["verdicts"] if v["status"] == "improved"]
        if improved:
            tr.write_line(f"{len(improved)} metric(s) improved beyond the noise bounds; consider "
                          "`pytest --update-baselines` to raise the bar:")
            for r, v in improved:
                tr.write_line(f"  {r['strategy']} {r['retriever']} {r['query_set']} "
                              f"{v['metric']} {v['baseline']:.4f} -> {v['value']:.4f}")


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
