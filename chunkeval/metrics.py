"""The metric table: every metric a run measures, defined once.

A row says what results.json, the baselines and the gate call the metric, the per-query
series it is the mean of (if any), how scoring computes it, whether it is gated by default,
how the report heads and formats it, and where else it is shown. Every list of metrics or
series elsewhere in the package is derived from METRICS, so adding a row is enough for a
metric computed from the stored series to reach results.json, the baselines, the gate, the
summaries and the report (tests/test_metric_table.py adds one and follows it through).

A stored series (coverage, budget_coverage, doc_hit, rr, ndcg) is a field of PerQuery and of
scoring.Scores of the same name: a new one needs the scoring that fills it, a derived one
(`derive`) does not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

if TYPE_CHECKING:  # only where series are made: reading settings and results needs no numpy
    import numpy as np

# Per-query values in a baseline are rounded to this many decimals (readable diffs).
DECIMALS = 4


@dataclass(frozen=True)
class Metric:
    name: str  # as results.json, baselines and the gate spell it
    series: str | None  # the per-query series it is the mean of; None: summary only
    gated: bool  # gated by default (docs/method.md, "How much to trust the gate")
    label: str  # as the summaries and tables head it; "@k" is the run's k
    rate: bool = True  # a share in [0, 1], shown in percent; else a mean count (pages)
    # How scoring computes a metric kept by mean only: the mean of this per-query array of
    # scoring.Scores (for Chroma's metrics, its entry in Scores.chroma) over the queries
    # `over` names: "all", "positional" (those with spans), "gold pages" (those with gold
    # pages) or "paged" (every query, of a view with pages). A stored series is the Scores
    # array of its own name.
    scores: str = ""
    over: str = "all"
    optional: bool = True  # recorded since the rank metrics exist: older files may lack it
    hit: bool = False  # per query true or false: a bool in results.json, 0 or 1 in a baseline
    # A series computed from the stored ones (by name) and the run's complete_at, instead of
    # stored per query: complete from coverage.
    derive: Callable[[Mapping[str, Any], float], Any] | None = None
    in_budget: bool = False  # measured on the chunks within the context budget
    headline: bool = False  # in the terminal summary's table and the information lines
    reported: bool = True  # a column of the report's tables
    short: str = ""  # its head in the terminal's compact table; "": not shown there

    @property
    def stored(self) -> bool:
        """Its series is kept per query in results.json and the baselines."""
        return self.series is not None and self.derive is None

    def title(self, k: int, budget: int | None = None) -> str:
        """The label with the run's k, and its budget when given and it is measured in one."""
        title = self.label.replace("@k", f"@{k}")
        return f"{title} @{budget:,}" if self.in_budget and budget is not None else title

    def short_title(self, k: int, budget: int) -> str:
        return self.short.replace("@k", f"@{k}").replace("@budget", f"@{budget}")


def _complete(series: Mapping[str, Any], complete_at: float):
    return series["coverage"] >= complete_at


# The order is results.json's, the baselines', the verdicts' and the report's columns. The
# seed's four are gated by default; the rank metrics are reported, precision and IoU have no
# per-query series in a baseline.
METRICS: tuple[Metric, ...] = (
    Metric("recall_at_k", "coverage", True, "Recall@k", optional=False, headline=True,
           short="R@k"),
    Metric("budget_recall", "budget_coverage", True, "budget recall", optional=False,
           in_budget=True, headline=True, short="B@budget"),
    Metric("complete_rate", "complete", True, "complete rate", optional=False,
           derive=_complete, short="cpl"),
    Metric("doc_hit_at_k", "doc_hit", True, "doc hit@k", optional=False, hit=True,
           short="hit"),
    Metric("precision", None, False, "precision", scores="precision"),
    Metric("iou", None, False, "IoU", scores="iou"),
    Metric("mrr_at_k", "rr", False, "MRR@k"),
    Metric("ndcg_at_k", "ndcg", False, "nDCG@k"),
    # Chroma's chunking evaluation's own definitions (scoring/positional.py)
    Metric("chroma_recall", None, False, "Chroma recall", scores="chroma", over="positional",
           reported=False),
    Metric("chroma_precision", None, False, "Chroma precision", scores="chroma",
           over="positional", reported=False),
    Metric("chroma_iou", None, False, "Chroma IoU", scores="chroma", over="positional",
           reported=False),
    Metric("precision_omega", None, False, "precision Ω", scores="chroma", over="positional",
           reported=False),
    # Corpora with pages (PDF): a top-k chunk of the gold document on a gold page, and the
    # pages (document, page) the chunks within the budget come from (scoring/pages.py)
    Metric("page_hit_at_k", None, False, "page hit@k", scores="page_hit", over="gold pages",
           short="page"),
    Metric("budget_pages", None, False, "pages in budget", rate=False, scores="budget_pages",
           over="paged", in_budget=True, short="pgs"),
)
BY_NAME = {m.name: m for m in METRICS}
# Metrics a per-query series stands behind: what the gate can compare.
COMPARED = tuple(m for m in METRICS if m.series is not None)
GATED = tuple(m.name for m in METRICS if m.gated)
OPTIONAL = tuple(m.name for m in METRICS if m.optional)
HEADLINE = tuple(m.name for m in METRICS if m.headline)
REPORTED = tuple(m for m in METRICS if m.reported)
COMPACT = tuple(m for m in METRICS if m.short)
STORED = tuple(m for m in COMPARED if m.stored)
SERIES = tuple(m.series for m in STORED)  # stored per query
# The stored series of the optional metrics (rr, ndcg): a row or an entry may lack them.
LATE_SERIES = tuple(m.series for m in STORED if m.optional)
# Chroma's chunking evaluation's metrics (its base_evaluation.py), on positional gold only,
# and those of a corpus with pages.
CHROMA_METRICS = tuple(m.name for m in METRICS if m.over == "positional")
PAGE_METRICS = tuple(m.name for m in METRICS if m.over in ("gold pages", "paged"))


def derived(stored: dict[str, np.ndarray], complete_at: float) -> dict[str, np.ndarray]:
    """`stored` with every derived series added, in the table's order, as floats."""
    out = {}
    for m in COMPARED:
        if m.derive is not None:
            out[m.series] = m.derive(stored, complete_at).astype(float)
        elif m.series in stored:
            out[m.series] = stored[m.series]
    return out


def series(rows: Sequence[Any], complete_at: float) -> dict[str, np.ndarray]:
    """The per-query series of PerQuery rows behind the compared metrics, rounded as a
    baseline stores them; derived ones from those, an optional one only when every row has
    it."""
    import numpy as np

    stored = {}
    for m in STORED:
        values = [getattr(q, m.series) for q in rows]
        if m.optional and not (rows and all(v is not None for v in values)):
            continue
        stored[m.series] = (np.array(values, dtype=float) if m.hit
                            else np.round(values, DECIMALS))
    return derived(stored, complete_at)
