"""`chunkeval calibrate`: how often harmless variants of a strategy fail the gate."""

from __future__ import annotations

import json
import re

from .. import strategies
from ..cache import atomic_write
from ..errors import ConfigError
from ..gate import calibrate
from ..gate.baselines import key, record_noise
from ..results import BaselineEntry
from ..session import Session
from .common import out_dir, report_problems, session_of
from .parser import CALIBRATION_RETRIEVERS


def calibrate_command(args) -> int:
    session = session_of(args)
    strategies.get(args.strategy)
    own = [n for names in session.retrievers.values() for n in names]
    rets = (session.plan_for([args.strategy])[args.strategy] if session.config.retrievers
            else list(dict.fromkeys([*CALIBRATION_RETRIEVERS, *own])))
    try:
        drops = [float(d) for d in args.drops.split(",") if d.strip()]
    except ValueError:
        raise ConfigError(f"--drops {args.drops!r}: expected comma-separated shares") from None
    if any(not 0 < d < 1 for d in drops) or args.trials < 1:
        raise ConfigError("--drops must lie in (0, 1) and --trials be >= 1")
    tol = session.tolerance
    if not 0 < tol.alpha < 1:
        raise ConfigError(f"{session.config.where['alpha']}: alpha must lie in (0, 1)")
    evaluation = session.evaluation
    if args.from_trials:
        trials = calibrate.read_trials(args.from_trials, args.strategy)
    else:
        trials = calibrate.run_trials(evaluation, args.strategy, rets, trials=args.trials,
                                      drops=drops, drop_trials=args.drop_trials)
    tables = {"bootstrap": calibrate.judge(trials, tol),
              "calibrated": calibrate.judge(trials, tol, calibrated=True)}
    text = "\n\n".join(calibrate.format_table(t) for t in tables.values())
    floors = calibrate.noise_floors(calibrate.harmless_diffs(trials))
    out = out_dir(args.out)
    stem = f"calibration-{args.strategy}"
    if not args.from_trials:
        atomic_write(out / f"{stem}-trials.json", json.dumps(trials, ensure_ascii=False) + "\n")
    written = {**tables, "tolerance": tol.to_json(),
               "noise": {c: {m: n.to_json() for m, n in f.items()} for c, f in floors.items()}}
    atomic_write(out / f"{stem}.json", json.dumps(written, ensure_ascii=False, indent=1) + "\n")
    # a fence longer than any run of backticks in the names within: the block cannot end early
    fence = "`" * max(3, 1 + max((len(m) for m in re.findall("`+", text)), default=0))
    atomic_write(out / f"{stem}.md", f"{fence}\n{text}\n{fence}\n")
    print(text)
    print(f"\nwrote {out / (stem + '.json')}, {out / (stem + '.md')}"
          + ("" if args.from_trials else f", {out / (stem + '-trials.json')}"))
    if args.record:
        _record_noise(session, trials, floors)
    return report_problems(session.problems(), session.config.strict)


def _record_noise(session: Session, trials: dict, floors: dict) -> None:
    path = session.baseline_path
    measured: dict[str, tuple[BaselineEntry, dict]] = {}
    for case, noise in floors.items():
        retriever, query_set = case.split("|", 1)
        entry = calibrate.entry_of(trials["baseline"][case], trials["complete_at"])
        measured[key(trials["strategy"], retriever, query_set)] = (entry, noise)
    written = record_noise(path, measured, identity=session.corpus_identity)
    print(f"recorded the noise floor of {len(written)} entries in {path}")
