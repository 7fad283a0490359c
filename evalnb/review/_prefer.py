"""A pairwise review without widgets: the two variants' answers to one case and repeat,
side by side, and which one the reviewer prefers, saved at each choice.

:class:`PreferenceState` keeps the pairs, the place and the choices saved;
:class:`~evalnb.review._prefer_panel.PreferencePanel` draws it. A script or a test drives it
as a reviewer would:

>>> review = PreferenceState(run, "ana", compare=("v1", "v2"))          # doctest: +SKIP
>>> review.record("right")        # the answer on the right is better   # doctest: +SKIP

Which variant shows on which side is drawn per pair from the seed (a hash of the seed and
the pair, so it never changes for a pair however the run grows) and stored with every
choice: a reviewer who favours the left answer favours neither variant on average. The
order of the pairs is the design's: ``"random"`` (the default: a seeded random order, so
any prefix of the review is a simple random sample of the pairs) or ``"queue"`` (by run,
case and repeat, for browsing; its prefixes are not a random sample). A choice is said of
the sides (``left``, ``right``, ``tie``, ``both_bad``) and stored of the variants
(``a_better``, ``b_better``, ``tie``, ``both_bad``, :mod:`evalnb.store._preferences`),
one part per choice, written before the state changes; an undo is written too (the
choice before, or ``undecided``), so the history only grows.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalnb._exceptions import ArgumentError
from evalnb.analysis._frames import Run, load
from evalnb.review._index import SampleIndex
from evalnb.review._queue import QUEUE_COLUMNS, Queue, SampleView
from evalnb.store import UNDECIDED, PreferenceStore, latest_preferences

__all__ = ["CHOICES", "PAIR_DESIGNS", "Pair", "PreferenceState"]

#: What a reviewer says of the two answers shown: the left one, the right one, a tie, both bad.
CHOICES = ("left", "right", "tie", "both_bad")
#: How the pairs are ordered.
PAIR_DESIGNS = ("random", "queue")


@dataclass(frozen=True)
class Pair:
    """One case and repeat of both variants: which variant is on the ``left`` and which on
    the ``right``, and where their samples sit in the index (``rows``: left, right)."""

    run_id: str
    case_id: str
    repeat: int
    left: str
    right: str
    rows: tuple[int, int]

    @property
    def key(self) -> tuple[str, str, int]:
        """(run_id, case_id, repeat)."""
        return (self.run_id, self.case_id, self.repeat)


def _draw(seed: int, what: str, key: tuple[str, str, int]) -> int:
    """A number drawn from ``seed`` for one pair: the same for that pair whatever else the
    run holds, so sides and order never move when samples are added."""
    text = "\0".join((str(seed), what, key[0], key[1], str(key[2])))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


class PreferenceState:
    """``annotator``'s pairwise review of variants ``compare = (a, b)`` of ``run``: what
    :func:`~evalnb.review.annotate` with ``compare=`` shows, with no widget.

    Pairs are the (run, case, repeat) where both variants have a sample; ``unpaired`` counts
    the samples left out because the other variant has none. ``design`` orders the pairs
    (:data:`PAIR_DESIGNS`), ``seed`` draws the order and the sides. A choice also moves to
    the next pair without one (``advance``).
    """

    def __init__(
        self,
        run: Run | str | os.PathLike[str],
        annotator: str,
        *,
        compare: tuple[str, str],
        design: str = "random",
        seed: int = 0,
        advance: bool = True,
    ):
        if not isinstance(annotator, str) or not annotator.strip():
            raise ArgumentError(
                f"'annotator' must be a non-empty string (the reviewer's name); got {annotator!r}"
            )
        if (
            not isinstance(compare, tuple | list)
            or len(compare) != 2
            or not all(isinstance(v, str) for v in compare)
        ):
            raise ArgumentError(
                f"'compare' must be two variant names, such as ('v1', 'v2'); got {compare!r}"
            )
        if design not in PAIR_DESIGNS:
            options = ", ".join(repr(d) for d in PAIR_DESIGNS)
            raise ArgumentError(
                f"'design' of a preference review must be one of {options}; got {design!r}"
            )
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
            raise TypeError(f"'seed' must be an integer; got {seed!r}")
        self.run = run if isinstance(run, Run) else load(run)
        self.annotator = annotator.strip()
        self.a, self.b = str(compare[0]), str(compare[1])
        self.design = design
        self.seed = int(seed)
        self.advance = advance
        self.index = SampleIndex(self.run, QUEUE_COLUMNS)
        self.queue = Queue(self.index, None, (self.a, self.b))
        self.pairs, self.unpaired = self._pairs()
        self._stores = {
            run_id: PreferenceStore(path, run_id=run_id) for run_id, path in self.run.paths.items()
        }
        self._choices: dict[tuple[str, str, int], tuple[str, str]] = {}
        self._undo: list[tuple[int, tuple[str, str] | None]] = []
        self._read_saved()
        self._at = 0
        first = self._find_undecided(0)
        self._at = 0 if first is None else first

    def _pairs(self) -> tuple[list[Pair], int]:
        """Every pair, ordered by the design, with its sides drawn."""
        variant = self.index.samples["variant"]
        pairs = []
        for row in self.queue.positions.tolist():
            other = self.queue.partner(row)
            if other is None or str(variant.iat[row]) != self.a:
                continue
            key = self.index.key(row)
            where = (key["run_id"], key["case_id"], key["repeat"])
            a_left = _draw(self.seed, "side", where) % 2 == 0
            left, right = (self.a, self.b) if a_left else (self.b, self.a)
            rows = (row, other) if a_left else (other, row)
            pairs.append(Pair(*where, left=left, right=right, rows=rows))
        unpaired = len(self.queue.positions) - 2 * len(pairs)
        if self.design == "random":
            pairs.sort(key=lambda p: _draw(self.seed, "order", p.key))
        return pairs, unpaired

    def _read_saved(self) -> None:
        """This annotator's latest choices on these two variants, in either order."""
        saved = latest_preferences(list(self.run.paths.values()), annotator=self.annotator)
        swap = {"a_better": "b_better", "b_better": "a_better"}
        for row in saved.itertuples():
            if {row.a, row.b} != {self.a, self.b}:
                continue
            preference = str(row.preference)
            if row.a != self.a:  # saved as (b, a): said of the variants, so swap the words
                preference = swap.get(preference, preference)
            self._choices[(str(row.run_id), str(row.case_id), int(row.repeat))] = (
                preference,
                str(row.reason),
            )

    # -- where the review is --------------------------------------------------------------

    @property
    def count(self) -> int:
        """Pairs in the review."""
        return len(self.pairs)

    @property
    def reviewed(self) -> int:
        """Pairs this annotator has chosen on."""
        return sum(pair.key in self._choices for pair in self.pairs)

    @property
    def at(self) -> int:
        """Place (0-based) of the shown pair."""
        return self._at

    @property
    def current(self) -> Pair | None:
        """The shown pair (None when the two variants share no case and repeat)."""
        return self.pairs[self._at] if self.pairs else None

    @property
    def shown(self) -> tuple[SampleView, SampleView] | None:
        """The shown pair's samples as the reviewer reads them: (left, right)."""
        pair = self.current
        if pair is None:
            return None
        return self.queue.view(pair.rows[0]), self.queue.view(pair.rows[1])

    @property
    def preference(self) -> str | None:
        """The saved preference on the shown pair, of the variants (``a_better``...)."""
        pair = self.current
        found = None if pair is None else self._choices.get(pair.key)
        return None if found is None else found[0]

    @property
    def choice(self) -> str | None:
        """The saved preference on the shown pair, of the sides (``left``, ``right``...)."""
        pair = self.current
        preference = self.preference
        if pair is None or preference is None:
            return None
        return _side_of(preference, pair, self.a)

    @property
    def reason(self) -> str:
        """The reason saved with :attr:`preference` (``""`` when none)."""
        pair = self.current
        found = None if pair is None else self._choices.get(pair.key)
        return "" if found is None else found[1]

    @property
    def can_undo(self) -> bool:
        """Whether :meth:`undo` has a choice to take back."""
        return bool(self._undo)

    # -- moving ---------------------------------------------------------------------------

    def go(self, at: int) -> None:
        """Show the pair at place ``at`` (0-based)."""
        if not isinstance(at, int | np.integer) or not 0 <= at < max(self.count, 1):
            raise ArgumentError(f"'at' must be between 0 and {max(self.count - 1, 0)}; got {at!r}")
        self._at = int(at)

    def next(self) -> bool:
        """Show the next pair; False when there is none."""
        if self._at + 1 >= self.count:
            return False
        self._at += 1
        return True

    def previous(self) -> bool:
        """Show the previous pair; False when there is none."""
        if self._at <= 0:
            return False
        self._at -= 1
        return True

    def next_undecided(self) -> bool:
        """Show the next pair without a choice, wrapping round; False when every pair has
        one."""
        found = self._find_undecided(self._at + 1)
        if found is None:
            found = self._find_undecided(0)
        if found is None:
            return False
        self._at = found
        return True

    def _find_undecided(self, start: int) -> int | None:
        for at in range(start, self.count):
            if self.pairs[at].key not in self._choices:
                return at
        return None

    # -- saving ---------------------------------------------------------------------------

    def record(self, choice: str, reason: str = "") -> dict[str, Any] | None:
        """Save ``choice`` (one of :data:`CHOICES`, said of the sides shown) on the shown
        pair, with ``reason``; with ``advance`` show the next pair without a choice.

        The part is written first: when writing fails (OSError) nothing changes. Returns
        the row saved (its ``preference`` said of the variants), or None with no pair.
        """
        if choice not in CHOICES:
            options = ", ".join(repr(c) for c in CHOICES)
            raise ArgumentError(f"'choice' must be one of {options}; got {choice!r}")
        if not isinstance(reason, str):
            raise TypeError(f"'reason' must be a string; got {type(reason).__name__}")
        pair = self.current
        if pair is None:
            return None
        before = self._choices.get(pair.key)
        row = self._save(pair, _preference_of(choice, pair, self.a), reason.strip())
        self._undo.append((self._at, before))
        if self.advance:
            self.next_undecided()
        return row

    def undo(self) -> Pair | None:
        """Take back the last choice made here and show its pair again: the choice before
        is saved again, or ``undecided`` when there was none. Returns the pair, or None
        when there is nothing to undo."""
        if not self._undo:
            return None
        at, before = self._undo.pop()
        pair = self.pairs[at]
        if before is None:
            self._save(pair, UNDECIDED, "")
        else:
            self._save(pair, *before)
        self._at = at
        return pair

    def _save(self, pair: Pair, preference: str, reason: str) -> dict[str, Any]:
        row = self._stores[pair.run_id].save(
            pair.case_id,
            pair.repeat,
            a=self.a,
            b=self.b,
            left=pair.left,
            annotator=self.annotator,
            preference=preference,
            reason=reason,
            design=self.design,
            seed=self.seed,
        )
        if preference == UNDECIDED:
            self._choices.pop(pair.key, None)
        else:
            self._choices[pair.key] = (preference, reason)
        return row


def _preference_of(choice: str, pair: Pair, a: str) -> str:
    """A choice said of the sides, said of the variants."""
    if choice in ("tie", "both_bad"):
        return choice
    chosen = pair.left if choice == "left" else pair.right
    return "a_better" if chosen == a else "b_better"


def _side_of(preference: str, pair: Pair, a: str) -> str:
    """A preference said of the variants, said of the sides shown."""
    if preference in ("tie", "both_bad"):
        return preference
    chosen = a if preference == "a_better" else (pair.left if pair.left != a else pair.right)
    return "left" if chosen == pair.left else "right"
