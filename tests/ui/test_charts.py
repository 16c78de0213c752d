"""The page's SVG charts: well-formed, escaped, inside their viewBox, and drawn to scale."""

from __future__ import annotations

import math
import random
import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from synopsis.ui.charts import (
    MAX_VERTICES,
    RequestPoint,
    Series,
    nice_ticks,
    time_chart,
    tokens_chart,
)

SVG = "{http://www.w3.org/2000/svg}"
T0 = datetime(2026, 11, 29, 14, 0, tzinfo=UTC)
HOSTILE = ["<script>alert(1)</script>", '"><img src=x onerror=alert(1)>']


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    return root


def classes(el: ET.Element) -> set[str]:
    return set(el.get("class", "").split())


def having(root: ET.Element, cls: str) -> list[ET.Element]:
    return [el for el in root.iter() if cls in classes(el)]


def view(root: ET.Element) -> tuple[float, float]:
    _, _, w, h = (float(v) for v in root.get("viewBox", "").split())
    return w, h


def vertices(line: ET.Element) -> list[tuple[float, float]]:
    pairs = (p.split(",") for p in line.get("points", "").split())
    return [(float(x), float(y)) for x, y in pairs]


def coordinates(root: ET.Element) -> list[tuple[float, float]]:
    """Every point any element puts on the canvas, ends of rectangles included."""
    out: list[tuple[float, float]] = []
    for el in root.iter():
        a = {
            k: float(v)
            for k, v in el.attrib.items()
            if k in {"x", "y", "cx", "cy", "x1", "y1", "x2", "y2", "width", "height"}
        }
        if "x" in a and "y" in a:
            out.append((a["x"], a["y"]))
            out.append((a["x"] + a.get("width", 0), a["y"] + a.get("height", 0)))
        if "cx" in a:
            out.append((a["cx"], a["cy"]))
        if "x1" in a:
            out += [(a["x1"], a["y1"]), (a["x2"], a["y2"])]
        if el.tag == f"{SVG}polyline":
            out += vertices(el)
        if el.tag == f"{SVG}path":
            numbers = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", el.get("d", ""))]
            out += list(zip(numbers[::2], numbers[1::2], strict=True))
    return out


def assert_inside(root: ET.Element) -> None:
    w, h = view(root)
    points = coordinates(root)
    assert points
    for x, y in points:
        assert 0 <= x <= w
        assert 0 <= y <= h


def one_decimal(svg: str) -> bool:
    """Whether every number in an attribute has at most one decimal (the output stays small)."""
    values = (v for el in ET.fromstring(svg).iter() for v in el.attrib.values())
    return not any(re.search(r"\d\.\d\d", v) for v in values)


def session(
    befores: list[int], afters: list[int], compacted: frozenset[int] | set[int] = frozenset()
) -> list[RequestPoint]:
    return [
        RequestPoint(T0 + timedelta(minutes=i), b, a, compacted=i in compacted)
        for i, (b, a) in enumerate(zip(befores, afters, strict=True))
    ]


def line(root: ET.Element, css: str) -> list[tuple[float, float]]:
    (found,) = [el for el in having(root, "line") if css in classes(el)]
    return vertices(found)


def grid_at(root: ET.Element) -> dict[str, float]:
    """Tick label -> the height of its grid line."""
    labels = [
        el
        for el in having(root, "axis")
        if el.tag == f"{SVG}text" and el.get("text-anchor") == "end"
    ]
    grids = having(root, "grid")
    assert len(labels) == len(grids)
    return {t.text or "": float(g.get("y1", "")) for t, g in zip(labels, grids, strict=True)}


# -- nice_ticks ----------------------------------------------------------------------------


@given(st.floats(min_value=1e-6, max_value=1e13, allow_nan=False))
def test_ticks_are_nice_and_reach_the_top(top: float) -> None:
    ticks = nice_ticks(top)
    step = ticks[1] - ticks[0]
    assert ticks[0] == 0
    assert 4 <= len(ticks) <= 6
    assert ticks[-1] >= top
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert any(math.isclose(mantissa, m) for m in (1, 2, 2.5, 5))
    for tick in ticks:
        assert math.isclose(tick / step, round(tick / step), abs_tol=1e-9)


def test_ticks_of_an_exact_top_end_there() -> None:
    assert nice_ticks(1e9)[-1] == 1e9
    assert nice_ticks(100)[-1] == 100
    assert nice_ticks(0)[-1] > 0


# -- tokens_chart ------------------------------------------------------------------------------


def test_a_larger_value_sits_higher() -> None:
    root = parse(tokens_chart(session([1000, 5000, 3000], [1000, 900, 2000], {1})))
    before, after = line(root, "s-before"), line(root, "s-after")
    assert before[1][1] < before[2][1] < before[0][1]
    assert after[2][1] < after[0][1] < after[1][1]
    assert before[0][0] < before[1][0] < before[2][0]  # request order runs left to right


def test_one_marker_per_compacted_request_under_its_request() -> None:
    points = session([10, 20, 30, 40, 50], [10, 5, 15, 6, 16], {1, 3})
    root = parse(tokens_chart(points))
    markers = having(root, "marker")
    assert len(markers) == 2
    xs = [x for x, _ in line(root, "s-after")]
    for marker, index in zip(markers, (1, 3), strict=True):
        tip = marker.find(f"{SVG}title")
        assert tip is not None
        assert tip.text is not None
        assert tip.text.startswith(f"request {index + 1} ")
        d = [float(v) for v in re.findall(r"[\d.]+", marker.get("d", ""))]
        assert d[0] == xs[index]


def test_window_and_trigger_lines_sit_at_their_ticks() -> None:
    root = parse(tokens_chart(session([90_000], [30_000]), window=100_000, trigger=60_000))
    grid = grid_at(root)
    assert list(grid) == ["0", "20k", "40k", "60k", "80k", "100k"]
    (window,) = having(root, "s-window")[:1]
    (trigger,) = having(root, "s-trigger")[:1]
    assert float(window.get("y1", "")) == grid["100k"]
    assert float(trigger.get("y1", "")) == grid["60k"]
    texts = [el.text for el in having(root, "legend")]
    assert "window 100k" in texts
    assert "trigger 60k" in texts


def test_a_line_between_ticks_sits_between_them() -> None:
    root = parse(tokens_chart(session([10_000], [10_000]), trigger=70_000))
    grid = grid_at(root)
    (trigger,) = having(root, "s-trigger")[:1]
    assert float(trigger.get("y1", "")) == pytest.approx((grid["60k"] + grid["80k"]) / 2, abs=0.1)


def test_the_axis_reaches_the_largest_value_window_included() -> None:
    root = parse(tokens_chart(session([41_200], [9_800]), window=128_000))
    grid = grid_at(root)
    top = max(grid, key=lambda k: -grid[k])
    assert top == "150k"
    root = parse(tokens_chart(session([1_200_000], [10]), window=128_000))
    assert "1.25M" in grid_at(root)
    root = parse(tokens_chart(session([10**9], [0])))
    assert "1B" in grid_at(root)


def test_desc_and_tooltips_carry_the_figures() -> None:
    befores = [1000 * i for i in range(1, 13)]
    befores[6] = 41_200
    afters = list(befores)
    afters[6] = 9_800
    points = session(befores, afters, {2, 6, 9})
    points[6] = RequestPoint(T0, 41_200, 9_800, compacted=True, label="summary 3")
    root = parse(tokens_chart(points, window=128_000, trigger=100_000, id_prefix="s1"))
    desc = root.find(f"{SVG}desc")
    assert desc is not None
    assert desc.text == (
        "12 requests; 3 compacted; largest 41,200 tokens; window 128,000; trigger 100,000"
    )
    tips = [g.find(f"{SVG}title") for g in having(root, "pt")]
    assert len(tips) == 12
    assert tips[6] is not None
    assert tips[6].text == "request 7 · 41,200 → 9,800 tokens · compacted · summary 3"
    assert tips[0] is not None
    assert tips[0].text == "request 1 · 1,000 → 1,000 tokens"
    assert root.get("aria-labelledby") == "s1-title s1-desc"
    ids = [el.get("id") for el in root.iter() if el.get("id")]
    assert ids == ["s1-title", "s1-desc"]


def test_one_request_is_singular_and_centred() -> None:
    root = parse(tokens_chart(session([0], [0])))
    desc = root.find(f"{SVG}desc")
    assert desc is not None
    assert desc.text == "1 request; 0 compacted; largest 0 tokens"
    ((x, _),) = line(root, "s-before")
    assert x == view(root)[0] / 2 + (52 - 16) / 2
    assert len(having(root, "dot")) == 2
    assert_inside(root)


def test_x_labels_are_whole_request_numbers_from_one() -> None:
    root = parse(tokens_chart(session([5] * 12, [5] * 12)))
    labels = [el.text for el in having(root, "axis") if el.get("text-anchor") == "middle"]
    assert labels == ["1", "2", "4", "6", "8", "10", "12"]
    root = parse(tokens_chart(session([5] * 3, [5] * 3)))
    labels = [el.text for el in having(root, "axis") if el.get("text-anchor") == "middle"]
    assert labels == ["1", "2", "3"]


def test_no_requests_say_so() -> None:
    root = parse(tokens_chart([], title="Session a"))
    assert [el.text for el in having(root, "empty")] == ["No requests recorded yet"]
    assert_inside(root)


@pytest.mark.parametrize(
    ("befores", "afters", "window", "trigger"),
    [
        ([0, 0, 0], [0, 0, 0], None, None),
        ([10**9, 5], [10**9, 0], 128_000, 100_000),
        ([50_000, 60_000], [50_000, 20_000], 8_000, 6_000),
    ],
)
def test_extremes_stay_inside_the_view(befores, afters, window, trigger) -> None:
    svg = tokens_chart(session(befores, afters, {1}), window=window, trigger=trigger)
    assert_inside(parse(svg))
    assert one_decimal(svg)


def test_ten_thousand_requests_are_thinned_keeping_peaks_drops_and_markers() -> None:
    befores, afters, compacted = [], [], set()
    after = 0
    for i in range(10_000):
        after += 100
        if after > 30_000:
            after = 3_000
            compacted.add(i)
        befores.append(100 * (i + 1))
        afters.append(after)
    svg = tokens_chart(session(befores, afters, compacted), window=128_000)
    root = parse(svg)
    assert_inside(root)
    assert one_decimal(svg)
    assert len(having(root, "marker")) == len(compacted)
    before, after_line = line(root, "s-before"), line(root, "s-after")
    assert len(before) <= MAX_VERTICES
    assert len(after_line) == len(before)
    assert len(having(root, "pt")) == len(before)
    assert not having(root, "dot")  # too many requests for dots
    # the peaks and every drop survive the thinning: the lines still reach 30k and 1M, and
    # the after-line has a vertex at each compaction, down at 3k
    grid = grid_at(root)
    y0, y1m = grid["0"], grid["1M"]

    def y_of(value: float) -> float:
        return round(y0 - (y0 - y1m) * value / 1e6, 1)

    assert min(y for _, y in before) == y_of(1e6)
    assert min(y for _, y in after_line) == y_of(30_000)
    at = dict(after_line)
    for marker in having(root, "marker"):
        assert at[float(re.findall(r"[\d.]+", marker.get("d", ""))[0])] == y_of(3_000)


def test_negative_figures_are_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        tokens_chart(session([5], [-1]))
    with pytest.raises(ValueError, match="negative"):
        tokens_chart(session([5], [1]), window=-5)


def test_a_canvas_too_small_is_refused() -> None:
    with pytest.raises(ValueError, match="at least"):
        tokens_chart([], width=100)
    with pytest.raises(ValueError, match="at least"):
        time_chart([], [], title="t", height=50)


@pytest.mark.parametrize("hostile", HOSTILE)
def test_data_text_is_escaped(hostile: str) -> None:
    points = [RequestPoint(T0, 5, 3, compacted=True, label=hostile + "\x01")]
    svgs = [
        tokens_chart(points, title=hostile, id_prefix=hostile),
        tokens_chart([], title=hostile),
        time_chart(
            [T0, T0 + timedelta(hours=1)],
            [Series(hostile, [1, 2], hostile)],
            title=hostile,
            unit=hostile,
        ),
        time_chart([T0], [Series(hostile, [1], hostile)], title=hostile, unit=hostile),
    ]
    for svg in svgs:
        root = parse(svg)
        for el in root.iter():
            assert el.tag.removeprefix(SVG) not in {"script", "img"}
            assert not any(name.startswith("on") for name in el.attrib)
        texts = "".join(root.itertext())
        assert hostile in texts  # shown as text


@st.composite
def requests(draw: st.DrawFn) -> list[RequestPoint]:
    """A short session drawn point by point, or one longer than MAX_VERTICES drawn from a
    seeded random (drawing thousands of points one by one would take Hypothesis minutes)."""
    tokens = st.integers(min_value=0, max_value=10**7)
    if draw(st.booleans()):
        # A seed drawn, not each number: Hypothesis's own randoms draw every call from its
        # buffer, and thousands of them overflow it (a failed health check).
        rng = random.Random(draw(st.integers(min_value=0, max_value=2**32)))
        share = rng.random()  # from no compaction to every request compacted
        return [
            RequestPoint(T0, rng.randrange(10**7), rng.randrange(10**7), rng.random() < share)
            for _ in range(rng.randrange(MAX_VERTICES, 3 * MAX_VERTICES))
        ]
    return draw(
        st.lists(
            st.builds(
                RequestPoint, st.just(T0), tokens, tokens, st.booleans(), st.text(max_size=8)
            ),
            max_size=40,
        )
    )


@given(
    requests(),
    st.none() | st.integers(min_value=0, max_value=10**7),
    st.none() | st.integers(min_value=0, max_value=10**7),
)
def test_any_session_draws_a_valid_chart(points, window, trigger) -> None:
    svg = tokens_chart(points, window=window, trigger=trigger)
    root = parse(svg)
    assert_inside(root)
    assert one_decimal(svg)
    if points:
        assert len(line(root, "s-before")) <= MAX_VERTICES
        assert len(line(root, "s-after")) <= MAX_VERTICES
    assert len(having(root, "marker")) == sum(p.compacted for p in points)


# -- time_chart --------------------------------------------------------------------------------


def hours(count: int, start: datetime = T0, step: timedelta = timedelta(hours=1)) -> list[datetime]:
    return [start + i * step for i in range(count)]


def test_one_line_per_series_larger_higher() -> None:
    series = [Series("requests", [3, 9, 1], "s-requests"), Series("errors", [0, 1, 0], "s-errors")]
    root = parse(time_chart(hours(3), series, title="Requests", unit="per hour"))
    assert_inside(root)
    requests_line, errors_line = line(root, "s-requests"), line(root, "s-errors")
    assert requests_line[1][1] < requests_line[0][1] < requests_line[2][1]
    assert errors_line[1][1] < errors_line[0][1] == errors_line[2][1]
    desc = root.find(f"{SVG}desc")
    assert desc is not None
    assert desc.text == (
        "3 time buckets from 2026-11-29 14:00 to 2026-11-29 16:00 UTC;"
        " requests: total 13 per hour, peak 9 per hour; errors: total 1 per hour, peak 1 per hour"
    )
    tips = [g.find(f"{SVG}title") for g in having(root, "pt")]
    assert tips[1] is not None
    assert tips[1].text == "2026-11-29 15:00 UTC · requests 9 per hour · errors 1 per hour"
    assert "per hour" in [el.text for el in having(root, "legend")]


def test_one_bucket_draws_bars() -> None:
    series = [Series("saved", [0.25], "s-saved"), Series("spent", [1.5], "s-spent")]
    root = parse(time_chart([T0], series, title="Cost", unit="USD"))
    assert_inside(root)
    bars = having(root, "bar")
    assert [classes(b) - {"bar"} for b in bars] == [{"s-saved"}, {"s-spent"}]
    assert float(bars[0].get("y", "")) > float(bars[1].get("y", ""))
    assert not having(root, "line")
    desc = root.find(f"{SVG}desc")
    assert desc is not None
    assert desc.text == (
        "1 time bucket at 2026-11-29 14:00 UTC; saved: total 0.25 USD, peak 0.25 USD;"
        " spent: total 1.5 USD, peak 1.5 USD"
    )


@pytest.mark.parametrize(
    ("times", "first"),
    [
        (hours(24), "14:00"),
        (hours(7, datetime(2026, 11, 1, tzinfo=UTC), timedelta(days=1)), "Nov 1"),
        (hours(50), "Nov 29 14:00"),
    ],
)
def test_x_labels_are_short_utc_dates_or_hours(times, first) -> None:
    root = parse(time_chart(times, [Series("n", [1.0] * len(times), "s-n")], title="t"))
    labels = [el.text for el in having(root, "axis") if el.get("text-anchor") == "middle"]
    assert labels[0] == first
    assert 2 <= len(labels) <= 6


def test_times_in_other_zones_are_shown_in_utc() -> None:
    paris = datetime(2026, 11, 29, 16, 0, tzinfo=timezone(timedelta(hours=1)))
    root = parse(
        time_chart([paris, paris + timedelta(hours=1)], [Series("n", [1, 2], "s-n")], title="t")
    )
    labels = [el.text for el in having(root, "axis") if el.get("text-anchor") == "middle"]
    assert labels == ["15:00", "16:00"]


def test_a_legend_too_long_leaves_names_to_the_desc() -> None:
    series = [Series(f"series number {i} with a long name", [i, i], f"s-{i}") for i in range(8)]
    root = parse(time_chart(hours(2), series, title="t"))
    assert_inside(root)
    assert 0 < len(having(root, "swatch")) < 8
    desc = root.find(f"{SVG}desc")
    assert desc is not None
    assert all(s.name in (desc.text or "") for s in series)


def test_no_data_says_so() -> None:
    for svg in (
        time_chart([], [Series("a", [], "s-a")], title="t"),
        time_chart([T0], [], title="t"),
    ):
        root = parse(svg)
        assert [el.text for el in having(root, "empty")] == ["No data yet"]


def test_all_zero_series_still_have_an_axis() -> None:
    root = parse(time_chart(hours(3), [Series("a", [0, 0, 0], "s-a")], title="t"))
    assert_inside(root)
    assert list(grid_at(root))[-1] == "1"


def test_bad_series_are_refused() -> None:
    with pytest.raises(ValueError, match="2 values for 3 times"):
        time_chart(hours(3), [Series("a", [1, 2], "s-a")], title="t")
    for bad in (-1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="negative or non-finite"):
            time_chart(hours(2), [Series("a", [1, bad], "s-a")], title="t")


def test_long_series_are_thinned() -> None:
    values = [float(i % 97) for i in range(5_000)]
    svg = time_chart(
        hours(5_000), [Series("a", values, "s-a"), Series("b", values[::-1], "s-b")], title="t"
    )
    root = parse(svg)
    assert_inside(root)
    grid = grid_at(root)
    for css in ("s-a", "s-b"):
        ys = {y for _, y in line(root, css)}
        assert len(line(root, css)) <= MAX_VERTICES
        assert {grid["0"], round(grid["0"] - (grid["0"] - grid["100"]) * 0.96, 1)} <= ys
    assert one_decimal(svg)
