"""What every command shares: its session, its --out folder, the results it writes and the
problems and failures it reports."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .. import config, store
from ..errors import ConfigError, Problem
from ..problems import strict_failure, summary as problem_summary
from ..results import Results
from ..session import Session


def session_of(args, check: bool = True) -> Session:
    """The project's settings with this command's options over them; `check`: every setting
    resolved now."""
    session = Session(config.load(command_line=config.given(args)))
    return session.check() if check else session


def out_dir(out: str) -> Path:
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"--out {path}: exists and is not a directory")
    return path


def write_results(results: Results, out: Path, pages: dict[str, str] | None = None
                   ) -> dict[str, Path]:
    """results.json, the reports and `pages` (more files by name) into `out`, together: all
    rendered and written aside first, so a failure leaves the previous run's files whole."""
    from .. import report

    pages = pages or {}
    files = {"results.json": json.dumps(results.to_json(), ensure_ascii=False) + "\n",
             **report.render_reports(results, next(iter(pages), None)), **pages}
    written = store.write_together(out, files)
    return {"markdown": written["report.md"], "html": written["report.html"],
            **{name.split(".")[0]: written[name] for name in pages}}



def report_problems(problems: list[Problem], strict: bool) -> int:
    """One warning line per kind of problem; under --strict, 1 when one changes what is
    measured."""
    for line in problem_summary(problems):
        print(f"chunkeval: warning: {line}", file=sys.stderr)
    failing = strict_failure(problems) if strict else None
    if failing:
        print(f"chunkeval: {failing}; failing", file=sys.stderr)
        return 1
    return 0


def report_failures(failures, traceback: bool | None, kept: str = "results.json") -> int:
    """Each strategy that could not be scored, one line (and its frames with --traceback;
    None where the command has no such option, and `kept` keeps them); 1 when there is
    one: the rest of the results are written, but the run did not succeed."""
    for f in failures:
        print(f"chunkeval: failed: {f.message}", file=sys.stderr)
        if traceback and f.detail:
            print(f.detail, file=sys.stderr)
    if failures:
        shown = ("" if traceback else " (--traceback shows where in your code)"
                 if traceback is not None else f" ({kept} keeps where in your code)")
        print(f"chunkeval: {len(failures)} strategy result(s) not scored{shown}",
              file=sys.stderr)
        return 1
    return 0
