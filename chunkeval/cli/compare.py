"""`chunkeval compare`: two strategies on the same queries, or the gate against a revision."""

from __future__ import annotations

import sys

from .. import strategies
from ..errors import EXIT_NOT_COMPARED, BaselineError, ConfigError, StrategyFailed
from ..gate import baselines
from ..results import BaselineEntry
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
    from ..gate.base import BaseRun, head, measuring_settings
    from ..gate.outcome import decide
    from ..plugin import format_summary
    from ..report.comparison import compared_line

    run = BaseRun(session.config.root, revision, measuring_settings(session.config))
    try:
        evaluation = session.evaluation
        print(session.corpus_line, flush=True)
        side = run.side()
    except BaselineError as e:  # the revision could not be measured: nothing to compare
        print(f"chunkeval: not compared: {e}", file=sys.stderr)
        return EXIT_NOT_COMPARED
    finally:
        run.close()
    rows, new, failures = [], set(), 0
    whose = "this branch's" if head(session.config.root) else "this run's"
    for spec in session.query_specs():
        qs = session.query_set(spec)
        if not session.power(spec).gates:
            print(f"not gated: {session.power(spec).reason()}")
            continue
        for s in session.strategies:
            if s in side.failed:
                print(f"chunkeval: not compared: at {side.label}: {side.failed[s]}",
                      file=sys.stderr)
                continue
            for r in session.plan[s]:
                entry = side.baseline.entry(s, r, qs.name)
                same = baselines.key(s, r, qs.name) in side.same
                if entry is None and not same:
                    new.add(s)
                    continue
                try:
                    result = evaluation.result(s, r, spec)
                except StrategyFailed as e:
                    print(f"chunkeval: failed: {e}", file=sys.stderr)
                    failures += 1
                    continue
                if same:  # chunkeval's own code on both sides: one result
                    entry = BaselineEntry.from_result(result, evaluation.settings.complete_at)
                outcomes = decide(result, entry, evaluation.settings.complete_at,
                                  session.tolerance_for(s))
                rows.append({"strategy": s, "retriever": r, "query_set": qs.name,
                             "verdicts": [o.to_json() for o in outcomes],
                             "against": side.label, "documents": len(session.corpus),
                             "questions": len(qs), "whose": whose})
    if rows:
        print(compared_line(rows))
        print(format_summary(rows, session.config.alpha))
    if new:
        print(f"new since {side.label} (not gated): {', '.join(sorted(new))}")
    gone = sorted(set(side.strategies) - set(session.strategies))
    if gone:
        print(f"removed since {side.label}: {', '.join(gone)}")
    regressed = any(v["status"] == "regressed" for r in rows for v in r["verdicts"])
    if regressed or failures:
        return 1
    return 0 if rows or (new and not side.failed) else EXIT_NOT_COMPARED
