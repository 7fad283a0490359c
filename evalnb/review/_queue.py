"""The samples a review goes through, read once: which ones, in what order, and what the
reviewer reads about each.

``where=`` is applied here, once; the filters of :class:`~evalnb.review._state.ReviewState`
then only select among the queued samples.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from evalnb._exceptions import ArgumentError
from evalnb.analysis._sampling import Ordering
from evalnb.analysis._tally import OutcomeCode
from evalnb.review._design import ReviewDesign, order_queue, verdict_design
from evalnb.review._index import SampleIndex, SampleKey
from evalnb.store import SAMPLES_SCHEMA

__all__ = ["QUEUE_COLUMNS", "Queue", "SampleView", "where_columns"]

#: The samples columns a review reads of each sample, besides its key.
QUEUE_COLUMNS = ["status", "error", "prompt", "answer", "requested", "executed"]
# Big text columns nobody filters on; `where=` strings see every other samples column.
_HEAVY = {"request", "response", "stdout", "stderr", "trace", "tool_calls"}


@dataclass(frozen=True)
class SampleView:
    """What the reviewer reads about one sample. ``checks`` holds (name, outcome, detail)
    with outcome True, False or None (unscored)."""

    key: SampleKey
    status: str
    prompt: Any
    answer: Any
    error: Any
    review: Any
    requested: list[dict[str, Any]]
    executed: list[dict[str, Any]]
    checks: list[tuple[Any, Any, Any]]


class Queue:
    """The samples of ``index`` that ``where`` keeps, in the order of ``design``
    (:class:`~evalnb.review._design.ReviewDesign`; the default a seeded random order), or,
    with the design ``queue``, sorted by run, case, variant, repeat.

    ``positions[i]`` is where the i-th queued sample sits in ``index.samples``; the
    outcomes, verdicts and filters are the index's, read at these positions.
    :meth:`design_of` gives the design columns saved with a verdict on a sample.

    With ``pair=(a, b)`` only the samples of variants ``a`` and ``b`` are queued, sorted
    by run, case, repeat and then ``a`` before ``b``, so that the two samples of one case
    and repeat are neighbours; :meth:`partner` finds the other one.
    """

    def __init__(
        self,
        index: SampleIndex,
        where: Any,
        pair: tuple[str, str] | None = None,
        design: ReviewDesign | None = None,
    ):
        self.index = index
        self.pair = pair
        samples = index.samples
        universe = _select(samples, where)
        if design is None:
            design = ReviewDesign("queue" if pair is not None else "random")
        if pair is not None and design.name != "queue":
            raise ArgumentError(
                "a side-by-side review (a=, b=) walks the pairs in queue order: 'design' must "
                f"be 'queue'; got {design.name!r}"
            )
        self.design = design
        if pair is None:
            sorted_ = index.order(universe, ("run_id", "case_id", "variant", "repeat"))
            self.ordering: Ordering = order_queue(index, sorted_, design)
            self.positions = sorted_[self.ordering.order]
            self._partners: dict[int, int] = {}
        else:
            side = _sides(samples["variant"], pair)
            universe = universe[side[universe] >= 0]
            self.positions = index.order(universe, ("run_id", "case_id", "repeat", side))
            self.ordering = order_queue(index, self.positions, design)
            codes = index.codes
            self._partners = _partners(
                codes["run_id"], codes["case_id"], codes["variant"], index.repeat, self.positions
            )
        self._rank: np.ndarray | None = None
        cases = index.run.cases
        self._review = {
            (str(r), str(c)): v
            for r, c, v in zip(cases["run_id"], cases["case_id"], cases["review"], strict=True)
        }

    def design_of(self, row: int) -> dict[str, Any] | None:
        """The design columns saved with a verdict on the sample at ``row`` of
        ``samples`` (None when it is not queued)."""
        if self._rank is None:
            self._rank = np.full(len(self.index), -1, dtype=np.int64)
            self._rank[self.positions] = np.arange(len(self.positions))
        rank = int(self._rank[row])
        return None if rank < 0 else verdict_design(self.ordering, rank)

    def partner(self, row: int) -> int | None:
        """With ``pair``: the row in ``samples`` of the other variant's sample of the same
        run, case and repeat (None when it is not queued)."""
        return self._partners.get(row)

    def view(self, row: int) -> SampleView:
        """The sample at position ``row`` of ``samples`` as the reviewer reads it."""
        key = self.index.key(row)
        samples = self.index.samples
        return SampleView(
            key=key,
            status=str(samples["status"].iat[row]),
            prompt=samples["prompt"].iat[row],
            answer=samples["answer"].iat[row],
            error=samples["error"].iat[row],
            review=self._review.get((key["run_id"], key["case_id"])),
            requested=_listed(samples["requested"].iat[row]),
            executed=_listed(samples["executed"].iat[row]),
            checks=[
                (name, _OUTCOME_VALUES[outcome], detail)
                for name, outcome, detail in self.index.checks_of(row)
            ],
        )


_OUTCOME_VALUES: dict[int, bool | None] = {
    OutcomeCode.FAIL: False,
    OutcomeCode.PASS: True,
    OutcomeCode.UNSCORED: None,
}


def _sides(variants: pd.Series, pair: tuple[str, str]) -> np.ndarray:
    """Per sample 0 for variant ``pair[0]``, 1 for ``pair[1]``, -1 for any other."""
    names = [str(v) for v in variants.cat.categories]
    missing = [v for v in pair if v not in names]
    if missing or len(pair) != 2 or pair[0] == pair[1]:
        options = ", ".join(repr(v) for v in names)
        raise ArgumentError(
            f"'a' and 'b' must name two different variants of the run ({options}); got {pair!r}"
        )
    lookup = np.full(len(names), -1, dtype=np.int8)
    lookup[names.index(pair[0])] = 0
    lookup[names.index(pair[1])] = 1
    return np.asarray(lookup[variants.cat.codes.to_numpy()])


def _partners(
    runs: np.ndarray, cases: np.ndarray, variants: np.ndarray, repeat: np.ndarray, rows: np.ndarray
) -> dict[int, int]:
    """Rows of ``rows`` paired by run, case and repeat (two variants: one pair each)."""
    first: dict[tuple[int, int, int], int] = {}
    partners: dict[int, int] = {}
    for row in rows.tolist():
        where = (int(runs[row]), int(cases[row]), int(repeat[row]))
        other = first.setdefault(where, row)
        if other != row and variants[other] != variants[row]:
            partners[row], partners[other] = other, row
    return partners


def _listed(value: Any) -> list[dict[str, Any]]:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return []
    return list(value)


def where_columns() -> list[str]:
    """The samples columns a ``where=`` query string or function can use."""
    return [c for c in SAMPLES_SCHEMA.names if c not in _HEAVY]


def _select(samples: pd.DataFrame, where: Any) -> np.ndarray:
    """Positions (in ``samples``) of the samples ``where`` keeps.

    ``where`` is None (all), a :meth:`pandas.DataFrame.query` string, a function of the
    samples frame returning a boolean mask, a boolean mask, or a frame of sample keys.
    """
    everyone = np.arange(len(samples))
    if where is None:
        return everyone
    if isinstance(where, str):
        try:
            kept = samples.query(where)
        except Exception as exc:
            raise ArgumentError(
                f"'where' query {where!r} failed on the samples frame: {exc}"
            ) from exc
        return np.asarray(samples.index.get_indexer(kept.index))
    if isinstance(where, pd.DataFrame):
        return _select_keys(samples, where)
    if callable(where):
        return _mask(where(samples), len(samples), "what the 'where' function returned")
    if isinstance(where, pd.Series | np.ndarray | list):
        return _mask(where, len(samples), "'where'")
    raise TypeError(
        "'where' must be None, a query string, a function of the samples frame, a boolean "
        f"mask over run.samples, or a frame of sample keys; got {type(where).__name__}"
    )


def _mask(mask: Any, n: int, what: str) -> np.ndarray:
    values = np.asarray(mask)
    if values.dtype != bool or values.shape != (n,):
        raise ArgumentError(
            f"{what} must be a boolean mask with one value per sample ({n}); "
            f"got dtype {values.dtype} and shape {values.shape}"
        )
    return np.flatnonzero(values)


def _select_keys(samples: pd.DataFrame, keys: pd.DataFrame) -> np.ndarray:
    needed = ["case_id", "variant", "repeat"]
    missing = [c for c in needed if c not in keys.columns]
    if missing:
        raise ArgumentError(
            f"a 'where' frame must hold sample keys (case_id, variant, repeat[, run_id]); "
            f"missing {missing!r}"
        )
    on = ["run_id", *needed] if "run_id" in keys.columns else needed
    return np.unique(_matches(samples, keys.drop_duplicates(on), on)[0])


def _matches(
    samples: pd.DataFrame, keys: pd.DataFrame, on: list[str]
) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (position in ``samples``, position in ``keys``) of rows equal ``on``."""
    left = samples[on].astype({c: object for c in on if c != "repeat"})
    right = keys[on].astype({c: object for c in on if c != "repeat"})
    right = right.astype({"repeat": left["repeat"].dtype})
    left.index = np.arange(len(left))
    right.index = np.arange(len(right))
    pairs = left.reset_index().merge(right.reset_index(), on=on, how="inner")
    return pairs["index_x"].to_numpy(), pairs["index_y"].to_numpy()
