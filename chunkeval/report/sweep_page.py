"""sweep.html: a sweep's verdict and recommendation at the top, then recall against size (one
line per overlap and retriever, 95% bands), the quality-cost frontier, the cut rate against
size, and every configuration in a table that sorts by any column. One self-contained file:
inline SVG, CSS and a few lines of script, nothing fetched."""

from __future__ import annotations

import math

from ..sweep import HANDED, IN_BUDGET, JUDGED
from ..stats import RESAMPLES, SEED
from .svg import Frame, Svg, axes, escape, nice_step, no_data, pct_axis
from .view import PALETTE

DASHES = (None, "6 4", "2 3", "10 3 2 3")
Z95 = 1.96


def _pct(v: float) -> str:
    return f"{v * 100:.1f}%"


def pts(v: float) -> str:
    """A difference of shares in points, signed."""
    return f"{v * 100:+.1f}"


def versus_best(rec: dict, margin: float) -> str:
    """The recommendation's difference to the best with its family-wise one-sided lower bound,
    against the margin."""
    if rec.get("is_best"):
        return "it is the best"
    return (f"{pts(rec['diff'])} points vs the best, family-wise lower bound {pts(rec['low'])} "
            f"above the margin {pts(-margin)}")


def unclear(v: dict) -> str:
    """What a verdict without a recommendation says, from its json."""
    n, needed = v["judged_on"], v.get("queries_needed")
    # past a hundred times the questions at hand, a number would claim too much
    more = (f"about {needed:,} needed" if needed and needed <= 100 * n
            else f"over {100 * n:,} needed" if needed else "more needed")
    return (f"the questions cannot tell configurations within {v['margin'] * 100:g} points "
            f"apart: {n:,} questions; {more}")


HALVING_NOTE = ("Searched by successive halving on nested samples of the queries: a rung "
                "drops a configuration only when it shows it worse than the rung's leader by "
                "more than the margin (the upper bound of configuration − leader, one-sided "
                "and family-wise over the rung's comparisons, below −margin, for every "
                "retriever); the finalists are judged on all the queries.")


def rung_dropped(rung: dict) -> list[str]:
    """Each configuration a rung dropped with the reason: its upper bound against the leader
    (rungs recorded before bounds were kept: the name alone)."""
    why = {b["strategy"]: b for b in rung.get("bounds", [])}
    out = [f"{n} (≤ {pts(why[n]['high'])} points vs {why[n]['leader']})" if n in why else n
           for n in rung["dropped"]]
    return out + [f"{n} (failed)" for n in rung.get("failed", [])]


def _ticks(lo: float, hi: float) -> tuple[float, float, list[float]]:
    step = nice_step(hi - lo or 1, 6)
    lo, hi = step * math.floor(lo / step), step * math.ceil(hi / step)
    return lo, hi, [lo + i * step for i in range(int(round((hi - lo) / step)) + 1)]


def plot_lines(title: str, lines: list[dict], xlabel: str, ylabel: str,
               width: int = 760, height: int = 380) -> str:
    """Lines of (x, y, low, high) points, each {label, colour, dash, points}; a band between
    low and high where they are given. y is a share (0-1)."""
    svg = Svg(width, height, title)
    svg.text(16, 22, title, size=14, weight="bold")
    xs = [p[0] for line in lines for p in line["points"]]
    if not xs:
        return no_data(svg, "no data")
    # a share never passes 1, however wide its band
    ys = [min(1.0, v) for line in lines for p in line["points"] for v in (p[1], p[3])
          if v is not None]
    xlo, xhi, xticks = _ticks(min(xs), max(xs))
    yhi, yticks = pct_axis(ys)
    f = Frame(70, 40, width - 170, height - 50, xlo, xhi, yhi)
    axes(svg, f, xticks, yticks, xlabel, ylabel)
    for i, line in enumerate(lines):
        pts = sorted(line["points"])
        band = [(x, lo, hi) for x, _, lo, hi in pts if lo is not None]
        if len(band) > 1:
            upper = " ".join(f"{f.x(x):.1f},{f.y(min(hi, yhi)):.1f}" for x, _, hi in band)
            lower = " ".join(f"{f.x(x):.1f},{f.y(max(lo, 0)):.1f}" for x, lo, _ in reversed(band))
            svg.add(f'<polygon points="{upper} {lower}" fill="{line["colour"]}" '
                    'fill-opacity="0.12" stroke="none"/>')
        coords = [(f.x(x), f.y(y)) for x, y, _, _ in pts]
        dash = f' stroke-dasharray="{line["dash"]}"' if line.get("dash") else ""
        svg.add('<polyline points="' + " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
                + f'" fill="none" stroke="{line["colour"]}" stroke-width="2"{dash}/>')
        for x, y in coords:
            svg.circle(x, y, 2.5, fill=line["colour"])
        ly = 48 + 16 * i
        svg.add(f'<line x1="{width - 160}" y1="{ly - 4}" x2="{width - 136}" y2="{ly - 4}" '
                f'stroke="{line["colour"]}" stroke-width="2"{dash}/>')
        svg.text(width - 130, ly, line["label"], size=11)
    return svg.markup()


def plot_points(title: str, groups: list[dict], xlabel: str, ylabel: str,
                marked: set[tuple[str, str]] = frozenset(), width: int = 760,
                height: int = 380) -> str:
    """Scatter of (x, y, name) per group {label, colour, points, band?};
    each group's frontier (no other point both cheaper and better) is joined by a line;
    `marked` holds (group label, name) of the points that get a ring; a group's `band`
    (low, high) is shaded across the plot: the margin below its best."""
    svg = Svg(width, height, title)
    svg.text(16, 22, title, size=14, weight="bold")
    xs = [p[0] for g in groups for p in g["points"]]
    if not xs:
        return no_data(svg, "no data")
    xlo, xhi, xticks = _ticks(0, max(xs))
    yhi, yticks = pct_axis([p[1] for g in groups for p in g["points"]])
    f = Frame(70, 40, width - 170, height - 50, xlo, xhi, yhi)
    axes(svg, f, xticks, yticks, xlabel, ylabel)
    for g in groups:
        if g.get("band"):
            lo, hi = (min(max(v, 0.0), yhi) for v in g["band"])
            svg.add(f'<rect class="margin" x="{f.x(xlo):.1f}" y="{f.y(hi):.1f}" '
                    f'width="{f.x(xhi) - f.x(xlo):.1f}" height="{f.y(lo) - f.y(hi):.1f}" '
                    f'fill="{g["colour"]}" fill-opacity="0.12" stroke="none">'
                    f'<title>{escape(g["label"])}: within the margin of the best</title></rect>')
    for i, g in enumerate(groups):
        front, top = [], -1.0
        for x, y, _ in sorted(g["points"]):
            if y > top:
                front.append((f.x(x), f.y(y)))
                top = y
        svg.polyline(front, stroke=g["colour"], width=1.2)
        for x, y, name in g["points"]:
            svg.add(f'<circle cx="{f.x(x):.1f}" cy="{f.y(y):.1f}" r="3.5" '
                    f'fill="{g["colour"]}" fill-opacity="0.75"><title>{escape(name)}: '
                    f'{_pct(y)}</title></circle>')
            if (g["label"], name) in marked:
                svg.circle(f.x(x), f.y(y), 7, fill="none", stroke="#000")
        ly = 48 + 16 * i
        svg.circle(width - 150, ly - 4, 4, fill=g["colour"])
        svg.text(width - 140, ly, g["label"], size=11)
    if marked:
        ly = 48 + 16 * len(groups)
        svg.circle(width - 150, ly - 4, 6, fill="none", stroke="#000")
        svg.text(width - 140, ly, "recommended", size=11)
    return svg.markup()


def _configs(data: dict, qs: str) -> list[dict]:
    return [c for c in data["configurations"] if c["query_set"] == qs and not c["against"]]


def _share_label(c: dict) -> str:
    return f"overlap {c['share'] * 100:.0f}%" if c["share"] else "no overlap"


def recall_plots(data: dict, qs: str) -> list[str]:
    configs = _configs(data, qs)
    retrievers = list(dict.fromkeys(c["retriever"] for c in configs))
    shares = sorted({round(c["share"], 2) for c in configs})
    k, budget = data["settings"]["k"], data["settings"]["budget"]
    out = []
    for metric in JUDGED:
        label = metric.title(k) + (f" @{budget:,}" if metric is IN_BUDGET else "")
        lines = []
        for ri, ret in enumerate(retrievers):
            for si, share in enumerate(shares):
                pts = []
                for c in configs:
                    if c["retriever"] != ret or round(c["share"], 2) != share:
                        continue
                    m = c["metrics"][metric.name]
                    pts.append((c["size"], m["value"], m["value"] - Z95 * m["se"],
                                m["value"] + Z95 * m["se"]))
                if pts:
                    lines.append({"label": f"{ret}, {share * 100:.0f}% overlap",
                                  "colour": PALETTE[si % len(PALETTE)],
                                  "dash": DASHES[ri % len(DASHES)], "points": pts})
        out.append(plot_lines(f"{label} against size — {qs}", lines, "chunk size",
                              f"{label} (95% band)"))
    return out


def frontier_plots(data: dict, qs: str) -> list[str]:
    configs = _configs(data, qs)
    metric = data["settings"]["metric"]
    retrievers = list(dict.fromkeys(c["retriever"] for c in configs))
    marked = {(v["retriever"], v["recommendation"]["strategy"]) for v in data["verdicts"]
              if v["query_set"] == qs and v["metric"] == metric and v["recommendation"]}
    handed = HANDED[metric]
    out = []
    bands = {v["retriever"]: (v["best_value"] - v["margin"], v["best_value"])
             for v in data["verdicts"] if v["query_set"] == qs and v["metric"] == metric}
    for key, xlabel in (("chunks", "chunks indexed"), (handed, "characters handed per query")):
        groups = []
        for ri, ret in enumerate(retrievers):
            pts = [((c["chunks"]["count"] if key == "chunks" else c[key]),
                    c["metrics"][metric]["value"], c["strategy"])
                   for c in configs if c["retriever"] == ret]
            groups.append({"label": ret, "colour": PALETTE[ri % len(PALETTE)], "points": pts,
                           "band": bands.get(ret)})
        out.append(plot_points(f"{metric} against {xlabel} — {qs} (shaded: the margin below "
                               "the best)", groups, xlabel, metric, marked))
    return out


def cut_plot(data: dict, qs: str) -> str:
    configs = _configs(data, qs)
    first = configs[0]["retriever"] if configs else None
    shares = sorted({round(c["share"], 2) for c in configs})
    lines = []
    for si, share in enumerate(shares):
        pts = [(c["size"], c["cut_rate"]["value"], None, None) for c in configs
               if c["retriever"] == first and round(c["share"], 2) == share]
        lines.append({"label": f"{share * 100:.0f}% overlap",
                      "colour": PALETTE[si % len(PALETTE)], "points": pts})
    return plot_lines(f"cut rate of tables and code against size — {qs}", lines,
                      "chunk size", "cut rate")


def _verdicts_html(data: dict) -> str:
    """One row a verdict: the best, the verdict, the recommendation and its difference (and
    the team's splitter's); what is as good as the best opens under it."""
    heads = ["retriever", "query set", "metric", "queries judged", "best", "verdict",
             "recommended", "vs the best", "chunks", "handed", "cut rate"]
    against = any(v.get("against") for v in data["verdicts"])
    if against:
        heads.append("recommended vs yours")
    rows = []
    for v in data["verdicts"]:
        rec, word, a = v["recommendation"], v["verdict"], v.get("against")
        good = ", ".join(f"<code>{escape(n)}</code>" for n in v["as_good"])
        verdict = (f'<details><summary><b class="tie">{escape(word)}</b>: '
                   f'{len(v["as_good"])} as good</summary>{good}</details>' if good else
                   f'<b class="{"ok" if rec else "tie"}">{escape(word)}</b>')
        cells = [escape(v["retriever"]), escape(v["query_set"]), escape(v["metric"]),
                 f'{v["judged_on"]}' + (f' (chosen on {v["chosen_on"]})'
                                        if v["chosen_on"] != v["judged_on"] else ""),
                 f'<code>{escape(v["best"])}</code> {_pct(v["best_value"])}', verdict]
        if rec:
            cells += [f'<code class="rec">{escape(rec["spec"])}</code>',
                      escape(versus_best(rec, v["margin"])), f'{rec["chunks"]:,}',
                      f'{rec["handed"]:,.0f}', _pct(rec["cut_rate"])]
        else:
            cells += [escape(f"none: {unclear(v)}"), "", "", "", ""]
        if against:
            cells.append(f'<b>{pts(a["diff"])}</b> points [{pts(a["low"])}, '
                         f'{pts(a["high"])}] vs <code>{escape(a["spec"])}</code>' if a else "")
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return ('<table id="verdicts"><thead><tr>'
            + "".join(f"<th>{escape(h)}</th>" for h in heads) + "</tr></thead><tbody>\n"
            + "\n".join(rows) + "\n</tbody></table>"
            "<p>Each configuration's difference to the best (configuration − best) has a "
            "one-sided lower bound that holds for all of them at once (bootstrap max-t, "
            f"{RESAMPLES:,} resamples, seed {SEED}, family-wise at alpha). A configuration is "
            "as good as the best when that bound is above −margin; the recommendation is the "
            "cheapest of the best and those as good as it: fewest chunks, then fewest characters "
            "handed, then the "
            "lowest cut rate. A confirmed winner: every other configuration is shown worse "
            "(its upper bound below 0). Not enough evidence: neither holds, and nothing is "
            "recommended.</p>")


def _rungs_html(data: dict) -> str:
    if not data.get("rungs"):
        return ""
    rows = "".join(f"<tr><td>{escape(r['query_set'])}</td><td>{i}</td><td>{r['queries']}</td>"
                   f"<td>{r['evaluated']}</td>"
                   f"<td>{r['kept']}</td>"
                   f"<td>{escape(', '.join(rung_dropped(r))) or 'none'}</td>"
                   "</tr>" for i, r in enumerate(data["rungs"], 1))
    return (f"<h2>Successive halving</h2><p>{escape(HALVING_NOTE)}</p>"
            "<table id=\"rungs\"><thead><tr><th>query set</th>"
            "<th>rung</th>"
            "<th>queries</th><th>evaluated</th><th>kept</th><th>dropped</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>")


def _table(data: dict) -> str:
    k = data["settings"]["k"]
    sep = {}
    metric = data["settings"]["metric"]
    bounds = {}
    for v in [v for v in data["verdicts"] if v["metric"] == metric]:
        key = (v["retriever"], v["query_set"])
        sep[key + (v["best"],)] = "best"
        bounds[key + (v["best"],)] = (0.0, 0.0, 0.0, v["margin"])
        for c in v["comparisons"]:
            sep[key + (c["strategy"],)] = "as good" if c["as_good"] else "no"
            bounds[key + (c["strategy"],)] = (c["diff"], c["low"], c["high"], v["margin"])
        if v["recommendation"]:
            r = v["recommendation"]["strategy"]
            sep[key + (r,)] = "recommended" if r != v["best"] else "best, recommended"
    heads = ["retriever", "query set", "configuration", "size", "overlap", "chunks",
             f"handed @{k}", "handed in budget", "cut rate", *(x.title(k) for x in JUDGED),
             f"vs best ({metric})", "family-wise bounds", "margin", "as good as the best"]
    rows = []
    for c in data["configurations"]:
        m = c["metrics"]
        where = (c["retriever"], c["query_set"], c["strategy"])
        state = "(yours)" if c["against"] else sep.get(where, "")
        d, lo, hi, margin = bounds.get(where, (None, None, None, None))
        cells = [(c["retriever"], c["retriever"]), (c["query_set"], c["query_set"]),
                 (c["spec"], c["strategy"]), (c["size"], c["size"]),
                 (c["overlap"], c["overlap"]), (c["chunks"]["count"], f"{c['chunks']['count']:,}"),
                 *((c[h], f"{c[h]:,.0f}") for h in HANDED.values()),
                 (c["cut_rate"]["value"], _pct(c["cut_rate"]["value"])),
                 *((m[x.name]["value"], _pct(m[x.name]["value"])) for x in JUDGED),
                 (d if d is not None else "", pts(d) if d is not None else ""),
                 (lo if lo is not None else "",
                  f"[{pts(lo)}, {pts(hi)}]" if lo is not None else ""),
                 (margin if margin is not None else "",
                  pts(-margin) if margin is not None else ""),
                 (state, state)]
        tds = "".join(f'<td data-v="{escape(v)}" title="{escape(c["spec"])}">{escape(t)}</td>'
                      for v, t in cells)
        rows.append(f'<tr class="{escape(state.split(",")[0].strip("()").replace(" ", "-"))}">'
                    f'{tds}</tr>')
    th = "".join(f'<th data-col="{i}">{escape(h)}</th>' for i, h in enumerate(heads))
    return (f'<table id="configs"><thead><tr>{th}</tr></thead><tbody>\n'
            + "\n".join(rows) + "\n</tbody></table>")


SCRIPT = """
(function () {
  var table = document.getElementById("configs");
  var heads = table.tHead.rows[0].cells;
  Array.prototype.forEach.call(heads, function (th) {
    th.addEventListener("click", function () {
      var col = +th.dataset.col, body = table.tBodies[0];
      var down = th.dataset.dir !== "down";
      Array.prototype.forEach.call(heads, function (h) { delete h.dataset.dir; });
      th.dataset.dir = down ? "down" : "up";
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[col].dataset.v, y = b.cells[col].dataset.v;
        var nx = parseFloat(x), ny = parseFloat(y);
        var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : (x < y ? -1 : x > y ? 1 : 0);
        return down ? -c : c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
})();
"""

STYLE = """
body { font-family: system-ui, sans-serif; margin: 24px; color: #222; max-width: 1600px; }
code { background: #f3f3f3; padding: 0 3px; }
#verdicts td { text-align: left; vertical-align: top; }
#verdicts th { cursor: default; text-align: left; }
.ok { color: #007a3d; } .tie { color: #8a5a00; }
code.rec { font-weight: bold; background: #eef6ff; }
.plots { display: flex; flex-wrap: wrap; gap: 12px; }
table { border-collapse: collapse; font-size: 13px; margin-top: 8px; }
th, td { border: 1px solid #ddd; padding: 3px 6px; text-align: right; }
td:nth-child(-n+3), th:nth-child(-n+3) { text-align: left; }
th { background: #f5f5f5; cursor: pointer; position: sticky; top: 0; }
th[data-dir=down]::after { content: " ▼"; } th[data-dir=up]::after { content: " ▲"; }
tr.recommended td, tr.best td { background: #eef6ff; } tr.yours td { background: #fff6e0; }
pre { background: #f6f6f6; padding: 8px; }
"""


def render(data: dict, config_lines: list[str] | None = None) -> str:
    s, corpus = data["settings"], data["corpus"]
    sets = list(dict.fromkeys(c["query_set"] for c in data["configurations"]))
    body = [f"<h1>chunkeval sweep: {escape(s['strategy'])}</h1>",
            f"<p>corpus {escape(corpus['name'])} (fingerprint {escape(corpus['fingerprint'])}, "
            f"{corpus['documents']} documents); {len(data['grid'])} configurations; retrievers "
            f"{escape(', '.join(s['retrievers']))}; top {s['k']}, budget {s['budget']:,}; "
            f"metric {escape(s['metric'])}"
            + (f"; holdout {s['holdout']:g}" if s.get("holdout") else "") + "</p>"]
    body += [f"<p>Left out: {escape(why)}.</p>" for why in data.get("refused", {}).values()]
    body.append(_verdicts_html(data))
    body.append(_rungs_html(data))
    if config_lines:
        body.append("<p>To adopt the recommendation:</p><pre>"
                    + escape("\n".join(config_lines)) + "</pre>")
    for qs in sets:
        body.append(f"<h2>{escape(qs)}</h2>")
        body.append('<div class="plots">' + "".join(recall_plots(data, qs)) + "</div>")
        body.append('<div class="plots">' + "".join(frontier_plots(data, qs))
                    + cut_plot(data, qs) + "</div>")
    body.append("<h2>Every configuration</h2><p>Click a column to sort.</p>")
    body.append(_table(data))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>chunkeval sweep: {escape(s['strategy'])}</title><style>{STYLE}</style>"
            "</head><body>\n" + "\n".join(body)
            + f"\n<script>{SCRIPT}</script>\n</body></html>\n")
