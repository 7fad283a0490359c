"""A review without widgets: the filters over the queue of samples (:mod:`evalnb.review._queue`),
the place in it, the reason being typed, and every verdict saved through the verdict store.

:class:`ReviewState` is the whole of a review but the drawing; :class:`~evalnb.review.Annotator`
draws it with ipywidgets and forwards each click to it. A script or a test drives it as a
reviewer would:

>>> review = ReviewState(run, "ana")                          # doctest: +SKIP
>>> review.draft = "promises a delivery date"                 # doctest: +SKIP
>>> review.record("fail")                                     # doctest: +SKIP
>>> review.next_unreviewed()                                  # doctest: +SKIP

A verdict is written (one verdicts part, :class:`evalnb.store.VerdictStore`) before the state
changes, so a kernel that dies loses nothing recorded; an undo is written too (the verdict
before, or ``unreviewed`` when there was none), so the history only grows. A new state
resumes at the first sample this annotator has not reviewed. Nothing typed is lost
either: a reason typed for a sample is kept as its draft (on disk,
:mod:`evalnb.review._drafts`) across moves and restarts, and an edited reason of a sample
already judged is saved with its verdict when the reviewer moves on. States of one
annotator on the same runs in one process share what is saved: a verdict given in one
panel shows in the others. The samples, their outcomes and verdicts, the filters and
the search are a :class:`~evalnb.review._index.SampleIndex`, the one the explorer uses
too. Filters are applied once per change into a selection of samples; moving only steps
through it, so a move costs the same on a run of 200,000 samples as on a run of 100.
"""

from __future__ import annotations

import datetime as dt
import os
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from evalnb._exceptions import ArgumentError
from evalnb.analysis._frames import Run, load
from evalnb.analysis._tally import ALL, OutcomeCode
from evalnb.review._design import ReviewDesign
from evalnb.review._drafts import DraftBook, DraftKey
from evalnb.review._index import (
    LABEL_FIELDS,
    SampleFilters,
    SampleIndex,
    SampleKey,
    verdict_word,
)
from evalnb.review._live import LiveNumber, live_number
from evalnb.review._queue import QUEUE_COLUMNS, Queue, SampleView, where_columns
from evalnb.store import UNREVIEWED, VERDICTS

__all__ = ["LIST_SORTS", "ReviewState"]

#: How :meth:`ReviewState.listing` can sort the samples.
LIST_SORTS = ("order", "case_id", "variant", "status", "checks", "verdict")
_NONE = OutcomeCode.ABSENT
_SCAN = 1024

# The states of one annotator on one set of runs, and their drafts: what one panel saves
# the others show, and two panels never keep two copies of a draft.
_PEERS: dict[tuple[str, ...], weakref.WeakSet[ReviewState]] = {}
_DRAFTS: dict[tuple[str, str], DraftBook] = {}


@dataclass(frozen=True)
class Undone:
    """What :meth:`ReviewState.undo` did: the sample it went back to, the verdict taken
    back, and the one restored (None: the sample had no earlier verdict and is unreviewed
    again)."""

    key: SampleKey
    undone: str
    restored: str | None


class ReviewState:
    """``annotator``'s review of the samples of ``run``: what :func:`~evalnb.review.annotate`
    shows, with no widget. The arguments are those of :func:`~evalnb.review.annotate`.

    ``draft`` is the reason typed for the shown sample; :meth:`record` saves it with the
    verdict. A draft stays with its sample (and on disk) until it is saved; ``unsaved``
    says whether the shown reason differs from the one saved. Moving away from a judged
    sample whose reason was edited saves the new reason with the same verdict.
    ``on_change`` callbacks run when another state of the same annotator saves.
    """

    #: What narrowed the queue to part of the run, said by the live number when it does.
    narrowed: str = "narrowed with where="

    def __init__(
        self,
        run: Run | str | os.PathLike[str],
        annotator: str,
        *,
        where: Any = None,
        check: str = ALL,
        a: str | None = None,
        b: str | None = None,
        start: SampleKey | None = None,
        advance: bool = True,
        design: str | ReviewDesign | None = None,
        seed: int = 0,
        by: str = "case",
        allocation: str = "proportional",
        floor: float = 0.1,
    ):
        if not isinstance(annotator, str) or not annotator.strip():
            raise ArgumentError(
                f"'annotator' must be a non-empty string (the reviewer's name); got {annotator!r}"
            )
        if not isinstance(advance, bool):
            raise TypeError(f"'advance' must be True or False; got {advance!r}")
        self.run = run if isinstance(run, Run) else load(run)
        self.annotator = annotator.strip()
        self.advance = advance
        self.check = ALL if check is None else check
        self.filters = SampleFilters()
        self.on_change: list[Callable[[], None]] = []
        self.on_save: list[Callable[[SampleKey, str], None]] = []
        self._undo: list[tuple[int, str | None, str, dt.datetime | None]] = []
        self._selected = np.zeros(0, dtype=np.int64)
        self._at = 0
        self._reviewed = 0
        self.pair = _pair(a, b)
        columns = list(QUEUE_COLUMNS)
        if isinstance(where, str) or callable(where):
            columns += [c for c in where_columns() if c not in columns]
        # One read of every column used: all positions below refer to this snapshot.
        self.index = SampleIndex(self.run, columns, annotator=self.annotator)
        self.queue = Queue(
            self.index,
            where,
            self.pair,
            _design(
                design,
                self.pair,
                seed=seed,
                by=by,
                allocation=allocation,
                check=self.check,
                floor=floor,
            ),
        )
        self.design = self.queue.design
        self.index.outcome(self.check)  # an unknown check is refused here, not at a filter
        self._positions = self.queue.positions
        self._books = {
            run_id: _book(self.run.paths[run_id], self.annotator) for run_id in self.run.run_ids
        }
        peers = tuple(sorted(os.path.realpath(p) for p in self.run.paths.values()))
        self._peers = _PEERS.setdefault((*peers, self.annotator), weakref.WeakSet())
        self._peers.add(self)
        self.select(self.filters)
        if start is not None:
            self._start_at(start)

    def _start_at(self, start: SampleKey) -> None:
        """Show the sample ``start`` names (its key) instead of the first unreviewed one."""
        try:
            row = self.index.position(start)
        except ArgumentError:
            raise ArgumentError(
                f"'start' must be a sample key with {', '.join(SampleKey.__annotations__)}; "
                f"got {start!r}"
            ) from None
        if row < 0 or not np.isin(row, self._positions):
            raise ArgumentError(f"'start' must be a sample of the review; got {start!r}")
        self._show(row)

    # -- the selection --------------------------------------------------------------------

    @property
    def variants(self) -> list[tuple[str, int]]:
        """(name, code) of each variant queued, for :attr:`SampleFilters.variant`."""
        return self.index.options("variant", self._positions)

    @property
    def cases(self) -> list[tuple[str, int]]:
        """(case id, code) of each case queued, for :attr:`SampleFilters.case`."""
        return self.index.options("case_id", self._positions)

    def select(self, filters: SampleFilters) -> None:
        """Keep the samples ``filters`` lets through (its ``failing``, ``disagree``,
        ``flaky`` and ``changed`` read ``check``); stay on the shown sample if it is kept,
        else go to the first one not reviewed."""
        self._leave()
        keep = self.index.mask(filters, self.check, self.pair)[self._positions]
        self.filters = filters
        current = self.position
        self._selected = np.flatnonzero(keep)
        verdict = self.index.verdict[self._positions[self._selected]]
        self._reviewed = int((verdict != _NONE).sum())
        if current is not None:
            at = int(np.searchsorted(self._selected, current))
            if at < len(self._selected) and self._selected[at] == current:
                self._move(at)
                return
        first = self._find_unreviewed(0)
        self._move(0 if first is None else first)

    def live(self) -> LiveNumber:
        """The human pass rate per variant from this annotator's verdicts so far, with its
        interval (PPI where the run has a judge), and the labels a narrower one needs
        (:mod:`evalnb.review._live`)."""
        return live_number(self.queue, narrowed=self.narrowed)

    @property
    def count(self) -> int:
        """Samples in the selection."""
        return len(self._selected)

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
        if not len(self._selected):
            return None
        return int(self._selected[self._at])

    @property
    def current(self) -> SampleKey | None:
        """The key of the shown sample (None when the selection is empty)."""
        row = self._row()
        return None if row is None else self.index.key(row)

    # -- moving: O(1) per move ------------------------------------------------------------

    def go(self, at: int) -> None:
        """Show the sample at place ``at`` (0-based) of the selection."""
        if not isinstance(at, int | np.integer) or not 0 <= at < max(len(self._selected), 1):
            raise ArgumentError(
                f"'at' must be between 0 and {max(len(self._selected) - 1, 0)}; got {at!r}"
            )
        self._leave()
        self._move(int(at))

    def next(self) -> bool:
        """Show the next sample of the selection; False when there is none."""
        if self._at + 1 >= len(self._selected):
            return False
        self._leave()
        self._move(self._at + 1)
        return True

    def previous(self) -> bool:
        """Show the previous sample of the selection; False when there is none."""
        if self._at <= 0:
            return False
        self._leave()
        self._move(self._at - 1)
        return True

    def skip(self) -> bool:
        """Leave the shown sample without a verdict and show the next one not reviewed
        (wrapping round); False when there is none other."""
        found = self._find_unreviewed(self._at + 1)
        if found is None:
            found = self._find_unreviewed(0)
        if found is None or found == self._at:
            return False
        self._leave()
        self._move(found)
        return True

    def next_unreviewed(self) -> bool:
        """Show the next sample without a verdict, wrapping round to the start; False when
        every sample in the selection has one."""
        found = self._find_unreviewed(self._at + 1)
        if found is None:
            found = self._find_unreviewed(0)
        if found is None:
            return False
        self._leave()
        self._move(found)
        return True

    def _move(self, at: int) -> None:
        self._at = at

    def _leave(self) -> None:
        """Before moving away: an edited reason of a judged sample is saved with its
        verdict (a draft of an unjudged sample stays a draft)."""
        row = self._row()
        verdict = None if row is None else self.index.verdict_of(row)
        if row is None or verdict is None or not self.unsaved:
            return
        self._save(row, verdict, self.draft.strip())

    def _find_unreviewed(self, start: int) -> int | None:
        # Look ahead a block at a time: the next unreviewed sample is nearly always close.
        index, positions, verdict = self._selected, self._positions, self.index.verdict
        while start < len(index):
            block = index[start : start + _SCAN]
            free = np.flatnonzero(verdict[positions[block]] == _NONE)
            if len(free):
                return start + int(free[0])
            start += _SCAN
        return None

    # -- the shown sample -----------------------------------------------------------------

    def _row(self) -> int | None:
        if not len(self._selected):
            return None
        return int(self._positions[self._selected[self._at]])

    @property
    def shown(self) -> SampleView | None:
        """The shown sample as the reviewer reads it (None when the selection is empty)."""
        row = self._row()
        return None if row is None else self.queue.view(row)

    @property
    def partner(self) -> SampleView | None:
        """With ``a`` and ``b``: the other variant's sample of the shown case and repeat
        (None without them or when that sample is not in the run)."""
        row = self._row()
        other = None if row is None else self.queue.partner(row)
        return None if other is None else self.queue.view(other)

    def partner_verdict(self) -> str | None:
        """This annotator's latest verdict on :attr:`partner` (None: none, or no partner)."""
        row = self._row()
        other = None if row is None else self.queue.partner(row)
        return None if other is None else self.index.verdict_of(other)

    def listing(self, search: str = "", sort: str = "order", limit: int = 200) -> pd.DataFrame:
        """The samples of the selection as a list to jump from: one row per sample with
        ``at`` (its place, for :meth:`go`), ``case_id``, ``variant``, ``repeat``,
        ``status``, ``checks`` (``fail``: a check fails, ``pass``: every check passes,
        ``unscored``, ``none``) and ``verdict`` (this annotator's, ``""`` when none).

        ``search`` keeps the rows that contain every word of it (case-insensitive) in
        their case, variant, repeat (as ``r3``), status, checks or verdict: ``"refund v2"``
        finds case ``refund-late`` of variant ``v2``. ``sort`` is one of
        :data:`LIST_SORTS`; at most ``limit`` rows.
        """
        if sort not in LIST_SORTS:
            options = ", ".join(repr(o) for o in LIST_SORTS)
            raise ArgumentError(f"'sort' must be one of {options}; got {sort!r}")
        at = np.arange(len(self._selected))
        rows = self._positions[self._selected]
        if search.split():
            found = self.index.search(search, fields=LABEL_FIELDS)[rows]
            at, rows = at[found], rows[found]
        samples, labels = self.index.samples, np.array([o.label for o in OutcomeCode], dtype=object)
        words = np.array([verdict_word(o) or "" for o in range(len(OutcomeCode))], dtype=object)
        frame = pd.DataFrame(
            {
                "at": at,
                "case_id": samples["case_id"].to_numpy()[rows],
                "variant": samples["variant"].to_numpy()[rows],
                "repeat": samples["repeat"].to_numpy()[rows],
                "status": samples["status"].to_numpy()[rows],
                "checks": labels[self.index.outcome(ALL)[rows]],
                "verdict": words[self.index.verdict[rows]],
            }
        )
        if sort == "checks":
            # failing first: what a reviewer looks at first
            rank = frame["checks"].map({o.label: int(o) for o in OutcomeCode})
            frame = frame.assign(_rank=rank).sort_values(["_rank", "at"], kind="stable")
            frame = frame.drop(columns="_rank")
        elif sort != "order":
            frame = frame.sort_values([sort, "at"], kind="stable", key=_text_key)
        return frame.head(limit).reset_index(drop=True)

    @property
    def verdict(self) -> str | None:
        """This annotator's latest verdict on the shown sample (None: none yet)."""
        row = self._row()
        return None if row is None else self.index.verdict_of(row)

    @property
    def reason(self) -> str:
        """The reason saved with :attr:`verdict` (``""`` when none)."""
        row = self._row()
        return "" if row is None else self.index.reason(row)

    @property
    def saved_at(self) -> dt.datetime | None:
        """When :attr:`verdict` was saved (UTC; None when there is none)."""
        row = self._row()
        return None if row is None else self.index.saved_at(row)

    @property
    def draft(self) -> str:
        """The reason typed for the shown sample: its draft, else the reason saved."""
        row = self._row()
        if row is None:
            return ""
        typed = self._book(row).get(self._draft_key(row))
        return self.index.reason(row) if typed is None else typed

    @draft.setter
    def draft(self, text: str) -> None:
        row = self._row()
        if row is None:
            return
        saved = self.index.reason(row)
        keep = None if text.strip() == saved.strip() else text
        self._book(row).put(self._draft_key(row), keep)

    @property
    def can_undo(self) -> bool:
        """Whether :meth:`undo` has a verdict to take back."""
        return bool(self._undo)

    @property
    def unsaved(self) -> bool:
        """The shown reason differs from the one saved (no verdict: any text typed)."""
        return self.draft.strip() != self.reason

    @property
    def draft_changed(self) -> bool:
        """The shown sample has a verdict and ``draft`` differs from its saved reason."""
        return self.verdict is not None and self.unsaved

    def _draft_key(self, row: int) -> DraftKey:
        key = self.index.key(row)
        return (key["run_id"], key["case_id"], key["variant"], key["repeat"])

    def _book(self, row: int) -> DraftBook:
        return self._books[str(self.index.samples["run_id"].iat[row])]

    # -- saving ---------------------------------------------------------------------------

    def record(self, verdict: str) -> SampleKey | None:
        """Save ``verdict`` (``pass``, ``fail`` or ``needs_review``) with ``draft`` as the
        reason for the shown sample, and with ``advance`` move on to the next one.

        Returns the key saved, or None when no sample is shown. The verdicts part is
        written first: when writing fails (OSError) nothing changes.
        """
        if verdict not in VERDICTS:  # unreviewed too: undo takes a verdict back
            options = ", ".join(repr(v) for v in VERDICTS)
            raise ArgumentError(f"'verdict' must be one of {options}; got {verdict!r}")
        row = self._row()
        if row is None:
            return None
        index = self.index
        before = (row, index.verdict_of(row), index.reason(row), index.saved_at(row))
        key = self._save(row, verdict, self.draft.strip())
        self._undo.append(before)
        if self.advance:
            self.next()
        return key

    def undo(self) -> Undone | None:
        """Take back the last verdict given in this state and show its sample again.

        Nothing is erased: the verdict the sample had before is saved again as a new
        verdict, or, for a sample judged for the first time, ``unreviewed`` is saved and
        the sample counts as unreviewed again (here, in the other panels and for every
        reader of :func:`evalnb.verdicts`); the reason given with the verdict taken back
        becomes its draft again. Returns what was done, or None when there is nothing to
        undo.
        """
        if not self._undo:
            return None
        row, restored, reason, _ = self._undo.pop()
        undone = self.index.verdict_of(row) or UNREVIEWED
        given = self.index.reason(row)
        key = self._save(row, restored or UNREVIEWED, reason)
        if restored is None and given:
            self._book(row).put(self._draft_key(row), given)
        self._show(row)
        return Undone(key, undone, restored)

    def _show(self, row: int) -> None:
        """Show the sample at ``row`` of the samples: in the selection when it is there,
        else in a selection with no filter."""
        place = np.flatnonzero(self._positions[self._selected] == row)
        if not len(place):
            self.select(SampleFilters())
            place = np.flatnonzero(self._positions[self._selected] == row)
        self._move(int(place[0]))

    def _save(self, row: int, verdict: str, reason: str) -> SampleKey:
        key = self.index.key(row)
        judged = self.index.verdict[row] != _NONE
        saved = self.index.save(row, verdict, reason, self.queue.design_of(row))
        self._counted(row, judged)
        self._book(row).put(self._draft_key(row), None)
        for peer in list(self._peers):
            if peer is not self:
                peer._heard(key, verdict, reason, saved["created_at"])
        for callback in list(self.on_save):
            callback(key, verdict)
        return key

    def _counted(self, row: int, was_judged: bool) -> None:
        """Keep :attr:`reviewed` as ``row``'s verdict came or went."""
        judged = self.index.verdict[row] != _NONE
        if judged != was_judged and row in self._positions[self._selected]:
            self._reviewed += 1 if judged else -1

    def _heard(self, key: SampleKey, verdict: str, reason: str, saved_at: dt.datetime) -> None:
        """Another state of this annotator saved a verdict: know it, and redraw."""
        row = self.index.position(key)
        if row >= 0:
            judged = self.index.verdict[row] != _NONE
            self.index.note(row, verdict, reason, saved_at, self.annotator)
            self._counted(row, judged)
        for callback in list(self.on_change):
            callback()


def _design(
    design: str | ReviewDesign | None, pair: tuple[str, str] | None, **options: Any
) -> ReviewDesign:
    """The review's design: ``design`` by name with ``options``, or as given; None is
    ``random``, or ``queue`` for a side-by-side review."""
    if isinstance(design, ReviewDesign):
        return design
    if design is None:
        design = "queue" if pair is not None else "random"
    if not isinstance(design, str):
        raise TypeError(f"'design' must be a design name or a ReviewDesign; got {design!r}")
    return ReviewDesign(design, **options)


def _pair(a: str | None, b: str | None) -> tuple[str, str] | None:
    """The two variants reviewed side by side (None: a plain review)."""
    if a is None and b is None:
        return None
    if not isinstance(a, str) or not isinstance(b, str):
        raise ArgumentError(
            f"'a' and 'b' name the two variants to review side by side, both or neither; "
            f"got a={a!r}, b={b!r}"
        )
    return a, b


def _text_key(column: pd.Series) -> pd.Series:
    return column if column.name in ("at", "repeat") else column.astype(str)


def _book(run_dir: str | os.PathLike[str], annotator: str) -> DraftBook:
    where = (os.path.realpath(run_dir), annotator)
    book = _DRAFTS.get(where)
    if book is None:
        book = _DRAFTS[where] = DraftBook(run_dir, annotator)
    return book
