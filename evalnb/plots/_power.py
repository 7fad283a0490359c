"""Power of a design: the smallest detectable difference against repeats or cases."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import SupportsFloat

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, MaxNLocator, PercentFormatter

from evalnb._exceptions import ArgumentError
from evalnb.analysis import _args
from evalnb.plots import _base

__all__ = ["plot_power"]

_COLUMNS = ["solve_for", "cases", "repeats", "diff", "power", "level", "sd", "between_var"]
_AXES = ("repeats", "cases", "diff")
#: Spread (max / min) of cases or repeats needed above which the y axis is logarithmic.
_LOG_SPREAD = 30.0
_X_LABELS = {
    "repeats": "repeats per case and variant",
    "cases": "cases",
    "diff": "difference in pass rate (percentage points)",
}
_Y_LABELS = {
    "diff": "smallest detectable difference (points)",
    "cases": "cases needed",
    "repeats": "repeats per case needed",
    "power": "power",
}
_SOLVED = {
    "diff": "smallest detectable difference",
    "cases": "cases needed",
    "repeats": "repeats per case needed",
    "power": "power",
}


def plot_power(power: pd.DataFrame, ax: Axes | None = None, *, x: str | None = None) -> Axes:
    """What a design can detect: the solved quantity of :func:`evalnb.power` against ``x``.

    ``power`` is :func:`evalnb.power` with a list for ``repeats``, ``cases`` or
    ``diff``, e.g. ``evalnb.power(run, repeats=[1, 2, 5, 10, 20, 50])`` for the smallest
    detectable difference against repeats. ``x`` is the column on the x axis (default:
    the first of repeats, cases, diff that varies); when another one varies too, each
    of its values is a line. A single line against repeats gets a dashed floor that more
    repeats never get below with these cases (the between-case spread): past it, only
    more cases help. Designs that cannot detect the difference (infinite repeats) are
    left out and named in the subtitle.

    >>> evalnb.plot_power(evalnb.power(run, repeats=[1, 2, 5, 10, 20]))  # doctest: +SKIP
    """
    frame = _base.require(power, _COLUMNS, "power", "a frame from evalnb.power(...)")
    design = _Design.of(frame, x)
    solved = frame[design.solve].astype(float)
    finite, endless = frame[np.isfinite(solved)], frame[~np.isfinite(solved)]

    ax = _base.new_axes(ax, 4.2, width=7.5)
    handles = _draw_lines(ax, finite, design)
    _x_axis(ax, frame, design.x)
    _y_axis(ax, finite[design.solve].astype(float).to_numpy(), design.solve)
    _base.clean(ax, grid="both")
    ax.spines["left"].set_visible(True)
    lines = _base.legend(ax, handles) if len(handles) > 1 else 0
    _base.title(
        ax, _head(frame, design.solve), legend_lines=lines, sub=_sub(frame, design, endless)
    )
    return ax


@dataclass(frozen=True)
class _Design:
    """What the frame solved for, the column on the x axis, the one drawn as lines (if any)."""

    solve: str
    x: str
    series: str | None
    #: The columns the design can vary: repeats, cases and diff but the solved one.
    candidates: list[str]

    @classmethod
    def of(cls, frame: pd.DataFrame, x: str | None) -> _Design:
        if frame.empty:
            raise ArgumentError("'power' must have at least one row (a design); got an empty frame")
        solved = [str(s) for s in pd.unique(frame["solve_for"])]
        if len(solved) != 1:
            raise ArgumentError(f"'power' must solve for one quantity; got solve_for {solved!r}")
        solve = solved[0]
        candidates = [c for c in _AXES if c != solve]
        if x is None:
            x = max(candidates, key=lambda c: frame[c].nunique())
        else:
            _args.choice("x", x, candidates)
        others = [c for c in candidates if c != x and frame[c].nunique() > 1]
        return cls(solve, x, others[0] if others else None, candidates)


def _draw_lines(ax: Axes, finite: pd.DataFrame, design: _Design) -> list[Line2D]:
    """A line per value of the series column (one line without); returns the legend handles.

    A single line has its values written at its points, and against repeats its floor.
    """
    solve, x, series = design.solve, design.x, design.series
    groups = finite.groupby(series, sort=True) if series else [(None, finite)]
    handles = []
    for i, (value, group) in enumerate(groups):
        color = _base.PALETTE[i % len(_base.PALETTE)]
        group = group.sort_values(x)
        label = f"{series} = {_value(series, value)}" if series else _SOLVED[solve]
        xs = group[x].astype(float).to_numpy()
        raw = group[solve].astype(float).to_numpy()
        # A difference above 100 points cannot be detected at all: drawn at the top.
        ys = np.minimum(raw, 1.0) if solve == "diff" else raw
        (line,) = ax.plot(
            xs,
            ys,
            color=color,
            marker=_base.MARKERS[i % len(_base.MARKERS)],
            ms=5,
            lw=1.8,
            label=label,
            gid=f"power:{i}",
        )
        handles.append(line)
        if series:
            continue
        for px, py, solved in zip(xs, ys, raw, strict=True):
            ax.annotate(
                _value(solve, solved) if solve != "diff" or solved <= 1 else "> 100",
                xy=(px, py),
                xytext=(0, 7),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize="small",
                color=_base.darker(color),
                gid="power-value",
            )
        if solve == "diff" and x == "repeats":
            handles += _floor(ax, group, color)
    return handles


def _x_axis(ax: Axes, frame: pd.DataFrame, x: str) -> None:
    """The x column; counts (repeats, cases) on a log scale with a tick at each design."""
    _axis(ax, x, "x")
    if x == "repeats" or x == "cases":
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
        ax.set_xticks(sorted(set(frame[x].astype(float))))


def _y_axis(ax: Axes, values: np.ndarray, solve: str) -> None:
    """The solved quantity, from zero; counts spread over decades on a log scale."""
    _axis(ax, solve, "y")
    top = float(np.nanmax(values, initial=0.0))
    if solve == "diff":
        ax.set_ylim(0, min(top, 1.0) * 1.15 + 0.01)
    elif solve == "power":
        ax.set_ylim(0, 1.1)
    elif values.size and values.min() > 0 and top / values.min() > _LOG_SPREAD:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    else:
        ax.set_ylim(0, top * 1.15 + 1)


def _head(frame: pd.DataFrame, solve: str) -> str:
    row = frame.iloc[0]
    level = float(row["level"])
    if solve == "power":
        return f"Power at {level * 100:g}% confidence (two-sided)"
    return (
        f"{_SOLVED[solve].capitalize()} for {float(row['power']) * 100:g}% power at "
        f"{level * 100:g}% confidence"
    )


def _sub(frame: pd.DataFrame, design: _Design, endless: pd.DataFrame) -> str:
    """The method, the columns held fixed, and the designs no number of repeats can reach."""
    x = design.x
    fixed = [
        f"{c} = {_value(c, frame[c].iloc[0])}"
        for c in design.candidates
        if c != x and c != design.series and frame[c].nunique() == 1 and pd.notna(frame[c].iloc[0])
    ]
    # The method each row was solved with, short: the part before any ": details".
    methods = "paired t across cases"
    if "method" in frame:
        methods = " / ".join(dict.fromkeys(str(m).split(":")[0] for m in frame["method"]))
    sub = methods + (" · " + ", ".join(fixed) if fixed else "")
    if not endless.empty:
        sub += f" · not reachable by repeats alone at {x} = " + ", ".join(
            _value(x, v) for v in endless[x]
        )
    return sub


def _floor(ax: Axes, group: pd.DataFrame, color: str) -> list[Line2D]:
    """Repeats → infinity leaves only the between-case spread: the floor with these cases."""
    between = group["between_var"].astype(float).to_numpy()
    sd = group["sd"].astype(float).to_numpy()
    diff = group["diff"].astype(float).to_numpy()
    if not (between > 0).any() or not (sd > 0).all():
        return []
    floor = float((diff / sd * np.sqrt(between))[0])
    line = ax.axhline(
        floor,
        color=color,
        lw=1.2,
        ls=(0, (4, 3)),
        zorder=1,
        gid="floor",
        label=f"floor with {_value('cases', group['cases'].iloc[0])} cases (repeats → ∞)",
    )
    return [line]


def _axis(ax: Axes, column: str, which: str) -> None:
    axis = ax.xaxis if which == "x" else ax.yaxis
    axis.set_label_text(_X_LABELS[column] if which == "x" else _Y_LABELS[column])
    if column == "diff":
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v * 100:g}"))
    elif column == "power":
        axis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    else:
        axis.set_major_locator(MaxNLocator(integer=True))


def _value(column: str | None, value: SupportsFloat) -> str:
    value = float(value)
    if column == "diff":
        return f"{value * 100:.1f}"
    if column == "power":
        return f"{value * 100:.0f}%"
    if math.isinf(value):
        return "∞"
    return f"{value:g}"
