"""A race of many variants: who was eliminated when, and the survivors' intervals."""

from __future__ import annotations

import math
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import to_hex
from matplotlib.ticker import MaxNLocator

from evalnb.analysis import Run, race
from evalnb.plots import _base

__all__ = ["plot_race"]

#: More variants than the house palette has colours: matplotlib's tab20 (up to 20), then
#: evenly spaced hues of a cyclic colour map.
_MANY = "tab20"

_COLUMNS = ["variant", "status", "eliminated_at", "by", "cases", "rate", "diff", "low", "high"]


def plot_race(data: Run | pd.DataFrame, ax: Axes | None = None) -> Axes:
    """The race of a run made with ``until=evalnb.Best(...)``: one lane per variant, as
    long as the cases it ran, ending in a cross where it was eliminated (and by whom);
    the variants left carry their rate and, beside the best, the sequence of their
    difference from it at the last look.

    ``data`` is the run or :func:`evalnb.race` of it.

    >>> evalnb.plot_race(evalnb.load("runs/race"))  # doctest: +SKIP
    """
    frame = race(data) if isinstance(data, Run) else data
    frame = _base.require(frame, _COLUMNS, "data", "evalnb.race(run)")
    names = [str(v) for v in frame["variant"]]
    colors = race_colors(names)
    ax = _base.new_axes(ax, _base.figure_height(len(names), 0.42, extra=1.8), width=8.0)
    rows = frame.reset_index(drop=True)
    ran = int(np.nanmax([rows["eliminated_at"].max(), rows["cases"].max()]))
    # the cases the rule looked at; a few more may have finished in flight when it stopped
    looked = int(rows["looks"].iloc[0]) if "looks" in rows.columns else ran
    for y, row in enumerate(rows.to_dict("records")):
        color = colors[str(row["variant"])]
        gone = row["status"] == "eliminated"
        end = float(row["eliminated_at"]) if gone else float(row["cases"])
        ax.barh(y, end, height=0.5, color=color, alpha=0.45 if gone else 0.9, linewidth=0)
        ax.annotate(
            _lane_label(row, gone),
            xy=(end, y),
            xytext=(8, 0),
            textcoords="offset points",
            va="center",
            fontsize="small",
            parse_math=False,
        )
        if gone:
            ax.plot([end], [y], marker="x", color=_base.darker(color), ms=8, mew=2)
    ax.set_yticks(range(len(rows)), [_base.shorten_ids([n])[0] for n in names])
    ax.invert_yaxis()
    ax.set_xlim(0, ran * 1.45)
    ax.set_xlabel("cases looked at")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    _base.clean(ax, grid="x")
    best = rows[rows["status"] == "best"]
    head = (
        f"{best['variant'].iloc[0]} is best after {looked} cases"
        if len(best) == 1
        else f"{_base.plural(int((rows['status'] != 'eliminated').sum()), 'variant')} left "
        f"after {looked} cases"
    )
    gone = int((rows["status"] == "eliminated").sum())
    sub = f"{gone} of {len(rows)} eliminated"
    if "level" in rows.columns and not math.isnan(float(rows["level"].iloc[0])):
        sub += f"; each pair's anytime-valid sequence at {float(rows['level'].iloc[0]):.1%}"
    _base.title(ax, head, sub=sub)
    return ax


def race_colors(names: list[str]) -> dict[str, Any]:
    """A distinct colour per variant: the house palette (by sorted name, as other plots
    colour them) while it has enough colours, else tab20, else evenly spaced hues."""
    ordered = sorted(names)
    if len(ordered) <= len(_base.PALETTE):
        return _base.variant_colors(ordered)
    if len(ordered) <= 20:
        table = matplotlib.colormaps[_MANY]
        return {n: to_hex(table(i / 20 + 1 / 40)) for i, n in enumerate(ordered)}
    hues = matplotlib.colormaps["hsv"]
    return {n: to_hex(hues(i / len(ordered))) for i, n in enumerate(ordered)}


def _lane_label(row: dict[str, Any], gone: bool) -> str:
    rate = row["rate"]
    shown = "" if rate is None or pd.isna(rate) else f"{100 * float(rate):.0f}%"
    if gone:
        return f"{shown} out after {int(row['eliminated_at'])} cases, by {row['by']}"
    if row["status"] in ("best", "leading"):
        return f"{shown} {row['status']}"
    if pd.isna(row["low"]):
        return shown
    low, high = 100 * float(row["low"]), 100 * float(row["high"])
    return f"{shown}; {low:+.0f} to {high:+.0f} points from the leader"
