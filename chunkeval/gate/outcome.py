"""The gate's decision on one case, as a typed outcome every output renders.

A case is a strategy with a retriever on a query set, measured now and on the other side of
the comparison: a recorded baseline entry, or the same case run by the code of a base
revision. `decide` pairs the two query by query (on the questions both sides have) and
returns one Outcome a metric: the two numbers, the interval, the verdict and why. The pytest
items, the summaries, the Markdown and JUnit outputs and `chunkeval compare --base` all read
these.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..results import Result
from .entry import BaselineEntry
from .verdict import Tolerance, Verdict, compare


@dataclass(frozen=True)
class Outcome:
    """One metric of one case: the two numbers, the interval, the verdict and its reason."""

    strategy: str
    retriever: str
    query_set: str
    verdict: Verdict  # metric, baseline (the other side's number), value (now), interval
    reason: str = ""  # why the verdict is what it is, where a number alone does not say

    @property
    def metric(self) -> str:
        return self.verdict.metric

    @property
    def status(self) -> str:
        return self.verdict.status

    def to_json(self) -> dict:
        """As rows carry a verdict (Verdict.to_json), with the reason when there is one."""
        return self.verdict.to_json() | ({"reason": self.reason} if self.reason else {})

    @classmethod
    def from_row(cls, row: dict) -> list[Outcome]:
        """The outcomes a row carries (its `verdicts`, each from to_json)."""
        return [cls(row["strategy"], row["retriever"], row["query_set"], Verdict.from_json(v),
                    v.get("reason", "")) for v in row["verdicts"]]


@dataclass(frozen=True)
class Paired:
    """Which questions of a query set both sides have: positions now and in the other side's
    series, and how many each side has alone."""

    now: tuple[int, ...]
    other: tuple[int, ...]
    only_now: int = 0
    only_other: int = 0

    @property
    def partial(self) -> bool:
        return bool(self.only_now or self.only_other)

    def describe(self) -> str:
        return (f"compared on the {len(self.now)} questions both sides have ({self.only_now} "
                f"only now, {self.only_other} only on the other side)")


def pair(now_keys: list[str], other_keys: list[str] | None) -> Paired:
    """The questions of both sides, paired by their key (Query.key); without the other
    side's keys (a baseline recorded before they were kept), by position."""
    if other_keys is None:
        return Paired(tuple(range(len(now_keys))), tuple(range(len(now_keys))))
    where = {k: i for i, k in enumerate(other_keys)}
    both = [(i, where[k]) for i, k in enumerate(now_keys) if k in where]
    return Paired(tuple(i for i, _ in both), tuple(j for _, j in both),
                  len(now_keys) - len(both), len(other_keys) - len(both))


def subset_entry(entry: BaselineEntry, positions: tuple[int, ...]) -> BaselineEntry:
    return replace(entry, per_query={k: [v[i] for i in positions]
                                     for k, v in entry.per_query.items()})


def subset_result(result: Result, positions: tuple[int, ...]) -> Result:
    return replace(result, per_query=[result.per_query[i] for i in positions])


def decide(result: Result, entry: BaselineEntry, complete_at: float, tol: Tolerance,
           paired: Paired | None = None) -> list[Outcome]:
    """The outcomes of one case: the result against the other side's entry, per metric both
    have, on the paired questions. BaselineError when the two cannot be paired."""
    if paired is not None and paired.partial:
        result, entry = subset_result(result, paired.now), subset_entry(entry, paired.other)
    note = paired.describe() if paired is not None and paired.partial else ""
    same = bool(entry.chunks_hash) and entry.chunks_hash == result.chunks.hash
    outcomes = []
    for v in compare(result, entry, complete_at, tol):
        reason = (v.describe() if v.status != "ok" else
                  "the same chunks as the other side" if same else "")
        outcomes.append(Outcome(result.strategy, result.retriever, result.query_set, v,
                                "; ".join(x for x in (reason, note) if x)))
    return outcomes
