"""Human review of a run's samples: a panel in the notebook, and the state behind it.

:func:`annotate` opens the panel (:mod:`evalnb.review._panel`, ipywidgets); it draws a
:class:`ReviewState` (:mod:`evalnb.review._state`), which keeps the queue of samples, the
filters, the place, the reason being typed and the verdicts saved, and which a script
or a test can drive with no widget at all. A :class:`ReviewDesign`
(:mod:`evalnb.review._design`) sets the order, so that the verdicts so far are a
probability sample of the run. :mod:`evalnb.review._render` writes the HTML.

Under it, and under the explorer, is one :class:`SampleIndex` (:mod:`evalnb.review._index`):
a run's samples with their key codes, the outcome of each check, an annotator's latest
verdicts, the filters (:class:`SampleFilters`) and the word search.

``annotate(run, annotator, compare=("v1", "v2"), ask="preference")`` is a pairwise review
instead: :class:`PreferenceState` (:mod:`evalnb.review._prefer`) drawn by
:class:`PreferencePanel` (:mod:`evalnb.review._prefer_panel`). :func:`assign_review`
(:mod:`evalnb.review._assign`) deals a run's samples to several reviewers, with a share
they all review; each reviewer's panel then walks their own samples.
"""

from __future__ import annotations

from evalnb.review._assign import assign_review, review_assignment
from evalnb.review._design import ReviewDesign
from evalnb.review._index import SampleFilters, SampleIndex, SampleKey
from evalnb.review._panel import Annotator, annotate
from evalnb.review._prefer import PreferenceState
from evalnb.review._prefer_panel import PreferencePanel
from evalnb.review._search import SearchError
from evalnb.review._state import ReviewState

__all__ = [
    "Annotator",
    "PreferencePanel",
    "PreferenceState",
    "ReviewDesign",
    "ReviewState",
    "SampleFilters",
    "SampleIndex",
    "SampleKey",
    "SearchError",
    "annotate",
    "assign_review",
    "review_assignment",
]
