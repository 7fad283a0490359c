"""Power of a design: the smallest detectable difference against repeats or cases."""

from __future__ import annotations

import math
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


@_base.literal_text
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
    series = others[0] if others else None

    ax = _base.new_axes(ax, 4.2, width=7.5)
    finite = frame[np.isfinite(frame[solve].astype(float))]
    endless = frame[~np.isfinite(frame[solve].astype(float))]
    groups = finite.groupby(series, sort=True) if series else [(None, finite)]
    handles = []
    for i, (value, group) in enumerate(groups):
        color = _base.PALETTE[i % len(_base.PALETTE)]
        group = group.sort_values(x)
        label = f"{series} = {_value(series, value)}" if series else _SOLVED[solve]
        xs = group[x].astype(float).to_numpy()
        ys = group[solve].astype(float).to_numpy()
        if solve == "diff":
            # A difference above 100 points cannot be detected at all: drawn at the top.
            ys = np.minimum(ys, 1.0)
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
        raw = group[solve].astype(float).to_numpy()
        for px, py, value in zip(xs, ys, raw, strict=True):
            ax.annotate(
                _value(solve, value) if solve != "diff" or value <= 1 else "> 100",
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
    _axis(ax, x, "x")
    _axis(ax, solve, "y")
    if x == "repeats" or x == "cases":
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
        ticks = sorted(set(frame[x].astype(float)))
        ax.set_xticks(ticks)
    _base.clean(ax, grid="both")
    ax.spines["left"].set_visible(True)
    values = finite[solve].astype(float).to_numpy()
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
    lines = _base.legend(ax, handles) if len(handles) > 1 else 0
    row = frame.iloc[0]
    level = float(row["level"])
    if solve == "power":
        head = f"Power at {level * 100:g}% confidence (two-sided)"
    else:
        head = (
            f"{_SOLVED[solve].capitalize()} for {float(row['power']) * 100:g}% power at "
            f"{level * 100:g}% confidence"
        )
    fixed = [
        f"{c} = {_value(c, frame[c].iloc[0])}"
        for c in candidates
        if c != x and c != series and frame[c].nunique() == 1 and pd.notna(frame[c].iloc[0])
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
    _base.title(ax, head, legend_lines=lines, sub=sub)
    return ax


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
