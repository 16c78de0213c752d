"""The operator's page's charts, drawn as SVG text by our own code (no plotting library).

:func:`tokens_chart` draws one session: the tokens of each request before and after synopsis,
with the window, the trigger and each compaction marked. :func:`time_chart` draws the
overview's series over time. Both are pure and return one ``<svg>`` element to put in the
page as it is. Every text that comes from data is escaped; each chart carries a ``<title>``, a
one-sentence ``<desc>`` and a ``<title>`` tooltip per request or time bucket, so a screen
reader (or a test) reads the figures without the picture.

Colours come from the page's stylesheet through these classes; each element also carries a
``fill`` or ``stroke`` attribute, which any CSS rule overrides, for a page without it:

- ``s-before``, ``s-after``: the tokens the client sent, the tokens sent upstream;
- ``s-window``, ``s-trigger``: the dashed lines of the model's window and of the trigger;
- ``s-marker``: the triangle under each compacted request;
- ``axis`` (axis line, tick labels), ``grid`` (grid lines), ``legend`` (legend and notes);
- in :func:`time_chart`, each :class:`Series`' own ``css`` class, on its line and its bars.

Shapes are also classed by role: ``line`` (a polyline), ``marker`` (one per compacted
request), ``pt`` (a request's or a bucket's tooltip group), ``hit`` (its hover area), ``dot``,
``bar``, ``swatch`` (in the legend) and ``empty`` (the note of a chart without data).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from html import escape
from itertools import pairwise
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["MAX_VERTICES", "RequestPoint", "Series", "nice_ticks", "time_chart", "tokens_chart"]

MAX_VERTICES = 1000
"""The most vertices a line has; longer data is thinned (see :func:`_kept`)."""

_NICE = tuple(Fraction(m) for m in ("1", "2", "2.5", "5", "10"))
_COLOURS = {
    "s-before": "#4e79a7",
    "s-after": "#59a14f",
    "s-window": "#e15759",
    "s-trigger": "#f28e2b",
    "s-marker": "#b07aa1",
    "axis": "#555",
    "grid": "#ddd",
    "legend": "#333",
}
# time_chart's series name their own classes; the fallback colours cycle through these.
_PALETTE = ("#4e79a7", "#59a14f", "#f28e2b", "#e15759", "#76b7b2", "#b07aa1")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
# XML 1.0 forbids these characters even escaped: one in a label would make the page unparsable.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_ROOT: dict[str, str | float] = {"xmlns": "http://www.w3.org/2000/svg", "role": "img"}
_ROOT |= {"font_family": "sans-serif", "font_size": 11}
_DOTS_UP_TO = 60  # beyond this many requests, dots would merge into a thick line
_LEFT, _RIGHT, _TOP, _BOTTOM = 52, 16, 30, 24  # margins: tick labels, legend, x labels


@dataclass(frozen=True, slots=True)
class RequestPoint:
    """One request of a session: when, the tokens the client sent (``before``) and those
    synopsis sent upstream (``after``), whether it compacted, and a note for its tooltip."""

    at: datetime
    before: int
    after: int
    compacted: bool = False
    label: str = ""


@dataclass(frozen=True, slots=True)
class Series:
    """One line of :func:`time_chart`: a value per time, drawn in the CSS class ``css``."""

    name: str
    values: Sequence[float]
    css: str


@dataclass(frozen=True, slots=True)
class _Frame:
    """The plot area inside the margins, and the scale from data to it."""

    left: float
    top: float
    right: float
    bottom: float
    count: int
    ymax: float

    def x(self, index: int) -> float:
        if self.count == 1:
            return (self.left + self.right) / 2
        return self.left + (self.right - self.left) * index / (self.count - 1)

    def y(self, value: float) -> float:
        return self.bottom - (self.bottom - self.top) * value / self.ymax


def nice_ticks(top: float) -> list[float]:
    """Ticks from 0 to at least ``top`` in 3 to 5 equal steps, the step 1, 2, 2.5 or 5 times 10^k.

    ``top`` below 1e-9 (zero included) counts as 1e-9, so an axis always has a height.
    """
    top = max(top, 1e-9)
    scale = Fraction(10) ** math.floor(math.log10(top / 5))
    # Exact arithmetic: in floats 2e-6 * 5 falls short of 1e-5, and a top tick under the
    # largest value would draw it above the plot.
    steps = ((m, math.ceil(Fraction(top) / (m * scale))) for m in _NICE)
    m, count = next((m, count) for m, count in steps if count <= 5)
    return [float(i * m * scale) for i in range(count + 1)]


def tokens_chart(
    points: Sequence[RequestPoint],
    *,
    window: int | None = None,
    trigger: int | None = None,
    title: str = "Tokens per request",
    width: int = 760,
    height: int = 260,
    id_prefix: str = "c",
) -> str:
    """One session's requests: a line of the tokens before synopsis and one after, dashed
    lines at ``window`` and ``trigger``, a marker under each compacted request."""
    _check_size(width, height)
    if not points:
        return _empty(width, id_prefix, title, "No requests recorded yet")
    n = len(points)
    before, after = [p.before for p in points], [p.after for p in points]
    limits = [(name, v) for name, v in (("window", window), ("trigger", trigger)) if v is not None]
    if min(*before, *after, *(v for _, v in limits)) < 0:
        raise ValueError("token counts, window and trigger must not be negative")
    ticks = nice_ticks(max(*before, *after, *(v for _, v in limits), 5))
    f = _Frame(_LEFT, _TOP, width - _RIGHT, height - _BOTTOM, n, ticks[-1])
    compacted = [i for i, p in enumerate(points) if p.compacted]
    desc = f"{_plural(n, 'request')}; {len(compacted)} compacted; largest {max(*before, *after):,}"
    desc += " tokens" + "".join(f"; {name} {v:,}" for name, v in limits)
    body = _y_axis(f, ticks)
    step = max(1, int(nice_ticks(n)[1]))  # whole request numbers only
    body += [_x_label(f.x(k - 1), height, str(k)) for k in sorted({1, *range(step, n + 1, step)})]
    for name, value in limits:
        y, css = f.y(value), f"s-{name}"
        body.append(_el("line", css, x1=f.left, x2=f.right, y1=y, y2=y, stroke_dasharray="6 4"))
        # the trigger's label goes under its line, the window's over it: close lines stay legible
        label = f"{name} {_compact(value)}"
        below = y + 12 if name == "trigger" else y - 4
        body.append(_el("text", "legend", _esc(label), x=f.right, y=below, text_anchor="end"))
    kept = _kept([before, after], compacted, n)
    for css, values in (("s-before", before), ("s-after", after)):
        body.append(_polyline(f, kept, values, css, _COLOURS[css]))
    tips = []
    for i in kept:
        p = points[i]
        tip = f"request {i + 1} · {p.before:,} → {p.after:,} tokens"
        tip += " · compacted" * p.compacted + f" · {p.label}" * bool(p.label)
        dots: list[tuple[str, float]] = [("s-before", p.before), ("s-after", p.after)]
        tips.append((tip, dots if n <= _DOTS_UP_TO else []))
    body += _hits(f, kept, tips)
    for i in compacted:
        x, y = f.x(i), f.bottom
        tip = _el("title", "", _esc(f"request {i + 1} compacted: {before[i]:,} → {after[i]:,}"))
        d = f"M{_n(x)} {_n(y + 1)}L{_n(x + 4)} {_n(y + 8)}L{_n(x - 4)} {_n(y + 8)}Z"
        body.append(_el("path", "marker s-marker", tip, d=d))
    legend = [("s-before", "before synopsis"), ("s-after", "after synopsis")]
    legend += [("s-marker", "compaction"), *((f"s-{name}", name) for name, _ in limits)]
    body += _legend(legend, _COLOURS, width)
    return _svg(width, height, id_prefix, title=title, desc=desc, body=body)


def time_chart(
    times: Sequence[datetime],
    series: Sequence[Series],
    *,
    title: str,
    unit: str = "",
    width: int = 760,
    height: int = 200,
    id_prefix: str = "c",
) -> str:
    """The overview's figures over time: a line per series over the time buckets (``times``,
    shown in UTC), or a bar per series when there is one bucket. ``unit`` names the values."""
    _check_size(width, height)
    if not times or not series:
        return _empty(width, id_prefix, title, "No data yet")
    for s in series:
        if len(s.values) != len(times):
            raise ValueError(f"series {s.name!r} has {len(s.values)} values for {len(times)} times")
        if not all(math.isfinite(v) and v >= 0 for v in s.values):
            raise ValueError(f"series {s.name!r} holds a negative or non-finite value")
    n = len(times)
    utc = [t.astimezone(UTC) for t in times]
    ticks = nice_ticks(max(max(s.values) for s in series) or 1.0)
    f = _Frame(_LEFT, _TOP, width - _RIGHT, height - _BOTTOM, n, ticks[-1])
    colours = {s.css: _PALETTE[i % len(_PALETTE)] for i, s in enumerate(series)}
    suffix = f" {unit}" if unit else ""
    span = f"from {utc[0]:%Y-%m-%d %H:%M} to {utc[-1]:%Y-%m-%d %H:%M}"
    desc = f"{_plural(n, 'time bucket')} " + (span if n > 1 else f"at {utc[0]:%Y-%m-%d %H:%M}")
    desc += " UTC; " + "; ".join(
        f"{s.name}: total {_figure(sum(s.values))}{suffix}, peak {_figure(max(s.values))}{suffix}"
        for s in series
    )
    body = _y_axis(f, ticks)
    if unit:
        body.append(_el("text", "legend", _esc(unit), x=4, y=_TOP - 8))
    short = _time_format(utc)
    body += [_x_label(f.x(i), height, short(utc[i])) for i in range(0, n, math.ceil(n / 6))]
    if n == 1:  # a line through one point draws nothing
        bar = min(40.0, (f.right - f.left) / (2 * len(series)))
        start = f.x(0) - bar * len(series) / 2
        for k, s in enumerate(series):
            y, tip = f.y(s.values[0]), f"{s.name}: {_figure(s.values[0])}{suffix}"
            box = {"x": start + k * bar, "y": y, "width": bar * 0.9, "height": f.bottom - y}
            tip = _el("title", "", _esc(tip))
            body.append(_el("rect", f"bar {s.css}", tip, fill=colours[s.css], **box))
    else:
        kept = _kept([s.values for s in series], [], n)
        body += [_polyline(f, kept, s.values, s.css, colours[s.css]) for s in series]
        tips: list[tuple[str, list[tuple[str, float]]]] = []
        for i in kept:
            figures = " · ".join(f"{s.name} {_figure(s.values[i])}{suffix}" for s in series)
            tips.append((f"{utc[i]:%Y-%m-%d %H:%M} UTC · {figures}", []))
        body += _hits(f, kept, tips)
    body += _legend([(s.css, s.name) for s in series], colours, width)
    return _svg(width, height, id_prefix, title=title, desc=desc, body=body)


def _kept(columns: Sequence[Sequence[float]], flagged: Sequence[int], n: int) -> list[int]:
    """The indices a line passes through: every one, or beyond :data:`MAX_VERTICES` a few.

    Ten thousand vertices less than a pixel apart weigh ten times the bytes of a thousand and
    draw the same picture (and each carries a tooltip). So, past the limit, each of equal
    buckets keeps its lowest and highest value of every column, where a peak or a drop lies,
    and its first flagged (compacted) index, where the after-line drops; so do the ends. The
    markers are drawn apart from the lines and never thinned.
    """
    if n <= MAX_VERTICES:
        return list(range(n))
    buckets = max(1, (MAX_VERTICES - 2) // (2 * len(columns) + 1))
    flags = set(flagged)
    keep = {0, n - 1}
    for b in range(buckets):
        span = range(b * n // buckets, (b + 1) * n // buckets)
        for column in columns:
            keep.add(min(span, key=column.__getitem__))
            keep.add(max(span, key=column.__getitem__))
        keep.add(next((i for i in span if i in flags), span[0]))
    return sorted(keep)


def _polyline(f: _Frame, kept: list[int], values: Sequence[float], css: str, colour: str) -> str:
    points = " ".join(f"{_n(f.x(i))},{_n(f.y(values[i]))}" for i in kept)
    style: dict[str, str | float] = {
        "fill": "none",
        "stroke_width": 1.5,
        "stroke_linejoin": "round",
    }
    return _el("polyline", f"line {css}", points=points, stroke=colour, **style)


def _hits(f: _Frame, kept: list[int], tips: list[tuple[str, list[tuple[str, float]]]]) -> list[str]:
    """A tooltip group per kept index: an invisible column from halfway to its neighbours, so
    hovering anywhere above a request shows its figures, and the dots, if any."""
    xs = [f.x(i) for i in kept]
    edges = [f.left, *((a + b) / 2 for a, b in pairwise(xs)), f.right]
    groups = []
    for k, (tip, dots) in enumerate(tips):
        # fill none paints nothing, so the column would take no hover without pointer-events
        box = {
            "x": edges[k],
            "y": f.top,
            "width": edges[k + 1] - edges[k],
            "height": f.bottom - f.top,
        }
        hit = _el("rect", "hit", fill="none", pointer_events="all", **box)
        shapes = [_el("circle", f"dot {css}", cx=xs[k], cy=f.y(v), r=2.5) for css, v in dots]
        groups.append(_el("g", "pt", "".join([_el("title", "", _esc(tip)), hit, *shapes])))
    return groups


def _y_axis(f: _Frame, ticks: list[float]) -> list[str]:
    parts = []
    for tick in ticks:
        y = f.y(tick)
        parts.append(_el("line", "grid", x1=f.left, x2=f.right, y1=y, y2=y))
        parts.append(_el("text", "axis", _compact(tick), x=f.left - 6, y=y + 4, text_anchor="end"))
    return [*parts, _el("line", "axis", x1=f.left, x2=f.right, y1=f.bottom, y2=f.bottom)]


def _x_label(x: float, height: int, text: str) -> str:
    return _el("text", "axis", _esc(text), x=x, y=height - 6, text_anchor="middle")


def _legend(items: list[tuple[str, str]], colours: dict[str, str], width: int) -> list[str]:
    """One row above the plot. Items that would run past the right edge are left out: the
    ``<desc>`` names every series anyway."""
    parts, x = [], float(_LEFT)
    for css, text in items:
        room = 16 + 6.5 * len(text) + 14  # an estimate: the page's font decides the real width
        if x + room > width:
            break
        parts.append(_el("rect", f"swatch {css}", fill=colours[css], x=x, y=6, width=12, height=8))
        parts.append(_el("text", "legend", _esc(text), x=x + 16, y=14))
        x += room
    return parts


def _time_format(utc: list[datetime]) -> Callable[[datetime], str]:
    if max(utc) - min(utc) <= timedelta(days=1):
        return lambda t: f"{t:%H:%M}"
    if all(t.hour == 0 and t.minute == 0 for t in utc):
        return lambda t: f"{_MONTHS[t.month - 1]} {t.day}"
    return lambda t: f"{_MONTHS[t.month - 1]} {t.day} {t:%H:%M}"


def _empty(width: int, prefix: str, title: str, note: str) -> str:
    text = _el("text", "empty legend", note, x=width / 2, y=28, text_anchor="middle")
    return _svg(width, 48, prefix, title=title, desc=note, body=[text])


def _svg(width: int, height: int, prefix: str, *, title: str, desc: str, body: list[str]) -> str:
    # No width or height attribute: the page's stylesheet sizes it, the viewBox keeps its shape.
    head = _el("title", "", _esc(title), id=f"{prefix}-title")
    head += _el("desc", "", _esc(desc), id=f"{prefix}-desc")
    box, labels = f"0 0 {width} {height}", f"{prefix}-title {prefix}-desc"
    return _el("svg", "", head + "".join(body), viewBox=box, aria_labelledby=labels, **_ROOT)


def _el(tag: str, css: str, inner: str = "", /, **attributes: str | float) -> str:
    """One element of class ``css``. ``inner`` is markup already; every attribute is escaped
    here, numbers rounded to one decimal, and ``stroke_width`` written ``stroke-width``.

    A shape without its own ``fill`` (a line without its ``stroke``) gets the colour of its
    last class, as the fallback the page's stylesheet overrides.
    """
    paint = "stroke" if tag in {"line", "polyline"} else "fill"
    colour = _COLOURS.get(css.rpartition(" ")[2])
    if colour and paint not in attributes:
        attributes[paint] = colour
    if css:
        attributes = {"class": css, **attributes}
    text = "".join(
        f' {name.replace("_", "-")}="{_esc(v) if isinstance(v, str) else _n(v)}"'
        for name, v in attributes.items()
    )
    return f"<{tag}{text}>{inner}</{tag}>" if inner else f"<{tag}{text}/>"


def _check_size(width: int, height: int) -> None:
    if width < 240 or height < 120:
        raise ValueError(f"a chart needs at least 240 by 120 units, not {width} by {height}")


def _esc(text: str) -> str:
    return escape(_NOT_XML.sub("\ufffd", text), quote=True)


def _n(value: float) -> str:
    """A number to one decimal, without a trailing ``.0``: the output stays small."""
    return f"{value:.1f}".removesuffix(".0")


def _compact(value: float) -> str:
    """A tick label: 12k, 1.2M, 2.5."""
    for size, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if value >= size:
            return f"{value / size:.3g}{suffix}"
    return f"{value:.3g}"


def _figure(value: float) -> str:
    """A figure in a sentence: 41,200 or 0.0025."""
    return f"{value:,.4f}".rstrip("0").rstrip(".")


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}" + "s" * (count != 1)
