"""The suite pass rate with repeats: the mean of per-case rates, with an interval across cases."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from evalnb.analysis import _args
from evalnb.analysis._cluster import clustered_mean, group_ids
from evalnb.analysis._tally import has_column, tallies
from evalnb.analysis.frames import Run
from evalnb.analysis.rates import proportion_interval

__all__ = ["suite_rate"]

#: Below this many cases (or groups) the effective n is shrunk by (z / t)^2.
SMALL_SAMPLE = 30
#: Below this many cases a warning says the interval is necessarily wide.
FEW_CASES = 10
#: Standard errors below this are treated as zero (all per-case rates equal).
_ZERO = 1e-12


def suite_rate(
    data: Run | pd.DataFrame,
    by: str | Sequence[str] | None = "variant",
    *,
    check: str | Sequence[str] | None = "all",
    source: str = "checks",
    level: float = 0.95,
    method: str = "wilson",
) -> pd.DataFrame:
    """The suite rate per ``by`` group: the mean of per-case pass rates.

    The case is the unit: repeats are draws inside a case. The standard error is taken
    across cases, clustered by the case ``group`` when cases share one. The interval is
    ``method`` (statsmodels ``proportion_confint``) on the effective sample size
    ``n_eff = p(1-p) / se^2``, capped at the number of samples and, with fewer than 30
    groups, shrunk by ``(z / t_{G-1})^2``, so it stays inside [0, 1]. When ``se`` is 0
    (every case has the same rate) or there is one group, the interval is ``method`` on
    all samples pooled, and ``basis`` says so. Cases whose outcomes were all unscored
    are left out. Warns with fewer than 10 cases: the interval is necessarily wide.

    Returns:
        DataFrame, one row per group and check, columns:

        - the ``by`` keys, then ``check``;
        - ``cases``: cases with a scored sample; ``groups``: distinct case groups;
        - ``repeats``: mean scored samples per case; ``samples``: scored samples in all;
        - ``k``: passed samples; ``incomplete``: scored samples that did not complete;
        - ``estimate``: the mean of per-case rates; ``se``: its standard error;
        - ``n_eff``: the effective sample size the interval uses;
        - ``design_effect``: ``se^2`` over the variance if every sample were independent;
        - ``low``, ``high``, ``level``, ``method``;
        - ``basis``: ``"across cases"`` or ``"pooled samples"`` (independent trials).

    >>> evalnb.suite_rate(run, by=["variant", "split"])    # doctest: +SKIP
    """
    by = _args.names("by", by)
    level = _args.level(level)
    _args.choice("method", method, _args.INTERVAL_METHODS)
    for reserved in ("case_id", "group"):
        if reserved in by:
            raise ValueError(
                f"'by' must not include {reserved!r}: the suite rate is taken across cases "
                f"(use evalnb.rates for per-case rates); got {by!r}"
            )
    cluster = "group" if has_column(data, "group") else "case_id"
    per_case = tallies(
        data,
        [*by, "case_id", *([cluster] if cluster != "case_id" else [])],
        check=check,
        source=source,
    )
    per_case = per_case[per_case["n"] > 0].reset_index(drop=True)
    keys = [*by, "check"]
    ids, out = group_ids(per_case, keys)
    size = len(out)
    n = per_case["n"].to_numpy(dtype=float)
    rate = per_case["k"].to_numpy(dtype=float) / n
    spread = clustered_mean(rate, ids, per_case[cluster].astype(object).to_numpy(), size)
    samples = np.bincount(ids, weights=n, minlength=size)
    passed = np.bincount(ids, weights=per_case["k"].to_numpy(dtype=float), minlength=size)
    incomplete = np.bincount(
        ids, weights=per_case["incomplete"].to_numpy(dtype=float), minlength=size
    )
    mean, se, groups = spread["mean"], spread["se"], spread["groups"]

    binomial = mean * (1 - mean)
    pooled = ~(se > _ZERO) | (groups < 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        n_eff = np.minimum(binomial / se**2, samples)
        z = stats.norm.ppf(0.5 + level / 2)
        t = stats.t.ppf(0.5 + level / 2, np.maximum(groups - 1, 1))
        n_eff = np.where(groups < SMALL_SAMPLE, n_eff * (z / t) ** 2, n_eff)
        design_effect = np.where(binomial > 0, se**2 / (binomial / samples), np.nan)
    n_eff = np.where(pooled, samples, n_eff)
    _, low, high = proportion_interval(
        np.where(pooled, passed, mean * n_eff), n_eff, level=level, method=method
    )

    out["cases"] = spread["cases"]
    out["groups"] = groups
    out["repeats"] = samples / spread["cases"]
    out["samples"] = samples.astype(np.int64)
    out["k"] = passed.astype(np.int64)
    out["incomplete"] = incomplete.astype(np.int64)
    out["estimate"] = mean
    out["se"] = np.where(pooled & ~(se > _ZERO), 0.0, se)
    out["n_eff"] = n_eff
    out["design_effect"] = design_effect
    out["low"] = low
    out["high"] = high
    out["level"] = level
    out["method"] = method
    out["basis"] = np.where(pooled, "pooled samples", "across cases")
    _warn_few_cases(out, by)
    return out


def _warn_few_cases(out: pd.DataFrame, by: list[str]) -> None:
    few = out[out["cases"] < FEW_CASES]
    if few.empty:
        return
    where = ", ".join(
        " ".join(f"{k}={row[k]}" for k in by) + f" ({row['cases']} cases)"
        if by
        else f"{row['cases']} cases"
        for _, row in few.drop_duplicates(by or ["check"]).head(5).iterrows()
    )
    warnings.warn(
        f"suite_rate: fewer than {FEW_CASES} cases in {where}; an interval across so few "
        "cases is necessarily wide",
        UserWarning,
        stacklevel=3,
    )
