"""The report's plots as SVG markup written here: no plotting library, no network."""

from __future__ import annotations

import html
import math
import re
import unicodedata
from dataclasses import dataclass

from ..results import Result
from .view import PALETTE, View, chars

# Budget-curve lines: the seed's contrasts first, then the best of the rest.
CURVE_PICKS = ("fixed-200", "fixed-1600", "recursive-400-ov40", "structure-400+prefix",
               "heading-h2", "parent-child-r200-s800")
CURVE_LINES = 6
FONT = ('system-ui, -apple-system, "Segoe UI", "Hiragino Sans", "Noto Sans CJK JP", '
        '"Yu Gothic", sans-serif')


def escape(text) -> str:
    return html.escape(str(text), quote=True)


_KANA = re.compile(r"[\u3041-\u30ff]")
_HANGUL = re.compile(r"[\uac00-\ud7a3]")
_HAN = re.compile(r"[\u4e00-\u9fff]")


# CJK families first for a CJK corpus: a Latin system font first would leave the browser to
# pick a fallback for every ideograph, which on a fresh Linux may have none (boxes) or be a
# Chinese face for Japanese text. Debian's fonts-noto-cjk provides the Noto CJK families.
CJK_FONTS = {
    "ja": '"Noto Sans CJK JP", "Noto Sans JP", "Hiragino Sans", "Yu Gothic", Meiryo',
    "zh": '"Noto Sans CJK SC", "Noto Sans SC", "PingFang SC", "Microsoft YaHei"',
    "ko": '"Noto Sans CJK KR", "Noto Sans KR", "Apple SD Gothic Neo", "Malgun Gothic"',
}


def declare_language(page: str, lang: str | None = None) -> str:
    """The page with `<html lang>` set to its corpus's language: `lang` when known (a
    built-in corpus), else as the page's text shows it (its own words are English). A
    browser then picks Japanese, not Chinese, glyphs for kanji, and a screen reader the
    right voice; for Japanese, Chinese and Korean the page's fonts name that language's
    CJK families first (the plots' text too)."""
    lang = lang or ("ja" if len(_KANA.findall(page)) >= 5 else "ko" if len(
        _HANGUL.findall(page)) >= 5 else "zh" if len(_HAN.findall(page)) >= 5 else "en")
    page = page.replace('<html lang="en">', f'<html lang="{lang}">', 1)
    families = CJK_FONTS.get(lang.split("-")[0])
    if families:
        style = (f"<style>html:lang({lang}) body, html:lang({lang}) svg {{ font-family: "
                 f"{families}, system-ui, sans-serif; }}</style>\n")
        page = page.replace("</head>", style + "</head>", 1)
    return page


def _text_width(text: str, size: float) -> float:
    return sum(size * (1.0 if unicodedata.east_asian_width(c) in "WF" else 0.58) for c in text)


def nice_step(span: float, ticks: int = 5) -> float:
    raw = span / max(1, ticks)
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    for m in (1, 2, 2.5, 5, 10):
        if m * mag >= raw:
            return m * mag
    return 10 * mag


def pct_axis(values: list[float]) -> tuple[float, list[float]]:
    """A 0-based share axis up to a round value just above the data."""
    top = max([v for v in values if v is not None] + [0.05])
    step = nice_step(top, 5)
    hi = step * math.ceil(top * 1.02 / step)
    return hi, [i * step for i in range(int(round(hi / step)) + 1)]


def _log_ticks(lo: float, hi: float) -> list[float]:
    ticks = []
    for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        for m in (1, 2, 5):
            v = m * 10 ** e
            if lo <= v <= hi:
                ticks.append(v)
    return ticks


def _log_bounds(lo: float, hi: float) -> tuple[float, float]:
    """Widen [lo, hi] to the 1-2-5 ticks around it, so both ends carry a tick label."""
    steps = [m * 10 ** e for e in range(0, 8) for m in (1, 2, 5)]
    return (max([v for v in steps if v <= lo] or [lo]), min([v for v in steps if v >= hi] or [hi]))


class Svg:
    def __init__(self, width: int, height: int, title: str):
        self.width, self.height, self.title = width, height, title
        self.items: list[str] = []

    def add(self, markup: str) -> None:
        self.items.append(markup)

    def text(self, x, y, s, *, size=12, anchor="start", weight="normal", fill="#222",
             rotate: float | None = None, halo: bool = False) -> None:
        rot = f' transform="rotate({rotate:g} {x:.1f} {y:.1f})"' if rotate is not None else ""
        # A white outline under the glyphs keeps a label legible where it crosses a line.
        out = ' stroke="#fff" stroke-width="3" paint-order="stroke"' if halo else ""
        self.add(f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
                 f'font-weight="{weight}" fill="{fill}"{rot}{out}>{escape(s)}</text>')

    def line(self, x1, y1, x2, y2, *, stroke="#888", width=1.0, dash: str | None = None) -> None:
        d = f' stroke-dasharray="{dash}"' if dash else ""
        self.add(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
                 f'stroke="{stroke}" stroke-width="{width}"{d}/>')

    def circle(self, x, y, r, *, fill, stroke=None) -> None:
        s = f' stroke="{stroke}" stroke-width="1.5"' if stroke else ""
        self.add(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r}" fill="{fill}"{s}/>')

    def rect(self, x, y, w, h, *, fill, stroke=None) -> None:
        s = f' stroke="{stroke}"' if stroke else ""
        self.add(f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(0, w):.1f}" height="{h:.1f}" '
                 f'fill="{fill}"{s}/>')

    def polyline(self, points, *, stroke, width=2.0) -> None:
        pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        self.add(f'<polyline points="{pts}" fill="none" stroke="{stroke}" stroke-width="{width}"/>')

    def markup(self) -> str:
        body = "\n".join(self.items)
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" '
                f'height="{self.height}" viewBox="0 0 {self.width} {self.height}" role="img" '
                f'font-family="{escape(FONT)}">\n<title>{escape(self.title)}</title>\n'
                f'<rect width="100%" height="100%" fill="#fff"/>\n{body}\n</svg>')


@dataclass
class Frame:
    """A plot area inside an SVG with its axes' value ranges."""

    x0: float
    y0: float
    x1: float
    y1: float
    xlo: float
    xhi: float
    yhi: float
    xlog: bool = False

    def x(self, v: float) -> float:
        if self.xlog:
            t = (math.log(v) - math.log(self.xlo)) / (math.log(self.xhi) - math.log(self.xlo))
        else:
            t = (v - self.xlo) / ((self.xhi - self.xlo) or 1)
        return self.x0 + t * (self.x1 - self.x0)

    def y(self, v: float) -> float:
        return self.y1 - (v / (self.yhi or 1)) * (self.y1 - self.y0)


def axes(svg: Svg, f: Frame, xticks, yticks, xlabel: str, ylabel: str,
         xfmt=lambda v: f"{v:,.0f}") -> None:
    last = math.inf  # the top of the last y label drawn, going up
    for v in yticks:
        y = f.y(v)
        svg.line(f.x0, y, f.x1, y, stroke="#e3e3e3")
        if y + 4 <= last - 2:  # a label that would touch the one below is left out
            svg.text(f.x0 - 6, y + 4, f"{100 * v:.0f}%", size=11, anchor="end", fill="#444")
            last = y + 4 - 11
    right = -math.inf  # the right end of the last x label drawn
    for v in xticks:
        x = f.x(v)
        svg.line(x, f.y1, x, f.y1 + 5, stroke="#666")
        label = xfmt(v)
        half = _text_width(label, 11) / 2
        # in a narrow panel, labels that would touch their left neighbour are left out;
        # the tick marks stay, and the first and every other drawn label say the scale
        if x - half >= right + 4:
            svg.text(x, f.y1 + 18, label, size=11, anchor="middle", fill="#444")
            right = x + half
    svg.line(f.x0, f.y1, f.x1, f.y1, stroke="#444")
    svg.line(f.x0, f.y0, f.x0, f.y1, stroke="#444")
    svg.text((f.x0 + f.x1) / 2, f.y1 + 36, xlabel, size=12, anchor="middle")
    svg.text(f.x0 - 44, (f.y0 + f.y1) / 2, ylabel, size=12, anchor="middle",
             rotate=-90)


def no_data(svg: Svg, message: str) -> str:
    svg.text(svg.width / 2, svg.height / 2, message, size=14, anchor="middle", fill="#666")
    return svg.markup()


def _place_labels(svg: Svg, points: list[tuple[float, float, str]], bounds: Frame,
                  markers: list[tuple[float, float]] = ()) -> None:
    """Label points without covering other labels or markers: try beside the point, then
    step up and down; a label moved away from its point gets a thin leader line."""
    taken = [(x - 5, y - 5, x + 5, y + 5) for x, y in markers]
    size = 11
    for x, y, label in sorted(points, key=lambda p: (p[0], p[1])):
        w = _text_width(label, size)
        placed = None
        for dy in [0] + [d * sign for d in range(13, 13 * 10, 13) for sign in (-1, 1)]:
            for side in (1, -1):
                lx = x + 7 if side > 0 else x - 7 - w
                ly = y + 4 + dy
                box = (lx - 1, ly - size, lx + w + 1, ly + 3)
                inside = box[0] >= bounds.x0 and box[2] <= bounds.x1 + 150 and \
                    box[1] >= bounds.y0 - 4 and box[3] <= bounds.y1
                if inside and not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3]
                                      and b[1] < box[3] for b in taken):
                    placed = (lx, ly, box, side)
                    break
            if placed:
                break
        if placed is None:
            continue  # crowded out: the tables carry every value
        lx, ly, box, side = placed
        taken.append(box)
        if abs(ly - 4 - y) > 6:
            svg.line(x, y, lx if side > 0 else lx + w, ly - 4, stroke="#bbb", width=0.8)
        svg.text(lx, ly, label, size=size, fill="#333", halo=True)


def plot_recall_vs_length(doc: View, qs: str) -> str:
    retrievers = doc.retrievers(qs)
    panel_h, top, width = 330, 64, 1080
    svg = Svg(width, top + panel_h * max(1, len(retrievers)) + 10,
              f"Recall against mean chunk length ({qs})")
    svg.text(20, 24, f"Recall@{doc.k} and budget recall against mean chunk length — {qs}",
             size=16, weight="bold")
    svg.circle(30, 46, 5, fill=PALETTE[0])
    svg.text(40, 50, f"Recall@{doc.k}", size=12)
    svg.circle(140, 46, 5, fill="#fff", stroke=PALETTE[3])
    svg.text(150, 50, f"budget recall @{chars(doc.budget)} {doc.unit}", size=12)
    lengths = {s: row.chunks.mean_len for s in doc.strategies(qs)
               if (row := doc.chunk_row(qs, s)) is not None}
    lengths = {s: float(v) for s, v in lengths.items() if v}
    if not lengths or not retrievers:
        return no_data(svg, "no chunk lengths in the results")
    xlo, xhi = _log_bounds(min(lengths.values()) / 1.15, max(lengths.values()) * 1.15)
    values = [_value(doc.row(qs, s, r), m) for s in lengths for r in retrievers
              for m in ("recall_at_k", "budget_recall")]
    yhi, yticks = pct_axis(values)
    for i, ret in enumerate(retrievers):
        y0 = top + i * panel_h + 24
        f = Frame(90, y0, width - 190, y0 + panel_h - 80, xlo, xhi, yhi, xlog=True)
        svg.text(f.x0, y0 - 8, ret, size=14, weight="bold")
        axes(svg, f, _log_ticks(xlo, xhi), yticks, f"mean chunk length ({doc.unit}, log scale)",
             "recall")
        labels, markers = [], []
        for s, length in lengths.items():
            row = doc.row(qs, s, ret)
            r = _value(row, "recall_at_k")
            b = _value(row, "budget_recall")
            x = f.x(length)
            ys = [f.y(v) for v in (r, b) if v is not None]
            if not ys:
                continue
            if len(ys) == 2:
                svg.line(x, ys[0], x, ys[1], stroke="#999", width=1.2)
            if r is not None:
                svg.circle(x, f.y(r), 4.5, fill=PALETTE[0])
            if b is not None:
                svg.circle(x, f.y(b), 4.5, fill="none", stroke=PALETTE[3])
            labels.append((x, min(ys), s))
            markers += [(x, y) for y in ys]
        _place_labels(svg, labels, f, markers)
    return svg.markup()


def _curve_strategies(doc: View, qs: str) -> list[str]:
    have = [s for s in doc.strategies(qs)
            if any(_curve(doc.row(qs, s, r)) for r in doc.retrievers(qs))]
    picks = [s for s in CURVE_PICKS if s in have]
    first = doc.retrievers(qs)[0] if doc.retrievers(qs) else None
    rest = sorted((s for s in have if s not in picks),
                  key=lambda s: -(_value(doc.row(qs, s, first), "budget_recall") or 0))
    return (picks + rest)[:CURVE_LINES]


def plot_budget_curves(doc: View, qs: str) -> str:
    retrievers = doc.retrievers(qs)
    chosen = _curve_strategies(doc, qs)
    budgets = doc.budgets(qs)
    width, top = 1080, 40
    panel_w = (width - 40) / max(1, len(retrievers))
    legend_rows = math.ceil(len(chosen) / 3) if chosen else 0
    # which of the chosen strategies each panel holds: `use` runs on three strategies only
    held: dict[str, tuple[str, ...]] = {
        ret: tuple(s for s in chosen if _curve(doc.row(qs, s, ret))) for ret in retrievers}
    panels_of: dict[tuple[str, ...], list[str]] = {}
    for ret, strategies in held.items():
        panels_of.setdefault(strategies, []).append(ret)
    every = len(panels_of) <= 1 and all(len(h) == len(chosen) for h in held.values())
    height = top + 330 + 20 * legend_rows + 20 + (0 if every else 20 * len(panels_of))
    svg = Svg(width, height, f"Recall against context budget ({qs})")
    svg.text(20, 24, f"Budget recall against context budget — {qs}", size=16, weight="bold")
    if not chosen or len(budgets) < 2:
        return no_data(svg, "no budget curves in the results")
    values = [_curve(doc.row(qs, s, r)).get(b) for s in chosen for r in retrievers
              for b in budgets]
    yhi, yticks = pct_axis(values)
    for i, ret in enumerate(retrievers):
        x0 = 20 + i * panel_w + 70
        f = Frame(x0, top + 30, x0 + panel_w - 100, top + 270, budgets[0], budgets[-1], yhi)
        svg.text(f.x0, f.y0 - 10, ret if len(held[ret]) == len(chosen) else
                 f"{ret} ({len(held[ret])} of {len(chosen)})", size=14, weight="bold")
        axes(svg, f, budgets, yticks, f"context budget ({doc.unit})", "budget recall",
             xfmt=lambda v: f"{v / 1000:g}k" if v >= 1000 else f"{v:g}")
        if budgets[0] <= doc.budget <= budgets[-1]:
            svg.line(f.x(doc.budget), f.y0, f.x(doc.budget), f.y1, stroke="#aaa", dash="4 3")
        for j, s in enumerate(chosen):
            curve = _curve(doc.row(qs, s, ret))
            pts = [(f.x(b), f.y(curve[b])) for b in budgets if curve.get(b) is not None]
            colour = doc.colour(s)
            if len(pts) > 1:
                svg.polyline(pts, stroke=colour)
            for x, y in pts:
                svg.circle(x, y, 3, fill=colour)
    # one legend for the figure, under all its panels, saying which panels hold what
    ly = top + 330
    svg.text(20, ly, "strategies (every panel):" if every else "strategies:", size=12,
             weight="bold")
    for j, s in enumerate(chosen):
        x = 200 + (j % 3) * 290
        y = ly + (j // 3) * 20
        svg.line(x, y - 4, x + 24, y - 4, stroke=doc.colour(s), width=3)
        svg.text(x + 30, y, s, size=12)
    if not every:
        for i, (strategies, rets) in enumerate(panels_of.items()):
            what = (f"all {len(chosen)}" if len(strategies) == len(chosen) else
                    ", ".join(strategies) + " only" if strategies else "none of them")
            svg.text(20, ly + 20 * legend_rows + 20 * i, f"{', '.join(rets)}: {what}", size=12)
    return svg.markup()


def _value(row: Result | None, metric: str) -> float | None:
    return None if row is None else row.value(metric)


def _curve(row: Result | None) -> dict[int, float]:
    return {} if row is None else {b: m.value for b, m in row.budget_curve.items()}


def plot_cut_rate(doc: View, qs: str) -> str:
    rates = [(s, row.cut_rate) for s in doc.strategies(qs)
             if (row := doc.chunk_row(qs, s)) is not None]
    rates.sort(key=lambda sm: -sm[1].value)
    width, top, bar, gap = 1080, 50, 18, 6
    label_w = max([_text_width(s, 12) for s, _ in rates] + [60]) + 16
    height = top + len(rates) * (bar + gap) + 60
    svg = Svg(width, max(height, 140), f"Cut rate per strategy ({qs})")
    svg.text(20, 24, f"Cut rate: table and pre blocks with a chunk boundary inside — {qs}",
             size=16, weight="bold")
    if not rates:
        return no_data(svg, "no cut rates in the results")
    hi, ticks = pct_axis([m.value for _, m in rates])
    f = Frame(20 + label_w, top, width - 140, top + len(rates) * (bar + gap), 0, hi, 1)
    for v in ticks:
        x = f.x(v)
        svg.line(x, f.y0, x, f.y1, stroke="#e3e3e3")
        svg.text(x, f.y1 + 18, f"{100 * v:.0f}%", size=11, anchor="middle", fill="#444")
    svg.line(f.x0, f.y1, f.x1, f.y1, stroke="#444")
    svg.line(f.x0, f.y0, f.x0, f.y1, stroke="#444")
    svg.text((f.x0 + f.x1) / 2, f.y1 + 38, "share of table/pre blocks cut", size=12,
             anchor="middle")
    for i, (s, m) in enumerate(rates):
        y = top + i * (bar + gap) + gap / 2
        svg.text(f.x0 - 8, y + bar - 5, s, size=12, anchor="end")
        svg.rect(f.x0, y, f.x(m.value) - f.x0, bar, fill=PALETTE[0])
        note = f"{100 * m.value:.1f}% ({m.cut:,}/{m.blocks:,})"
        svg.text(f.x(m.value) + 6, y + bar - 5, note, size=11, fill="#333")
    return svg.markup()

