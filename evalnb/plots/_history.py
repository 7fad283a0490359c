"""Suite rates over time: one point per run and variant with its interval, the moves the
paired test found marked."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.ticker import PercentFormatter

from evalnb.analysis._history import BETTER
from evalnb.analysis._runs import WORSE
from evalnb.plots import _base

__all__ = ["plot_history"]

_CHANGE_COLORS = {WORSE: "#D55E00", BETTER: "#009E73"}
_NEEDED = ["run_id", "path", "started_at", "variant", "check", "estimate", "low", "high"]
_NEEDED += ["level", "change"]


def plot_history(
    frame: pd.DataFrame,
    ax: Axes | None = None,
    *,
    colors: Mapping[str, str] | None = None,
) -> Axes:
    """The suite rate of each run (x, in time order) per variant, with its interval.

    ``frame`` is :func:`evalnb.history`'s. A run the paired test found worse than the run
    before it is ringed and labelled "worse" (better: "better"); no ring is not proof of
    no change, only that none was shown.

    >>> evalnb.plot_history(evalnb.history("runs/"))  # doctest: +SKIP
    """
    frame = _base.require(frame, _NEEDED, "frame", "pass the frame evalnb.history returns")
    firsts = frame.drop_duplicates(["path", "run_id"])
    runs = list(zip(firsts["path"], firsts["run_id"], strict=True))
    x_of = {run: i for i, run in enumerate(runs)}
    variants = _base.ordered(frame["variant"])
    palette = _base.colors_for(variants, variants, colors)

    ax = _base.new_axes(ax, 4.0, max(6.0, 1.1 * len(runs) + 3))
    spread = (np.arange(len(variants)) - (len(variants) - 1) / 2) * 0.08
    offsets = dict(zip(variants, spread, strict=True))
    for variant in variants:
        rows = frame[frame["variant"].astype(str) == variant]
        x = np.array([x_of[(p, r)] for p, r in zip(rows["path"], rows["run_id"], strict=True)])
        _draw_variant(ax, rows, x + offsets[variant], variant, palette[variant])

    _run_axis(ax, firsts)
    ax.set_ylim(-0.02, 1.02)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_ylabel(f"suite rate, check '{frame['check'].iloc[0]}'", parse_math=False)
    _base.clean(ax, "y")
    marks = [
        Line2D([], [], marker="o", ms=10, mfc="none", mec=color, mew=2, ls="none", label=name)
        for name, color in _CHANGE_COLORS.items()
    ]
    handles = [Line2D([], [], color=palette[v], marker="o", label=v) for v in variants]
    lines = _base.legend(ax, handles, marks)
    level = frame["level"].iloc[0]
    _base.title(
        ax,
        "Suite rate per run",
        legend_lines=lines,
        sub=f"{level:.0%} intervals across cases; rings: a move the paired test (against "
        "the run before) found",
    )
    return ax


def _draw_variant(ax: Axes, rows: pd.DataFrame, x: np.ndarray, variant: str, color: str) -> None:
    """One variant's rate per run with its interval; a ring and a word where it moved."""
    y = rows["estimate"].to_numpy(float)
    below = y - rows["low"].to_numpy(float)
    above = rows["high"].to_numpy(float) - y
    ax.errorbar(
        x,
        y,
        yerr=[below, above],
        color=color,
        marker="o",
        ms=5,
        capsize=3,
        lw=1.2,
        label=variant,
        gid=f"history-{variant}",
    )
    for xi, yi, change in zip(x, y, rows["change"], strict=True):
        if change in _CHANGE_COLORS:
            ax.plot(
                xi,
                yi,
                marker="o",
                ms=14,
                mfc="none",
                mec=_CHANGE_COLORS[change],
                mew=2,
                ls="none",
                gid=f"change-{change}",
            )
            ax.annotate(
                change,
                (xi, yi),
                xytext=(9, 6),
                textcoords="offset points",
                fontsize="small",
                color=_CHANGE_COLORS[change],
                gid="change-label",
            )


def _run_axis(ax: Axes, firsts: pd.DataFrame) -> None:
    """A tick per run: its id over its start date."""
    labels = [
        f"{run_id}\n{pd.Timestamp(t):%Y-%m-%d}" if pd.notna(t) else str(run_id)
        for run_id, t in zip(firsts["run_id"], firsts["started_at"], strict=True)
    ]
    ax.set_xticks(range(len(firsts)), labels, fontsize="small", parse_math=False)
    ax.set_xlim(-0.5, len(firsts) - 0.5)
