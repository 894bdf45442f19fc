"""The pytest run's comparison with the baseline as one HTML page (the `html` setting)."""

from __future__ import annotations

from ..gate.verdict import DEFAULT_TOLERANCE, NOISE_CONFIDENCE, family_note, level
from ..metrics import HEADLINE, METRICS
from .html import CSS
from .markdown import md_text
from .svg import declare_language, escape


def render_comparison_html(rows: list[dict], title: str = "chunkeval: this run against the baseline") -> str:
    """The plugin's rows (verdicts and per-query comparison per case) as one HTML page: per
    case its verdicts, then every query, worst loss first, coverage in points."""
    parts = ['<!DOCTYPE html>', '<html lang="en">', "<head>", '<meta charset="utf-8">',
             f"<title>{escape(title)}</title>", f"<style>{CSS}</style>", "</head>", "<body>",
             f"<h1>{escape(title)}</h1>"]
    note = family_note(v.get("confidence", NOISE_CONFIDENCE)
                       for r in rows for v in r.get("verdicts", []))
    if note:
        parts.append(f"<p>{escape(note)}</p>")
    for r in sorted(rows, key=lambda r: (r["query_set"], r["strategy"], r["retriever"] or "")):
        if "verdicts" not in r:
            continue
        worst = "regressed" if any(v["status"] == "regressed" for v in r["verdicts"]) else "ok"
        parts.append(f"<h2>{escape(r['strategy'])} · {escape(r['retriever'])} · {escape(r['query_set'])}"
                     f" — {worst}</h2>")
        parts.append("<table><tr><th>metric</th><th>baseline</th><th>now</th><th>diff</th>"
                     "<th>interval (its level)</th><th>gated</th><th>verdict</th></tr>")
        for v in r["verdicts"]:
            parts.append(f"<tr><td>{escape(v['metric'])}</td><td>{v['baseline'] * 100:.1f}</td>"
                         f"<td>{v['value'] * 100:.1f}</td><td>{v['diff'] * 100:+.1f}</td>"
                         f"<td>[{v['low'] * 100:+.1f}, {v['high'] * 100:+.1f}] "
                         f"({level(v.get('confidence', NOISE_CONFIDENCE))})</td>"
                         f"<td>{'yes' if v.get('gated', True) else 'no'}</td>"
                         f"<td>{escape(v['status'])}</td></tr>")
        parts.append("</table>")
        queries = r.get("per_query") or []
        if queries:
            parts.append(f"<details><summary>{len(queries)} queries, worst loss first"
                         "</summary><table><tr><th>query</th><th>gold</th><th>before</th>"
                         "<th>now</th><th>change</th><th>most gold before</th>"
                         "<th>most gold now</th></tr>")
            for q in queries:
                parts.append(f"<tr><td>{escape(q['query'])}</td><td>{escape(q['doc'])}</td>"
                             f"<td>{q['before'] * 100:.1f}</td><td>{q['now'] * 100:.1f}</td>"
                             f"<td>{q['change'] * 100:+.1f}</td><td>{escape(q['best_before'] or '-')}"
                             f"</td><td>{escape(q['best_now'] or '-')}</td></tr>")
            parts.append("</table></details>")
    parts += ["</body>", "</html>"]
    return declare_language("\n".join(parts) + "\n")



# A CI comment or job summary is read on one screen: what is ok goes behind a <details>.
MARKDOWN_QUERIES = 5


def _cell(text) -> str:
    """Text from the corpus, the questions or a file's name, in a cell or a line: escaped,
    never markup (md_text)."""
    return md_text(text)


def render_summary_markdown(rows: list[dict], alpha: float = DEFAULT_TOLERANCE.alpha,
                            unjudged: int = 0) -> str:
    """The pytest run's verdict as Markdown for a pull-request comment or a CI job summary:
    the gated comparisons that regressed, then those that improved; one line counting the
    cases that are ok, their rows folded away; then the queries that lost most in each
    regressed case; then the sets not gated and why. `unjudged`: the tests that failed with
    no verdict (a strategy or retriever failed, nothing to compare with), said first."""
    cases = [r for r in rows if "verdicts" in r]
    lines = []
    table = []
    for r in cases:
        for v in r["verdicts"]:
            if not v.get("gated", True):
                continue
            table.append(({"regressed": 0, "improved": 1}.get(v["status"], 2), r, v))
    order = {m.name: i for i, m in enumerate(METRICS)}
    table.sort(key=lambda t: (t[0], t[1]["query_set"], t[1]["strategy"], t[1]["retriever"],
                              order.get(t[2]["metric"], len(order))))
    regressed = sorted({(r["strategy"], r["retriever"], r["query_set"])
                        for rank, r, _ in table if rank == 0})
    corpora = sorted({f"{_cell(r['corpus']['name'])} ({_cell(r['corpus']['fingerprint'])})"
                      for r in rows if "corpus" in r})
    title = (f"{len(regressed)} of {len(cases)} cases regressed" if regressed
             else f"all {len(cases)} gated cases pass" if cases
             else "no regression: the corpus changed, the chunking did not"
             if any("info" in r for r in rows) else "all 0 gated cases pass")
    if unjudged:
        title = f"{unjudged} test(s) failed without a verdict; {title}"
    lines += [f"## chunkeval: {title}", ""]
    if unjudged:
        lines += ["The failed tests are not in the counts below: a strategy or retriever "
                  "failed, or there was nothing to compare with; the job's log says which.", ""]
    if (compared := compared_line(rows)):
        lines += [compared[:1].upper() + compared[1:] + ".", ""]
    if corpora:
        lines += [f"Corpus {', '.join(corpora)}.", ""]
    head = ["| verdict | strategy | retriever | query set | metric | baseline | now | diff | "
            "interval |", "|---|---|---|---|---|---:|---:|---:|---|"]

    def row(r, v) -> str:
        status = f"**{v['status']}**" if v["status"] != "ok" else "ok"
        return (f"| {status} | {_cell(r['strategy'])} | {_cell(r['retriever'])} | "
                f"{_cell(r['query_set'])} | {v['metric']} | {v['baseline'] * 100:.1f} | "
                f"{v['value'] * 100:.1f} | {v['diff'] * 100:+.1f} | "
                f"[{v['low'] * 100:+.1f}, {v['high'] * 100:+.1f}] "
                f"{level(v.get('confidence', NOISE_CONFIDENCE))} |")

    if table:
        moved = [row(r, v) for _, r, v in table if v["status"] != "ok"]
        fine = [row(r, v) for _, r, v in table if v["status"] == "ok"]
        fine_cases = [r for r in cases if all(v["status"] == "ok" for v in r["verdicts"])]
        lines += head + moved if moved else []
        if fine:
            lines += ["", f"{len(fine_cases)} of {len(cases)} cases ok: every gated metric "
                          "within its bounds.", "",
                      f"<details><summary>the {len(fine)} comparisons that are ok</summary>",
                      ""] + head + fine + ["", "</details>"]
        lines.append("")
        note = family_note((v.get("confidence", NOISE_CONFIDENCE) for _, _, v in table), alpha)
        if note:
            lines += [note, ""]
    for r in cases:
        if (r["strategy"], r["retriever"], r["query_set"]) not in regressed:
            continue
        lost = [q for q in r.get("per_query") or [] if q["change"] < 0][:MARKDOWN_QUERIES]
        if not lost:
            continue
        lines += [f"### Queries that lost most: {_cell(r['strategy'])} · "
                  f"{_cell(r['retriever'])} · {_cell(r['query_set'])}", "",
                  "| query | gold | before | now | most gold before | most gold now |",
                  "|---|---|---:|---:|---|---|"]
        lines += [f"| {_cell(q['query'])} | {_cell(q['doc'])} | {q['before'] * 100:.1f} | "
                  f"{q['now'] * 100:.1f} | {_cell(q.get('best_before') or '-')} | "
                  f"{_cell(q.get('best_now') or '-')} |" for q in lost]
        lines.append("")
    lines += information_markdown(rows)
    reasons = list(dict.fromkeys(r["not_gated"] for r in rows if "not_gated" in r))
    if reasons:
        lines += ["### Not gated", ""] + [f"- {_cell(x)}" for x in reasons] + [""]
    return "\n".join(lines).rstrip() + "\n"


def compared_line(rows: list[dict]) -> str:
    """What was compared with what, the line a summary leads with: "against main at 1a2b3c4,
    on this branch's 79 documents and 254 questions" (empty when nothing was compared)."""
    against = list(dict.fromkeys(r["against"] for r in rows if "against" in r))
    if not against:
        return ""
    whose = next(r.get("whose", "this run's") for r in rows if "against" in r)
    documents = max(r.get("documents", 0) for r in rows if "against" in r)
    questions = {r["query_set"]: r.get("questions", 0) for r in rows if "against" in r}
    return (f"against {' and '.join(against)}, on {whose} {documents} documents and "
            f"{sum(questions.values())} questions")


def information_markdown(rows: list[dict]) -> list[str]:
    """The cases whose corpus changed while their chunking did not: the line that says so,
    and their numbers now beside the recorded ones, as information, not a verdict."""
    info = [r for r in rows if "info" in r]
    lines = []
    for said in dict.fromkeys(r["info"] for r in info):
        lines += ["### Information, not a verdict", "", f"{_cell(said)}; re-baseline when "
                  "convenient.", "", "| strategy | retriever | query set | metric | recorded | "
                  "now |", "|---|---|---|---|---:|---:|"]
        lines += [f"| {_cell(r['strategy'])} | {_cell(r['retriever'])} | {_cell(r['query_set'])} "
                  f"| {m} | {r['recorded'][m] * 100:.1f} | {r['metrics'][m] * 100:.1f} |"
                  for r in info if r["info"] == said
                  for m in HEADLINE if m in r["recorded"]]
        lines.append("")
    return lines
