"""The pytest run's summary in the terminal: what was compared with what, the problems, the
gate's table (answer first), and what was recorded. Rendered from the rows the tests report,
whose `verdicts` are the gate's outcomes (`chunkeval.gate.outcome.Outcome.to_json`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from .. import problems as reported
from ..gate.outcome import Outcome
from ..gate.verdict import DEFAULT_TOLERANCE, family_note, level
from ..metrics import BY_NAME, HEADLINE
from .comparison import compared_line


@dataclass
class Ended:
    """What a finished session reports: its rows and problems, and what it recorded."""

    rows: list[dict]
    problems: list[dict]  # reported.to_json of each
    strategies: list[str]  # this run's
    alpha: float = DEFAULT_TOLERANCE.alpha
    strict: bool = False
    left_out: str = ""  # what the session left out of its corpus, said once
    every_row: bool = False  # pytest's -v
    error: str | None = None
    held_back: list[str] = field(default_factory=list)
    written: str | None = None
    stale: list[str] = field(default_factory=list)
    unjudged: int = 0  # tests that failed with no verdict (a strategy failed, no baseline)


def new_and_gone_lines(against: str, new, gone) -> Iterator[str]:
    """The strategies a comparison with `against` could not judge: new here, or gone."""
    if new:
        yield f"new since {against} (not gated): {', '.join(sorted(new))}"
    if gone:
        yield f"removed since {against}: {', '.join(sorted(gone))}"


def comparison_lines(rows: list[dict], strategies: list[str]) -> Iterator[str]:
    """What was compared with what, first; then what the comparison could not judge:
    strategies new or removed at the base, numbers on a changed corpus, questions on one
    side only."""
    if compared_line(rows):
        yield compared_line(rows)
    new = sorted({r["strategy"] for r in rows if r.get("new")})
    for against in dict.fromkeys(r["against"] for r in rows if r.get("new")):
        yield from new_and_gone_lines(against, new, ())
    for against in dict.fromkeys(r["against"] for r in rows if "base_strategies" in r):
        then = {s for r in rows if r.get("against") == against for s in r["base_strategies"]}
        yield from new_and_gone_lines(against, (), then - set(strategies))
    for r in rows:
        if "paired" in r:
            yield f"{r['strategy']} {r['retriever']} {r['query_set']}: {r['paired']}"
    info = [r for r in rows if "info" in r]
    for line in dict.fromkeys(r["info"] for r in info):
        yield f"{line}; re-baseline when convenient; numbers now, as information:"
        for r in (r for r in info if r["info"] == line):
            numbers = ", ".join(f"{m} {r['metrics'][m] * 100:.1f} (recorded "
                                f"{r['recorded'][m] * 100:.1f})"
                                for m in HEADLINE if m in r["recorded"])
            yield f"  {r['strategy']} {r['retriever']} {r['query_set']}: {numbers}"


def terminal_lines(ended: Ended) -> Iterator[tuple[str, bool]]:
    """The lines of the `chunkeval` section, each with whether it is shown in red."""
    rows = ended.rows
    for line in comparison_lines(rows, ended.strategies):
        yield line, False
    corpora = {(r["corpus"]["name"], r["corpus"]["fingerprint"]) for r in rows}
    for name, fingerprint in sorted(corpora):
        yield f"corpus {name} (fingerprint {fingerprint})", False
    if rows and ended.left_out:
        yield ended.left_out, False
    found = [reported.from_json(p) for p in ended.problems]
    for line in reported.summary(found):
        yield f"problem: {line}", False
    failing = reported.strict_failure(found) if ended.strict else None
    if failing:
        yield f"{failing}; the session fails", False
    table = [r for r in rows if "verdicts" in r]
    if table:
        yield format_summary(table, ended.alpha, every_row=ended.every_row), False
    if ended.unjudged:
        # the table counts the cases it could judge; these failed before a verdict
        yield (f"{ended.unjudged} test(s) failed without a verdict, left out of the count "
               "above: a strategy or retriever failed, or there was nothing to compare with "
               "(their failures say which)"), True
    for reason in dict.fromkeys(r["not_gated"] for r in rows if "not_gated" in r):
        yield f"not gated: {reason}", False
    if ended.error:
        yield ended.error, True
    outcomes = {id(r): Outcome.from_row(r) for r in table}
    for r in table:
        if "chunks_changed" not in r:
            continue
        within = all(o.status != "regressed" for o in outcomes[id(r)])
        params = r["chunks_changed"]
        what = ("params unchanged" if params["params"] == params["now"] else
                f"params {params['params']} -> {params['now']}")
        yield (f"{r['strategy']} {r['retriever']} {r['query_set']}: chunks changed, "
               f"{'metrics within bounds' if within else 'metrics regressed'} ({what})"), False
    if ended.held_back:
        yield (f"baselines NOT recorded for {', '.join(ended.held_back)}: it failed its "
               "contract, its invariants or a retriever in this session; fix it and record "
               "again"), True
    if ended.written:
        yield f"baselines written: {ended.written}", False
        if ended.stale:
            yield ("baseline entries for strategies not registered in this run (kept; remove "
                   f"them by hand if the strategy is gone): {', '.join(ended.stale)}"), False
    regressed = {o.strategy for case in outcomes.values() for o in case
                 if o.status == "regressed"}
    improved = [o for case in outcomes.values() for o in case
                if o.strategy not in regressed and o.status == "improved"]
    if improved:
        yield (f"{len(improved)} metric(s) improved beyond the noise bounds; consider "
               "`pytest --update-baselines` to raise the bar:"), False
        for o in improved:
            yield (f"  {o.strategy} {o.retriever} {o.query_set} {o.metric} "
                   f"{o.verdict.baseline * 100:.1f} -> {o.verdict.value * 100:.1f}"), False


def format_summary(rows: list[dict], alpha: float = DEFAULT_TOLERANCE.alpha,
                   every_row: bool = False) -> str:
    """The summary's table, answer first: the cases that regressed, then those that improved,
    then one line counting the cases that are ok (with `every_row`, pytest's -v, their rows
    too). A row holds the headline metrics (metrics.HEADLINE: Recall@k, budget recall) as
    baseline, now, difference and its interval, in points, and the verdict, naming every
    metric that moved beyond its bounds; each interval's level in the header (or at the
    interval, when they differ), and once why it is wider than 95%. Columns are as wide as
    the longest name in them. Each row's `verdicts` are read back as the gate's outcomes."""
    cases = [Outcome.from_row(r) for r in rows]
    order = {"regressed": 0, "improved": 1, "ok": 2}
    shown = [o.verdict for case in cases for o in case if o.metric in HEADLINE]
    levels = {level(v.confidence) for v in shown}
    one = levels.pop() if len(levels) == 1 else None
    width = 23 if one is None else 17  # an interval, and its level when they differ

    def cell(o: Outcome | None) -> str:
        if o is None:
            return " " * (20 + width)
        v = o.verdict
        ci = f"[{v.low * 100:+.1f}, {v.high * 100:+.1f}]"
        if one is None:
            ci += f" {level(v.confidence).removesuffix(' CI')}"
        return (f"{v.baseline * 100:>6.1f}{v.value * 100:>6.1f}{v.diff * 100:>+7.1f} "
                f"{ci:<{width}}")

    def status(case: list[Outcome]) -> tuple[int, str]:
        worst = min(order[o.status] for o in case)
        name = next(s for s, i in order.items() if i == worst)
        moved = [o.metric for o in case if o.status == name]
        return worst, name if name == "ok" else f"{name} ({', '.join(moved)})"

    wide = [max([len(header)] + [len(str(r[key])) for r in rows]) + 2
            for key, header in (("strategy", "strategy"), ("retriever", "retriever"),
                                ("query_set", "query set"))]

    def names(*cells) -> str:
        return "".join(f"{c:<{w}}" for c, w in zip(cells, wide))

    group = f"{'base':>6}{'now':>6}{'diff':>7} {one or 'CI (level)':<{width}}"
    titles = "".join(f"{BY_NAME[m].label:<{len(group) + 1}}" for m in HEADLINE).rstrip()
    head = (f"{'':<{sum(wide)}}{titles}\n{names('strategy', 'retriever', 'query set')}"
            + " ".join(group for _ in HEADLINE) + " verdict")
    ranked = sorted(zip(rows, cases), key=lambda rc: (status(rc[1])[0], rc[0]["query_set"],
                                                      rc[0]["strategy"], rc[0]["retriever"]))
    fine = [(r, c) for r, c in ranked if status(c)[0] == order["ok"]]
    # no header over no rows: a run where every case is ok is one line
    lines = [head, "-" * len(head.splitlines()[-1])] if every_row or len(fine) < len(rows) \
        else []
    for r, case in ranked if every_row else [rc for rc in ranked if rc not in fine]:
        by = {o.metric: o for o in case}
        lines.append(f"{names(r['strategy'], r['retriever'], r['query_set'])}"
                     + " ".join(cell(by.get(m)) for m in HEADLINE) + f" {status(case)[1]}")
    if fine and not every_row:
        lines.append(f"{len(fine)} of {len(rows)} cases ok: every gated metric within its "
                     "bounds (-v lists them)")
    note = family_note((v.confidence for v in shown), alpha)
    return "\n".join(lines + ([note] if note else []))
