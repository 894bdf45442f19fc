"""`chunkeval run`, and what is done with a run's results.json afterwards: `merge` (the shards
of one run) and `export` (TREC or ranx files)."""

from __future__ import annotations

from pathlib import Path

from .. import export
from ..executors import make
from ..session import read_results
from ..shard import merge
from .common import out_dir, report_failures, report_problems, session_of, write_results


def run_command(args) -> int:
    from .. import report

    session = session_of(args)
    out = out_dir(args.out)
    executor = make(args.executor, jobs=args.jobs, address=args.address,
                    modules=session.modules)
    print(session.corpus_line, flush=True)
    if session.left_out:
        print(session.left_out, flush=True)
    results = session.evaluation.run(session.strategies, session.plan, shard=session.shard,
                                     timings=session.timings, executor=executor)
    if session.shard is not None:
        print(f"shard {session.shard}: {len(results.shard['tasks'])} strategy x query set "
              "task(s)")
    from ..report import queries_page

    written = write_results(results, out, {queries_page.FILE: queries_page.render_run_page(
        results, [session.query_set(s) for s in session.query_specs()])})
    print(report.format_table(results))
    emb = results.embeddings
    kept = "from the cache" if session.config.cache else "repeated in this run (cache off)"
    print(f"\nanalyzer {results.analyzer}; embeddings: {emb['embedded']} texts embedded, "
          f"{emb['cached']} {kept}")
    rc = results.result_cache
    if rc["enabled"]:
        print(f"results: {rc['evaluated']} evaluated, {rc['reused']} reused from the result "
              "cache (their index and search seconds are those measured when stored)")
    else:
        print(f"results: {rc['evaluated']} evaluated (result cache off)")
    print(f"wrote {out / 'results.json'}, " + ", ".join(str(p) for p in written.values()))
    status = report_problems(session.problems(), session.config.strict)
    return report_failures(results.failures, args.traceback) or status



def merge_command(args) -> int:
    from .. import report

    docs = []
    for d in args.dirs:
        path = Path(d) / "results.json" if Path(d).is_dir() else Path(d)
        docs.append((str(path), read_results(path)))
    merged = merge(docs)
    out = out_dir(args.out)
    written = write_results(merged, out)
    print(report.format_table(merged))
    print(f"\nmerged {len(docs)} shard(s); wrote {out / 'results.json'}, "
          + ", ".join(str(p) for p in written.values()))
    return report_failures(merged.failures, None)


def export_command(args) -> int:
    results = read_results(args.results)
    out = out_dir(args.out)
    written = export.export(results, export.read_dump(args.dump), args.format, out,
                            where=args.dump)
    print(f"wrote {len(written)} files under {out} (qrels and one run per retriever for "
          f"each strategy and query set)")
    return 0
