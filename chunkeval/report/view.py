"""What every page of the report reads: a Results document indexed for tables and plots,
the paired differences against the reference strategy, and the cells both the Markdown and
the HTML tables show."""

from __future__ import annotations

from ..corpus.debian import BUILTIN_CORPORA
from ..errors import UnknownName
from ..gate.power import SetPower, coverage_sd, set_power
from ..gate.verdict import DEFAULT_TOLERANCE
from ..metrics import BY_NAME, HEADLINE, PAGE_METRICS, REPORTED, Metric
from ..results import Result, Results, Stat
from ..strategies.defaults import REFERENCE
from .findings import Finding, findings, paired_difference

EVERY_QUERY = ("every query of every case, sortable and filterable, each opening to its gold "
               "and the chunks retrieved now and by the reference strategy")
# Okabe-Ito colours: distinguishable with the common colour-vision deficiencies.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000",
           "#999999")


class View:
    """A results document as the report walks it: by query set, strategy and retriever, with
    the bootstrap differences memoised so that the Markdown and HTML pages share them."""

    def __init__(self, results: Results):
        self.results = results
        self.memo: dict = {}
        self.queries_page: str | None = None  # the per-query page beside the report, if any
        self.settings = results.settings
        self.k = self.settings.k
        self.budget = self.settings.budget
        length = self.settings.length  # the unit of budgets and lengths
        self.unit = "chars" if length == "chars" else f"units of {length}"
        present = [q for q in results.query_set_names
                   if any(r.query_set == q for r in results.results)]
        retrievers = max((len({r.retriever for r in results.results if r.query_set == q})
                          for q in present), default=1)
        tol = DEFAULT_TOLERANCE  # results.json records no project's alpha: the default's
        self.power: dict[str, SetPower] = {
            q: set_power(q, self.queries(q) or 0, alpha=tol.alpha, min_effect=tol.min_effect,
                         family=retrievers * len(present) * len(tol.gated),
                         sd=coverage_sd([r.series(self.settings.complete_at)["coverage"]
                                         for r in results.results if r.query_set == q]))
            for q in present}
        # the sets that gate first, the largest first: a 4-query set is not the headline
        self.query_sets = sorted(present, key=lambda q: (not self.power[q].gates,
                                                         -(self.queries(q) or 0)))

    def colour(self, strategy: str) -> str:
        """One colour per strategy across the whole report, given in order of first use."""
        colours = self.memo.setdefault("colours", {})
        if strategy not in colours:
            colours[strategy] = PALETTE[len(colours) % len(PALETTE)]
        return colours[strategy]

    def check_query_set(self, query_set: str | None) -> list[str]:
        if query_set is None:
            return self.query_sets
        if query_set not in self.query_sets:
            raise UnknownName("query set", query_set, self.query_sets)
        return [query_set]

    def strategies(self, qs: str) -> list[str]:
        """The document's declared order, then any strategy only seen in the results."""
        present = list(dict.fromkeys(r.strategy for r in self.results.results
                                     if r.query_set == qs))
        order = [s for s in self.results.strategies if s in present]
        return order + [s for s in present if s not in order]

    def retrievers(self, qs: str) -> list[str]:
        """The run's order (the document's `retrievers`), then any only seen in the results."""
        present = list(dict.fromkeys(r.retriever for r in self.results.results
                                     if r.query_set == qs))
        order = [r for r in self.results.retrievers if r in present]
        return order + [r for r in present if r not in order]

    def row(self, qs: str, strategy: str, retriever: str) -> Result | None:
        return self.results.row(qs, strategy, retriever)

    def chunk_row(self, qs: str, strategy: str) -> Result | None:
        """Chunk statistics and cut rate do not depend on the retriever: any row will do."""
        for r in self.retrievers(qs):
            if (row := self.row(qs, strategy, r)) is not None:
                return row
        return None

    @property
    def seed_query_sets(self) -> list[str]:
        """The seed's findings are claims about its own corpus: checked on the built-in one
        only, never in reports on a user's corpus."""
        return self.query_sets if self.results.corpus.name in BUILTIN_CORPORA else []

    def findings(self, qs: str) -> list[Finding]:
        if ("findings", qs) not in self.memo:
            self.memo[("findings", qs)] = findings(self.results, qs)
        return self.memo[("findings", qs)]

    def queries(self, qs: str) -> int | None:
        summary = self.results.query_sets.get(qs)
        return summary.queries if summary else None

    def family(self, strategy: str) -> str:
        return (self.results.strategies.get(strategy) or {}).get("family", "")

    def budgets(self, qs: str) -> list[int]:
        return sorted({b for r in self.results.results if r.query_set == qs
                       for b in r.budget_curve})

    def differences(self, qs: str, retriever: str) -> tuple[str | None, dict]:
        """Paired bootstrap differences of every strategy against the reference strategy."""
        key = (qs, retriever)
        if key not in self.memo:
            self.memo[key] = self._paired_to_reference(qs, retriever)
        return self.memo[key]

    def _paired_to_reference(self, qs: str, retriever: str) -> tuple[str | None, dict]:
        strategies = self.strategies(qs)
        ref = REFERENCE[0] if REFERENCE[0] in strategies else (strategies[0] if strategies
                                                               else None)
        ref_row = self.row(qs, ref, retriever) if ref else None
        if ref_row is None:
            return ref, {}
        out = {}
        for s in strategies:
            row = self.row(qs, s, retriever)
            if s == ref or row is None:
                continue
            out[s] = {key: paired_difference(row.values(key), ref_row.values(key),
                                             seed=self.settings.seed)
                      for key in (m.series for m in _differenced())}
        return ref, out


def stat(row: Result | None, name: str) -> Stat | None:
    return None if row is None else row.metrics.get(name)


def pct(m: Stat | float | None, *, se: bool = True, sep: str = "±") -> str:
    if m is None:
        return "-"
    value = m if isinstance(m, (int, float)) else m.value
    text = f"{100 * value:.1f}"
    if se and isinstance(m, Stat):
        text += f"{sep}{100 * m.se:.1f}"
    return text


def count(m: Stat | None, *, se: bool = True, sep: str = "±") -> str:
    """A mean count (pages in budget), one decimal."""
    if m is None:
        return "-"
    return f"{m.value:.1f}" + (f"{sep}{m.se:.1f}" if se else "")


def paged(view: "View", qs: str) -> bool:
    """The query set's results have page metrics (a corpus with pages)."""
    return any(m in r.metrics for r in view.results.results if r.query_set == qs
               for m in PAGE_METRICS)


def integer(v) -> str:
    return "-" if v is None else f"{v:,.0f}"


def chars(b) -> str:
    return f"{b:,}"


def diff_text(d: dict | None) -> str:
    if not d:
        return "-"
    return f"{100 * d['diff']:+.1f} [{100 * d['lo']:+.1f}, {100 * d['hi']:+.1f}]"


def header_facts(view: View) -> list[str]:
    res, s = view.results, view.settings
    c = res.corpus
    facts = [f"corpus {c.name} ({integer(c.documents)} documents, {integer(c.chars)} chars, "
             f"fingerprint {c.fingerprint})"]
    bits = [f"k = {view.k}", f"budget = {chars(view.budget)} {view.unit}",
            "budget curve " + ", ".join(chars(b) for b in s.budgets), f"shingle = {s.shingle}",
            f"complete at coverage ≥ {100 * s.complete_at:.0f}%", f"seed = {s.seed}"]
    facts.append("settings: " + ", ".join(bits))
    facts.append("query sets: " + ", ".join(f"{q} ({integer(view.queries(q))} queries)"
                                            for q in view.query_sets))
    if res.retrievers:
        facts.append("retrievers: " + ", ".join(
            f"{n} {r.get('version', '?')}" for n, r in res.retrievers.items())
            + (f"; analyzer {res.analyzer}" if res.analyzer else ""))
    emb = res.embeddings
    if emb.get("embedded") or emb.get("cached"):
        facts.append(f"embeddings: {integer(emb.get('embedded'))} texts embedded, "
                     f"{integer(emb.get('cached'))} reused (from the embedding cache, or "
                     "embedded earlier in the run)")
    if res.chunkeval:
        facts.append(f"chunkeval {res.chunkeval}")
    return facts


NOT_SCORED = "Not scored"


def failure_lines(view: View) -> list[str]:
    """One line for each strategy (or retriever on its chunks) that could not be scored:
    it has no row in the tables below, and the run did not succeed."""
    return [f"{f.query_set}: {f.message}" for f in view.results.failures]


def reading_note(view: View) -> list[str]:
    return [
        f"Values are percentages. Recall@{view.k} is the mean share of the answer's 8-char "
        f"shingles found in the top {view.k} chunks from the answer's document; budget recall "
        f"takes chunks from the top while their total stays within {chars(view.budget)} "
        f"{view.unit} (the first is always taken). Complete = share of queries with coverage "
        f"at the completion threshold; doc hit = the answer's document appears in the top "
        f"{view.k}; cut rate = share of table and pre blocks with a chunk boundary inside them.",
        "`±` is one standard error of the mean over the queries. Two methods whose values are "
        "a couple of SEs apart may still differ reliably, because they are measured on the same "
        "queries: the Δ columns give the paired difference to the reference strategy with a "
        "95% bootstrap interval over queries. An interval that contains 0 shows no difference; "
        "one that excludes 0 does.",
    ]


CHUNK_HEADER = ["strategy", "family", "chunks", "mean len", "max len", "< 30 chars", "cut rate",
                "zero-overlap boundaries", "split s"]


def chunk_cells(view: View, qs: str, s: str) -> list[str]:
    row = view.chunk_row(qs, s)
    if row is None:
        return ["-"] * (len(CHUNK_HEADER) - 2)
    ch, cut = row.chunks, row.cut_rate
    ov = ch.overlap
    overlap = f"{integer(ov.zero)}/{integer(ov.boundaries)}, mean {ov.mean:.1f}, " \
              f"max {integer(ov.max)}"
    return [integer(ch.count), integer(ch.mean_len), integer(ch.max_len), integer(ch.under_30),
            f"{pct(cut.value, se=False)} ({cut.cut:,}/{cut.blocks:,})", overlap,
            f"{row.seconds.split:.2f}"]


def _differenced() -> list[Metric]:
    """The headline metrics whose paired difference to the reference the tables show: those
    with a stored series, which pairs by query id."""
    return [BY_NAME[n] for n in HEADLINE if BY_NAME[n].stored]


def columns(view: View, qs: str | None, among: tuple[Metric, ...] = REPORTED) -> list[Metric]:
    """The metrics of a retriever table's columns, those of pages for a corpus with pages."""
    pages = qs is not None and paged(view, qs)
    return [m for m in among if pages or m.name not in PAGE_METRICS]


def retriever_header(view: View, ref: str | None, qs: str | None = None) -> list[str]:
    return ["strategy", *(m.title(view.k, view.budget) for m in columns(view, qs)),
            *(f"Δ {m.title(view.k)} vs {ref}" for m in _differenced())]


def retriever_cells(view: View, qs: str, s: str, ret: str, diffs: dict) -> list[str] | None:
    row = view.row(qs, s, ret)
    if row is None:
        return None
    d = diffs.get(s) or {}
    return [(pct if m.rate else count)(stat(row, m.name), sep=" ± ") for m in columns(view, qs)
            ] + [diff_text(d.get(m.series)) for m in _differenced()]


def curve_cells(view: View, qs: str, s: str, ret: str, budgets: list[int]) -> list[str] | None:
    row = view.row(qs, s, ret)
    if row is None or not row.budget_curve:
        return None
    return [pct(row.budget_curve.get(b), se=False) for b in budgets]


def corpus_language(name: str) -> str | None:
    """A built-in corpus's language (its pages are in it); None for a directory's."""
    return BUILTIN_CORPORA[name][0] if name in BUILTIN_CORPORA else None
