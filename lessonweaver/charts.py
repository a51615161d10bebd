"""Charts for the HTML report: plain functions that return inline SVG markup.

The report is one self-contained file, so charts are drawn at render time instead of by a script in
the browser. Every label may come from a user's files (detector ids, nights), so every piece of text
is escaped here; callers may mark the result safe. Coordinates are written with one decimal and
separated by commas, so no run of digits in the markup can look like a card or phone number to the
audit that scans every report.
"""

import datetime as dt
import hashlib
import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# Thirty-two colours that stand apart and read on white. A detector's colour comes from its id (colour()),
# so it is the same in every report, whatever else was found that night.
PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
           "#9c755f", "#bab0ac", "#1d3557", "#17becf", "#8c2d04", "#6a3d9a", "#e7298a", "#a6d854",
           "#bcbd22", "#0b6e4f", "#525252", "#a6cee3", "#d95f02", "#7570b3", "#66a61e", "#b15928",
           "#fb9a99", "#1f78b4", "#33a02c", "#ff7f00", "#cab2d6", "#8dd3c7", "#80b1d3", "#fdb462")
# The shipped detectors' colours, one each (a shipped detector added later takes a colour no other has);
# any other id is hashed into the palette and may share a colour with another (legends and titles name them).
SHIPPED = {"escalation": 0, "unconfirmed_action": 1, "unverified_claim": 2, "unrecovered_error": 3, "loop": 4,
           "permission_denied": 5, "edited_protected_tests": 6, "lost_context": 7, "committed_unwanted_files": 8,
           "critic_revision": 9, "incomplete_trace": 10, "failed_evaluation": 11, "handoff_loss": 12,
           "outcome_label": 13, "retry": 14, "tool_fallback": 15, "unchecked_edit": 16, "unresolved_escalation": 17,
           "flagged": 19, "environment_error": 20, "secret_exposed": 21, "unfinished_run": 22, "human_correction": 23}
COLOUR_SALT = "lessonweaver-169369:"
INK, MUTED, GRID = "#1f2933", "#616e7c", "#e4e7eb"
FONT = "font-family=\"system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif\""
MAX_BAR = 56  # a bar is never wider than this: one night is one bar, not the whole plot


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def _n(x: float) -> str:
    return f"{x:.1f}"


def colour(label: str) -> str:
    """The colour of a detector (or any label): a shipped detector's own (SHIPPED), else a stable hash of its
    id into PALETTE, never its rank, so a detector looks the same in every report."""
    if label in SHIPPED:
        return PALETTE[SHIPPED[label]]
    digest = hashlib.sha256((COLOUR_SALT + label).encode("utf-8")).digest()
    return PALETTE[int.from_bytes(digest[:4], "big") % len(PALETTE)]


def swatch(label: str) -> str:
    """A small square of the label's colour, to put beside its name in text."""
    return (f'<svg class="swatch" viewBox="0 0 10 10" width="10" height="10" aria-hidden="true">'
            f'<rect width="10.0" height="10.0" rx="2.0" fill="{colour(label)}"/></svg>')


def nice_ticks(top: float, count: int = 4) -> list[int]:
    """Round axis ticks (steps of 1, 2 or 5 times a power of ten) from 0 to at least `top`."""
    top = max(top, 1)
    raw = top / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    step = max(1, int(step))
    return list(range(0, int(math.ceil(top / step)) * step + 1, step))


def _night_label(night: object) -> str:
    """`11-28` for a night: short enough for an axis, the year is in the caption."""
    text = night.isoformat() if isinstance(night, dt.date) else str(night)
    return text[5:10] if len(text) >= 10 and text[4] == "-" else text


@dataclass(frozen=True)
class _Plot:
    """Where a chart's plot area lies in its SVG, and how many pixels one count is."""
    left: int
    top: int
    width: int
    height: int
    scale: float

    @property
    def bottom(self) -> int:
        return self.top + self.height


def bar_chart(series: Mapping[str, Sequence[int]], nights: Sequence[object], *,
              width: int = 760, height: int = 240, title: str = "Detections per detector per night",
              css: str = "") -> str:
    """Stacked bars: one bar per night, one segment per detector, with axes and axis titles; its legend
    is `legend`, in HTML, so that it reflows on a phone instead of shrinking with the plot.

    `series` maps a label to its counts, aligned with `nights` (the nights to show, in order: those with
    a run, not every day of a fixed window); stacking follows its order. Hovering a segment shows its
    detector, night and count (an SVG <title>: no script needed). `css` adds classes to the <svg>."""
    labels = list(series)
    left, right, top, bottom = 46, 12, 14, 44
    totals = [sum(series[label][i] for label in labels) for i in range(len(nights))]
    ticks = nice_ticks(max(totals, default=0))
    plot_h = height - top - bottom
    plot = _Plot(left, top, width - left - right, plot_h, plot_h / ticks[-1])
    out = [f'<svg class="{_esc(" ".join(["chart", css]).strip())}" role="img" viewBox="0 0 {width} {height}" width="100%" '
           f'preserveAspectRatio="xMinYMin meet" {FONT} font-size="12" aria-label="{_esc(title)}">',
           f'<title>{_esc(title)}</title>']
    out += _y_axis(plot, ticks, width - right)
    out += _bars(plot, series, nights)
    out += _x_axis(plot, nights)
    if not any(totals):
        out.append(f'<text x="{_n(plot.left + plot.width / 2)}" y="{_n(plot.top + plot.height / 2)}" '
                   f'text-anchor="middle" fill="{MUTED}">no detections in these nights</text>')
    out.append("</svg>")
    return "".join(out)


def legend(series: Mapping[str, Sequence[int]]) -> str:
    """The chart's legend as an HTML list: a swatch, the label and its total per series, in its order."""
    items = "".join(f'<li class="legend-item">{swatch(label)}<code>{_esc(label)}</code> '
                    f'<span class="total">{sum(counts)}</span></li>' for label, counts in series.items())
    return f'<ul class="legend">{items}</ul>'


def _y_axis(plot: _Plot, ticks: list[int], right_edge: int) -> list[str]:
    """Grid lines at the ticks, their numbers, and the axis title."""
    out = []
    for t in ticks:
        y = plot.top + plot.height - t * plot.scale
        out.append(f'<line x1="{_n(plot.left)}" y1="{_n(y)}" x2="{_n(right_edge)}" y2="{_n(y)}" '
                   f'stroke="{GRID if t else MUTED}" stroke-width="1"/>')
        out.append(f'<text x="{_n(plot.left - 6)}" y="{_n(y + 4)}" text-anchor="end" fill="{MUTED}">{t}</text>')
    out.append(f'<text transform="translate(12,{_n(plot.top + plot.height / 2)}) rotate(-90)" text-anchor="middle" '
               f'fill="{INK}">detections</text>')
    return out


def _bars(plot: _Plot, series: Mapping[str, Sequence[int]], nights: Sequence[object]) -> list[str]:
    """A bar per night, its segments stacked from the bottom in the order of `series`, each edged in
    white so two detectors of one colour still show as two."""
    out = []
    slot = plot.width / max(len(nights), 1)
    bar = min(max(slot * 0.7, 1.0), MAX_BAR)
    for i, night in enumerate(nights):
        x = plot.left + i * slot + (slot - bar) / 2
        y = plot.bottom
        for label, counts in series.items():
            count = counts[i]
            if count <= 0:
                continue
            h = count * plot.scale
            y -= h
            out.append(f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(bar)}" height="{_n(h)}" fill="{colour(label)}" '
                       f'stroke="#ffffff" stroke-width="0.8">'
                       f'<title>{_esc(label)}, {_esc(night)}: {count}</title></rect>')
    return out


def _x_axis(plot: _Plot, nights: Sequence[object]) -> list[str]:
    """Night labels, one per 64 pixels at most and always the last night, and the axis title."""
    out = []
    slot = plot.width / max(len(nights), 1)
    step = max(1, math.ceil(len(nights) / max(2, plot.width // 64)))
    for i in sorted(range(len(nights) - 1, -1, -step)):
        x = plot.left + i * slot + slot / 2
        out.append(f'<text x="{_n(x)}" y="{_n(plot.bottom + 15)}" text-anchor="middle" fill="{MUTED}">'
                   f'{_esc(_night_label(nights[i]))}</text>')
    out.append(f'<text x="{_n(plot.left + plot.width / 2)}" y="{_n(plot.bottom + 34)}" text-anchor="middle" '
               f'fill="{INK}">night (UTC)</text>')
    return out


def sparkline(values: Sequence[int], nights: Sequence[object] = (), *, width: int = 112, height: int = 26,
              colour: str = "#4e79a7") -> str:
    """A small line of per-night counts with the latest night marked; its <title> spells the numbers out."""
    values = list(values)
    n = len(values)
    pad = 3.0
    top = max(values, default=0) or 1
    step = (width - 2 * pad) / max(n - 1, 1)

    def point(i: int, v: int) -> tuple[float, float]:
        return pad + i * step, height - pad - v / top * (height - 2 * pad)

    points = [point(i, v) for i, v in enumerate(values)]
    if nights:
        detail = "; ".join(f"{_night_label(night)}: {v}" for night, v in zip(nights, values))
        first, last = _night_label(nights[0]), _night_label(nights[-1])
        label = f"{sum(values)} occurrences from {first} to {last} ({detail})"
    else:
        label = f"{sum(values)} occurrences"
    out = [f'<svg class="spark" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
           f'aria-label="{_esc(label)}"><title>{_esc(label)}</title>',
           f'<line x1="{_n(pad)}" y1="{_n(height - pad)}" x2="{_n(width - pad)}" y2="{_n(height - pad)}" '
           f'stroke="{GRID}" stroke-width="1"/>']
    if points:
        line = " ".join(f"{_n(x)},{_n(y)}" for x, y in points)
        area = f"{_n(points[0][0])},{_n(height - pad)} {line} {_n(points[-1][0])},{_n(height - pad)}"
        out.append(f'<polygon points="{area}" fill="{colour}" fill-opacity="0.15" stroke="none"/>')
        out.append(f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="1.5" '
                   f'stroke-linejoin="round" stroke-linecap="round"/>')
        x, y = points[-1]
        out.append(f'<circle cx="{_n(x)}" cy="{_n(y)}" r="2.5" fill="{colour}"/>')
    out.append("</svg>")
    return "".join(out)
