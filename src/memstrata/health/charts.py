"""Inline SVG charts (pure strings, no scripts, no external assets).

Each chart is ``<svg class="chart" data-series="...">`` with its data drawn as
``<path>`` (lines) or ``<rect>`` (bars); labels are escaped text.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from html import escape

WIDTH = 520
HEIGHT = 220
PAD_LEFT = 64
PAD_RIGHT = 16
PAD_TOP = 16
PAD_BOTTOM = 36
PALETTE = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4b5563")
AXIS = "#9ca3af"
TEXT = "#374151"

LEGEND_ROW = 14
"""The height of one legend row (a chart with a long legend grows by as many)."""
LEGEND_CHAR_W = 6.2
"""A generous width of one character of a 10 px legend label."""
MAX_BAR_LABELS = 14
"""At most this many bar labels; with more bars, every n-th is labelled."""
EMPTY_BAR = 3.0
"""The height of a bar without data (an outline: the slot is there, empty)."""

Format = Callable[[float], str]


def _fmt(value: float) -> str:
    if abs(value) >= 1_000_000:
        return f"{value / 1_000_000:.1f}M"
    if abs(value) >= 10_000:
        return f"{value / 1_000:.0f}k"
    if float(value).is_integer():
        return f"{int(value)}"
    return f"{value:.2f}"


def _open(name: str, title: str, width: int, height: int) -> list[str]:
    return [
        f'<svg class="chart" data-series="{escape(name)}" xmlns="http://www.w3.org/2000/svg" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
    ]


def _axes(width: int, height: int) -> str:
    x0, y1 = PAD_LEFT, height - PAD_BOTTOM
    return (
        f'<path class="axis" d="M{x0},{PAD_TOP} L{x0},{y1} L{width - PAD_RIGHT},{y1}" '
        f'stroke="{AXIS}" fill="none" stroke-width="1"/>'
    )


def _label(x: float, y: float, text: str, anchor: str = "middle", size: int = 11) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" fill="{TEXT}" '
        f'font-family="sans-serif" text-anchor="{anchor}">{escape(text)}</text>'
    )


def _no_data(width: int, height: int) -> str:
    return _label(width / 2, height / 2, "no data recorded in this window")


def line_chart(
    name: str,
    title: str,
    series: Mapping[str, Sequence[tuple[float, float]]],
    *,
    x_label: Callable[[float], str],
    y_format: Format = _fmt,
    width: int = WIDTH,
    height: int = HEIGHT,
) -> str:
    """Lines of ``(x, y)`` points; x is a number (e.g. epoch seconds), y from 0 up.
    With several lines, a legend names every one of them (in rows under the chart,
    as many as it takes: the chart grows rather than leaving a name out)."""
    legend = _legend_places(list(series), width) if len(series) > 1 else []
    rows = max((row for _, row in legend), default=0)
    out = _open(name, title, width, height + LEGEND_ROW * rows)
    out.append(_axes(width, height))
    points = [p for line in series.values() for p in line]
    if not points:
        out.append(_no_data(width, height))
        out.append("</svg>")
        return "\n".join(out)
    xs = [x for x, _ in points]
    x_min, x_max = min(xs), max(xs)
    y_max = max(max(y for _, y in points), 0.0) or 1.0
    plot_w = width - PAD_LEFT - PAD_RIGHT
    plot_h = height - PAD_TOP - PAD_BOTTOM

    def sx(x: float) -> float:
        return PAD_LEFT + (plot_w * (x - x_min) / (x_max - x_min) if x_max > x_min else plot_w / 2)

    def sy(y: float) -> float:
        return PAD_TOP + plot_h * (1 - max(y, 0.0) / y_max)

    for tick in (0.0, y_max / 2, y_max):
        out.append(_label(PAD_LEFT - 6, sy(tick) + 4, y_format(tick), "end"))
        out.append(
            f'<path class="grid" d="M{PAD_LEFT},{sy(tick):.1f} H{width - PAD_RIGHT}" '
            f'stroke="#e5e7eb" stroke-width="1"/>'
        )
    base = height - PAD_BOTTOM + 16
    out.append(_label(PAD_LEFT, base, x_label(x_min), "start"))
    if x_max > x_min:
        out.append(_label(width - PAD_RIGHT, base, x_label(x_max), "end"))
    for i, (label, line) in enumerate(series.items()):
        color = PALETTE[i % len(PALETTE)]
        ordered = sorted(line)
        if len(ordered) == 1:  # one point: a short flat stroke, still visible
            x, y = ordered[0]
            d = f"M{sx(x) - 3:.1f},{sy(y):.1f} L{sx(x) + 3:.1f},{sy(y):.1f}"
        else:
            d = " ".join(
                f"{'M' if j == 0 else 'L'}{sx(x):.1f},{sy(y):.1f}"
                for j, (x, y) in enumerate(ordered)
            )
        out.append(
            f'<path class="series" data-name="{escape(label)}" d="{d}" stroke="{color}" '
            f'stroke-width="2" fill="none" stroke-linejoin="round"/>'
        )
        if legend:
            lx, row = legend[i]
            ly = height + LEGEND_ROW * row
            out.append(
                f'<rect class="legend" data-name="{escape(label)}" x="{lx:.1f}" '
                f'y="{ly - 12}" width="10" height="10" fill="{color}"/>'
            )
            out.append(_label(lx + 14, ly - 3, label, "start", 10))
    out.append("</svg>")
    return "\n".join(out)


def _legend_places(labels: Sequence[str], width: int) -> list[tuple[float, int]]:
    """Where each legend entry goes: (x, row), left to right, wrapping to a new row
    when the next entry would run past the chart's right edge."""
    places: list[tuple[float, int]] = []
    x, row = float(PAD_LEFT + 8), 0
    for label in labels:
        entry = 14 + LEGEND_CHAR_W * len(label) + 16
        if x + entry > width - PAD_RIGHT and x > PAD_LEFT + 8:
            x, row = float(PAD_LEFT + 8), row + 1
        places.append((x, row))
        x += entry
    return places


def bar_chart(
    name: str,
    title: str,
    bars: Sequence[tuple[str, float | None]],
    *,
    value_format: Format = _fmt,
    y_max: float | None = None,
    width: int = WIDTH,
    height: int = HEIGHT,
) -> str:
    """Vertical bars, one per label; a None value (no data) is an empty bar: an
    outline at the baseline, so every slot of the range shows."""
    out = _open(name, title, width, height)
    out.append(_axes(width, height))
    known = [v for _, v in bars if v is not None]
    if not bars:
        out.append(_no_data(width, height))
        out.append("</svg>")
        return "\n".join(out)
    if not known:
        out.append(_no_data(width, height))
    top = y_max if y_max is not None else (max(known, default=0.0) or 1.0)
    plot_w = width - PAD_LEFT - PAD_RIGHT
    plot_h = height - PAD_TOP - PAD_BOTTOM
    slot = plot_w / len(bars)
    bar_w = max(2.0, slot * 0.7)
    out.append(_label(PAD_LEFT - 6, PAD_TOP + 4, value_format(top), "end"))
    out.append(_label(PAD_LEFT - 6, height - PAD_BOTTOM + 4, value_format(0.0), "end"))
    every = math.ceil(len(bars) / MAX_BAR_LABELS)  # labels that fit, evenly spread
    for i, (label, value) in enumerate(bars):
        x = PAD_LEFT + slot * i + (slot - bar_w) / 2
        if value is not None:
            h = max(1.0, plot_h * min(max(value, 0.0), top) / top)
            y = height - PAD_BOTTOM - h
            out.append(
                f'<rect class="bar" data-label="{escape(label)}" x="{x:.1f}" y="{y:.1f}" '
                f'width="{bar_w:.1f}" height="{h:.1f}" fill="{PALETTE[0]}">'
                f"<title>{escape(label)}: {escape(value_format(value))}</title></rect>"
            )
        else:
            y = height - PAD_BOTTOM - EMPTY_BAR
            out.append(
                f'<rect class="bar empty" data-label="{escape(label)}" x="{x:.1f}" '
                f'y="{y:.1f}" width="{bar_w:.1f}" height="{EMPTY_BAR:.1f}" fill="none" '
                f'stroke="{AXIS}" stroke-dasharray="2,2">'
                f"<title>{escape(label)}: no data</title></rect>"
            )
        if (len(bars) - 1 - i) % every == 0:  # the newest bar always has its label
            out.append(_label(x + bar_w / 2, height - PAD_BOTTOM + 14, label[:12], "middle", 10))
    out.append("</svg>")
    return "\n".join(out)


def hbar_chart(
    name: str,
    title: str,
    bars: Sequence[tuple[str, float]],
    *,
    value_format: Format = _fmt,
    width: int = WIDTH,
) -> str:
    """Horizontal bars, largest first as given, labels on the left (long ones cut)."""
    row = 24
    height = max(HEIGHT // 2, PAD_TOP * 2 + row * len(bars))
    left = 260
    out = _open(name, title, width, height)
    if not bars:
        out.append(_axes(width, height))
        out.append(_no_data(width, height))
        out.append("</svg>")
        return "\n".join(out)
    top = max(v for _, v in bars) or 1.0
    plot_w = width - left - 70
    out.append(
        f'<path class="axis" d="M{left},{PAD_TOP - 4} L{left},{PAD_TOP + row * len(bars)}" '
        f'stroke="{AXIS}" fill="none"/>'
    )
    for i, (label, value) in enumerate(bars):
        y = PAD_TOP + row * i
        w = max(1.0, plot_w * max(value, 0.0) / top)
        short = label if len(label) <= 40 else label[:39] + "…"
        out.append(_label(left - 6, y + 15, short, "end", 11))
        out.append(
            f'<rect class="bar" data-label="{escape(label)}" x="{left}" y="{y + 3}" '
            f'width="{w:.1f}" height="{row - 6}" fill="{PALETTE[i % len(PALETTE)]}">'
            f"<title>{escape(label)}: {escape(value_format(value))}</title></rect>"
        )
        out.append(_label(left + w + 6, y + 15, value_format(value), "start", 11))
    out.append("</svg>")
    return "\n".join(out)
