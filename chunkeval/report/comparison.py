"""The pytest run's comparison with the baseline as one HTML page (the `html` setting)."""

from __future__ import annotations

from .html import CSS
from .svg import escape


def render_comparison_html(rows: list[dict], title: str = "chunkeval: this run against the baseline") -> str:
    """The plugin's rows (verdicts and per-query comparison per case) as one HTML page: per
    case its verdicts, then every query, worst loss first, coverage in points."""
    parts = ['<!DOCTYPE html>', '<html lang="en">', "<head>", '<meta charset="utf-8">',
             f"<title>{escape(title)}</title>", f"<style>{CSS}</style>", "</head>", "<body>",
             f"<h1>{escape(title)}</h1>"]
    for r in sorted(rows, key=lambda r: (r["query_set"], r["strategy"], r["retriever"] or "")):
        if "verdicts" not in r:
            continue
        worst = "regressed" if any(v["status"] == "regressed" for v in r["verdicts"]) else "ok"
        parts.append(f"<h2>{escape(r['strategy'])} · {escape(r['retriever'])} · {escape(r['query_set'])}"
                     f" — {worst}</h2>")
        parts.append("<table><tr><th>metric</th><th>baseline</th><th>now</th><th>diff</th>"
                     "<th>interval</th><th>gated</th><th>verdict</th></tr>")
        for v in r["verdicts"]:
            parts.append(f"<tr><td>{escape(v['metric'])}</td><td>{v['baseline'] * 100:.1f}</td>"
                         f"<td>{v['value'] * 100:.1f}</td><td>{v['diff'] * 100:+.1f}</td>"
                         f"<td>[{v['low'] * 100:+.1f}, {v['high'] * 100:+.1f}]</td>"
                         f"<td>{'yes' if v.get('gated', True) else 'no'}</td>"
                         f"<td>{escape(v['status'])}</td></tr>")
        parts.append("</table>")
        queries = r.get("per_query") or []
        if queries:
            parts.append(f"<details><summary>{len(queries)} queries, worst loss first"
                         "</summary><table><tr><th>query</th><th>gold</th><th>before</th>"
                         "<th>now</th><th>change</th><th>first chunk before</th>"
                         "<th>first chunk now</th></tr>")
            for q in queries:
                parts.append(f"<tr><td>{escape(q['query'])}</td><td>{escape(q['doc'])}</td>"
                             f"<td>{q['before'] * 100:.1f}</td><td>{q['now'] * 100:.1f}</td>"
                             f"<td>{q['change'] * 100:+.1f}</td><td>{escape(q['first_before'] or '-')}"
                             f"</td><td>{escape(q['first_now'] or '-')}</td></tr>")
            parts.append("</table></details>")
    parts += ["</body>", "</html>"]
    return "\n".join(parts) + "\n"

