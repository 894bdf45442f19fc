"""The controller's side of a session: collect the rows the tests report (from every xdist
worker), write the baselines, results, pages and job summary, and print the summary
(`chunkeval.report.summary`)."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import pytest

from .. import problems as reported
from .. import strategies
from ..errors import EXIT_NOT_COMPARED, ChunkevalError
from ..gate.baselines import Record, update_file
from ..store import atomic_write
from .state import HELD_BACK, NOT_COMPARED, PROBLEMS, PROPERTY, State

if TYPE_CHECKING:
    from ..report.summary import Ended


class Summary:
    """The controller's side, registered as a plugin of its own: the rows every test
    reports, the baselines written once at the end, the files and the terminal summary."""

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
        # failed with no verdict to show: their strategy or retriever failed, or nothing
        # was there to compare them with; the table's count of cases leaves them out
        self.unjudged: set[str] = set()

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.collect(report)

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.finish(session)

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter) -> None:
        self.show(terminalreporter)

    def collect(self, report: pytest.TestReport) -> None:
        """A test's row, problems and failures, from any worker."""
        if report.failed:
            self.failed_tests.add(report.nodeid)
            if any(name in (HELD_BACK, NOT_COMPARED) for name, _ in report.user_properties):
                self.unjudged.add(report.nodeid)
        for name, value in report.user_properties:
            if name == NOT_COMPARED:
                self.not_compared.add(report.nodeid)
            if name == PROPERTY and report.when == "call":
                self.rows.append(json.loads(value))
            elif name == PROBLEMS and report.when == "call":
                self.problems += [p for p in json.loads(value) if p not in self.problems]
            elif name == HELD_BACK and report.when == "call":
                self.failed.add(tuple(json.loads(value)))

    def finish(self, session: pytest.Session) -> None:
        """The baselines, the exit code, and the files the settings ask for."""
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
            from ..report import render_comparison_html

            atomic_write(page, render_comparison_html(self.rows))
        if page and any("retrieved" in r for r in self.rows):
            from ..report import queries_page

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
        if not (self.unjudged or any(k in r for r in self.rows for k in shown)) or not (
                step or self.state.session.config.markdown):
            return
        from ..report.comparison import render_summary_markdown

        text = render_summary_markdown(self.rows, self.state.session.config.alpha,
                                       len(self.unjudged))
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

    def ended(self) -> Ended:
        from ..report.summary import Ended

        config = self.state.session.config
        return Ended(self.rows, self.problems, list(self.state.strategies), config.alpha,
                     config.strict, self.state.session.left_out,
                     self.config.option.verbose > 0, self.error, self.held_back, self.written,
                     self.stale, len(self.unjudged))

    def shown(self) -> bool:
        """Whether the session has anything of chunkeval's to say."""
        return bool(self.rows or self.written or self.problems or self.error or self.held_back
                    or self.unjudged)

    def show(self, terminalreporter) -> None:
        # Decided before the report is imported: a project's pytest run with no chunkeval
        # tests would otherwise import it, and numpy under it, at the end of every session.
        if not self.shown():
            return
        from ..report.summary import terminal_lines

        terminalreporter.section("chunkeval")
        for line, red in terminal_lines(self.ended()):
            if red:
                terminalreporter.write_line(line, red=True)
            else:
                terminalreporter.write_line(line)
