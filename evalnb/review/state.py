"""A review without widgets: the filters over the queue of samples (:mod:`evalnb.review.queue`),
the place in it, the reason being typed, and every verdict saved through the verdict store.

:class:`ReviewState` is the whole of a review but the drawing; :class:`~evalnb.review.Annotator`
draws it with ipywidgets and forwards each click to it. A script or a test drives it as a
reviewer would:

>>> review = ReviewState(run, "ana")                          # doctest: +SKIP
>>> review.draft = "promises a delivery date"                 # doctest: +SKIP
>>> review.record("fail")                                     # doctest: +SKIP
>>> review.next_unreviewed()                                  # doctest: +SKIP

A verdict is written (one verdicts part, :mod:`evalnb.store.verdicts`) before the state
changes, so a kernel that dies loses nothing recorded; a new state resumes at the first
sample this annotator has not reviewed. Filters are applied once per change into an
index of samples; moving only steps through that index, so a move costs the same on a
run of 100,000 samples as on a run of 100.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalnb.analysis.frames import Run, load
from evalnb.review.queue import Queue, SampleKey, SampleView
from evalnb.store.verdicts import VERDICTS, VerdictStore, latest_verdicts, verdict_history

__all__ = ["Filters", "ReviewState"]

_CODES = {verdict: code for code, verdict in enumerate(VERDICTS)}
_NONE = -1
_SCAN = 1024


@dataclass(frozen=True)
class Filters:
    """Which samples the selection keeps. ``variant`` and ``case`` are codes from
    :attr:`ReviewState.variants` and :attr:`ReviewState.cases`, -1 for all."""

    variant: int = -1
    case: int = -1
    failing: bool = False
    unreviewed: bool = False
    disagreements: bool = False


class ReviewState:
    """``annotator``'s review of the samples of ``run``: what :func:`~evalnb.review.annotate`
    shows, with no widget. The arguments are those of :func:`~evalnb.review.annotate`.

    ``draft`` is the reason typed for the shown sample; :meth:`record` saves it with the
    verdict. Moving to a sample sets ``draft`` to the reason saved for it (or ``""``).
    """

    def __init__(
        self,
        run: Run | str | os.PathLike[str],
        annotator: str,
        *,
        where: Any = None,
        check: str | None = None,
        advance: bool = False,
    ):
        if not isinstance(annotator, str) or not annotator.strip():
            raise ValueError(
                f"'annotator' must be a non-empty string (the reviewer's name); got {annotator!r}"
            )
        if not isinstance(advance, bool):
            raise TypeError(f"'advance' must be True or False; got {advance!r}")
        self.run = run if isinstance(run, Run) else load(run)
        self.annotator = annotator.strip()
        self.advance = advance
        self.draft = ""
        self.filters = Filters()
        # Opened at the first verdict: a store reads its run's manifest, which holds the
        # whole plan (megabytes for a large run), and the Run has read it once already.
        self._stores: dict[str, VerdictStore] = {}
        self._index = np.zeros(0, dtype=np.int64)
        self._at = 0
        self._reviewed = 0
        self.queue = Queue(self.run, where, check)
        self._positions = self.queue.positions
        self._load_verdicts()
        self.select(self.filters)

    def _load_verdicts(self) -> None:
        """This annotator's latest verdicts, read fresh from disk (a review resumes)."""
        self._verdict = np.full(len(self.queue.samples), _NONE, dtype=np.int8)
        self._reason: dict[int, str] = {}
        self._saved_at: dict[int, dt.datetime] = {}
        history = verdict_history(list(self.run.paths.values()), annotator=self.annotator)
        latest = latest_verdicts(history)
        if latest.empty:
            return
        rows = self.queue.rows(latest)
        found = rows >= 0
        latest = latest[found]
        rows = rows[found]
        self._verdict[rows] = latest["verdict"].map(_CODES).to_numpy(dtype=np.int8)
        self._reason.update(zip(rows.tolist(), latest["reason"].fillna(""), strict=True))
        self._saved_at.update(zip(rows.tolist(), latest["created_at"], strict=True))

    # -- the selection --------------------------------------------------------------------

    @property
    def variants(self) -> list[tuple[str, int]]:
        """(name, code) of each variant queued, for :attr:`Filters.variant`."""
        return self.queue.options("variant")

    @property
    def cases(self) -> list[tuple[str, int]]:
        """(case id, code) of each case queued, for :attr:`Filters.case`."""
        return self.queue.options("case_id")

    def select(self, filters: Filters) -> None:
        """Keep the samples ``filters`` lets through; stay on the shown sample if it is
        kept, else go to the first one not reviewed."""
        queue = self.queue
        keep = np.ones(len(self._positions), dtype=bool)
        if filters.variant >= 0:
            keep &= queue.variant_codes == filters.variant
        if filters.case >= 0:
            keep &= queue.case_codes == filters.case
        verdict = self._verdict[self._positions]
        if filters.failing:
            keep &= queue.failing
        if filters.unreviewed:
            keep &= verdict == _NONE
        if filters.disagreements:
            human_pass = verdict == _CODES["pass"]
            human_fail = verdict == _CODES["fail"]
            keep &= (human_pass & queue.check_fails) | (human_fail & queue.check_passes)
        self.filters = filters
        current = self.position
        self._index = np.flatnonzero(keep)
        self._reviewed = int((verdict[self._index] != _NONE).sum())
        if current is not None:
            at = int(np.searchsorted(self._index, current))
            if at < len(self._index) and self._index[at] == current:
                self._move(at)
                return
        first = self._find_unreviewed(0)
        self._move(0 if first is None else first)

    @property
    def count(self) -> int:
        """Samples in the selection."""
        return len(self._index)

    @property
    def reviewed(self) -> int:
        """Samples in the selection this annotator has given a verdict."""
        return self._reviewed

    @property
    def at(self) -> int:
        """Place (0-based) of the shown sample in the selection."""
        return self._at

    @property
    def position(self) -> int | None:
        """Position of the shown sample among all the queued samples (None when none)."""
        if not len(self._index):
            return None
        return int(self._index[self._at])

    @property
    def current(self) -> SampleKey | None:
        """The key of the shown sample (None when the selection is empty)."""
        row = self._row()
        return None if row is None else self.queue.key(row)

    # -- moving: O(1) per move ------------------------------------------------------------

    def go(self, at: int) -> None:
        """Show the sample at place ``at`` (0-based) of the selection."""
        if not isinstance(at, int | np.integer) or not 0 <= at < max(len(self._index), 1):
            raise ValueError(
                f"'at' must be between 0 and {max(len(self._index) - 1, 0)}; got {at!r}"
            )
        self._move(int(at))

    def next(self) -> bool:
        """Show the next sample of the selection; False when there is none."""
        if self._at + 1 >= len(self._index):
            return False
        self._move(self._at + 1)
        return True

    def previous(self) -> bool:
        """Show the previous sample of the selection; False when there is none."""
        if self._at <= 0:
            return False
        self._move(self._at - 1)
        return True

    def next_unreviewed(self) -> bool:
        """Show the next sample without a verdict, wrapping round to the start; False when
        every sample in the selection has one."""
        found = self._find_unreviewed(self._at + 1)
        if found is None:
            found = self._find_unreviewed(0)
        if found is None:
            return False
        self._move(found)
        return True

    def _move(self, at: int) -> None:
        self._at = at
        row = self._row()
        self.draft = "" if row is None else self._reason.get(row, "")

    def _find_unreviewed(self, start: int) -> int | None:
        # Look ahead a block at a time: the next unreviewed sample is nearly always close.
        index, positions, verdict = self._index, self._positions, self._verdict
        while start < len(index):
            block = index[start : start + _SCAN]
            free = np.flatnonzero(verdict[positions[block]] == _NONE)
            if len(free):
                return start + int(free[0])
            start += _SCAN
        return None

    # -- the shown sample -----------------------------------------------------------------

    def _row(self) -> int | None:
        if not len(self._index):
            return None
        return int(self._positions[self._index[self._at]])

    @property
    def shown(self) -> SampleView | None:
        """The shown sample as the reviewer reads it (None when the selection is empty)."""
        row = self._row()
        return None if row is None else self.queue.view(row)

    @property
    def verdict(self) -> str | None:
        """This annotator's latest verdict on the shown sample (None: none yet)."""
        row = self._row()
        code = _NONE if row is None else int(self._verdict[row])
        return None if code == _NONE else VERDICTS[code]

    @property
    def reason(self) -> str:
        """The reason saved with :attr:`verdict` (``""`` when none)."""
        row = self._row()
        return "" if row is None else self._reason.get(row, "")

    @property
    def saved_at(self) -> dt.datetime | None:
        """When :attr:`verdict` was saved (UTC; None when there is none)."""
        row = self._row()
        return None if row is None else self._saved_at.get(row)

    @property
    def draft_changed(self) -> bool:
        """The shown sample has a verdict and ``draft`` differs from its saved reason."""
        return self.verdict is not None and self.draft.strip() != self.reason

    # -- saving ---------------------------------------------------------------------------

    def _store(self, run_id: str) -> VerdictStore:
        store = self._stores.get(run_id)
        if store is None:
            store = self._stores[run_id] = VerdictStore(self.run.paths[run_id])
        return store

    def record(self, verdict: str) -> SampleKey | None:
        """Save ``verdict`` (``pass``, ``fail`` or ``needs_review``) with ``draft`` as the
        reason for the shown sample, and with ``advance`` move on to the next one.

        Returns the key saved, or None when no sample is shown. The verdicts part is
        written first: when writing fails (OSError) nothing changes.
        """
        if verdict not in _CODES:
            options = ", ".join(repr(v) for v in VERDICTS)
            raise ValueError(f"'verdict' must be one of {options}; got {verdict!r}")
        row = self._row()
        if row is None:
            return None
        key = self.queue.key(row)
        reason = self.draft.strip()
        saved = self._store(key["run_id"]).save(
            key["case_id"],
            key["variant"],
            key["repeat"],
            annotator=self.annotator,
            verdict=verdict,
            reason=reason,
        )
        if self._verdict[row] == _NONE:
            self._reviewed += 1
        self._verdict[row] = _CODES[verdict]
        self._reason[row] = reason
        self._saved_at[row] = saved["created_at"]
        self.run.forget("verdicts")
        if self.advance:
            self.next()
        return key
