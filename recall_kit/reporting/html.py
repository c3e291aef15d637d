"""The `html` reporter: one self-contained page (inline CSS, inline SVG charts drawn here), viewable
offline, with every piece of text escaped. No scripts, fonts or anything fetched from elsewhere."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

from recall_kit.types import Chart, Report, Reporter, ReportTable

_PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
            "#9c755f", "#bab0ac")

_CSS = """
body{font-family:-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;margin:2rem auto;
max-width:1320px;padding:0 1rem;color:#1f2328;background:#fff;line-height:1.45}
h1{font-size:1.5rem;border-bottom:1px solid #d0d7de;padding-bottom:.4rem}
h2{font-size:1.15rem;margin-top:2rem}
table{border-collapse:collapse;margin:.5rem 0;font-size:.85rem;font-variant-numeric:tabular-nums}
th,td{border:1px solid #d0d7de;padding:.25rem .45rem;text-align:right;white-space:nowrap}
th{background:#f6f8fa;white-space:normal;vertical-align:bottom}
td.text{white-space:normal;overflow-wrap:anywhere;max-width:16rem}
.summary{font-size:1.1rem;font-weight:600;margin:.6rem 0}
.provenance{font-size:.85rem;display:grid;grid-template-columns:max-content 1fr;gap:.15rem 1rem}
.provenance dt{color:#57606a}.provenance dd{margin:0;overflow-wrap:anywhere}
td:first-child,th:first-child,td.text{text-align:left}
tr.ns td{color:#8c959f}
tr.bad td{background:#ffebe9}
.note{color:#57606a;font-size:.85rem;margin:.2rem 0}
.warnings{background:#fff8c5;border:1px solid #d4a72c;padding:.5rem 1rem;border-radius:6px}
.chart{margin:1rem 0}
.wrap{overflow-x:auto}
svg text{font-family:inherit;font-size:11px;fill:#1f2328}
svg text.star{font-size:16px;font-weight:bold}
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high]."""
    if high <= low:
        high = low + 1.0
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    start = math.floor(low / step) * step
    ticks = []
    value = start
    while value <= high + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    if ticks[-1] < high:
        ticks.append(round(value, 10))
    return ticks


def _tick_label(value: float) -> str:
    return f"{value:g}" if abs(value) >= 1e-9 else "0"


class _Canvas:
    """An SVG plot area with a linear y axis (and, for line charts, a linear x axis)."""

    def __init__(self, width: int, height: int, left: int = 60, right: int = 20, top: int = 20, bottom: int = 60):
        self.width, self.height = width, height
        self.left, self.right, self.top, self.bottom = left, right, top, bottom
        self.parts: list[str] = []

    @property
    def plot_width(self) -> float:
        return self.width - self.left - self.right

    @property
    def plot_height(self) -> float:
        return self.height - self.top - self.bottom

    def y_axis(self, low: float, high: float, label: str = "") -> None:
        ticks = _ticks(low, high)
        self.y_low, self.y_high = ticks[0], ticks[-1]
        for tick in ticks:
            y = self.y(tick)
            self.parts.append(f'<line x1="{self.left}" x2="{self.width - self.right}" y1="{y:.1f}" y2="{y:.1f}" '
                              f'stroke="{"#8c959f" if tick == 0 else "#eaeef2"}"/>')
            self.parts.append(f'<text x="{self.left - 6}" y="{y + 4:.1f}" text-anchor="end">{_e(_tick_label(tick))}</text>')
        if label:
            self.parts.append(f'<text transform="translate(14,{self.top + self.plot_height / 2:.1f}) rotate(-90)" '
                              f'text-anchor="middle">{_e(label)}</text>')

    def y(self, value: float) -> float:
        span = (self.y_high - self.y_low) or 1.0
        return self.top + self.plot_height * (1 - (value - self.y_low) / span)

    def legend(self, names: Sequence[str], colours: dict[str, str] | None = None) -> None:
        x = self.left
        y = self.height - 14
        for index, name in enumerate(names):
            colour = _colour(name, index, colours)
            self.parts.append(f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{colour}"/>')
            self.parts.append(f'<text x="{x + 14}" y="{y}">{_e(name)}</text>')
            x += 24 + 7 * len(str(name))

    def svg(self, title: str) -> str:
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{self.height}" '
                f'viewBox="0 0 {self.width} {self.height}" role="img" aria-label="{_e(title)}">'
                f'<title>{_e(title)}</title>' + "".join(self.parts) + "</svg>")


def _colour(name: str, index: int, colours: dict[str, str] | None) -> str:
    """A series' colour: the report-wide one for its name (one colour per system across every
    chart), else the palette by position."""
    if colours and name in colours:
        return colours[name]
    return _PALETTE[index % len(_PALETTE)]


def series_colours(report: Report) -> dict[str, str]:
    """One colour per series name across all of a report's charts: the systems of a comparison
    first, in their order (baseline first), then any other name in order of appearance."""
    names: list[str] = []
    systems = report.data.get("systems") if isinstance(report.data, dict) else None
    if isinstance(systems, list):
        names += [str(name) for name in systems]
    for chart in report.chart_list():
        for values in chart.groups.values():
            names += [str(name) for name in values]
        names += [str(name) for name in chart.series]
    ordered = list(dict.fromkeys(names))
    return {name: _PALETTE[index % len(_PALETTE)] for index, name in enumerate(ordered)}


def bar_chart(chart: Chart | dict[str, Any], colours: dict[str, str] | None = None) -> str:
    """Grouped bars: `groups` {group: {series: value}}, optional `intervals` {group: {series: [lo, hi]}}
    and `significant` {group: {series: bool}} (significant bars are solid and starred, the others
    faded and outlined)."""
    chart = Chart.of(chart)
    groups, intervals, significance = chart.groups, chart.intervals, chart.significant
    series = list(dict.fromkeys(name for values in groups.values() for name in values))
    numbers = [v for values in groups.values() for v in values.values() if _finite(v)]
    numbers += [b for values in intervals.values() for pair in values.values() for b in (pair or [])
                if _finite(b)]
    if not groups or not numbers:
        return '<p class="note">(no data to chart)</p>'
    low, high = min(0.0, *numbers), max(0.0, *numbers)
    slot = max(90, 20 * len(series) + 40)
    longest = max(len(str(group)) for group in groups)
    rotate = longest * 6.5 > slot  # long group names are written at a slant
    extra = int(min(longest * 4.6, 260)) if rotate else 0
    left = max(60, int(longest * 5.4) - slot // 2) if rotate else 60
    canvas = _Canvas(width=max(480, left + 10 + slot * len(groups)), height=320 + extra, left=left,
                     bottom=70 + extra)
    canvas.y_axis(low, high, str(chart.y_label))
    bar = (slot - 30) / max(1, len(series))
    zero = canvas.y(0.0)
    for g, (group, values) in enumerate(groups.items()):
        x0 = canvas.left + g * slot + 15
        for s, name in enumerate(series):
            raw = values.get(name)
            if not _finite(raw):
                continue
            value = float(raw)  # type: ignore[arg-type]
            colour = _colour(name, s, colours)
            top = canvas.y(max(value, 0.0))
            height = abs(canvas.y(value) - zero)
            x = x0 + s * bar
            flag = significance.get(group, {}).get(name)
            style = f'fill="{colour}"'
            label = ""
            if flag is False:
                style = f'fill="{colour}" fill-opacity="0.3" stroke="{colour}" stroke-dasharray="3,2"'
                label = " (not significant)"
            elif flag is True:
                label = " (significant)"
            canvas.parts.append(f'<rect x="{x:.1f}" y="{top:.1f}" width="{max(bar - 2, 1):.1f}" '
                                f'height="{max(height, 0.5):.1f}" {style}><title>{_e(group)} / {_e(name)}: '
                                f'{value:.4f}{label}</title></rect>')
            pair = intervals.get(group, {}).get(name)
            cx = x + (bar - 2) / 2
            star_y = canvas.y(value) - 4 if value >= 0 else canvas.y(value) + 12
            if pair and len(pair) == 2 and _finite(pair[0]) and _finite(pair[1]):
                y_lo, y_hi = canvas.y(pair[0]), canvas.y(pair[1])
                canvas.parts.append(f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{y_lo:.1f}" y2="{y_hi:.1f}" stroke="#1f2328"/>')
                for y in (y_lo, y_hi):
                    canvas.parts.append(f'<line x1="{cx - 4:.1f}" x2="{cx + 4:.1f}" y1="{y:.1f}" y2="{y:.1f}" stroke="#1f2328"/>')
                star_y = min(y_lo, y_hi) - 4 if value >= 0 else max(y_lo, y_hi) + 12
            if flag is True:
                canvas.parts.append(f'<text x="{cx:.1f}" y="{star_y:.1f}" text-anchor="middle" '
                                    f'class="star">*</text>')
        label_x = x0 + (slot - 30) / 2
        label_y = canvas.top + canvas.plot_height + 16
        if rotate:
            canvas.parts.append(f'<text transform="translate({label_x:.1f},{label_y:.1f}) rotate(-35)" '
                                f'text-anchor="end">{_e(group)}</text>')
        else:
            canvas.parts.append(f'<text x="{label_x:.1f}" y="{label_y:.1f}" text-anchor="middle">{_e(group)}</text>')
    canvas.legend(series, colours)
    svg = canvas.svg(str(chart.title))
    if significance:
        svg += ('<p class="note">* significant (Holm-adjusted p &lt; 0.05); faded, dashed bars are not: '
                'treat them as noise. Whiskers: 95% interval.</p>')
    return svg


def line_chart(chart: Chart | dict[str, Any], colours: dict[str, str] | None = None) -> str:
    """Lines: `x` [x values], `series` {name: [y values]}."""
    chart = Chart.of(chart)
    xs = [x for x in chart.x if _finite(x)]
    series = chart.series
    numbers = [y for values in series.values() for y in values if _finite(y)]
    if len(xs) < 2 or not numbers:
        return '<p class="note">(no data to chart)</p>'
    canvas = _Canvas(width=640, height=320)
    canvas.y_axis(min(0.0, *numbers), max(numbers), str(chart.y_label))
    x_low, x_high = min(xs), max(xs)

    def px(x: float) -> float:
        return canvas.left + canvas.plot_width * (x - x_low) / ((x_high - x_low) or 1.0)

    for x in xs:
        canvas.parts.append(f'<text x="{px(x):.1f}" y="{canvas.top + canvas.plot_height + 16:.1f}" '
                            f'text-anchor="middle">{_e(_tick_label(x))}</text>')
    if chart.x_label:
        canvas.parts.append(f'<text x="{canvas.left + canvas.plot_width / 2:.1f}" '
                            f'y="{canvas.top + canvas.plot_height + 32:.1f}" text-anchor="middle">'
                            f'{_e(chart.x_label)}</text>')
    for s, (name, values) in enumerate(series.items()):
        colour = _colour(name, s, colours)
        points = [(px(x), canvas.y(y)) for x, y in zip(xs, values, strict=False) if _finite(y)]
        if not points:
            continue
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        canvas.parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for x, y in points:
            canvas.parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>')
    canvas.legend(list(series), colours)
    return canvas.svg(str(chart.title))


def histogram_chart(chart: Chart | dict[str, Any], colours: dict[str, str] | None = None) -> str:
    """Histograms: `values` [numbers] or `series` {name: [numbers]}, on shared bins; with several
    series each bin holds one bar per series side by side, so no series hides another."""
    chart = Chart.of(chart)
    series = chart.histogram_series
    cleaned = {name: [v for v in values if _finite(v)] for name, values in series.items()}
    everything = [v for values in cleaned.values() for v in values]
    if not everything:
        return '<p class="note">(no data to chart)</p>'
    bins = int(chart.bins or 20)
    low, high = min(everything), max(everything)
    # A long tail (latencies) would squeeze every bar into the first bin: bin on a log scale then.
    logarithmic = low > 0 and high / low > 20
    scale = (lambda v: math.log10(v)) if logarithmic else (lambda v: v)
    unscale = (lambda v: 10 ** v) if logarithmic else (lambda v: v)
    low, high = scale(low), scale(high)
    width = (high - low) / bins if high > low else 1.0
    counts = {}
    for name, values in cleaned.items():
        row = [0] * bins
        for v in values:
            row[min(bins - 1, int((scale(v) - low) / width))] += 1
        counts[name] = row
    top = max(max(row) for row in counts.values())
    canvas = _Canvas(width=640, height=300)
    canvas.y_axis(0.0, float(top), "queries")
    slot = canvas.plot_width / bins
    bar = max((slot - 1) / len(counts), 0.5)
    for s, (name, row) in enumerate(counts.items()):
        colour = _colour(name, s, colours)
        for b, count in enumerate(row):
            if not count:
                continue
            y = canvas.y(count)
            canvas.parts.append(
                f'<rect x="{canvas.left + b * slot + s * bar:.1f}" y="{y:.1f}" width="{bar:.1f}" '
                f'height="{canvas.y(0) - y:.1f}" fill="{colour}">'
                f'<title>{_e(name)}: {count} in [{unscale(low + b * width):.3g}, {unscale(low + (b + 1) * width):.3g})</title></rect>'
            )
    for b in range(0, bins + 1, max(1, bins // 5)):
        canvas.parts.append(f'<text x="{canvas.left + b * slot:.1f}" y="{canvas.top + canvas.plot_height + 16:.1f}" '
                            f'text-anchor="middle">{_e(f"{unscale(low + b * width):.3g}")}</text>')
    if chart.x_label:
        x_label = str(chart.x_label) + (" (log scale)" if logarithmic else "")
        canvas.parts.append(f'<text x="{canvas.left + canvas.plot_width / 2:.1f}" '
                            f'y="{canvas.top + canvas.plot_height + 32:.1f}" text-anchor="middle">'
                            f'{_e(x_label)}</text>')
    canvas.legend(list(counts), colours)
    return canvas.svg(str(chart.title))


_CHARTS = {"bar": bar_chart, "line": line_chart, "histogram": histogram_chart}


def render_chart(chart: Chart | dict[str, Any], colours: dict[str, str] | None = None) -> str:
    chart = Chart.of(chart)
    draw = _CHARTS.get(str(chart.kind))
    body = draw(chart, colours) if draw else f'<p class="note">(chart kind {_e(chart.kind)} is not drawn by this reporter)</p>'
    return f'<figure class="chart"><figcaption><strong>{_e(chart.title)}</strong></figcaption>' \
           f'<div class="wrap">{body}</div></figure>'


def render_table(table: ReportTable) -> str:
    lowered = [str(header).lower() for header in table.headers]
    significant = lowered.index("significant") if "significant" in lowered else None
    verdict = lowered.index("verdict") if "verdict" in lowered else None
    parts = [f"<h2>{_e(table.title)}</h2>", '<div class="wrap"><table><thead><tr>']
    parts += [f"<th>{_e(header)}</th>" for header in table.headers]
    parts.append("</tr></thead><tbody>")
    for row in table.rows:
        classes = []
        if significant is not None and significant < len(row) and str(row[significant]).lower() == "no":
            classes.append("ns")
        if verdict is not None and verdict < len(row) and str(row[verdict]).upper() == "REGRESSED":
            classes.append("bad")
        attr = f' class="{" ".join(classes)}"' if classes else ""
        cells = "".join(
            f"<td>{_e(cell)}</td>" if _finite(cell) or _looks_numeric(cell) else f'<td class="text">{_e(cell)}</td>'
            for cell in row
        )
        parts.append(f"<tr{attr}>{cells}</tr>")
    parts.append("</tbody></table></div>")
    parts += [f'<p class="note">{_e(note)}</p>' for note in table.notes]
    if significant is not None and any(
        significant < len(row) and str(row[significant]).lower() == "no" for row in table.rows
    ):
        parts.append('<p class="note">Greyed rows are not significant (Holm-adjusted p &ge; 0.05).</p>')
    return "".join(parts)


def _looks_numeric(cell: Any) -> bool:
    text = str(cell).strip().rstrip("%").replace("(ns)", "").strip()
    try:
        float(text)
    except ValueError:
        return False
    return True


class HtmlReporter(Reporter):
    """One self-contained HTML page: tables, notes and inline SVG charts; works offline."""

    description = "a self-contained HTML page with inline SVG charts (no scripts, works offline)"

    def render(self, report: Report) -> str:
        parts = [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{_e(report.title)}</title><style>{_CSS}</style></head><body>",
            f"<h1>{_e(report.title)}</h1>",
        ]
        parts += [f'<p class="summary">{_e(sentence)}</p>' for sentence in report.summary]
        if report.notes:
            parts.append('<div class="warnings"><strong>Warnings</strong><ul>')
            parts += [f"<li>{_e(note)}</li>" for note in report.notes]
            parts.append("</ul></div>")
        # The answer first (in words, then a report's first table), what was measured, then the
        # charts, then the other tables.
        if report.tables:
            parts.append(render_table(report.tables[0]))
        if report.provenance:
            parts.append('<h2>What was measured</h2><dl class="provenance">')
            parts += [f"<dt>{_e(label)}</dt><dd>{_e(value)}</dd>" for label, value in report.provenance]
            parts.append("</dl>")
        if report.provenance_details:
            parts.append('<details><summary>Every other setting</summary><dl class="provenance">')
            parts += [f"<dt>{_e(label)}</dt><dd>{_e(value)}</dd>" for label, value in report.provenance_details]
            parts.append("</dl></details>")
        if report.charts:
            colours = series_colours(report)
            parts.append("<h2>Charts</h2>")
            parts += [render_chart(chart, colours) for chart in report.chart_list()]
        parts += [render_table(table) for table in report.tables[1:]]
        parts.append("</body></html>")
        return "\n".join(parts) + "\n"
