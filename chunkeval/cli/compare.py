"""`chunkeval compare`: two strategies on the same queries, or the gate against a revision."""

from __future__ import annotations

import sys

from .. import strategies
from ..errors import EXIT_NOT_COMPARED, BaselineError, ConfigError, InputError, StrategyFailed
from ..gate import baselines
from ..results import BaselineEntry
from ..retrieval import load_retriever
from ..session import Session, read_results
from .common import session_of


def compare_command(args) -> int:
    from .. import report
    from ..stats import paired_bootstrap

    session = session_of(args)
    if session.config.base and args.a is None:
        return _compare_base(session, session.config.base)
    if args.b is None:
        raise ConfigError("compare needs two strategies (chunkeval compare A B), or a base "
                          "revision to gate the configured ones against (--base REV)")
    retriever = args.compared_retriever
    if ":" in retriever:
        retriever = load_retriever(retriever, session.config.root)[0].name
    if args.results:
        results = read_results(args.results)
        present = report.View(results).query_sets  # those with results, the largest first
        if not present:
            raise InputError(args.results, "holds no results")
        query_set = args.query_set or present[0]
        picked = {r.strategy: r for r in results.results
                  if r.retriever == retriever and r.query_set == query_set}
        missing = [s for s in (args.a, args.b) if s not in picked]
        if missing:
            raise InputError(args.results, f"no {retriever} results on {query_set!r} for "
                                           f"{', '.join(missing)}")
        a, b = picked[args.a], picked[args.b]
        if [q.id for q in a.per_query] != [q.id for q in b.per_query]:
            raise InputError(args.results, f"{args.a} and {args.b} were not measured on the same "
                                           f"queries of {query_set!r}")
        complete_at = results.settings.complete_at
    else:
        for name in (args.a, args.b):
            strategies.get(name)
        evaluation = session.evaluation
        print(session.corpus_line)
        spec = args.query_set or max(evaluation.query_specs,  # the largest set
                                     key=lambda q: len(evaluation.query_set(q)))
        a = evaluation.result(args.a, retriever, spec)
        b = evaluation.result(args.b, retriever, spec)
        query_set, complete_at = a.query_set, evaluation.settings.complete_at
    sa, sb = a.series(complete_at), b.series(complete_at)
    print(f"{args.a} - {args.b}, retriever {retriever}, query set {query_set} "
          f"({len(sa['coverage'])} queries; paired bootstrap, 2,000 resamples, seed 0)")
    for metric, src in (("recall@k", "coverage"), ("budget recall", "budget_coverage"),
                        ("complete rate", "complete"), ("doc hit@k", "doc_hit")):
        ci = paired_bootstrap(sa[src], sb[src])
        verdict = "difference shown" if ci.shows_difference else "no difference shown"
        print(f"  {metric:<14} {sa[src].mean()*100:6.1f}% vs {sb[src].mean()*100:6.1f}%  "
              f"diff {ci.diff*100:+5.1f} points, 95% CI [{ci.low*100:+.1f}, {ci.high*100:+.1f}]"
              f"  {verdict}")
    for name, r in ((args.a, a), (args.b, b)):  # what differs in the chunks themselves
        c = r.chunks
        print(f"  {name}: cut rate {r.cut_rate.value * 100:.1f}% ({r.cut_rate.cut} of "
              f"{r.cut_rate.blocks} table/pre blocks), {c.count:,} chunks, mean length "
              f"{c.mean_len:,.0f}, longest {c.max_len:,}, {c.under_30} under 30")
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
