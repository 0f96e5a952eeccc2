"""Chart geometry for the HTML report: numbers in, positions out. The SVG markup itself lives in the report
template (templates/report.html.j2), so the report needs no script and no network to draw."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

# Colours of the verdicts, the same in every chart and table of the report.
STATUS_COLOURS = {
    "ok": "#2e7d32",
    "incorrect": "#c62828",
    "compile_error": "#ef6c00",
    "runtime_error": "#ad1457",
    "timeout": "#6a1b9a",
    "crashed": "#4e342e",
    "rejected": "#37474f",
    "no_code": "#9e9e9e",
    "unverified": "#0277bd",
    "suspicious": "#f9a825",
    "infeasible": "#5d4037",
}
OTHER_COLOUR = "#546e7a"


@dataclass
class Chart:
    """A plot area inside a width x height SVG; ticks and marks are in SVG coordinates."""

    width: int
    height: int
    left: int = 56
    right: int = 16
    top: int = 16
    bottom: int = 44
    x_label: str = ""
    y_label: str = ""
    x_ticks: list[dict] = field(default_factory=list)  # {pos, label}
    y_ticks: list[dict] = field(default_factory=list)
    marks: list[dict] = field(default_factory=list)  # circles / bars, each with a title for the tooltip
    path: str = ""  # a polyline through the line chart's points
    guides: list[dict] = field(default_factory=list)  # horizontal reference lines {pos, label}
    lane: dict | None = None  # the scatter's lane for candidates without a speedup {pos, label}

    @property
    def x0(self) -> float:
        return self.left

    @property
    def x1(self) -> float:
        return self.width - self.right

    @property
    def y0(self) -> float:  # the bottom of the plot area (SVG y grows downwards)
        return self.height - self.bottom

    @property
    def y1(self) -> float:
        return self.top


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values (1, 2 or 5 times a power of ten apart) covering [lo, hi]."""
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    ticks = [round(math.floor(lo / step) * step, 10)]
    while ticks[-1] < hi - step * 1e-9:  # until a tick reaches hi: the top value is never off the scale
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def _scale(value: float, lo: float, hi: float, a: float, b: float) -> float:
    return a if hi == lo else a + (value - lo) * (b - a) / (hi - lo)


def _label(value: float) -> str:
    return f"{value:g}"


def near(values: list[float], pad: float = 0.1, least: float = 0.02) -> tuple[float, float]:
    """An axis range around the values, not from 0, so that a gain from 1.31x to 1.34x shows: the values'
    span, padded on both sides by `pad` of it, or by `least` of the largest value where that is more."""
    lo, hi = min(values), max(values)
    margin = max(pad * (hi - lo), least * abs(hi), 1e-9)
    return max(0.0, lo - margin), hi + margin


def best_so_far(points: list[tuple[int, float | None]], width: int = 560, height: int = 260) -> Chart:
    """Line chart of the best speedup after each iteration (None: nothing correct yet, not drawn). Its axis
    spans the data; a dashed guide at 1x marks parity with the reference when the axis reaches it."""
    chart = Chart(width, height, x_label="iteration", y_label="best speedup (x)")
    drawn = [(x, y) for x, y in points if y is not None]
    xs = [x for x, _ in points] or [1]
    y_ticks = nice_ticks(*near([y for _, y in drawn] or [1.0]))
    x_lo, x_hi = min(xs), max(max(xs), min(xs) + 1)

    def px(x):
        return _scale(x, x_lo, x_hi, chart.x0 + 10, chart.x1 - 10)

    def py(y):
        return _scale(y, y_ticks[0], y_ticks[-1], chart.y0, chart.y1)

    chart.y_ticks = [{"pos": py(t), "label": _label(t)} for t in y_ticks]
    chart.x_ticks = [{"pos": px(x), "label": str(x)} for x in xs]
    chart.marks = [{"cx": px(x), "cy": py(y), "title": f"iteration {x}: {y:.3f}x"} for x, y in drawn]
    chart.path = " ".join(f"{'M' if i == 0 else 'L'}{m['cx']:.1f},{m['cy']:.1f}" for i, m in enumerate(chart.marks))
    if y_ticks[0] <= 1.0 <= y_ticks[-1]:
        chart.guides = [{"pos": py(1.0), "label": "1x (reference)"}]
    return chart


def population(candidates: list[dict], families: list[str], width: int = 560, height: int = 300) -> Chart:
    """Scatter of every candidate: x is its strategy family (numbered, the legend names them), y its speedup.
    Candidates without a speedup (failed, or correct but not timed) sit in a lane under the axis."""
    chart = Chart(width, height, bottom=72, x_label="strategy family (see the legend)", y_label="speedup (x)")
    timed = [c["speedup"] for c in candidates if c.get("correct") and c.get("speedup") is not None]
    y_ticks = nice_ticks(0.0, max([1.0] + timed) * 1.1)
    band = (chart.x1 - chart.x0) / max(len(families), 1)
    lane_y = chart.y0 + 34  # the "no speedup" lane, below the x axis and its labels

    def py(y):
        return _scale(y, y_ticks[0], y_ticks[-1], chart.y0, chart.y1)

    chart.y_ticks = [{"pos": py(t), "label": _label(t)} for t in y_ticks]
    chart.x_ticks = [{"pos": chart.x0 + band * (i + 0.5), "label": str(i + 1)} for i in range(len(families))]
    chart.guides = [{"pos": py(1.0), "label": "1x"}]
    seen: dict[str, int] = {}
    for c in candidates:
        fam = families.index(c["family"])
        k = seen[c["family"]] = seen.get(c["family"], -1) + 1
        jitter = ((k * 0.618) % 1.0 - 0.5) * band * 0.6  # golden-ratio spread: siblings do not overlap
        has_speed = c.get("correct") and c.get("speedup") is not None
        chart.marks.append(
            {
                "cx": chart.x0 + band * (fam + 0.5) + jitter,
                "cy": py(c["speedup"]) if has_speed else lane_y,
                "colour": STATUS_COLOURS.get(c["status"], OTHER_COLOUR),
                "title": f"{c['id']} {c['strategy']}: " + (f"{c['speedup']:.3f}x" if has_speed else c["status"]),
            }
        )
    chart.lane = {"pos": lane_y, "label": "no speedup"}
    return chart


def bars(items: list[tuple[str, float, str]], width: int = 560, bar_height: int = 22, unit: str = "") -> Chart:
    """Horizontal bars, one per (label, value, colour), labelled with their value."""
    chart = Chart(width, int(bar_height * 1.5 * max(len(items), 1)) + 38, left=130, right=70, top=8, bottom=30)
    hi = max((v for _, v, _ in items), default=0.0) or 1.0  # an empty or all-zero chart still gets a scale
    ticks = nice_ticks(0.0, hi, 4)
    for i, (label, value, colour) in enumerate(items):
        y = chart.top + i * bar_height * 1.5 + bar_height * 0.25
        w = _scale(value, 0.0, ticks[-1], 0.0, chart.x1 - chart.x0)
        chart.marks.append(
            {
                "x": chart.x0,
                "y": y,
                "w": max(w, 1.0),
                "h": bar_height,
                "colour": colour,
                "label": label,
                "value": f"{value:g}{unit}",
                "title": f"{label}: {value:g}{unit}",
            }
        )
    chart.x_ticks = [{"pos": _scale(t, 0.0, ticks[-1], chart.x0, chart.x1), "label": _label(t)} for t in ticks]
    return chart
