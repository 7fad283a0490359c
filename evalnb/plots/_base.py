"""What every plot shares: the palette, short case ids, new Axes, rows of a forest plot.

Text drawn from users' data (case ids, variant and check names) is made with
``parse_math=False``, so a ``$`` in it is a dollar sign, not mathtext; each artist carries
that itself, so no plot sets matplotlib's global settings, not even for a moment.
"""

from __future__ import annotations

import contextvars
import io
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import PercentFormatter

from evalnb._exceptions import ArgumentError
from evalnb._numbers import is_whole

__all__ = ["render_png", "variant_colors"]

# Okabe & Ito (2008), "Color Universal Design": eight colours that stay distinct under the
# common forms of colour blindness. Blue and orange come first because the usual plot has
# two variants and that pair is the safest of all. Yellow goes last (it is faint on white)
# and black is left out: black marks reference lines (zero, minimums, medians).
PALETTE = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#D55E00",  # vermillion
    "#F0E442",  # yellow
)
# A second, shape cue for each variant, so a plot also reads in grey or when printed.
MARKERS = ("o", "s", "D", "^", "v", "P", "X")
NEUTRAL = "#6b6b6b"
INK = "#222222"
#: Case ids longer than this are shortened in labels (``label_width=`` on each plot).
LABEL_WIDTH = 32
ELLIPSIS = "…"
_OFFSCREEN = contextvars.ContextVar("evalnb_plots_offscreen", default=False)
#: Inches per series inside a row: room for one line of small text.
LINE = 0.16


def variant_colors(variants: Iterable[Any]) -> dict[str, str]:
    """A colour per variant, by position: pass ``run.variants`` for the same colours everywhere.

    Every plot that colours variants takes ``colors=``; by default it colours them by their
    order in the frame (the manifest's order for frames from :func:`evalnb.load`).

    >>> evalnb.variant_colors(["v1", "v2"])
    {'v1': '#0072B2', 'v2': '#E69F00'}
    """
    return {str(v): PALETTE[i % len(PALETTE)] for i, v in enumerate(variants)}


def variant_markers(variants: Sequence[str]) -> dict[str, str]:
    return {v: MARKERS[i % len(MARKERS)] for i, v in enumerate(variants)}


def darker(color: str, amount: float = 0.35) -> tuple[float, float, float]:
    """The colour mixed with black: light palette colours are too faint for small text."""
    r, g, b = to_rgb(color)
    return (r * (1 - amount), g * (1 - amount), b * (1 - amount))


def shorten_ids(ids: Sequence[Any], width: int | None = LABEL_WIDTH) -> list[str]:
    """Labels for ``ids``: those longer than ``width`` lose their middle to an ellipsis.

    Start and end are kept, since ids that share a prefix usually differ at the end
    (``..._v2``, ``..._v3``); shortened labels that would coincide are widened until they
    differ, so every label still names one case.
    """
    full = [str(i) for i in ids]
    if width is None:
        return full
    if not is_whole(width, 5):
        raise ArgumentError(
            f"'label_width' must be an integer of at least 5, or None; got {width!r}"
        )
    widths = dict.fromkeys(full, width)
    while True:
        labels = {i: _cut(i, widths[i]) for i in widths}
        seen: dict[str, list[str]] = {}
        for i, label in labels.items():
            seen.setdefault(label, []).append(i)
        clashes = [i for group in seen.values() if len(group) > 1 for i in group]
        widened = [i for i in clashes if widths[i] < len(i)]
        if not widened:
            return [labels[i] for i in full]
        for i in widened:
            widths[i] += 1


def _cut(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    tail = (width - 1) * 2 // 5
    head = width - 1 - tail
    return text[:head] + ELLIPSIS + text[len(text) - tail :]


def new_axes(ax: Axes | None, height: float, width: float = 9.0) -> Axes:
    """``ax`` itself, or the Axes of a new figure ``width`` x ``height`` inches.

    The new figure is pyplot's, so a notebook shows it, except inside
    :func:`render_png`, which needs no pyplot (and no GUI backend) at all.
    """
    if ax is not None:
        if not isinstance(ax, Axes):
            raise TypeError(f"'ax' must be a matplotlib Axes or None; got {type(ax).__name__}")
        return ax
    if _OFFSCREEN.get():
        figure = Figure(figsize=(width, height), layout="constrained")
        # The canvas that will draw it, from the start: the layout then measures text with
        # the renderer that draws it, so the drawing finds every text's size measured.
        FigureCanvasAgg(figure)
        return figure.add_subplot()
    import matplotlib.pyplot as plt

    _, new = plt.subplots(figsize=(width, height), layout="constrained")
    return new


def render_png(plot: Callable[..., Axes], /, *args: Any, dpi: int = 100, **kwargs: Any) -> bytes:
    """PNG bytes of ``plot(*args, **kwargs)`` drawn on a new figure outside pyplot.

    No GUI backend is involved and no figure is left open. The bytes depend only on
    the data: the PNG carries no software version or time.

    >>> png = evalnb.plots.render_png(evalnb.plot_latency, run)    # doctest: +SKIP
    """
    token = _OFFSCREEN.set(True)
    try:
        ax = plot(*args, **kwargs)
    finally:
        _OFFSCREEN.reset(token)
    figure = _root_figure(ax)
    engine = figure.get_layout_engine()
    if engine is not None:
        # Laid out once and kept: savefig would lay the figure out in a first pass that
        # draws without rendering and again in the drawing itself (the same pixels, about a
        # tenth more of the time).
        engine.execute(figure)
        figure.set_layout_engine("none")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi, metadata={"Software": None})
    return buffer.getvalue()


def _root_figure(ax: Axes) -> Figure:
    """The Figure ``ax`` is drawn in, through any SubFigure between them."""
    figure = ax.figure
    return figure if isinstance(figure, Figure) else figure.figure


def figure_height(rows: float, per_row: float, *, extra: float = 1.5) -> float:
    """Inches for ``rows`` rows of ``per_row`` inches plus title, legend and x axis."""
    return float(min(max(extra + rows * per_row, 2.6), 600.0))


def require(frame: Any, columns: Sequence[str], name: str, hint: str) -> pd.DataFrame:
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{name!r} must be a pandas DataFrame ({hint}); got {type(frame).__name__}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ArgumentError(
            f"{name!r} must have the columns {missing!r} ({hint}); it has {list(frame.columns)!r}"
        )
    return frame


def pick_check(
    frame: pd.DataFrame, check: str | None, name: str
) -> tuple[pd.DataFrame, str | None]:
    """The rows of one check: ``check``, else the only one, else ``"all"``."""
    if "check" not in frame.columns:
        if check is not None:
            raise ArgumentError(f"'check' was given ({check!r}) but {name!r} has no 'check' column")
        return frame, None
    present = [str(c) for c in pd.unique(frame["check"].astype(object))]
    if not present:
        return frame, check
    if check is None:
        if len(present) == 1:
            check = present[0]
        elif "all" in present:
            check = "all"
        else:
            raise ArgumentError(
                f"'check' must name one of the checks in {name!r} "
                f"({', '.join(map(repr, present))}); got None"
            )
    elif check not in present:
        raise ArgumentError(
            f"'check' must be one of {', '.join(map(repr, present)) or 'none'}; got {check!r}"
        )
    return frame[frame["check"].astype(object) == check], check


def ordered(values: pd.Series) -> list[str]:
    """The distinct values of a column: category order for categoricals, else first seen."""
    present = [str(v) for v in pd.unique(values.astype(object)) if not pd.isna(v)]
    if isinstance(values.dtype, pd.CategoricalDtype):
        keep = set(present)
        return [str(c) for c in values.cat.categories if str(c) in keep]
    return present


def all_levels(values: pd.Series) -> list[str]:
    """Every level a column can take (all categories), for colours that stay put."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        return [str(c) for c in values.cat.categories]
    return ordered(values)


def colors_for(
    variants: Sequence[str], levels: Sequence[str], colors: Mapping[str, str] | None
) -> dict[str, str]:
    if colors is None:
        return {v: c for v, c in variant_colors(levels).items() if v in set(variants)}
    if not isinstance(colors, Mapping):
        raise TypeError(
            f"'colors' must map variant names to colours (see evalnb.variant_colors); got "
            f"{type(colors).__name__}"
        )
    missing = [v for v in variants if v not in colors]
    if missing:
        raise ArgumentError(f"'colors' must have a colour for every variant; missing {missing!r}")
    return {v: colors[v] for v in variants}


@dataclass(frozen=True)
class Variants:
    """The variants a frame holds: their order, every level they can take, a colour each."""

    names: list[str]
    levels: list[str]
    colors: dict[str, str]
    #: False for a frame without a ``variant`` column: one unnamed variant, ``""``.
    present: bool = True

    @classmethod
    def of(cls, frame: pd.DataFrame, colors: Mapping[str, str] | None) -> Variants:
        if "variant" not in frame.columns:
            return cls([""], [""], {"": PALETTE[0]}, present=False)
        names, levels = ordered(frame["variant"]), all_levels(frame["variant"])
        return cls(names, levels, colors_for(names, levels, colors))

    @property
    def keys(self) -> list[str]:
        """The columns that name one row: the case, and its variant when there are variants."""
        return ["case_id", "variant"] if self.present else ["case_id"]

    @property
    def row_inches(self) -> float:
        return row_inches(len(self.names))

    def offsets(self) -> dict[str, float]:
        """Each variant's vertical offset inside a row (see :func:`dodge`)."""
        return dict(zip(self.names, dodge(len(self.names)), strict=True))

    def keyed(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` with its keys as text, and a ``variant`` column of ``""`` if it had none."""
        work = frame.assign(**{k: frame[k].astype(object).astype(str) for k in self.keys})
        return work if self.present else work.assign(variant="")


def lowest_first(cases: Sequence[str], work: pd.DataFrame, column: str) -> list[str]:
    """``cases`` by their mean ``column`` in ``work``, lowest first (the cases to look at).

    Cases without a value go last; ties keep the order of ``cases``.
    """
    mean = work.groupby("case_id", sort=False)[column].mean()
    rank = {c: i for i, c in enumerate(cases)}
    return sorted(cases, key=lambda c: (np.nan_to_num(mean.get(c, np.nan), nan=2.0), rank[c]))


def row_inches(count: int) -> float:
    """Height of one row holding ``count`` series, each with a line of small text beside it."""
    return max(0.34, LINE * count + 0.2)


def dodge(count: int) -> np.ndarray:
    """Vertical offsets (in rows) of ``count`` series inside one row, one text line apart."""
    step = LINE / row_inches(count)
    return (np.arange(count) - (count - 1) / 2) * step


def setup_rows(
    ax: Axes, positions: Sequence[float], labels: Sequence[str], *, header: int = 0
) -> None:
    """Row labels top to bottom; the first ``header`` rows (summaries) in bold, set apart."""
    ax.set_yticks(list(positions), list(labels), parse_math=False)
    for tick in ax.get_yticklabels()[:header]:
        tick.set_fontweight("bold")
    ax.tick_params(axis="y", length=0)
    top = min(positions, default=0) - 0.7
    bottom = max(positions, default=0) + 0.7
    ax.set_ylim(bottom, top)
    if header and len(positions) > header:
        below = (positions[header - 1] + positions[header]) / 2
        ax.axhspan(top, below, color="#f0f0f0", zorder=0, lw=0, gid="summary-band")
        ax.axhline(below, color=NEUTRAL, lw=0.8, zorder=1, gid="summary-rule")


def intervals(
    ax: Axes, y: Any, low: Any, high: Any, color: Any, gid: str, *, summary: bool = False
) -> None:
    """Horizontal interval lines; thicker for a summary row."""
    ax.hlines(y, low, high, color=color, lw=3.4 if summary else 2.2, zorder=2, gid=gid)


def estimates(
    ax: Axes,
    x: Any,
    y: Any,
    color: Any,
    gid: str,
    *,
    marker: str = "o",
    summary: bool = False,
) -> None:
    """Point estimates on top of their intervals, edged in white; larger for a summary row."""
    ax.plot(
        x,
        y,
        ls="none",
        marker=marker,
        ms=8.5 if summary else 6,
        color=color,
        mec="white",
        mew=0.8 if summary else 0.6,
        zorder=3,
        gid=gid,
    )


def percent_axis(ax: Axes, limits: tuple[float, float], label: str) -> None:
    """An x axis of shares from 0% to 100% in steps of 20, within ``limits``."""
    ax.set_xlim(*limits)
    ax.set_xticks(np.linspace(0, 1, 6))
    ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    ax.set_xlabel(label, parse_math=False)


def clean(ax: Axes, grid: Literal["both", "x", "y"] = "x") -> None:
    """Light frame: no box, a faint grid along ``grid``."""
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.grid(axis=grid, color="#dddddd", lw=0.6, zorder=0)
    ax.set_axisbelow(True)


def note_right(
    ax: Axes, y: float, text: str, color: Any = INK, *, weight: str = "normal", gid: str = "note"
) -> None:
    """Text just right of the Axes at data height ``y`` (counts, medians...)."""
    ax.annotate(
        text,
        xy=(1, y),
        xycoords=("axes fraction", "data"),
        xytext=(8, 0),
        textcoords="offset points",
        ha="left",
        va="center",
        fontsize="small",
        color=color,
        fontweight=weight,
        annotation_clip=False,
        gid=gid,
        parse_math=False,
    )


def legend(ax: Axes, *groups: Sequence[Any], columns: int | None = None) -> int:
    """A legend in a band above the Axes, each group of handles starting a new line.

    Returns the number of lines, for the title's pad.
    """
    groups = tuple(list(g) for g in groups if g)
    if not groups:
        return 0
    columns = columns or min(max(len(g) for g in groups), 6)
    cells: list[Any] = []
    for group in groups:
        cells += group
        cells += [Line2D([], [], ls="none", label=" ")] * (-len(group) % columns)
    rows = len(cells) // columns
    # The legend fills column by column; this order makes it read line by line.
    handles = [cells[r * columns + c] for c in range(columns) for r in range(rows)]
    drawn = ax.legend(
        handles=handles,
        loc="lower left",
        bbox_to_anchor=(0, 1.0),
        ncols=columns,
        frameon=False,
        fontsize="small",
        borderaxespad=0.3,
        handlelength=1.6,
        columnspacing=1.4,
    )
    for text in drawn.get_texts():
        text.set_parse_math(False)
    return rows


def title(ax: Axes, text: str, *, legend_lines: int = 0, sub: str | None = None) -> None:
    """A left-aligned title above the legend band; ``sub`` in a smaller line beneath it."""
    pad = 6 + 15 * legend_lines
    if sub:
        # Text outside the Axes is not shrunk to fit the figure: long subtitles wrap.
        width = max(60, int(_root_figure(ax).get_figwidth() * 11))
        sub = "\n".join(
            line
            for paragraph in sub.split("\n")
            for line in textwrap.wrap(paragraph, width, break_on_hyphens=False)
        )
        ax.annotate(
            sub,
            xy=(0, 1),
            xycoords="axes fraction",
            xytext=(0, pad),
            textcoords="offset points",
            ha="left",
            va="bottom",
            fontsize="small",
            color=NEUTRAL,
            gid="subtitle",
            parse_math=False,
        )
        pad += 11 * (sub.count("\n") + 1) + 3
    ax.set_title(text, loc="left", pad=pad, fontsize="medium", fontweight="bold", parse_math=False)


def plural(count: int, word: str) -> str:
    """``1 case``, ``2 cases``."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def percent(value: float, digits: int = 0) -> str:
    return f"{value * 100:.{digits}f}%"
