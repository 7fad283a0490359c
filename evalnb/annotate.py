"""Kept for one release: the review panel now lives in :mod:`evalnb.review`.

``from evalnb.annotate import annotate`` still works; import from :mod:`evalnb.review`
(or use ``evalnb.annotate``, the function, at the top level) instead.
"""

from __future__ import annotations

from evalnb.review import Annotator, annotate
from evalnb.review.panel import KEYS as KEYS  # the shortcut table, also public before

__all__ = ["Annotator", "annotate"]
