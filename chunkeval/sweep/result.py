"""A sweep's outcome: its settings, grid, rows and verdicts as sweep.json holds them, and the
recommendation to adopt. report/sweep_text.py and report/sweep_page.py word and draw it."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..results import Failure
from ..strategies.specs import call_spec
from .points import Point, _call
from .verdict import HANDED, METRICS, Row, Verdict, handed_per_query

FORMAT = 1


@dataclass
class Sweep:
    settings: dict
    points: list[Point]
    rows: dict[tuple[str, str], list[Row]]  # (retriever, query set name) -> rows
    verdicts: list[Verdict]
    against: dict[tuple[str, str], Row]
    failures: list[Failure]
    corpus: dict
    refused: dict[str, str] = field(default_factory=dict)  # query set -> why it was left out
    rungs: list[dict] = field(default_factory=list)  # successive halving, when it ran

    def to_json(self) -> dict:
        configs = []
        sets: dict[str, list[str]] = {}
        for (ret, qs), rows in self.rows.items():
            sets.setdefault(qs, [q.id for q in rows[0].result.per_query])
            for r in rows + ([self.against[(ret, qs)]] if (ret, qs) in self.against else []):
                res = r.result
                configs.append({
                    **r.point.to_json(), "retriever": ret, "query_set": qs,
                    "against": r is self.against.get((ret, qs)),
                    "metrics": {m: s.to_json() for m, s in res.metrics.items()},
                    "cut_rate": res.cut_rate.to_json(), "chunks": res.chunks.to_json(),
                    **dict(zip(HANDED.values(), (r.handed_k, r.handed_budget))),
                    "per_query": {**{s: [getattr(q, s) for q in res.per_query]
                                     for s in METRICS.values()},
                                  **dict(zip(HANDED.values(),
                                             handed_per_query(res, self.settings["k"],
                                                              self.settings["budget"])))},
                    "reused": bool(res.reused)})
        return {"format": FORMAT, "corpus": self.corpus, "settings": self.settings,
                "grid": [p.to_json() for p in self.points], "query_ids": sets,
                "configurations": configs, "verdicts": [v.to_json() for v in self.verdicts],
                "failed": [f.to_json() for f in self.failures], "refused": self.refused,
                "rungs": self.rungs}


def adopted_verdict(sweep: Sweep) -> Verdict | None:
    """The verdict whose recommendation is adopted: by the chosen metric, for the first
    retriever, on the largest query set with a recommendation (the most evidence)."""
    first = sweep.verdicts[0] if sweep.verdicts else None
    found = [x for x in sweep.verdicts if first and x.retriever == first.retriever
             and x.metric == first.metric and x.recommendation]
    return max(found, key=lambda x: x.queries) if found else None


def nothing_to_adopt(sweep: Sweep) -> str:
    """Why no configuration is adopted, naming the metric that would give one."""
    first = sweep.verdicts[0] if sweep.verdicts else None
    if first is None:
        return "nothing to adopt: no verdict was reached"
    said = (f"nothing to adopt: no verdict by {first.metric} for {first.retriever} recommends "
            "a configuration")
    others = sorted({x.metric for x in sweep.verdicts
                     if x.recommendation and x.metric != first.metric})
    return said + (f"; by {others[0]} one does (--metric {others[0]})" if others else "")


def adopted_point(sweep: Sweep, v: Verdict) -> Point:
    return next(p for p in sweep.points if p.name == v.recommendation["strategy"])


def factory_call(against: str | None, point: Point) -> str | None:
    """The team's factory (`against`, given with its parameters) at the point's size and
    overlap; None when `against` is no such factory."""
    against = against or ""
    head = against.partition("(")[0]
    if ":" in head and not head.startswith("chonkie:") and "(" in against:
        _, given = call_spec(against, "splitter")
        given.update(size=point.size, overlap=point.overlap)
        return _call(head, given)
    return None


def config_lines(sweep: Sweep) -> list[str]:
    """A [tool.chunkeval] that adopts the recommendation, for a project without one; a
    factory given as `against` gets the recommended size and overlap."""
    v = adopted_verdict(sweep)
    if v is None:
        return []
    point = adopted_point(sweep, v)
    s = sweep.settings
    lines = ["[tool.chunkeval]"]
    if (call := factory_call(s.get("against"), point)):
        lines.append(f'splitters = ["{call}"]  # your factory, at the recommended size and '
                     "overlap")
    elif ":" in point.spec:
        lines.append(f'splitters = ["{point.spec}"]')
    else:
        lines.append(f'strategies = ["{point.spec}"]  # = {point.name}')
    rets = ", ".join(f'"{r}"' for r in s.get("retrievers_as_given") or s["retrievers"])
    lines += [f"retrievers = [{rets}]", f"k = {s['k']}", f"budget = {s['budget']}"]
    lines += differ_note(sweep, v, point)
    return lines


def differ_note(sweep: Sweep, v: Verdict, point: Point) -> list[str]:
    differ = {x.recommendation["strategy"] for x in sweep.verdicts
              if x.metric == v.metric and x.recommendation} - {point.name}
    if not differ:
        return []
    return [f"# chosen by {v.metric} for {v.retriever} on {v.query_set}; other retrievers or "
            f"query sets recommend {', '.join(sorted(differ))} (see above)"]
