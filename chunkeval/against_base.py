"""The gate against a base revision, both sides of it: what the child process that runs the
revision's code measures (`python -m chunkeval.against_base ORDER`, started by gate/base.py's
BaseRun), and every configured case of this side judged against what it measured, as
`chunkeval compare --base REV` and the plugin judge it: rows of verdicts in the summary's
shape, the strategies new or gone since the revision, and the exit status they make.

Both need a whole Session, so this sits above it; gate/ below keeps the git side and the
decision."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from . import config, strategies
from .errors import EXIT_NOT_COMPARED, ChunkevalError, StrategyFailed
from .gate.base import BaseSide, head
from .gate.entry import BaselineEntry
from .gate.baselines import key
from .gate.outcome import decide
from .session import Session
from .store import atomic_write
from .retrieval.identity import is_own_retriever


@dataclass
class AgainstBase:
    label: str
    rows: list[dict] = field(default_factory=list)
    new: set[str] = field(default_factory=set)
    gone: list[str] = field(default_factory=list)
    failures: int = 0
    not_compared: bool = False  # a strategy failed at the revision
    # (stream, line) said while judging, in order: "out" or "err"
    said: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def judge(cls, session: Session, side: BaseSide) -> AgainstBase:
        evaluation = session.evaluation
        complete_at = evaluation.settings.complete_at
        done = cls(side.label, not_compared=bool(side.failed),
                   gone=sorted(set(side.strategies) - set(session.strategies)))
        whose = "this branch's" if head(session.config.root) else "this run's"
        for spec in session.query_specs():
            qs = session.query_set(spec)
            if not session.power(spec).gates:
                done.said.append(("out", f"not gated: {session.power(spec).reason()}"))
                continue
            for s in session.strategies:
                if s in side.failed:
                    done.said.append(("err", f"chunkeval: not compared: at {side.label}: "
                                             f"{side.failed[s]}"))
                    continue
                for r in session.plan[s]:
                    entry = side.baseline.entry(s, r, qs.name)
                    same = key(s, r, qs.name) in side.same
                    if entry is None and not same:
                        done.new.add(s)
                        continue
                    try:
                        result = evaluation.result(s, r, spec)
                    except StrategyFailed as e:
                        done.said.append(("err", f"chunkeval: failed: {e}"))
                        done.failures += 1
                        continue
                    if same:  # chunkeval's own code on both sides: one result
                        entry = BaselineEntry.from_result(result, complete_at)
                    outcomes = decide(result, entry, complete_at, session.tolerance_for(s))
                    done.rows.append({"strategy": s, "retriever": r, "query_set": qs.name,
                                      "verdicts": [o.to_json() for o in outcomes],
                                      "against": side.label, "documents": len(session.corpus),
                                      "questions": len(qs), "whose": whose})
        return done

    def status(self) -> int:
        """0 no regression, 1 a regression or a failure here, EXIT_NOT_COMPARED when nothing
        could be compared."""
        regressed = any(v["status"] == "regressed" for r in self.rows for v in r["verdicts"])
        if regressed or self.failures:
            return 1
        return 0 if self.rows or (self.new and not self.not_compared) else EXIT_NOT_COMPARED


def measure(order: dict) -> dict:
    """The child's work: every case the revision's configuration selects, measured on the
    corpus and query sets `order` gives, as baseline entries."""
    session = Session(config.load(root=Path(order["root"]), command_line=order["given"])).check()
    ev = session.evaluation
    out: dict = {"strategies": session.strategies, "entries": {}, "failed": {},
                 "query_sets": {}, "same": []}

    def own(strategy: str, retriever: str) -> bool:
        """chunkeval's own strategy and retriever, lengths in characters: the same code on
        both sides (the child imports this chunkeval), so this side's result is the base's."""
        return (strategies.is_builtin(strategy) and is_own_retriever(retriever)
                and session.config.length == "chars")

    for spec in session.query_specs():
        qs = session.query_set(spec)
        out["query_sets"][qs.name] = (qs.fingerprint, [q.key for q in qs.queries])
        for s in session.strategies:
            if s in out["failed"]:
                continue
            try:
                for r in session.plan[s]:
                    if own(s, r):  # this side measures the very same code: nothing to run
                        out["same"].append(key(s, r, qs.name))
                        continue
                    entry = BaselineEntry.from_result(ev.result(s, r, spec),
                                                      ev.settings.complete_at,
                                                      strategies.get(s).describe()["params"])
                    out["entries"][key(s, r, qs.name)] = entry.to_json()
            except StrategyFailed as e:
                out["failed"][s] = str(e)
            ev.release(s, spec)
    return out


def main(argv: list[str]) -> int:
    order = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    try:
        out = measure(order)
    except ChunkevalError as e:
        out = {"error": str(e)}
    atomic_write(order["out"], json.dumps(out))
    return 0 if "error" not in out else 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
