"""A run until decided: its confidence sequence against the cases looked at."""

from __future__ import annotations

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.ticker import FuncFormatter, MaxNLocator

from evalnb.analysis import Run, confidence_sequence
from evalnb.plots import _base

__all__ = ["plot_sequence"]

_COLUMNS = ["cases", "estimate", "low", "high", "level", "verdict"]


def plot_sequence(
    sequence: Run | pd.DataFrame,
    ax: Axes | None = None,
    *,
    b: str | None = None,
    margin: float | None = None,
    fixed: int | None = None,
) -> Axes:
    """The anytime-valid sequence for the mean per-case difference (B - A) against the
    cases looked at: the band (its interval at each look), the running mean, no
    difference, and where it decided.

    ``sequence`` is :func:`evalnb.confidence_sequence` of a run (or the run made with
    ``until=evalnb.Decided(...)`` itself). With several comparisons, ``b`` picks one
    (default the first). ``margin`` draws +-margin; ``fixed`` marks the cases a fixed
    design would have run (e.g. from :func:`evalnb.power`), to show what stopping saved.

    >>> evalnb.plot_sequence(run, fixed=120)  # doctest: +SKIP
    """
    frame = confidence_sequence(sequence) if isinstance(sequence, Run) else sequence
    frame = _base.require(frame, _COLUMNS, "sequence", "evalnb.confidence_sequence(run)")
    if "b" in frame.columns:
        name = str(frame["b"].iloc[0]) if b is None else b
        frame = frame[frame["b"].astype(str) == name]
    if frame.empty:
        raise ValueError(f"'b' must be a compared variant; got {b!r}")
    ax = _base.new_axes(ax, 4.2, width=8.0)
    cases = frame["cases"].to_numpy()
    color = _base.variant_colors([str(frame["b"].iloc[0]) if "b" in frame else "B"])
    shade = next(iter(color.values()))
    ax.fill_between(
        cases,
        100 * frame["low"].to_numpy(float),
        100 * frame["high"].to_numpy(float),
        step="post",
        color=shade,
        alpha=0.25,
        linewidth=0,
        label=f"{float(frame['level'].iloc[0]) * 100:g}% anytime-valid sequence",
    )
    ax.plot(cases, 100 * frame["estimate"].to_numpy(float), color=shade, lw=1.4, label="mean")
    ax.axhline(0, color=_base.NEUTRAL, lw=1, ls="-")
    if margin is not None:
        for edge in (-margin, margin):
            ax.axhline(100 * edge, color=_base.NEUTRAL, lw=0.8, ls=":")
    if {"a", "b"} <= set(frame.columns):  # "v2 better", as compare's sentence says it
        a, b = str(frame["a"].iloc[0]), str(frame["b"].iloc[0])
        frame = frame.assign(
            verdict=frame["verdict"]
            .astype(str)
            .str.replace("B ", f"{b} ")
            .str.replace("A ", f"{a} ")
        )
    decided = frame[frame["verdict"] != "can't tell yet"]
    handles = ax.get_legend_handles_labels()[0]
    if not decided.empty:
        first = decided.iloc[0]
        handles.append(
            ax.axvline(
                first["cases"],
                color="#1a7f37",
                lw=1.2,
                label=f"{first['verdict']} after {int(first['cases'])} cases",
            )
        )
    if fixed is not None:
        handles.append(
            ax.axvline(fixed, color=_base.NEUTRAL, lw=1.2, ls="--", label=f"fixed design: {fixed}")
        )
    ax.set_xlabel("cases looked at")
    ax.set_ylabel("B - A (percentage points)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:+.0f}"))
    ax.set_ylim(-100, 100)
    _base.clean(ax, grid="both")
    ax.spines["left"].set_visible(True)
    lines = _base.legend(ax, handles)
    last = frame.iloc[-1]
    sub = f"{frame['method'].iloc[0]}" if "method" in frame else None
    head = f"{last['verdict']} after {int(last['cases'])} cases"
    if not decided.empty and int(last["cases"]) > int(first["cases"]):
        # the rule fired at the first decided look; cases in flight then finished too
        head = f"{first['verdict']} after {int(first['cases'])} cases ({int(last['cases'])} ran)"
    if "a" in frame.columns:
        head = f"{frame['b'].iloc[0]} vs {frame['a'].iloc[0]}: {head}"
    _base.title(ax, head, legend_lines=lines, sub=sub)
    return ax
