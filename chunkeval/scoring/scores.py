"""What scoring a ranking gives: per-query arrays (Scores), their means and results.json's rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ..errors import UnknownName
from ..metrics import BY_NAME, CHROMA_METRICS, METRICS, PAGE_METRICS, STORED, derived
from ..results import DEFAULTS, PerQuery, Stat
from ..stats import mean_se

__all__ = ["Scores", "CHROMA_METRICS", "PAGE_METRICS"]


@dataclass
class Scores:
    """Per-query results of one ranking; arrays hold one value per query, in query order."""

    query_ids: list[str]
    coverage: np.ndarray  # top k, gold document only
    budget_coverage: np.ndarray  # chunks within the character budget
    curve: dict[int, np.ndarray]  # budget -> budget coverage
    doc_hit: np.ndarray  # bool: the gold document is in the top k
    precision: np.ndarray
    iou: np.ndarray
    rr: np.ndarray  # reciprocal rank of the first relevant chunk in the top k
    ndcg: np.ndarray  # coverage-graded nDCG@k
    best: np.ndarray  # rank (from 0) of the top-k chunk that added the most gold; -1: none
    # per query, the chunks of the top k and of the budget: (doc_id, start, end, len(text))
    retrieved: list[list[tuple[str, int, int, int]]]
    settings: dict = field(default_factory=dict)
    # Positional gold (spans): which queries were scored by position, Chroma's four metrics
    # for them (NaN for the others), and how many retrieved gold-document chunks could not
    # be placed (not their span's slice) and were scored by the shingle rule instead.
    positional: np.ndarray | None = None
    chroma: dict[str, np.ndarray] = field(default_factory=dict)
    fallback: int = 0
    # A view with pages: page hit@k (NaN for a query without gold pages) and pages in budget.
    page_hit: np.ndarray | None = None
    budget_pages: np.ndarray | None = None

    @classmethod
    def blank(cls, query_ids: list[str], budgets: Sequence[int], settings: dict) -> "Scores":
        """All zero, for a scoring path to fill in query by query."""
        n = len(query_ids)
        return cls(query_ids=query_ids, coverage=np.zeros(n), budget_coverage=np.zeros(n),
                   curve={b: np.zeros(n) for b in budgets}, doc_hit=np.zeros(n, dtype=bool),
                   precision=np.zeros(n), iou=np.zeros(n),
                   rr=np.zeros(n), ndcg=np.zeros(n), best=np.full(n, -1, dtype=np.int64),
                   retrieved=[], settings=settings)

    def __len__(self) -> int:
        return len(self.query_ids)

    def series(self) -> dict[str, np.ndarray]:
        """The per-query series of the metric table, stored (unrounded) and derived."""
        stored = {m.series: getattr(self, m.series) for m in STORED}
        return derived(stored, self.settings.get("complete_at", DEFAULTS.complete_at))

    @property
    def complete(self) -> np.ndarray:
        """Per query, whether its coverage reaches complete_at."""
        return self.series()[BY_NAME["complete_rate"].series] > 0

    def values(self, metric: str) -> np.ndarray:
        """The per-query values behind a summary metric of every query (for paired
        comparisons)."""
        every = {m.name: m for m in METRICS if m.over == "all"}
        if metric not in every:
            raise UnknownName("metric", metric, every)
        m = every[metric]
        if m.derive is not None:
            return self.series()[m.series]
        return getattr(self, m.scores or m.series).astype(np.float64)

    def summary(self) -> dict[str, Stat]:
        """Each metric's mean over the queries it is defined on (results.Metric.over); a
        metric no query here is scored on is left out."""
        out = {}
        for m in METRICS:
            if m.over == "all":
                values = self.values(m.name)
            elif m.over == "positional":
                if self.positional is None or not self.positional.any():
                    continue
                values = self.chroma[m.name][self.positional]
            elif self.budget_pages is None:  # not a view with pages
                continue
            else:
                values = getattr(self, m.scores)
                if m.over == "gold pages":
                    values = values[~np.isnan(values)]
                    if not len(values):
                        continue
            out[m.name] = Stat(*mean_se(values))
        return out

    def curve_summary(self) -> dict[int, Stat]:
        return {b: Stat(*mean_se(arr)) for b, arr in self.curve.items()}

    def per_query(self) -> list[PerQuery]:
        """The rows of results.json's per_query: enough to recompute every mean."""
        names = [m.series for m in STORED]
        columns = [[bool(v) for v in getattr(self, m.series).tolist()] if m.hit
                   else [round(v, 6) for v in getattr(self, m.series).tolist()] for m in STORED]
        return [PerQuery(qid, **dict(zip(names, values)), retrieved=[list(r) for r in ret],
                         best=b if b >= 0 else None)
                for qid, ret, b, *values in zip(self.query_ids, self.retrieved,
                                                self.best.tolist(), *columns)]


def _taken_within(lengths: Sequence[int], budget: int) -> int:
    """How many chunks from the top fit in `budget` characters; the first always counts."""
    total, n = 0, 0
    for length in lengths:
        if n and total + length > budget:
            break
        total += length
        n += 1
    return n

