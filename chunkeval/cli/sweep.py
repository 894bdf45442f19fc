"""`chunkeval sweep`: which size and overlap, and adopting the recommendation."""

from __future__ import annotations

import json
import sys

from .. import store
from ..errors import ConfigError
from .common import out_dir, report_failures, report_problems, session_of


def sweep_command(args) -> int:
    from .. import adopt, sweep
    from ..report import sweep_page, sweep_text

    session = session_of(args)
    out = out_dir(args.out)
    planned = sweep.configure(session, yes=args.yes)
    print(session.corpus_line, flush=True)
    result = planned.run()
    try:
        patch, unadoptable = adopt.plan(
            result, session.config.root / "pyproject.toml"
            if session.config.configured else None), None
    except ConfigError as e:  # said, and the sweep's outputs written all the same
        patch, unadoptable = None, str(e)
    lines = patch.shown if patch else sweep.config_lines(result)
    data = result.to_json()
    # rendered first and swapped in together, as a run's outputs are
    store.write_together(out, {
        "sweep.json": json.dumps(data, ensure_ascii=False) + "\n",
        "sweep.md": sweep_text.markdown(result, lines),
        "sweep.html": sweep_page.render(data, lines)})
    print(f"{len(result.points)} configurations x {len(planned.retrievers)} retriever(s) x "
          f"{len(result.settings['query_sets'])} query set(s)")
    for line in sweep_text.summary_lines(result):
        print(line)
    failed = report_failures(result.failures, None, kept="sweep.json")
    print(f"wrote {out / 'sweep.json'}, {out / 'sweep.html'}, {out / 'sweep.md'}")
    if not lines:
        print(f"\n{sweep.nothing_to_adopt(result)}")
    else:
        print(f"\nto adopt the recommendation{f' (in {patch.path})' if patch else ''}:")
        print("\n".join(lines))
        if unadoptable:
            print(f"chunkeval: warning: {unadoptable}", file=sys.stderr)
        if args.adopt:
            if patch is None:
                raise ConfigError(unadoptable or "--adopt: no pyproject.toml with a "
                                  "[tool.chunkeval] table to write the recommendation to")
            backup = adopt.write(patch)
            print(f"adopted: wrote {patch.path} (the one before kept as {backup}); a "
                  "strategy new to the baselines is gated once recorded (`pytest "
                  "--update-baselines`) or against the base branch (`pytest "
                  "--chunkeval-base REV`)")
    status = report_problems(session.problems(), session.config.strict)
    return failed or status
