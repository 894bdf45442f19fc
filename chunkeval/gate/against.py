"""The gate of every configured case against a base revision's side (gate/base.py), as
`chunkeval compare --base REV` judges it: rows of verdicts in the summary's shape, the
strategies new or gone since the revision, and the exit status they make."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import EXIT_NOT_COMPARED, StrategyFailed
from .entry import BaselineEntry
from .base import BaseSide, head
from .baselines import key
from .outcome import decide

if TYPE_CHECKING:
    from ..session import Session


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

