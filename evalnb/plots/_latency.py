"""Latency distributions per group: every sample as a dot, the median and p95 marked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter

from evalnb._exceptions import ArgumentError
from evalnb.analysis import Run, _args, latency
from evalnb.analysis._latency import latency_samples
from evalnb.plots import _base

__all__ = ["plot_latency"]

#: Spread of latencies (max / min) above which the axis is logarithmic by default.
LOG_SPREAD = 30.0
#: How the median and the p95 are drawn, across each row and in the key.
_MEDIAN: dict[str, Any] = {"lw": 2.4}
_P95: dict[str, Any] = {"lw": 1.4, "ls": (0, (2, 1.5))}


def plot_latency(
    data: Run | pd.DataFrame,
    by: str | Sequence[str] | None = "variant",
    ax: Axes | None = None,
    *,
    log: bool | None = None,
    colors: Mapping[str, str] | None = None,
    label_width: int | None = _base.LABEL_WIDTH,
) -> Axes:
    """Latency per ``by`` group: one dot per sample, incomplete ones as crosses.

    ``data`` is a Run or a samples frame with ``latency_ms`` (and ``status``, so
    incomplete samples can be told apart) and the ``by`` columns. The median and the
    p95 are those of :func:`evalnb.latency` (observed values, incomplete samples
    included). Groups are coloured by variant when ``variant`` is among ``by``. ``log``
    forces a log (True) or linear (False) axis; None picks log when the slowest sample
    is more than 30 times the fastest.

    >>> evalnb.plot_latency(run, by=["variant", "split"])    # doctest: +SKIP
    """
    by = _args.names("by", by)
    frame = _samples(data, by)
    summary = latency(frame, by)
    groups, row_of = _groups(frame, summary, by)
    ms = pd.to_numeric(frame["latency_ms"], errors="coerce").to_numpy(float)
    shown = (row_of >= 0) & np.isfinite(ms)
    group_colors = _group_colors(frame, groups, by, colors)

    ax = _base.new_axes(ax, _base.figure_height(len(groups), 0.6, extra=1.7))
    _draw_samples(ax, ms, row_of, shown, _incomplete(frame), group_colors)
    rows = np.arange(len(groups), dtype=float)
    _draw_summary(ax, summary, rows)

    labels = [" · ".join(g) for g in groups] if by else ["all samples"]
    _base.setup_rows(ax, list(rows), _short(labels, by, label_width))
    _base.clean(ax)
    _latency_axis(ax, ms[shown], log)
    lines = _base.legend(ax, _key())
    _base.title(
        ax,
        "Latency per " + (" and ".join(by) if by else "run"),
        legend_lines=lines,
        sub="one mark per sample; incomplete samples (error, timeout...) included",
    )
    return ax


def _groups(
    frame: pd.DataFrame, summary: pd.DataFrame, by: list[str]
) -> tuple[list[tuple[str, ...]], np.ndarray]:
    """The groups in the summary's order, and the group of each sample (-1: none)."""
    if not by:
        return [()], np.zeros(len(frame), dtype=int)
    wanted = pd.MultiIndex.from_frame(summary[by].astype(object).astype(str))
    row_of = wanted.get_indexer(pd.MultiIndex.from_frame(frame[by].astype(object).astype(str)))
    return list(wanted), row_of


def _group_colors(
    frame: pd.DataFrame,
    groups: list[tuple[str, ...]],
    by: list[str],
    colors: Mapping[str, str] | None,
) -> list[str]:
    """Each group in its variant's colour when ``variant`` is among ``by``, else all alike."""
    if "variant" not in by:
        return [_base.PALETTE[0]] * len(groups)
    palette = _base.Variants.of(frame, colors).colors
    return [palette[group[by.index("variant")]] for group in groups]


def _incomplete(frame: pd.DataFrame) -> np.ndarray:
    """Which samples did not complete (none, without a ``status`` column)."""
    if "status" not in frame.columns:
        return np.zeros(len(frame), bool)
    status = frame["status"].astype(object)
    return np.asarray(((status != "completed") & status.notna()).to_numpy(bool))


def _draw_samples(
    ax: Axes,
    ms: np.ndarray,
    row_of: np.ndarray,
    shown: np.ndarray,
    incomplete: np.ndarray,
    colors: list[str],
) -> None:
    """A dot per completed sample, a cross per incomplete one, jittered inside its row."""
    # A fixed seed: the same run always gives the same picture.
    jitter = np.random.default_rng(0).uniform(-0.22, 0.22, len(ms))
    y = row_of + jitter
    for g, color in enumerate(colors):
        mine = shown & (row_of == g)
        ax.plot(
            ms[mine & ~incomplete],
            y[mine & ~incomplete],
            ls="none",
            marker="o",
            ms=3.5,
            color=color,
            alpha=0.55,
            mew=0,
            zorder=2,
            gid=f"completed:{g}",
        )
        ax.plot(
            ms[mine & incomplete],
            y[mine & incomplete],
            ls="none",
            marker="x",
            ms=5,
            color=_base.INK,
            mew=1.1,
            zorder=3,
            gid=f"incomplete:{g}",
        )


def _draw_summary(ax: Axes, summary: pd.DataFrame, rows: np.ndarray) -> None:
    """Each group's median (solid) and p95 (dashed) as ticks across its row; a note beside."""
    median = summary["median_ms"].to_numpy(float)
    p95 = summary["p95_ms"].to_numpy(float)
    ok = np.isfinite(median)
    for values, style, gid in ((median, _MEDIAN, "median"), (p95, _P95, "p95")):
        ax.vlines(
            values[ok],
            rows[ok] - 0.34,
            rows[ok] + 0.34,
            color=_base.INK,
            zorder=4,
            gid=gid,
            **style,
        )
    for i, row in summary.iterrows():
        _base.note_right(ax, float(i), _note(row))


def _latency_axis(ax: Axes, finite: np.ndarray, log: bool | None) -> None:
    """A log or linear axis of milliseconds and seconds (log by default for a wide spread)."""
    if log is None:
        log = bool(finite.size) and finite.min() > 0 and finite.max() / finite.min() > LOG_SPREAD
    if log:
        ax.set_xscale("log")
    elif finite.size:
        ax.set_xlim(0, finite.max() * 1.05)
    ax.xaxis.set_major_formatter(FuncFormatter(_milliseconds))
    ax.set_xlabel("latency of the whole attempt" + (" (log scale)" if log else ""))


def _key() -> list[Line2D]:
    return [
        Line2D([], [], ls="none", marker="o", ms=5, color=_base.NEUTRAL, label="completed"),
        Line2D([], [], ls="none", marker="x", ms=6, mew=1.2, color=_base.INK, label="incomplete"),
        Line2D([], [], color=_base.INK, label="median", **_MEDIAN),
        Line2D([], [], color=_base.INK, label="p95", **_P95),
    ]


def _samples(data: Run | pd.DataFrame, by: list[str]) -> pd.DataFrame:
    if isinstance(data, pd.DataFrame):
        missing = [c for c in [*by, "latency_ms"] if c not in data.columns]
        if missing:
            raise ArgumentError(
                f"'data' must have the columns {missing!r} (a samples frame, e.g. run.samples); "
                f"it has {list(data.columns)!r}"
            )
        return data.reset_index(drop=True)
    if not isinstance(data, Run):
        raise TypeError(
            f"'data' must be a Run (from evalnb.load) or a pandas DataFrame; got "
            f"{type(data).__name__}"
        )
    return latency_samples(data, by)


def _short(labels: list[str], by: list[str], width: int | None) -> list[str]:
    return _base.shorten_ids(labels, width) if "case_id" in by else labels


def _milliseconds(value: float, _position: object = None) -> str:
    if value >= 1000:
        return f"{value / 1000:g} s"
    return f"{value:g} ms"


def _note(row: pd.Series) -> str:
    if not row["n"]:
        return "no latencies"
    parts = [
        f"median {_milliseconds(round(float(row['median_ms'])))}",
        f"p95 {_milliseconds(round(float(row['p95_ms'])))}",
        f"n {int(row['n'])}",
    ]
    if row["incomplete"]:
        parts.append(f"{int(row['incomplete'])} incomplete")
    if row["missing"]:
        parts.append(f"{int(row['missing'])} without latency")
    return " · ".join(parts)
