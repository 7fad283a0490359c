"""The forest plot of pass rates: one row per case, the suite rate on top."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.ticker import PercentFormatter

from evalnb._exceptions import ArgumentError
from evalnb.analysis._suite import suite_rate
from evalnb.plots import _base

__all__ = ["plot_intervals"]

_HINT = "a frame from evalnb.rates(run), one row per case and variant"


@_base.literal_text
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
    columns = ["case_id", "k", "n", "estimate", "low", "high"]
    frame = _base.require(rates, columns, "rates", _HINT)
    frame, check = _base.pick_check(frame, check, "rates")
    has_variant = "variant" in frame.columns
    variants = _base.ordered(frame["variant"]) if has_variant else [""]
    levels = _base.all_levels(frame["variant"]) if has_variant else [""]
    palette = _base.colors_for(variants, levels, colors) if has_variant else {"": _base.PALETTE[0]}
    markers = _base.variant_markers(levels)
    keys = ["case_id", "variant"] if has_variant else ["case_id"]
    work = frame.assign(**{k: frame[k].astype(object).astype(str) for k in keys})
    if not has_variant:
        work = work.assign(variant="")
    duplicated = work.duplicated(keys)
    if duplicated.any():
        raise ArgumentError(
            f"'rates' must have one row per {' and '.join(keys)}; "
            f"{work.loc[duplicated, keys].iloc[0].tolist()!r} appears more than once "
            "(rate by=('variant', 'case_id'), or filter the frame first)"
        )
    cases = _case_order(work, frame, sort)
    header = _suite_rows(suite, frame, check, has_variant, variants)

    per_row = _base.row_inches(len(variants))
    ax = _base.new_axes(
        ax, _base.figure_height(len(cases) + (1.5 if header is not None else 0), per_row)
    )
    positions = {case: i for i, case in enumerate(cases)}
    start = 0.0
    labels: list[str] = []
    ticks: list[float] = []
    if header is not None:
        start = 1.5
        ticks.append(0.0)
        labels.append(f"Suite: mean of {_base.plural(int(header['cases'].max()), 'case')}")
    ticks += [start + i for i in range(len(cases))]
    labels += _base.shorten_ids(cases, label_width)
    offsets = dict(zip(variants, _base.dodge(len(variants)), strict=True))

    handles = []
    for variant in variants:
        color = palette[variant]
        ink = _base.darker(color)
        rows = work[work["variant"] == variant]
        y = np.array([start + positions[c] for c in rows["case_id"]]) + offsets[variant]
        scored = rows["n"].to_numpy() > 0
        ax.hlines(
            y[scored],
            rows["low"].to_numpy(float)[scored],
            rows["high"].to_numpy(float)[scored],
            color=color,
            lw=2.2,
            zorder=2,
            gid=f"interval:{variant}",
        )
        ax.plot(
            rows["estimate"].to_numpy(float)[scored],
            y[scored],
            ls="none",
            marker=markers[variant],
            ms=6,
            color=color,
            mec="white",
            mew=0.6,
            zorder=3,
            gid=f"estimate:{variant}",
        )
        for row, height in zip(rows.itertuples(index=False), y, strict=True):
            _base.note_right(ax, height, _counts(row), ink)
        if header is not None:
            _draw_suite(ax, header, variant, offsets[variant], color, markers[variant])
        if has_variant:
            handles.append(
                Line2D(
                    [], [], color=color, lw=2.2, marker=markers[variant], mec="white", label=variant
                )
            )

    _base.setup_rows(ax, ticks, labels, header=1 if header is not None else 0)
    _base.clean(ax)
    ax.set_xlim(-0.02, 1.02)
    ax.set_xticks(np.linspace(0, 1, 6))
    ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    ax.set_xlabel("pass rate (passed / scored)")
    level = _first(frame, "level")
    method = _first(frame, "method")
    what = f"{level * 100:g}% {_METHODS.get(method, method)} intervals" if level else "intervals"
    lines = _base.legend(ax, handles)
    sub = f"{what}; right: passed/scored" + _suite_basis(header)
    _base.title(
        ax,
        f"Pass rate per case, check {check!r}" if check else "Pass rate per case",
        legend_lines=lines,
        sub=sub,
    )
    return ax


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


def _case_order(work: pd.DataFrame, frame: pd.DataFrame, sort: bool) -> list[str]:
    cases = _base.ordered(frame["case_id"])
    if not sort:
        return cases
    mean = work.groupby("case_id", sort=False)["estimate"].mean()
    rank = {c: i for i, c in enumerate(cases)}
    # Lowest first (the cases to look at), unscored cases last, ties in case order.
    return sorted(cases, key=lambda c: (np.nan_to_num(mean.get(c, np.nan), nan=2.0), rank[c]))


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
    has_variant: bool,
    variants: list[str],
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
            table = suite_rate(counts, by="variant" if has_variant else None, check=check or "all")
    else:
        columns = ["estimate", "low", "high", "cases", "k", "samples"]
        columns += ["variant"] if has_variant else []
        table = _base.require(suite, columns, "suite", "a frame from evalnb.suite_rate(run)")
        table, _ = _base.pick_check(table, check if "check" in table.columns else None, "suite")
    if table.empty:
        return None
    table = table.assign(variant=table["variant"].astype(object).astype(str) if has_variant else "")
    table = table[table["variant"].isin(variants)]
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
        ax.hlines(
            offset,
            row["low"],
            row["high"],
            color=color,
            lw=3.4,
            zorder=2,
            gid=f"suite-interval:{variant}",
        )
        ax.plot(
            row["estimate"],
            offset,
            ls="none",
            marker=marker,
            ms=8.5,
            color=color,
            mec="white",
            mew=0.8,
            zorder=3,
            gid=f"suite-estimate:{variant}",
        )
    text = f"{_base.percent(row['estimate'])} · {int(row['k'])}/{int(row['samples'])}"
    if int(row.get("incomplete", 0) or 0):
        text += f" · {int(row['incomplete'])} incomplete"
    _base.note_right(ax, offset, text, _base.darker(color), weight="bold", gid="suite-note")
