"""The forest plot of pass rates: one row per case, the suite rate on top."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.lines import Line2D

from evalnb._exceptions import ArgumentError
from evalnb.analysis import suite_rate
from evalnb.plots import _base

__all__ = ["plot_intervals"]

_HINT = "a frame from evalnb.rates(run), one row per case and variant"
_COLUMNS = ["case_id", "k", "n", "estimate", "low", "high"]


def plot_intervals(
    rates: pd.DataFrame,
    ax: Axes | None = None,
    *,
    suite: pd.DataFrame | bool = True,
    check: str | None = None,
    sort: bool = True,
    colors: Mapping[str, str] | None = None,
    label_width: int | None = _base.LABEL_WIDTH,
) -> Axes:
    """Forest plot: per case, each variant's pass rate and interval; the suite rate on top.

    ``rates`` is :func:`evalnb.rates` by ``("variant", "case_id")`` (or by ``"case_id"``
    alone). Each row shows ``k/n`` at the right, and the incomplete and unscored counts
    where they are not zero. ``suite`` is the top row: a :func:`evalnb.suite_rate`
    frame, True to compute it from ``rates`` (clustered by ``group`` only if ``rates``
    has that column: pass ``suite_rate(run)`` to cluster as the run's cases do), or
    False for none. ``check`` picks one check when the frame holds several (default:
    the only one, else ``"all"``). ``sort`` puts the lowest rates first; False keeps
    the frame's case order. Case ids longer than ``label_width`` are shortened.

    >>> evalnb.plot_intervals(evalnb.rates(run), suite=evalnb.suite_rate(run))  # doctest: +SKIP
    """
    frame, check = _base.pick_check(_base.require(rates, _COLUMNS, "rates", _HINT), check, "rates")
    variants = _base.Variants.of(frame, colors)
    work = _one_row_each(frame, variants)
    cases = _base.ordered(frame["case_id"])
    if sort:
        cases = _base.lowest_first(cases, work, "estimate")
    header = _suite_rows(suite, frame, check, variants)
    start = 0.0 if header is None else 1.5

    ax = _base.new_axes(ax, _base.figure_height(len(cases) + start, variants.row_inches))
    y_of = {case: start + i for i, case in enumerate(cases)}
    offsets = variants.offsets()
    markers = _base.variant_markers(variants.levels)
    for variant in variants.names:
        rows = work[work["variant"] == variant]
        y = np.array([y_of[c] for c in rows["case_id"]]) + offsets[variant]
        color = variants.colors[variant]
        _draw_cases(ax, rows, y, variant, color, markers[variant])
        if header is not None:
            _draw_suite(ax, header, variant, offsets[variant], color, markers[variant])

    labels = _base.shorten_ids(cases, label_width)
    if header is None:
        _base.setup_rows(ax, list(y_of.values()), labels)
    else:
        suite_label = f"Suite: mean of {_base.plural(int(header['cases'].max()), 'case')}"
        _base.setup_rows(ax, [0.0, *y_of.values()], [suite_label, *labels], header=1)
    _base.clean(ax)
    _base.percent_axis(ax, (-0.02, 1.02), "pass rate (passed / scored)")
    _label(ax, frame, check, header, variants, markers)
    return ax


def _one_row_each(frame: pd.DataFrame, variants: _base.Variants) -> pd.DataFrame:
    work = variants.keyed(frame)
    keys = variants.keys
    duplicated = work.duplicated(keys)
    if duplicated.any():
        raise ArgumentError(
            f"'rates' must have one row per {' and '.join(keys)}; "
            f"{work.loc[duplicated, keys].iloc[0].tolist()!r} appears more than once "
            "(rate by=('variant', 'case_id'), or filter the frame first)"
        )
    return work


def _draw_cases(
    ax: Axes, rows: pd.DataFrame, y: np.ndarray, variant: str, color: str, marker: str
) -> None:
    """One variant's rows: interval and estimate where something was scored, counts beside."""
    scored = rows["n"].to_numpy() > 0
    low, high = rows["low"].to_numpy(float), rows["high"].to_numpy(float)
    _base.intervals(ax, y[scored], low[scored], high[scored], color, f"interval:{variant}")
    estimate = rows["estimate"].to_numpy(float)[scored]
    _base.estimates(ax, estimate, y[scored], color, f"estimate:{variant}", marker=marker)
    ink = _base.darker(color)
    for row, height in zip(rows.itertuples(index=False), y, strict=True):
        _base.note_right(ax, height, _counts(row), ink)


def _label(
    ax: Axes,
    frame: pd.DataFrame,
    check: str | None,
    header: pd.DataFrame | None,
    variants: _base.Variants,
    markers: dict[str, str],
) -> None:
    """The legend of variants (when there are variants) and the title naming the intervals."""
    handles = [
        Line2D([], [], color=variants.colors[v], lw=2.2, marker=markers[v], mec="white", label=v)
        for v in variants.names
        if variants.present
    ]
    level = _first(frame, "level")
    method = _first(frame, "method")
    what = f"{level * 100:g}% {_METHODS.get(method, method)} intervals" if level else "intervals"
    lines = _base.legend(ax, handles)
    _base.title(
        ax,
        f"Pass rate per case, check {check!r}" if check else "Pass rate per case",
        legend_lines=lines,
        sub=f"{what}; right: passed/scored" + _suite_basis(header),
    )


_METHODS = {
    "wilson": "Wilson",
    "agresti_coull": "Agresti-Coull",
    "beta": "Clopper-Pearson",
    "jeffreys": "Jeffreys",
}


def _first(frame: pd.DataFrame, column: str) -> Any:
    if column not in frame.columns or frame.empty:
        return None
    return frame[column].iloc[0]


def _suite_basis(header: pd.DataFrame | None) -> str:
    if header is None:
        return ""
    if "basis" in header.columns and (header["basis"] == "pooled samples").any():
        return "; suite: samples pooled (as independent trials)"
    return "; suite: mean of per-case rates, interval across cases"


def _counts(row: Any) -> str:
    n = int(row.n)
    parts = [f"{int(row.k)}/{n}" if n else "no scored samples"]
    incomplete = int(getattr(row, "incomplete", 0) or 0)
    unscored = int(getattr(row, "unscored", 0) or 0)
    if incomplete:
        parts.append(f"{incomplete} incomplete")
    if unscored:
        parts.append(f"{unscored} unscored")
    return " · ".join(parts)


def _suite_rows(
    suite: pd.DataFrame | bool,
    frame: pd.DataFrame,
    check: str | None,
    variants: _base.Variants,
) -> pd.DataFrame | None:
    if suite is False:
        return None
    if suite is True:
        if not (frame["n"] > 0).any():
            return None
        counts = frame.assign(check=check or "all")
        with warnings.catch_warnings():
            # The plot shows the width the warning is about; the caller asked for a picture.
            warnings.simplefilter("ignore", UserWarning)
            by = "variant" if variants.present else None
            table = suite_rate(counts, by=by, check=check or "all")
    else:
        columns = ["estimate", "low", "high", "cases", "k", "samples"]
        columns += ["variant"] if variants.present else []
        table = _base.require(suite, columns, "suite", "a frame from evalnb.suite_rate(run)")
        table, _ = _base.pick_check(table, check if "check" in table.columns else None, "suite")
    if table.empty:
        return None
    names = table["variant"].astype(object).astype(str) if variants.present else ""
    table = table.assign(variant=names)
    table = table[table["variant"].isin(variants.names)]
    if table["variant"].duplicated().any():
        raise ArgumentError(
            "'suite' must have one row per variant (suite_rate by='variant'); got "
            f"{len(table)} rows for {table['variant'].nunique()} variants"
        )
    return table if not table.empty else None


def _draw_suite(
    ax: Axes, table: pd.DataFrame, variant: str, offset: float, color: str, marker: str
) -> None:
    rows = table[table["variant"] == variant]
    if rows.empty:
        return
    row = rows.iloc[0]
    if np.isfinite(row["estimate"]):
        gid = f"suite-interval:{variant}"
        _base.intervals(ax, offset, row["low"], row["high"], color, gid, summary=True)
        gid = f"suite-estimate:{variant}"
        _base.estimates(ax, row["estimate"], offset, color, gid, marker=marker, summary=True)
    text = f"{_base.percent(row['estimate'])} · {int(row['k'])}/{int(row['samples'])}"
    if int(row.get("incomplete", 0) or 0):
        text += f" · {int(row['incomplete'])} incomplete"
    _base.note_right(ax, offset, text, _base.darker(color), weight="bold", gid="suite-note")
