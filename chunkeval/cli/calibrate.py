"""`chunkeval calibrate`: how often harmless variants of a strategy fail the gate."""

from __future__ import annotations

from .. import config, strategies
from ..errors import ConfigError
from ..gate import calibrate
from ..gate.baselines import record_noise
from .common import out_dir, report_problems, session_of


def calibrate_command(args) -> int:
    session = session_of(args)
    strategies.get(args.strategy)
    own = [n for names in session.retrievers.values() for n in names]
    rets = (session.plan_for([args.strategy])[args.strategy] if session.config.retrievers
            else list(dict.fromkeys([*config.LEXICAL_RETRIEVERS, *own])))
    drops = calibrate.parse_drops(args.drops, args.trials)
    tol = session.tolerance
    if not 0 < tol.alpha < 1:
        raise ConfigError(f"{session.config.where['alpha']}: alpha must lie in (0, 1)")
    evaluation = session.evaluation
    if args.from_trials:
        trials = calibrate.read_trials(args.from_trials, args.strategy)
    else:
        trials = calibrate.run_trials(evaluation, args.strategy, rets,
                                      trials=args.trials, drops=drops,
                                      drop_trials=args.drop_trials)
    calibration = calibrate.Calibration(trials, tol)
    written = calibration.write(out_dir(args.out), with_trials=not args.from_trials)
    print(calibration.to_text())
    print("\nwrote " + ", ".join(str(p) for p in written))
    if args.record:
        path = session.baseline_path
        recorded = record_noise(path, calibration.measured(), identity=session.corpus_identity)
        print(f"recorded the noise floor of {len(recorded)} entries in {path}")
    return report_problems(session.problems(), session.config.strict)
