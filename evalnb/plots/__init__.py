"""Plots over the analysis frames: intervals, comparisons, agreement, latency, power,
history, and the confidence sequence of a run until decided.

Each function takes a frame (or a Run), draws on ``ax`` or on a new figure sized to
its rows, and returns the Axes; none changes matplotlib's global settings. Variants
keep one colour across plots (pass ``colors=evalnb.variant_colors(run.variants)``
when a frame holds only some of them), from a palette that stays distinct with
colour blindness; long case ids are shortened with an ellipsis and stay unique.
:func:`render_png` draws one outside pyplot, for files and HTML pages.
"""

from evalnb.plots._agreement import plot_agreement
from evalnb.plots._base import render_png, variant_colors
from evalnb.plots._compare import plot_compare
from evalnb.plots._history import plot_history
from evalnb.plots._intervals import plot_intervals
from evalnb.plots._latency import plot_latency
from evalnb.plots._power import plot_power
from evalnb.plots._race import plot_race
from evalnb.plots._sequence import plot_sequence

__all__ = [
    "plot_agreement",
    "plot_compare",
    "plot_history",
    "plot_intervals",
    "plot_latency",
    "plot_power",
    "plot_race",
    "plot_sequence",
    "render_png",
    "variant_colors",
]
