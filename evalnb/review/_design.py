"""The design of a review: which samples a reviewer labels first, and with what probability
each is in the labels so far.

Human verdicts are a sample of the run's samples. :func:`evalnb.annotate` takes
``design=``:

- ``"random"`` (the default): a seeded random order over the queued samples; the first
  ``L`` labels are a simple random sample of them.
- ``"stratified"``: strata by case (``by="case"``) or by a check's outcome (``by=`` a
  check's name or type: pass, fail, unscored), each given its share of every prefix by the
  ``allocation`` (``"proportional"`` to its samples, or ``"equal"``), in a random order
  within it.
- ``"active"``: samples the judge (``check=``) is unsure of come first, in proportion to
  the square root of its uncertainty (Zrnic & Candès 2024): a graded score's closeness to
  its threshold, else the disagreement between the repeats of the case, or between the
  checks of the sample; ``floor`` keeps every sample's size at least that share of the
  uniform one, so none has a probability near zero.
- ``"queue"``: the queue's order (run, case, variant, repeat), for browsing: its verdicts
  describe the reviewed samples only.

The order is order sampling with keys (sequential Poisson, or priority, sampling;
:mod:`evalnb.analysis._sampling` has the scheme and why): any prefix of it is a probability
sample with known inclusion probabilities, so a reviewer may stop anywhere. Each verdict is
saved with its design (:data:`evalnb.store.DESIGN_COLUMNS`), and the estimators that read
verdicts (:func:`evalnb.ppi_rate`, :func:`evalnb.calibrate`, ...) weight by it.

>>> design = ReviewDesign("active", seed=7, check="judge")           # doctest: +SKIP
>>> evalnb.annotate(run, "ana", design="stratified", by="case")     # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from evalnb._exceptions import ArgumentError
from evalnb.analysis._sampling import (
    ALLOCATIONS,
    DESIGNS,
    Ordering,
    active_sizes,
    design_order,
    repeat_uncertainty,
    score_uncertainty,
)
from evalnb.analysis._tally import ALL, OutcomeCode, sample_positions
from evalnb.review._index import SampleIndex

__all__ = ["DESIGNS", "ReviewDesign", "order_queue", "verdict_design"]


@dataclass(frozen=True)
class ReviewDesign:
    """How a review chooses its samples: ``name`` one of :data:`DESIGNS`, the ``seed`` of its
    random order, ``by`` (stratified: ``"case"`` or a check), ``allocation`` (stratified:
    ``"proportional"`` or ``"equal"``), ``check`` (active: the judge whose uncertainty
    leads; ``"all"`` reads every check) and ``floor`` (active: the smallest size, as a
    share of the uniform one)."""

    name: str = "random"
    seed: int = 0
    by: str = "case"
    allocation: str = "proportional"
    check: str = ALL
    floor: float = 0.1

    def __post_init__(self) -> None:
        if self.name not in DESIGNS:
            options = ", ".join(repr(d) for d in DESIGNS)
            raise ArgumentError(f"'design' must be one of {options}; got {self.name!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int | np.integer):
            raise TypeError(f"'seed' must be an integer; got {self.seed!r}")
        if self.allocation not in ALLOCATIONS:
            options = ", ".join(repr(a) for a in ALLOCATIONS)
            raise ArgumentError(f"'allocation' must be one of {options}; got {self.allocation!r}")
        if not isinstance(self.by, str) or not self.by:
            raise TypeError(f"'by' must be 'case' or a check name or type; got {self.by!r}")
        if not isinstance(self.floor, float | int) or not 0 < self.floor <= 1:
            raise ArgumentError(f"'floor' must be in (0, 1]; got {self.floor!r}")


def order_queue(index: SampleIndex, positions: np.ndarray, design: ReviewDesign) -> Ordering:
    """The order ``design`` walks over the queued samples at ``positions`` (of
    ``index.samples``); ``positions[ordering.order]`` is the review's order."""
    n = len(positions)
    if design.name == "stratified":
        strata = _strata(index, positions, design.by)
        return design_order(
            n, "stratified", seed=design.seed, strata=strata, allocation=design.allocation
        )
    if design.name == "active":
        need = judge_uncertainty(index, design.check)[positions]
        cases = np.unique(index.codes["case_id"][positions], return_inverse=True)[1].ravel()
        sizes = active_sizes(need, cases, floor=float(design.floor))
        return design_order(n, "active", seed=design.seed, sizes=sizes)
    return design_order(n, design.name, seed=design.seed)


def verdict_design(ordering: Ordering, rank: int) -> dict[str, Any]:
    """The design columns saved with a verdict on the sample at ``rank`` of ``ordering``."""
    sample = int(ordering.order[rank])
    threshold = ordering.threshold(rank) if ordering.design != "queue" else None
    size = float(ordering.size[sample]) if ordering.design != "queue" else None
    inclusion = None
    if threshold is not None and size is not None:
        inclusion = min(1.0, threshold * size)
    return {
        "design": ordering.design,
        "seed": int(ordering.seed),
        "rank": int(rank),
        "population": len(ordering),
        "size": size,
        "threshold": threshold,
        "inclusion": inclusion,
    }


def _strata(index: SampleIndex, positions: np.ndarray, by: str) -> np.ndarray:
    if by in ("case", "case_id"):
        return np.asarray(index.codes["case_id"][positions])
    try:
        return np.asarray(index.outcome(by)[positions])
    except ArgumentError as exc:
        raise ArgumentError(f"'by' must be 'case' or a check: {exc}") from None


def judge_uncertainty(index: SampleIndex, check: str) -> np.ndarray:
    """Per sample of ``index`` how unsure ``check`` is, in [0, 1]: a graded score's
    closeness to its threshold where the check has scores, else the disagreement of the
    repeats of its case and variant, at least the disagreement among its sample's checks."""
    codes = index.outcome(check)
    passed = np.where(
        codes == OutcomeCode.PASS, 1.0, np.where(codes == OutcomeCode.FAIL, 0.0, np.nan)
    )
    cells = index.codes["case_id"].astype(np.int64) * (
        len(index.samples["variant"].cat.categories)
    ) + index.codes["variant"].astype(np.int64)
    need = repeat_uncertainty(passed, cells)
    need = np.fmax(need, _between_checks(index))
    score = _scores(index, check)
    graded = score_uncertainty(score, passed)
    return np.asarray(np.where(np.isfinite(graded), graded, need))


def _between_checks(index: SampleIndex) -> np.ndarray:
    at, _, outcomes, _ = index._check_rows()
    scored = outcomes <= OutcomeCode.PASS
    size = len(index)
    k = np.bincount(at[scored], weights=(outcomes[scored] == OutcomeCode.PASS), minlength=size)
    n = np.bincount(at[scored], minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        q = np.where(n > 1, k / n, 0.0)
    return np.asarray(4 * q * (1 - q))


def _scores(index: SampleIndex, check: str) -> np.ndarray:
    """The mean score of ``check`` per sample (NaN: none)."""
    score = np.full(len(index), np.nan)
    scores = index.run.table("checks", ["check_type", "score"])
    if check != ALL:
        keep = (scores["check"].astype(object) == check) | (
            scores["check_type"].astype(object) == check
        )
        scores = scores[keep.to_numpy()]
    scores = scores[scores["score"].notna().to_numpy()]
    if scores.empty:
        return score
    at = sample_positions(index.samples, scores)
    ok = at >= 0
    total = np.bincount(at[ok], weights=scores["score"].to_numpy(float)[ok], minlength=len(index))
    count = np.bincount(at[ok], minlength=len(index))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / count, np.nan)
