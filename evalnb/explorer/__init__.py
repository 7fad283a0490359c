"""The run explorer: every number of a run, and the samples behind it, in the notebook.

:func:`explore` opens the :class:`Explorer` widget (:mod:`evalnb.explorer._widget`, an
anywidget with its page in :file:`explore.js`); it draws an :class:`ExploreState`
(:mod:`evalnb.explorer._state`), which keeps the overview (:mod:`evalnb.explorer._grid`),
the listed samples, the search and the verdicts, and which a script or a test drives with no
widget at all. The samples, their outcomes, verdicts, filters and search are the review
panel's :class:`~evalnb.review.SampleIndex`; the sample filters are its
:class:`~evalnb.review.SampleFilters`.

Without a kernel, :file:`saved.js` draws the explorer and the review panel from the widget
state a notebook saved (the documentation site loads it in every notebook page): no network.
"""

from __future__ import annotations

from evalnb.explorer._state import ExploreState, GridFilters
from evalnb.explorer._widget import Explorer, explore

__all__ = ["ExploreState", "Explorer", "GridFilters", "explore"]
