"""Human review of a run's samples: a panel in the notebook, and the state behind it.

:func:`annotate` opens the panel (:mod:`evalnb.review._panel`, ipywidgets); it draws a
:class:`ReviewState` (:mod:`evalnb.review._state`), which keeps the queue of samples, the
filters, the place, the reason being typed and the verdicts saved, and which a script
or a test can drive with no widget at all. :mod:`evalnb.review._render` writes the HTML.
"""

from __future__ import annotations

from evalnb.review._panel import Annotator, annotate
from evalnb.review._state import Filters, ReviewState

__all__ = ["Annotator", "Filters", "ReviewState", "annotate"]
