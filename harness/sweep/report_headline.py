"""A protocol's headline figure against the sweep's knobs (such as a capacity against a grid knob).

A protocol may declare the one figure a sweep plots (its ``sweep_headline``: the capacity protocol's
``capacity@<deadline>ms``, with its interval and how its search ended). The sweep report then shows, per
configuration, that figure (median and range over the configuration's runs), its interval and how it was
reached, and plots it against each grid knob whose value varies among the configurations: one line per
value of the other knobs (and adapter label), a categorical knob (``capacity.serving``) on a categorical
axis, a numeric one at its values. Figures of one protocol are one series whatever their ``@`` parameter
(``capacity@40ms`` and ``capacity@80ms`` are both ``capacity``: the deadline is a knob like any other).

A figure that depends on the machine (``timed``; capacity does) is grouped per environment fingerprint and
never mixed across fingerprints, as the report's timings are (:mod:`streambench.harness.sweep.report`);
one that does not is grouped over every run. The bracket of several runs is the widest: from
the lowest ``low`` to the highest ``high`` (open when any run's is). Drawn with the report's figure
helpers (:mod:`streambench.harness.report.figures`).
"""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markupsafe import Markup
from pydantic import BaseModel, Field

from streambench.harness.report.figures import figure, plain, to_svg
from streambench.harness.report.numbers import human
from streambench.harness.runs.contract import ProtocolContract
from streambench.harness.sweep.aggregate import RunFacts, Spread

__all__ = [
    "HeadlineGroup",
    "HeadlineRow",
    "KnobFacts",
    "KnobLine",
    "KnobPlot",
    "SweptFigure",
    "headline_groups",
    "knob_figure",
    "knob_plots",
    "read_swept_figure",
]

_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


class SweptFigure(BaseModel):
    """The declared headline figure of one run."""

    name: str = Field(description="the figure's key before its '@' parameter: capacity@40ms -> capacity")
    key: str
    value: float | None
    low: float | None = None
    high: float | None = None
    ended: str = Field(description="how it was reached (the protocol's words)")
    timed: bool = Field(description="depends on the machine: shown per environment fingerprint")


class KnobFacts(RunFacts):
    """A run's grid values and its declared headline figure, beside what the grouping reads."""

    grid: dict[str, Any] = Field(default_factory=dict, description="the run's grid values, by dotted key")
    point: str | None = None
    figure: SweptFigure | None = None


def read_swept_figure(protocol: ProtocolContract[Any, Any], run_dir: Path) -> SweptFigure | None:
    """The declared headline figure of the run in ``run_dir`` (None: ``protocol`` declares none)."""
    if not protocol.sweepable:
        return None
    declared = protocol.sweep_headline(protocol.load_result(run_dir))
    if declared is None:
        return None
    found, ended = declared
    return SweptFigure(
        name=found.key.split("@", 1)[0],
        key=found.key,
        value=found.value,
        low=found.low,
        high=found.high,
        ended=ended,
        timed=protocol.sweep_headline_timed,
    )


class HeadlineRow(BaseModel):
    """One configuration's figure: its runs' median and range, their widest interval, how they ended."""

    label: str
    config: str
    point: str | None
    grid: dict[str, Any]
    keys: list[str] = Field(description="the figure's keys among the runs (one, unless a knob sets it)")
    done: int
    planned: int
    value: Spread | None
    low: float | None
    high: float | None = Field(description="None: open (some run measured no upper end)")
    ended: dict[str, int] = Field(description="how the runs ended -> how many")

    def interval_text(self) -> str:
        """``[4, 7]``; ``[4, ?]`` where no run measured an upper end; ``—`` without a figure."""
        if self.low is None:
            return "—"
        return f"[{human(self.low)}, {'?' if self.high is None else human(self.high)}]"

    def ended_text(self) -> str:
        """How the runs ended, with counts where they differ: ``found: 1 of 2 runs; budget ended first
        (bracket): 1 of 2 runs``."""
        if len(self.ended) == 1 and self.done > 0:
            return next(iter(self.ended))
        return "; ".join(f"{words}: {n} of {self.done} runs" for words, n in self.ended.items()) or "—"


@dataclass
class HeadlineGroup:
    """The configurations of one protocol's figure on one environment fingerprint (None: every one)."""

    protocol: str
    name: str
    fingerprint: str | None
    rows: list[HeadlineRow] = field(default_factory=list)

    def axis_label(self) -> str:
        """The figure's key where every configuration has the same (``capacity@40ms``), else its name."""
        keys = list(dict.fromkeys(k for r in self.rows for k in r.keys))
        return keys[0] if len(keys) == 1 else self.name


def _widest(figures: Sequence[SweptFigure]) -> tuple[float | None, float | None]:
    lows = [f.low for f in figures if f.low is not None]
    if not lows:
        return None, None
    highs = [f.high for f in figures]
    return min(lows), None if any(h is None for h in highs) else max(h for h in highs if h is not None)


def headline_groups(rows: Sequence[KnobFacts]) -> list[HeadlineGroup]:
    """The runs with a declared figure, grouped by protocol and figure name, then environment fingerprint
    where the figure is timed, then configuration (label, point, grid), in the sweep's order. A
    configuration's unfinished runs count in ``planned`` of each group it appears in."""
    groups: dict[tuple[str, str, str | None], dict[tuple[str, str], list[KnobFacts]]] = {}
    for row in rows:
        if row.status != "done" or row.figure is None:
            continue
        where = row.fingerprint if row.figure.timed else None
        configs = groups.setdefault((row.protocol, row.figure.name, where), {})
        configs.setdefault((row.label, row.config), []).append(row)
    planned = Counter((r.label, r.protocol, r.config) for r in rows)
    out = []
    for (protocol, name, where), configs in groups.items():
        group = HeadlineGroup(protocol, name, where)
        for (label, config), runs in configs.items():
            figures = [r.figure for r in runs if r.figure is not None]
            low, high = _widest(figures)
            group.rows.append(
                HeadlineRow(
                    label=label,
                    config=config,
                    point=runs[0].point,
                    grid=runs[0].grid,
                    keys=list(dict.fromkeys(f.key for f in figures)),
                    done=len(runs),
                    planned=planned[(label, protocol, config)],
                    value=Spread.of(f.value for f in figures),
                    low=low,
                    high=high,
                    ended=dict(Counter(f.ended for f in figures)),
                )
            )
        out.append(group)
    return out


# --- the figure against each knob ------------------------------------------------------------------------


@dataclass
class KnobLine:
    """One line: the configurations that differ in the knob only, at ``x`` (axis positions)."""

    name: str
    x: list[float]
    y: list[float]
    low: list[float | None]
    high: list[float | None]


@dataclass
class KnobPlot:
    """The figure against one knob: its axis (``ticks``: position, label; categorical or numeric) and the
    lines."""

    knob: str
    categorical: bool
    ticks: list[tuple[float, str]]
    lines: list[KnobLine]


def _same(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _numeric(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def knob_plots(rows: Sequence[HeadlineRow]) -> list[KnobPlot]:
    """One plot per grid knob whose value varies among ``rows`` (with a figure), in the grid's order."""
    shown = [r for r in rows if r.value is not None]
    knobs = list(dict.fromkeys(k for r in shown for k in r.grid))
    plots = []
    for knob in knobs:
        values: list[Any] = list({_same(r.grid.get(knob)): r.grid.get(knob) for r in shown}.values())
        if len(values) < 2:
            continue
        categorical = not all(_numeric(v) for v in values)
        if categorical:
            ticks = [(float(i), str(v)) for i, v in enumerate(values)]
            position = {_same(v): float(i) for i, v in enumerate(values)}
        else:
            ticks = [(float(v), human(float(v))) for v in sorted(values)]
            position = {_same(v): float(v) for v in values}
        lines: dict[str, KnobLine] = {}
        for r in shown:
            others = [f"{k}={v}" for k, v in r.grid.items() if k != knob]
            name = " ".join([r.label, *([r.point] if r.point else []), *others])
            line = lines.setdefault(name, KnobLine(name, [], [], [], []))
            assert r.value is not None
            line.x.append(position[_same(r.grid.get(knob))])
            line.y.append(r.value.median)
            line.low.append(r.low)
            line.high.append(r.high)
        for line in lines.values():
            order = sorted(range(len(line.x)), key=line.x.__getitem__)
            line.x, line.y = [line.x[i] for i in order], [line.y[i] for i in order]
            line.low, line.high = [line.low[i] for i in order], [line.high[i] for i in order]
        plots.append(KnobPlot(knob, categorical, ticks, list(lines.values())))
    return plots


def _bar(line: KnobLine) -> tuple[list[float], list[float]]:
    """Error bars from each point down to its interval's low end and up to its high end (0: none)."""
    below = [y - lo if lo is not None and lo < y else 0.0 for y, lo in zip(line.y, line.low, strict=True)]
    above = [hi - y if hi is not None and hi > y else 0.0 for y, hi in zip(line.y, line.high, strict=True)]
    return below, above


def knob_figure(plot: KnobPlot, axis_label: str) -> Markup:
    """The figure against ``plot.knob`` as an inline SVG: a line per configuration of the other knobs,
    bars from the interval's low to its high end, an open triangle just above a point whose high end is
    open; lines dodged sideways so equal values stay visible; whole-number ticks for whole-number
    figures (capacity)."""
    from matplotlib.ticker import MaxNLocator
    from matplotlib.transforms import ScaledTranslation

    positions = [p for p, _ in plot.ticks]
    spacing = min((b - a for a, b in itertools.pairwise(positions)), default=1.0) or 1.0
    log_axis = not plot.categorical and positions[0] > 0 and positions[-1] >= 8 * positions[0]
    values = [v for line in plot.lines for v in (*line.y, *line.low, *line.high) if v is not None]
    with figure(figsize=(6.4, 3.6)) as (fig, ax):
        above_point = ax.transData + ScaledTranslation(0, 9 / 72, fig.dpi_scale_trans)
        count = len(plot.lines)
        for i, line in enumerate(plot.lines):
            shift = (i - (count - 1) / 2) * 0.06
            x = [v * 2**shift if log_axis else v + shift * spacing for v in line.x]
            drawn = ax.plot(x, line.y, marker=_MARKERS[i % len(_MARKERS)], label=plain(line.name))[0]
            colour = drawn.get_color()
            ax.errorbar(x, line.y, yerr=_bar(line), fmt="none", ecolor=colour, capsize=3, lw=1)
            bounds = zip(line.low, line.high, strict=True)
            opened = [k for k, (lo, hi) in enumerate(bounds) if hi is None and lo is not None]
            if opened:
                xs, ys = [x[k] for k in opened], [line.y[k] for k in opened]
                ax.plot(xs, ys, ls="none", marker="^", ms=7, mfc="none", color=colour, transform=above_point)
        if log_axis:
            ax.set_xscale("log", base=2)
        ax.set_xticks(positions, [plain(label) for _, label in plot.ticks])
        ax.minorticks_off()
        if plot.categorical:
            ax.set_xlim(-0.5, len(positions) - 0.5)
        if values and all(float(v).is_integer() for v in values):
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        if values and min(values) >= 0:
            ax.set_ylim(0, max(values) * 1.15 + 0.5)
        ax.set_xlabel(plain(plot.knob))
        ax.set_ylabel(plain(axis_label))
        ax.grid(True, alpha=0.3)
        ax.legend(loc="best", fontsize=7)
        return to_svg(fig)
