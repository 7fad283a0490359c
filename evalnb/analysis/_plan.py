"""How many more human labels a narrower interval on the human pass rate needs.

The prediction-powered estimate (:func:`evalnb.ppi_rate`) has two sources of error: which
cases the run has (the spread of the per-case human rates, ``B``, which no label removes)
and which samples were labelled (the correction's noise, which shrinks as labels grow).
Under a design with sizes ``p_i`` (:mod:`evalnb.analysis._sampling`) the second is, with
``L`` labels, the variance of a Horvitz-Thompson total with ``pi_i = L p_i``,

    V(L) = B + sum_i z_i^2 (1 - pi_i) / pi_i  =  B + K / L - Z,

``z_i`` the sample's share of the correction's residual (``(check - human - R) / (C n_c)``,
``R`` the correction, ``C`` the cases, ``n_c`` its case's samples), ``K = sum z_i^2 / p_i``
and ``Z = sum z_i^2``. ``K`` and ``Z`` are estimated from the labels so far, each weighed by
``1 / pi`` (Horvitz-Thompson), and ``B`` as what the current variance leaves beyond them;
the estimator's floor on the correction (as if one more disagreement and one more agreement
had been seen) is kept. The half-width at ``L`` labels is ``t(df) sqrt(V(L))`` with the
degrees of freedom of the cases the labels reach. Before any label the plan assumes the
judge and the people disagree on half the samples (the widest case), and says so.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from evalnb._exceptions import ArgumentError
from evalnb.analysis import _args
from evalnb.analysis._cluster import group_ids
from evalnb.analysis._frames import Run
from evalnb.analysis._ppi import (
    _clustered_se,
    _influence,
    _per_case,
    _samples,
    estimate_rows,
)
from evalnb.analysis._sampling import REVIEWED, DesignRead

__all__ = ["plan_rows", "review_plan"]

METHOD = (
    "planned: V(L) = B + K/L - Z, K and Z from the labels so far weighed by 1/pi, "
    "B the spread across cases; t interval"
)
PRIOR = "before any label: the judge and the people taken to disagree on half the samples"


def review_plan(
    data: Run | str | os.PathLike[str] | pd.DataFrame,
    by: str | Sequence[str] | None = "variant",
    *,
    width: float | None = None,
    labels: int | Sequence[int] | None = None,
    check: str = "judge",
    annotator: str | Sequence[str] | None = None,
    design: str | None = None,
    level: float = 0.95,
) -> pd.DataFrame:
    """How wide the interval of :func:`evalnb.ppi_rate` will be after more labels, and how
    many labels a target half-width ``width`` needs, under the design the verdicts so far
    were taken with (a random review when there are none yet).

    ``width`` is the half-width wanted (``0.05`` for ±5 percentage points); ``labels`` one
    or several label counts to predict the half-width at (every label of the review, over
    all variants, as the panel counts them). The other arguments are those of
    :func:`evalnb.ppi_rate`.

    Returns:
        DataFrame, one row per ``by`` group (and per count in ``labels``), columns:

        - the ``by`` keys, ``check``, ``design``;
        - ``labels_now``: the review's labels so far; ``half_width_now``: half the current
          interval's width (NaN without one);
        - ``labels``: the count the row predicts for (``labels``, else the labels
          needed, else the labels so far); ``half_width``: the half-width predicted there;
        - ``width``: the target; ``labels_needed``: the fewest labels that reach it (NaN
          when even every sample would not: the cases' own spread is wider); ``more``:
          ``labels_needed - labels_now``;
        - ``method``, ``note``.

    >>> evalnb.review_plan(run, width=0.05)                  # doctest: +SKIP
    """
    level = _args.level(level)
    if width is not None and (
        isinstance(width, bool) or not isinstance(width, int | float) or not 0 < width < 1
    ):
        raise ArgumentError(
            f"'width' must be a half-width between 0 and 1 (0.05 for ±5 pp); got {width!r}"
        )
    counts = _counts(labels)
    by = _args.names("by", by)
    rows, read = _samples(data, check, by, annotator, design)
    return plan_rows(rows, read, by, check, width=width, labels=counts, level=level)


def _counts(labels: Any) -> list[int] | None:
    if labels is None:
        return None
    values = [labels] if isinstance(labels, int | np.integer) else list(labels)
    if not values or any(
        isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1 for v in values
    ):
        raise ArgumentError(f"'labels' must be one or more positive integers; got {labels!r}")
    return [int(v) for v in values]


def plan_rows(
    rows: pd.DataFrame,
    read: DesignRead,
    by: list[str],
    check: str,
    *,
    width: float | None,
    labels: list[int] | None = None,
    level: float = 0.95,
    now: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """:func:`review_plan` on per-sample ``rows`` (as :func:`evalnb.ppi_rate` reads them,
    with ``size``) whose verdicts were taken under ``read``; ``now`` is their
    :func:`evalnb.ppi_rate` when the caller has it already."""
    if now is None:
        now = estimate_rows(rows, read, by, check, level)
    terms = _terms(rows, read, by, level)
    keys = group_ids(_per_case(rows, by), by)[1]
    prior = terms.labels_now == 0 or read.scope == REVIEWED
    # a coarse grid, then every count between its last miss and first hit: the panel
    # plans after each verdict, on runs of 100,000 samples too
    grid = np.unique(np.round(np.geomspace(1, max(len(rows), 1), 256)))
    records = []
    for g in range(len(keys)):
        curve, needed = np.zeros(0), np.nan
        if width is not None:
            curve = terms.half_width(grid, g)
            reach = np.flatnonzero(curve <= width)
            if len(reach):
                start = grid[reach[0] - 1] + 1 if reach[0] > 0 else 1.0
                fine = np.arange(start, grid[reach[0]] + 1)
                needed = float(fine[np.argmax(terms.half_width(fine, g) <= width)])
        counts = labels or [int(needed) if np.isfinite(needed) else max(terms.labels_now, 1)]
        current = now.iloc[g]
        for count in counts:
            records.append(
                {
                    **{k: keys[k].iat[g] for k in by},
                    "check": check,
                    "design": "random" if read.scope == REVIEWED else read.design,
                    "labels_now": terms.labels_now,
                    "half_width_now": (current["high"] - current["low"]) / 2,
                    "labels": count,
                    "half_width": float(terms.half_width(np.array([float(count)]), g)[0]),
                    "width": np.nan if width is None else float(width),
                    "labels_needed": needed,
                    "more": needed - terms.labels_now if np.isfinite(needed) else np.nan,
                    "method": METHOD,
                    "note": _note(read, prior, width, needed, curve),
                }
            )
    return pd.DataFrame.from_records(records)


@dataclass(frozen=True)
class _Terms:
    """Per group: ``B`` (``between``), ``K``, ``Z``, the disagreement ``rate`` the labels
    stand for, the group's labels per label of the review, and its cases."""

    labels_now: int
    between: np.ndarray
    k: np.ndarray
    z: np.ndarray
    rate: np.ndarray
    per_label: np.ndarray
    cases: np.ndarray
    level: float

    def half_width(self, count: np.ndarray, g: int) -> np.ndarray:
        """The half-width of group ``g``'s interval after ``count`` labels."""
        in_group = np.maximum(count * self.per_label[g], 1e-9)
        noise = np.fmax(self.k[g] / count - self.z[g], 0.0)
        # the estimator's floor, with the disagreements seen so far at the same rate
        share = (self.rate[g] * in_group + 1) / (in_group + 2)
        noise = np.fmax(noise, share * (1 - share) / in_group)
        df = np.maximum(np.minimum(self.cases[g], in_group) - 1, 1)
        critical = stats.t.ppf(0.5 + self.level / 2, df)
        return np.asarray(critical * np.sqrt(self.between[g] + noise))


def _terms(rows: pd.DataFrame, read: DesignRead, by: list[str], level: float) -> _Terms:
    population = len(rows)
    per_case = _per_case(rows, by)
    ids, keys = group_ids(per_case, by)
    groups, row_ids = len(keys), group_ids(rows, by)[0]
    labelled = rows["human"].notna().to_numpy() & (rows["weight"].to_numpy() > 0)
    labels_now = read.labels if read.labels > 0 else int(labelled.sum())
    parts = _influence(per_case, ids, groups)
    units = per_case["unit"].to_numpy()
    cases = np.bincount(ids, minlength=groups).astype(float)
    in_case = rows.groupby([*by, "case_id"], observed=True, dropna=False)["judge"]
    share = 1.0 / (in_case.transform("size").to_numpy(float) * cases[row_ids])  # a_i / C
    size = rows["size"].to_numpy(float)
    size = np.where(np.isfinite(size) & (size > 0), size, 1.0 / population)
    gap = (rows["judge"] - rows["human"]).to_numpy(float)
    z = share * (gap - (-parts["correction"])[row_ids])
    k_term, z_term = np.zeros(groups), np.zeros(groups)
    if labels_now == 0 or read.scope == REVIEWED:
        # the judge's spread across cases, and a disagreement share of one half
        judge = per_case["judge"].to_numpy(float) / per_case["samples"].to_numpy(float)
        spread, _ = _clustered_se(judge - parts["judge"][ids], ids, units, groups)
        np.add.at(k_term, row_ids, 0.25 * share**2 / size)
        np.add.at(z_term, row_ids, 0.25 * share**2)
        per_label = np.bincount(row_ids, weights=size, minlength=groups).astype(float)
        between, rate = np.nan_to_num(spread) ** 2, np.full(groups, 0.5)
        return _Terms(0, between, k_term, z_term, rate, per_label, cases, level)
    # 1 / pi sums to the samples over a probability sample: weights stored up to a common
    # factor (a frame's "random") are put on that scale
    weight = rows["weight"].to_numpy(float)
    weight = weight * population / weight[labelled].sum()
    at = np.flatnonzero(labelled)
    np.add.at(k_term, row_ids[at], z[at] ** 2 * weight[at] / size[at])
    np.add.at(z_term, row_ids[at], z[at] ** 2 * weight[at])
    weighed = np.bincount(row_ids[at], weights=weight[at], minlength=groups)
    against = np.bincount(row_ids[at], weights=np.abs(gap[at]) * weight[at], minlength=groups)
    rate = against / np.where(weighed > 0, weighed, 1.0)
    se0, _ = _clustered_se(parts["influence"], ids, units, groups)
    between = np.fmax(np.nan_to_num(se0) ** 2 - (k_term / labels_now - z_term), 0.0)
    per_label = np.asarray(np.bincount(row_ids[at], minlength=groups) / labels_now, float)
    return _Terms(labels_now, between, k_term, z_term, rate, per_label, cases, level)


def _note(
    read: DesignRead, prior: bool, width: float | None, needed: float, curve: np.ndarray
) -> str:
    notes = []
    if read.scope == REVIEWED:
        notes.append(
            "the verdicts so far are no probability sample: the plan is for a random "
            "review from the start"
        )
    if prior:
        notes.append(PRIOR)
    if width is not None and not np.isfinite(needed):
        notes.append(
            f"even every sample labelled leaves ±{100 * float(curve[-1]):.1f} pp: the "
            "cases' own spread is wider than the target; more cases, not labels, narrow it"
        )
    return "; ".join(notes)
