"""The paired comparison: per-case differences B - A, the mean difference and its interval."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, MaxNLocator

from evalnb._exceptions import ArgumentError
from evalnb.analysis._story import bounded, fixed_phrase, interval_phrase
from evalnb.plots import _base

__all__ = ["plot_compare"]

_SUMMARY = ["a", "b", "cases", "diff", "low", "high", "level", "verdict"]
_CASES = ["case_id", "k_a", "n_a", "k_b", "n_b", "diff", "paired"]
#: Row of the first case: the mean difference is row 0, set apart by half a row.
_START = 1.5


def plot_compare(
    summary: pd.DataFrame,
    cases: pd.DataFrame | None = None,
    ax: Axes | None = None,
    *,
    check: str | None = None,
    sort: bool = True,
    colors: Mapping[str, str] | None = None,
    label_width: int | None = _base.LABEL_WIDTH,
) -> Axes:
    """Per-case differences B - A under the mean difference, its interval and the verdict.

    ``summary`` is :func:`evalnb.compare` (one comparison: one row, or one per check,
    picked with ``check``); ``cases`` is :func:`evalnb.compare_cases` for the same
    variants, one marker per case (None shows the summary alone). Cases where B did
    better take B's colour, those where A did better take A's; a case without scored
    samples on both sides is listed without a marker. ``sort`` puts the largest gain
    of B on top; False keeps the frame's order. ``colors`` maps variant names to
    colours: by default A and B take the first two colours, as the first two variants
    do everywhere; pass ``evalnb.variant_colors(run.variants)`` for other pairs.

    >>> evalnb.plot_compare(evalnb.compare(run), evalnb.compare_cases(run))  # doctest: +SKIP
    """
    summary, check = _one_comparison(summary, check)
    row = summary.iloc[0]
    a, b = str(row["a"]), str(row["b"])
    cases = _case_rows(cases, check, sort)
    palette = _base.colors_for([a, b], [a, b], colors)

    ax = _base.new_axes(ax, _base.figure_height(len(cases) + _START, 0.3, extra=1.9))
    ax.axvline(0, color=_base.INK, lw=1.0, zorder=1, gid="zero")
    y = _START + np.arange(len(cases))
    handles = _draw_cases(ax, cases, y, palette, a, b)
    _draw_mean(ax, summary, palette, a, b)

    labels = [f"Mean difference ({_base.plural(int(row['cases']), 'case')})"]
    labels += _base.shorten_ids(cases["case_id"].tolist(), label_width)
    _base.setup_rows(ax, [0.0, *y], labels, header=1)
    _base.clean(ax)
    _difference_axis(ax, row, cases, palette)
    lines = _base.legend(ax, handles)
    _base.title(ax, _headline(row, a, b), legend_lines=lines, sub=_details(row, check))
    return ax


def _one_comparison(summary: pd.DataFrame, check: str | None) -> tuple[pd.DataFrame, str | None]:
    hint = "a frame from evalnb.compare(run)"
    summary = _base.require(summary, _SUMMARY, "summary", hint)
    summary, check = _base.pick_check(summary, check, "summary")
    if summary.empty:
        raise ArgumentError(
            "'summary' has no comparison to plot: no case has scored samples of both sides "
            "(are all outcomes unscored?)"
        )
    if len(summary) != 1:
        raise ArgumentError(
            f"'summary' must hold one comparison; got {len(summary)} rows (compare without "
            "by=, or pass one row of it)"
        )
    return summary, check


def _draw_cases(
    ax: Axes, cases: pd.DataFrame, y: np.ndarray, palette: Mapping[str, str], a: str, b: str
) -> list[Line2D]:
    """A stem and a marker per paired case, coloured by who did better; counts beside.

    Returns the legend's handles: one per colour drawn.
    """
    paired = cases["paired"].to_numpy(bool)
    diff = cases["diff"].to_numpy(float)
    groups = [
        ("b-better", diff > 0, palette[b], f"{b} better (B)"),
        ("a-better", diff < 0, palette[a], f"{a} better (A)"),
        ("no-change", diff == 0, _base.NEUTRAL, "no change"),
    ]
    handles = []
    for name, chosen, color, label in groups:
        chosen = chosen & paired
        if chosen.any():
            handles.append(Line2D([], [], ls="none", marker="o", color=color, label=label))
        # A stem from zero makes each case's move readable without following the grid.
        ax.hlines(
            y[chosen],
            0,
            diff[chosen],
            color=color,
            lw=1.2,
            alpha=0.6,
            zorder=2,
            gid=f"case-stem:{name}",
        )
        _base.estimates(ax, diff[chosen], y[chosen], color, f"case-diff:{name}")
    for case, height in zip(cases.itertuples(index=False), y, strict=True):
        if case.paired:
            text = f"{int(case.k_a)}/{int(case.n_a)} → {int(case.k_b)}/{int(case.n_b)}"
        else:
            text = "not paired: " + (
                "no scored samples"
                if not (case.n_a or case.n_b)
                else f"only {a if case.n_a else b} has scored samples"
            )
        _base.note_right(ax, height, text, _base.NEUTRAL if not case.paired else _base.INK)
    return handles


def _draw_mean(ax: Axes, summary: pd.DataFrame, palette: Mapping[str, str], a: str, b: str) -> None:
    """The top row: the mean difference and its interval in the verdict's colour, the rates."""
    row = summary.iloc[0]
    verdict = str(row["verdict"])
    tint = {"B better": palette[b], "A better": palette[a]}.get(verdict, _base.NEUTRAL)
    if np.isfinite(row["diff"]):
        low, high = float(row["low"]), float(row["high"])
        if not bounded(row):
            # An interval that cannot exclude anything is not drawn across the axis: what these
            # cases alone can tell is drawn instead, dashed, and the subtitle says which it is.
            low, high = float(row.get("fixed_low", np.nan)), float(row.get("fixed_high", np.nan))
            if np.isfinite(low) and np.isfinite(high):
                ax.hlines(
                    0, low, high, color=tint, lw=2.2, ls=(0, (3, 2)), zorder=2, gid="fixed-interval"
                )
        elif np.isfinite(low) and np.isfinite(high):
            _base.intervals(ax, 0, low, high, tint, "mean-interval", summary=True)
        _base.estimates(ax, row["diff"], 0, tint, "mean-diff", marker="D", summary=True)
    rates = ""
    if "rate_a" in summary.columns and "rate_b" in summary.columns:
        rates = f"{_base.percent(row['rate_a'])} → {_base.percent(row['rate_b'])}"
    _base.note_right(ax, 0, rates, _base.INK, weight="bold", gid="suite-note")


def _difference_axis(
    ax: Axes, row: pd.Series, cases: pd.DataFrame, palette: Mapping[str, str]
) -> None:
    """A symmetric x axis in points around zero, an arrow under each end saying who is better."""
    a, b = str(row["a"]), str(row["b"])
    diff = cases["diff"].to_numpy(float)[cases["paired"].to_numpy(bool)]
    ends = (
        [row["low"], row["high"]]
        if bounded(row)
        else [row.get("fixed_low", np.nan), row.get("fixed_high", np.nan)]
    )
    reach = np.nanmax(np.abs(np.r_[diff, row["diff"], ends, 0.05]))
    reach = min(1.0, math.ceil(reach * 1.15 * 20) / 20) if np.isfinite(reach) else 1.0
    ax.set_xlim(-reach - 0.02, reach + 0.02)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=8, steps=[1, 2, 2.5, 5, 10], symmetric=True))
    ax.xaxis.set_major_formatter(FuncFormatter(_points))
    ax.set_xlabel(f"{b} − {a}: difference in pass rate, percentage points", parse_math=False)
    for x, side, where, name in ((0, "left", "a", a), (1, "right", "b", b)):
        arrow = f"← {name} better" if where == "a" else f"{name} better →"
        ax.annotate(
            arrow,
            xy=(x, 0),
            xycoords="axes fraction",
            xytext=(0, -30),
            textcoords="offset points",
            ha=side,
            va="top",
            fontsize="small",
            color=_base.darker(palette[name]),
            gid=f"direction:{where}",
            parse_math=False,
        )


def _case_rows(cases: pd.DataFrame | None, check: str | None, sort: bool) -> pd.DataFrame:
    """One row per case (none without ``cases``), the paired ones by gain of B if ``sort``."""
    if cases is None:
        return pd.DataFrame(columns=_CASES)
    cases = _base.require(cases, _CASES, "cases", "a frame from evalnb.compare_cases(run)")
    cases, _ = _base.pick_check(cases, check if "check" in cases.columns else None, "cases")
    cases = cases.assign(case_id=cases["case_id"].astype(object).astype(str))
    cases = cases.assign(paired=cases["paired"].astype(bool))
    if cases["case_id"].duplicated().any():
        raise ArgumentError(
            "'cases' must have one row per case (compare_cases without by=, or filter it); "
            f"{cases.loc[cases['case_id'].duplicated(), 'case_id'].iloc[0]!r} appears twice"
        )
    if sort:
        cases = cases.assign(_order=-cases["diff"].fillna(-np.inf))
        cases = cases.sort_values(["paired", "_order"], ascending=[False, True], kind="stable")
        cases = cases.drop(columns="_order")
    return cases.reset_index(drop=True)


def _points(value: float, _position: object = None) -> str:
    points = value * 100
    return "0" if abs(points) < 1e-9 else f"{points:+.0f}"


def _headline(row: pd.Series, a: str, b: str) -> str:
    diff = row["diff"]
    if not np.isfinite(diff):
        return f"{row['verdict']}: no paired cases of {a} and {b}"
    return f"{row['verdict']}: {b} − {a} = {diff * 100:+.1f} points"


def _details(row: pd.Series, check: str | None) -> str:
    """The subtitle: the design, then compare's own words (the interval, or that it cannot
    bound, and the verdict's p, named by their test; the note), as in its display, the
    report and ``make demo``."""
    parts = [f"A = {row['a']}, B = {row['b']}"]
    if check:
        parts.append(f"check {check!r}")
    repeats = [row.get("repeats_a"), row.get("repeats_b")]
    if all(r is not None and np.isfinite(r) for r in repeats):
        shown = (
            f"{repeats[0]:.3g}"
            if repeats[0] == repeats[1]
            else f"{repeats[0]:.3g}/{repeats[1]:.3g}"
        )
        parts.append(f"{_base.plural(int(row['cases']), 'case')} × {shown} repeats")
    if row.get("mode") == "fixed":
        parts.append("fixed cases (these cases only)")
    if {"low", "high", "level", "p_adjusted", "method"} <= set(row.index):
        parts.append(interval_phrase(row))
    fixed = fixed_phrase(row)
    if fixed:
        parts.append(f"dashed: {fixed}")
    if int(row.get("unpaired", 0) or 0):
        parts.append(f"{_base.plural(int(row['unpaired']), 'unpaired case')} left out")
    note = row.get("note")
    return " · ".join(parts) + (f"\nnote: {note}" if isinstance(note, str) and note else "")
