"""Repeats until a case is settled: :class:`UntilSettled`, the per-case rule that stops
drawing repeats once the case's flakiness verdict is decided.

A case (on one variant) is flaky once it has both passed and failed: then its rate is
certainly strictly between 0 and 1. While every draw agrees, the case's rate has the
anytime-valid confidence sequence ``[alpha ** (1 / n), 1]`` after ``n`` passes
(``[0, 1 - alpha ** (1 / n)]`` after ``n`` fails): under a rate ``p`` the process
``p ** -n`` while all draws pass is a martingale, so by Ville's inequality a case whose
rate is ``p`` shows ``n`` straight passes with ``p ** n <= alpha / 2`` with probability at
most ``alpha / 2``, however often one looks (and as much for straight fails: a case near
1/2 could be called stable either way). The case is settled stable once that sequence
excludes every rate from ``tol`` to ``1 - tol``: a case that fails and passes each at
least ``tol`` of the time is called stable with probability at most ``alpha``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from evalnb._exceptions import ArgumentError
from evalnb._numbers import is_number, is_whole
from evalnb.analysis._frames import Run

__all__ = ["UntilSettled"]

METHOD = "repeats until settled: flaky on both outcomes, stable once (1 - tol) ** n <= alpha / 2"
FLAKY = "flaky"
STABLE_PASS = "stable pass"
STABLE_FAIL = "stable fail"
UNSETTLED = "not settled"


class UntilSettled:
    """Draw a case's repeats one at a time until its verdict (stable pass, flaky, stable
    fail) is settled, up to ``max``.

    ``run(..., repeats=evalnb.UntilSettled(max=10))`` draws repeat ``r`` of a case on a
    variant only while that case's earlier repeats have not settled it: flaky once it has
    both passed and failed; stable once its ``n`` identical outcomes make its
    anytime-valid interval exclude every rate from ``tol`` to ``1 - tol``
    (``(1 - tol) ** n <= alpha / 2``). A case that fails at least ``tol`` of the time is called
    a stable pass with probability at most ``alpha / 2`` (one that passes at least ``tol``
    of the time a stable fail), so one that does both is called stable with probability at
    most ``alpha``; a case of rate ``p`` is called stable with probability
    ``p ** n + (1 - p) ** n`` (at the defaults, ``n = 6``: 3.1% at 1/2, 5.1% at 0.6, 26% at
    0.8). No rule does better: a case whose draws so far agree gives a rule nothing else to
    go by, and calling it stable after fewer than 6 identical draws errs more than 5% at
    rate 1/2 (``benchmarks/race.py``). Every case weighs once in ``rates``,
    ``suite_rate`` and ``compare``, but a flaky case's own rate is biased towards 1/2 by
    stopping at its first disagreement (``benchmarks/race.py``): for rates, fix the repeats.

    >>> evalnb.UntilSettled(max=10).needed  # identical draws that settle a stable case
    6
    """

    def __init__(self, max: int = 10, alpha: float = 0.05, tol: float = 0.5) -> None:
        if not is_whole(max, 2):
            raise ArgumentError(f"'max' must be a whole number >= 2; got {max!r}")
        if not (is_number(alpha) and 0 < alpha < 0.5):
            raise ArgumentError(f"'alpha' must be a number in (0, 0.5); got {alpha!r}")
        if not (is_number(tol) and 0 < tol <= 0.5):
            raise ArgumentError(f"'tol' must be a number in (0, 0.5]; got {tol!r}")
        self.max, self.alpha, self.tol = int(max), float(alpha), float(tol)

    def __repr__(self) -> str:
        return f"UntilSettled(max={self.max!r}, alpha={self.alpha!r}, tol={self.tol!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UntilSettled) and self.describe() == other.describe()

    def __hash__(self) -> int:
        return hash((self.max, self.alpha, self.tol))

    @property
    def needed(self) -> int:
        """Identical outcomes that settle a case as stable (may exceed ``max``)."""
        return math.ceil(math.log(self.alpha / 2) / math.log(1 - self.tol) - 1e-12)

    @property
    def edge(self) -> float:
        """The largest rate a stable-fail verdict rules out (``tol``)."""
        return self.tol

    def describe(self) -> dict[str, Any]:
        """The rule as the manifest records it (``UntilSettled.from_record`` reads it)."""
        return {
            "rule": "settled",
            "max": self.max,
            "alpha": self.alpha,
            "tol": self.tol,
            "method": METHOD,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> UntilSettled:
        return cls(max=record["max"], alpha=record.get("alpha", 0.05), tol=record.get("tol", 0.5))

    def verdict(self, outcomes: Sequence[bool | None]) -> str:
        """The verdict of a case's outcomes so far (unscored ones left out)."""
        scored = [o for o in outcomes if o is not None]
        if any(scored) and not all(scored):
            return FLAKY
        if len(scored) >= self.needed:
            return STABLE_PASS if scored[0] else STABLE_FAIL
        return UNSETTLED

    def settled(self, outcomes: Sequence[bool | None]) -> bool:
        """Whether a case with these outcomes (in repeat order) needs no more repeats."""
        return len(outcomes) >= self.max or self.verdict(outcomes) != UNSETTLED

    def draws_needed(self, draws: np.ndarray) -> np.ndarray:
        """Vectorised, for simulation: the repeats the rule draws for each row of
        ``draws`` (booleans, ``max`` along the last axis)."""
        draws = np.asarray(draws, dtype=bool)
        differs = draws != draws[..., :1]
        first = np.where(differs.any(axis=-1), differs.argmax(axis=-1) + 1, self.max)
        out: np.ndarray = np.minimum(first, min(self.needed, self.max))
        return out


def settled_intervals(data: Any, frame: pd.DataFrame) -> pd.DataFrame:
    """:func:`evalnb.flakiness` of a run whose repeats a rule settled: its stable cases
    stopped when their outcomes agreed long enough, so their interval is the rule's
    anytime-valid one (a fixed-n exact interval is not valid after such a stop); flaky
    cases keep theirs (both outcomes seen: certainly flaky at any level). Other data
    passes through unchanged."""
    record = data.manifest.get("repeats_rule") if isinstance(data, Run) else None
    if not record or len(data.manifests) != 1:
        return frame
    rule = UntilSettled.from_record(record)
    out = frame.copy()
    n = out["n"].to_numpy(dtype=float)
    with np.errstate(divide="ignore"):
        edge = np.where(n > 0, (rule.alpha / 2) ** (1 / np.maximum(n, 1)), np.nan)
    passed, failed = out["verdict"] == "stable-pass", out["verdict"] == "stable-fail"
    out.loc[passed, "low"], out.loc[passed, "high"] = edge[passed.to_numpy()], 1.0
    out.loc[failed, "low"], out.loc[failed, "high"] = 0.0, 1 - edge[failed.to_numpy()]
    stable = passed | failed
    out.loc[stable, "level"] = 1 - rule.alpha / 2
    out.loc[stable, "detail"] = [
        f"{'passed' if p else 'failed'} all {int(k)} repeats until settled: rate "
        f"{'at least' if p else 'at most'} {(lo if p else hi):.0%} (anytime-valid, one-sided "
        f"{1 - rule.alpha / 2:.1%})"
        for p, k, lo, hi in zip(
            passed[stable],
            out.loc[stable, "n"],
            out.loc[stable, "low"],
            out.loc[stable, "high"],
            strict=True,
        )
    ]
    out.loc[stable, "method"] = f"{METHOD} (anytime-valid interval for a stable case)"
    return out
