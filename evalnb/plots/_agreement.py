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
from matplotlib.ticker import PercentFormatter

from evalnb.plots import _base

__all__ = ["plot_agreement"]

_COLUMNS = ["case_id", "draws", "answered", "agreement", "mode_1_count", "mode_2_count"]
# Segments of a bar, left to right: their share of the draws, and how strongly they are
# drawn in the variant's colour. Draws without an answer are hatched, not coloured.
_SEGMENTS = (("modal", 1.0), ("second", 0.5), ("other", 0.2))


@_base.literal_text
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
    hint = "a frame from evalnb.agreement(run)"
    frame = _base.require(agreement, _COLUMNS, "agreement", hint)
    has_variant = "variant" in frame.columns
    keys = ["case_id", "variant"] if has_variant else ["case_id"]
    work = frame.assign(**{k: frame[k].astype(object).astype(str) for k in keys})
    if not has_variant:
        work = work.assign(variant="")
    work = work.drop_duplicates(keys)
    variants = _base.ordered(frame["variant"]) if has_variant else [""]
    levels = _base.all_levels(frame["variant"]) if has_variant else [""]
    palette = _base.colors_for(variants, levels, colors) if has_variant else {"": _base.PALETTE[0]}
    cases = _base.ordered(frame["case_id"])
    if sort:
        mean = work.groupby("case_id", sort=False)["agreement"].mean()
        rank = {c: i for i, c in enumerate(cases)}
        cases = sorted(cases, key=lambda c: (np.nan_to_num(mean.get(c, np.nan), nan=2.0), rank[c]))
    positions = {case: i for i, case in enumerate(cases)}
    offsets = dict(zip(variants, _base.dodge(len(variants)), strict=True))
    height = 0.8 * _base.LINE / _base.row_inches(len(variants)) if len(variants) > 1 else 0.5

    per_row = _base.row_inches(len(variants))
    ax = _base.new_axes(ax, _base.figure_height(len(cases), per_row), width=10.0)
    for variant in variants:
        rows = work[work["variant"] == variant].reset_index(drop=True)
        y = np.array([positions[c] for c in rows["case_id"]], dtype=float) + offsets[variant]
        draws = rows["draws"].to_numpy(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            first = rows["mode_1_count"].to_numpy(float) / draws
            second = rows["mode_2_count"].to_numpy(float) / draws
            answered = rows["answered"].to_numpy(float) / draws
        shares = {"modal": first, "second": second, "other": answered - first - second}
        left = np.zeros(len(rows))
        color = palette[variant]
        for name, alpha in _SEGMENTS:
            width = np.nan_to_num(shares[name])
            _bars(ax, y, left, width, height, f"{name}:{variant}", facecolor=color, alpha=alpha)
            left = left + width
        missing = np.nan_to_num(1 - answered)
        _bars(
            ax,
            y,
            left,
            missing,
            height,
            f"no-answer:{variant}",
            facecolor="white",
            hatch="////",
            edgecolor=_base.NEUTRAL,
        )
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

    _base.setup_rows(ax, list(range(len(cases))), _base.shorten_ids(cases, label_width))
    _base.clean(ax)
    ax.set_xlim(0, 1.015)  # room for a minimum drawn at 100%
    ax.set_xticks(np.linspace(0, 1, 6))
    ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    ax.set_xlabel("share of draws")
    # One variant: the key in its colour; several: in grey, beside a patch per variant.
    shade = palette[variants[0]] if len(variants) == 1 else _base.NEUTRAL
    handles: list[Artist] = [
        Patch(color=shade, alpha=1.0, label="modal answer"),
        Patch(color=shade, alpha=0.5, label="second answer"),
        Patch(color=shade, alpha=0.2, label="other answers"),
    ]
    if (work["answered"] < work["draws"]).any():
        handles.append(
            Patch(
                facecolor="white",
                edgecolor=_base.NEUTRAL,
                hatch="////",
                label="no canonical answer (incomplete, or not the expected form)",
            )
        )
    if "agreement_min" in work.columns and work["agreement_min"].notna().any():
        handles.append(
            Line2D(
                [], [], color=_base.INK, lw=2.0, marker="|", ms=10, ls="none", label="agreement_min"
            )
        )
    named = [Patch(color=palette[v], label=v) for v in variants] if len(variants) > 1 else []
    lines = _base.legend(ax, handles, named)
    key = str(work["key"].iloc[0]) if "key" in work.columns and len(work) else "answer"
    _base.title(
        ax,
        "Agreement across draws",
        legend_lines=lines,
        sub=f"compared: {key}; right: agreement, distinct answers, passes",
    )
    return ax


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
