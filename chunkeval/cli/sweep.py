"""`chunkeval sweep`: which size and overlap, and adopting the recommendation."""

from __future__ import annotations

import json
import sys

from .. import config, store
from ..errors import ConfigError
from .common import out_dir, report_failures, report_problems, session_of


def sweep_command(args) -> int:
    from .. import adopt, sweep
    from ..report import sweep_page, sweep_text

    session = session_of(args)
    cfg = session.config
    out = out_dir(args.out)
    sizes = sweep.parse_sizes(cfg.sweep_size, cfg.where["sweep_size"])
    overlaps = sweep.parse_overlaps(cfg.sweep_overlap, cfg.where["sweep_overlap"])
    spelled = list(cfg.retrievers) or [config.ONE_RETRIEVER]
    retrievers = session.listed_retrievers(spelled)
    against = cfg.sweep_against or (cfg.splitters[0] if cfg.splitters else None)
    # said before thousands of configurations are registered
    grid_size = len(sizes) * len(overlaps)
    halving = sweep.halving_on(cfg.sweep_halving, grid_size, cfg.where["sweep_halving"])
    sweep.check_size(grid_size, len(retrievers), len(session.query_specs()),
                     cfg.sweep_max_configurations, args.yes, halving)
    with sweep.own_strategies():  # checked here; registered again by sweep.run, for its time
        points, _ = sweep.prepare(cfg.sweep_strategy, sizes, overlaps, metric=cfg.sweep_metric,
                                  holdout=cfg.sweep_holdout, against=against, root=cfg.root,
                                  where={**cfg.where,
                                         "sweep_against": cfg.where["sweep_against"]
                                         if cfg.sweep_against else cfg.where["splitters"]})
    halving = sweep.halving_on(cfg.sweep_halving, len(points), cfg.where["sweep_halving"])
    print(session.corpus_line, flush=True)
    margin = cfg.sweep_margin if cfg.sweep_margin is not None else cfg.min_effect
    result = sweep.run(session, cfg.sweep_strategy, sizes, overlaps, retrievers=retrievers,
                       metric=cfg.sweep_metric, holdout=cfg.sweep_holdout, against=against,
                       margin=margin, spelled=spelled, halving=halving)
    try:
        patch, unadoptable = adopt.plan(
            result, cfg.root / "pyproject.toml" if cfg.configured else None), None
    except ConfigError as e:  # said, and the sweep's outputs written all the same
        patch, unadoptable = None, str(e)
    lines = patch.shown if patch else sweep.config_lines(result)
    data = result.to_json()
    # rendered first and swapped in together, as a run's outputs are
    store.write_together(out, {
        "sweep.json": json.dumps(data, ensure_ascii=False) + "\n",
        "sweep.md": sweep_text.markdown(result, lines),
        "sweep.html": sweep_page.render(data, lines)})
    print(f"{len(result.points)} configurations x {len(retrievers)} retriever(s) x "
          f"{len(result.settings['query_sets'])} query set(s)")
    for line in sweep_text.summary_lines(result):
        print(line)
    failed = report_failures(result.failures, None, kept="sweep.json")
    print(f"wrote {out / 'sweep.json'}, {out / 'sweep.html'}, {out / 'sweep.md'}")
    if not lines:
        print("\nnothing to adopt: no verdict recommends a configuration")
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
            print(f"adopted: wrote {patch.path} (the one before kept as {backup})")
    status = report_problems(session.problems(), cfg.strict)
    return failed or status
