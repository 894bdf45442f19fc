"""`chunkeval compare`: two strategies on the same queries, or the gate against a revision."""

from __future__ import annotations

import sys

from .. import strategies
from ..errors import EXIT_NOT_COMPARED, BaselineError, ConfigError
from ..retrieval import load_retriever
from ..session import Session, read_results
from .common import session_of


def compare_command(args) -> int:
    from ..report.pair import PairedComparison

    session = session_of(args)
    if session.config.base and args.a is None:
        return _compare_base(session, session.config.base)
    if args.b is None:
        raise ConfigError("compare needs two strategies (chunkeval compare A B), or a base "
                          "revision to gate the configured ones against (--base REV)")
    retriever = args.compared_retriever
    if ":" in retriever:
        retriever = load_retriever(retriever, session.config.root)[0].name
    names = (args.a, args.b)
    if args.results:
        compared = PairedComparison.from_results(read_results(args.results), args.results,
                                                 names, retriever, args.query_set)
    else:
        for name in names:
            strategies.get(name)
        evaluation = session.evaluation
        print(session.corpus_line)
        spec = args.query_set or max(evaluation.query_specs,  # the largest set
                                     key=lambda q: len(evaluation.query_set(q)))
        a, b = (evaluation.result(name, retriever, spec) for name in names)
        compared = PairedComparison(names, a, b, retriever, a.query_set,
                                    evaluation.settings.complete_at)
    print(compared.to_text())
    return 0


def _compare_base(session: Session, revision: str) -> int:
    """The gate of every configured case against the code at `revision`, as `pytest
    --chunkeval-base REV` judges it: 0 no regression, 1 a regression or a failure here,
    EXIT_NOT_COMPARED when nothing could be compared."""
    from ..against_base import AgainstBase
    from ..gate.base import BaseRun, measuring_settings
    from ..report.summary import format_summary, new_and_gone_lines
    from ..report.comparison import compared_line

    run = BaseRun(session.config.root, revision, measuring_settings(session.config))
    try:
        session.evaluation  # this side's corpus and query sets load first
        print(session.corpus_line, flush=True)
        side = run.side()
    except BaselineError as e:  # the revision could not be measured: nothing to compare
        print(f"chunkeval: not compared: {e}", file=sys.stderr)
        return EXIT_NOT_COMPARED
    finally:
        run.close()
    judged = AgainstBase.judge(session, side)
    for stream, line in judged.said:
        print(line, file=sys.stderr if stream == "err" else sys.stdout)
    if judged.rows:
        print(compared_line(judged.rows))
        # every row: compare has no -v to ask for the ok ones, and is asked for them all
        print(format_summary(judged.rows, session.config.alpha, every_row=True))
    for line in new_and_gone_lines(judged.label, judged.new, judged.gone):
        print(line)
    return judged.status()
