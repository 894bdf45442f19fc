"""Two strategies measured on the same queries: the paired bootstrap difference of each metric
and what differs in their chunks, as `chunkeval compare A B` shows it."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from ..metrics import COMPARED
from ..results import Result, Results
from ..stats import RESAMPLES, SEED, paired_bootstrap
from .view import View

# the metrics compared: those gated by default
PAIRED = tuple(m for m in COMPARED if m.gated)


@dataclass
class PairedComparison:
    names: tuple[str, str]
    a: Result
    b: Result
    retriever: str
    query_set: str
    complete_at: float

    @classmethod
    def from_results(cls, results: Results, where: str, names: tuple[str, str], retriever: str,
                     query_set: str | None) -> PairedComparison:
        """The two strategies' results in an earlier run's results.json (at `where`); by
        default on its largest query set that has results."""
        present = View(results).query_sets  # those with results, the largest first
        if not present:
            raise InputError(where, "holds no results")
        query_set = query_set or present[0]
        picked = {r.strategy: r for r in results.results
                  if r.retriever == retriever and r.query_set == query_set}
        missing = [s for s in names if s not in picked]
        if missing:
            raise InputError(where, f"no {retriever} results on {query_set!r} for "
                                    f"{', '.join(missing)}")
        a, b = picked[names[0]], picked[names[1]]
        if [q.id for q in a.per_query] != [q.id for q in b.per_query]:
            raise InputError(where, f"{names[0]} and {names[1]} were not measured on the same "
                                    f"queries of {query_set!r}")
        return cls(names, a, b, retriever, query_set, results.settings.complete_at)

    def to_text(self) -> str:
        sa, sb = self.a.series(self.complete_at), self.b.series(self.complete_at)
        lines = [f"{self.names[0]} - {self.names[1]}, retriever {self.retriever}, query set "
                 f"{self.query_set} ({len(sa['coverage'])} queries; paired bootstrap, "
                 f"{RESAMPLES:,} resamples, seed {SEED})"]
        for m in PAIRED:
            metric, src = m.label, m.series
            ci = paired_bootstrap(sa[src], sb[src])
            verdict = "difference shown" if ci.shows_difference else "no difference shown"
            lines.append(f"  {metric:<14} {sa[src].mean()*100:6.1f}% vs "
                         f"{sb[src].mean()*100:6.1f}%  diff {ci.diff*100:+5.1f} points, 95% CI "
                         f"[{ci.low*100:+.1f}, {ci.high*100:+.1f}]  {verdict}")
        for name, r in zip(self.names, (self.a, self.b)):  # what differs in the chunks
            c = r.chunks
            lines.append(f"  {name}: cut rate {r.cut_rate.value * 100:.1f}% ({r.cut_rate.cut} of "
                         f"{r.cut_rate.blocks} table/pre blocks), {c.count:,} chunks, mean length "
                         f"{c.mean_len:,.0f}, longest {c.max_len:,}, {c.under_30} under 30")
        return "\n".join(lines)
