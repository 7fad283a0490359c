"""Agreement across draws: how the draws of each case split among their answers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.collections import PolyCollection
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.patheffects import withStroke

from evalnb.plots import _base

__all__ = ["plot_agreement"]

_COLUMNS = ["case_id", "draws", "answered", "agreement", "mode_1_count", "mode_2_count"]
# Segments of a bar, left to right: their share of the draws, how strongly they are drawn
# in the variant's colour, their key. Draws without an answer are hatched, not coloured.
_SEGMENTS = (
    ("modal", 1.0, "modal answer"),
    ("second", 0.5, "second answer"),
    ("other", 0.2, "other answers"),
)
_NO_ANSWER: dict[str, Any] = {"facecolor": "white", "hatch": "////", "edgecolor": _base.NEUTRAL}


def plot_agreement(
    agreement: pd.DataFrame,
    ax: Axes | None = None,
    *,
    sort: bool = True,
    colors: Mapping[str, str] | None = None,
    label_width: int | None = _base.LABEL_WIDTH,
) -> Axes:
    """Per case and variant, a bar of the draws split by answer: modal, second, the rest.

    ``agreement`` is :func:`evalnb.agreement` (rows repeated for several ``at`` values
    are drawn once). Draws without an answer (incomplete) are hatched at the end of the
    bar; a black tick marks the case's ``agreement_min`` and the note on the right says
    when it is not met, and which cases are flaky (some draws pass, some fail). Answers
    themselves are never drawn. ``sort`` puts the least agreement first.

    >>> evalnb.plot_agreement(evalnb.agreement(run))    # doctest: +SKIP
    """
    frame = _base.require(agreement, _COLUMNS, "agreement", "a frame from evalnb.agreement(run)")
    variants = _base.Variants.of(frame, colors)
    work = variants.keyed(frame).drop_duplicates(variants.keys)
    cases = _base.ordered(frame["case_id"])
    if sort:
        cases = _base.lowest_first(cases, work, "agreement")

    ax = _base.new_axes(ax, _base.figure_height(len(cases), variants.row_inches), width=10.0)
    y_of = {case: i for i, case in enumerate(cases)}
    offsets = variants.offsets()
    count = len(variants.names)
    height = 0.8 * _base.LINE / variants.row_inches if count > 1 else 0.5
    for variant in variants.names:
        rows = work[work["variant"] == variant].reset_index(drop=True)
        y = np.array([y_of[c] for c in rows["case_id"]], dtype=float) + offsets[variant]
        _draw_variant(ax, rows, y, height, variant, variants.colors[variant])

    _base.setup_rows(ax, list(range(len(cases))), _base.shorten_ids(cases, label_width))
    _base.clean(ax)
    _base.percent_axis(ax, (0, 1.015), "share of draws")  # room for a minimum drawn at 100%
    lines = _base.legend(ax, _key(work, variants), _named(variants))
    key = str(work["key"].iloc[0]) if "key" in work.columns and len(work) else "answer"
    _base.title(
        ax,
        "Agreement across draws",
        legend_lines=lines,
        sub=f"compared: {key}; right: agreement, distinct answers, passes",
    )
    return ax


def _draw_variant(
    ax: Axes, rows: pd.DataFrame, y: np.ndarray, height: float, variant: str, color: str
) -> None:
    """One variant's bars: the answered segments, the draws without an answer, the minimum."""
    draws = rows["draws"].to_numpy(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        first = rows["mode_1_count"].to_numpy(float) / draws
        second = rows["mode_2_count"].to_numpy(float) / draws
        answered = rows["answered"].to_numpy(float) / draws
    shares = {"modal": first, "second": second, "other": answered - first - second}
    left = np.zeros(len(rows))
    for name, alpha, _ in _SEGMENTS:
        width = np.nan_to_num(shares[name])
        _bars(ax, y, left, width, height, f"{name}:{variant}", facecolor=color, alpha=alpha)
        left = left + width
    missing = np.nan_to_num(1 - answered)
    _bars(ax, y, left, missing, height, f"no-answer:{variant}", **_NO_ANSWER)
    if "agreement_min" in rows.columns:
        minimum = rows["agreement_min"].to_numpy(float)
        has_min = np.isfinite(minimum)
        ax.vlines(
            minimum[has_min],
            y[has_min] - height * 0.75,
            y[has_min] + height * 0.75,
            color=_base.INK,
            lw=2.0,
            zorder=4,
            gid="agreement-min",
            # A white edge keeps the tick visible on the dark modal segment.
            path_effects=[withStroke(linewidth=4, foreground="white")],
        )
    ink = _base.darker(color)
    for row, height_at in zip(rows.itertuples(index=False), y, strict=True):
        _base.note_right(ax, height_at, _note(row), ink)


def _key(work: pd.DataFrame, variants: _base.Variants) -> list[Artist]:
    """What the shades, the hatching and the tick mean.

    One variant: the key in its colour; several: in grey, beside a patch per variant.
    """
    shade = variants.colors[variants.names[0]] if len(variants.names) == 1 else _base.NEUTRAL
    handles: list[Artist] = [
        Patch(color=shade, alpha=alpha, label=label) for _, alpha, label in _SEGMENTS
    ]
    if (work["answered"] < work["draws"]).any():
        label = "no canonical answer (incomplete, or not the expected form)"
        handles.append(Patch(**_NO_ANSWER, label=label))
    if "agreement_min" in work.columns and work["agreement_min"].notna().any():
        handles.append(
            Line2D(
                [], [], color=_base.INK, lw=2.0, marker="|", ms=10, ls="none", label="agreement_min"
            )
        )
    return handles


def _named(variants: _base.Variants) -> list[Patch]:
    if len(variants.names) == 1:
        return []
    return [Patch(color=variants.colors[v], label=v) for v in variants.names]


def _bars(
    ax: Axes,
    y: np.ndarray,
    left: np.ndarray,
    width: np.ndarray,
    height: float,
    gid: str,
    **style: Any,
) -> None:
    """One collection of bars (a PolyCollection draws hundreds of bars far faster than patches)."""
    shown = width > 0
    x0, x1 = left[shown], left[shown] + width[shown]
    y0, y1 = y[shown] - height / 2, y[shown] + height / 2
    corners = np.stack([np.c_[x0, y0], np.c_[x0, y1], np.c_[x1, y1], np.c_[x1, y0]], axis=1)
    style = {"edgecolor": "white", "linewidth": 0.6, **style}
    ax.add_collection(PolyCollection(list(corners), zorder=2, gid=gid, **style), autolim=False)


def _note(row: Any) -> str:
    draws = int(row.draws)
    if not draws:
        return "no draws"
    if not int(row.answered):
        parts = [f"no canonical answer in {draws} draws"]
    else:
        parts = [f"{int(row.mode_1_count)}/{draws} agree"]
        distinct = getattr(row, "distinct", None)
        if distinct is not None and not pd.isna(distinct):
            parts.append(f"{int(distinct)} distinct")
        if int(row.answered) < draws:
            parts.append(f"{draws - int(row.answered)} without")
    minimum = getattr(row, "agreement_min", None)
    if minimum is not None and np.isfinite(minimum) and row.agreement < minimum - 1e-9:
        parts.append(f"below min {_base.percent(minimum)}")
    n = getattr(row, "n", None)
    if n is not None and int(n):
        parts.append(f"passes {int(row.k)}/{int(n)}" + (", flaky" if row.flaky else ""))
    return " · ".join(parts)
