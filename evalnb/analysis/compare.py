"""Two variants on the same cases: paired per-case differences and a verdict.

The question a comparison answers depends on what it generalises to. The default,
``mode="random"``, treats the cases as a sample of the cases you care about: the
standard error comes from how much the per-case differences vary across cases, with
a t interval on ``C - 1`` degrees of freedom (groups when cases share a ``group``).
``mode="fixed"`` answers "on exactly these cases": the only noise is the binomial
noise of the repeats inside each case. Overlapping intervals are never used.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar

from evalnb.analysis import _args
from evalnb.analysis._cluster import clustered_mean, group_ids
from evalnb.analysis._tally import has_column, tallies
from evalnb.analysis.frames import Run

__all__ = ["compare", "compare_cases"]

MODES = ("random", "fixed")
B_BETTER = "B better"
A_BETTER = "A better"
CANT_TELL = "can't tell yet"
_ZERO = 1e-12


def compare(
    data: Run | pd.DataFrame,
    a: str | None = None,
    b: str | None = None,
    *,
    check: str | Sequence[str] | None = "all",
    by: str | Sequence[str] | None = None,
    on: str = "variant",
    mode: str = "random",
    source: str = "checks",
    level: float = 0.95,
) -> pd.DataFrame:
    """Is ``b`` better than ``a``? Paired per-case differences of pass rates (B - A).

    Only cases both ran (with at least one scored sample each) are paired. ``a`` and
    ``b`` are values of ``on`` (variant names by default; ``on="run_id"`` compares
    runs); when both are None and there are exactly two, they are taken in order.
    With one sample per case and side the p-value is the exact McNemar test on the
    discordant cases. The verdict is "B better" or "A better" when ``p < 1 - level``,
    otherwise "can't tell yet".

    Returns:
        DataFrame, one row per ``by`` group and check, columns:

        - the ``by`` keys, then ``check``; ``a``, ``b``: the two sides;
        - ``cases``: paired cases; ``groups``: their distinct groups;
        - ``repeats_a``, ``repeats_b``: mean scored samples per case;
        - ``rate_a``, ``rate_b``: mean per-case pass rates over the paired cases;
        - ``diff``: mean of per-case (B - A); ``se``: its standard error;
        - ``df``: degrees of freedom (infinite for ``mode="fixed"``);
        - ``low``, ``high``: interval for ``diff`` at ``level``, cut to [-1, 1]; ``level``;
        - ``p_value``: two-sided, for no difference;
        - ``correlation``: Pearson correlation of the per-case rates of A and B;
        - ``verdict``: "B better", "A better" or "can't tell yet";
        - ``mode``: "random" (generalises to new cases) or "fixed" (these cases);
        - ``method``: the test and interval used;
        - ``unpaired``: cases only one side ran, left out.

    >>> evalnb.compare(run, a="baseline", b="revised")     # doctest: +SKIP
    """
    level = _args.level(level)
    _args.choice("mode", mode, MODES)
    by = _args.names("by", by)
    wide, a, b, cluster = paired_counts(data, a, b, check=check, by=by, on=on, source=source)
    keys = [*by, "check"]
    paired = wide[wide["paired"]].reset_index(drop=True)
    ids, out = group_ids(paired, keys)
    size = len(out)
    rate_a = paired["rate_a"].to_numpy(dtype=float)
    rate_b = paired["rate_b"].to_numpy(dtype=float)
    n_a = paired["n_a"].to_numpy(dtype=float)
    n_b = paired["n_b"].to_numpy(dtype=float)
    diff = rate_b - rate_a
    spread = clustered_mean(diff, ids, paired[cluster].astype(object).to_numpy(), size)
    cases = spread["cases"].astype(float)
    mean = spread["mean"]
    alpha = 1 - level

    if mode == "random":
        se, df = spread["se"], spread["df"]
        critical = stats.t.ppf(1 - alpha / 2, np.maximum(df, 1))
        with np.errstate(invalid="ignore", divide="ignore"):
            p_value = 2 * stats.t.sf(np.abs(mean / se), np.maximum(df, 1))
        what = "paired t across cases"
    else:
        within = _binomial_variance(rate_a, n_a) + _binomial_variance(rate_b, n_b)
        se = np.sqrt(np.bincount(ids, weights=within, minlength=size)) / cases
        df = np.full(size, np.inf)
        critical = np.full(size, stats.norm.ppf(1 - alpha / 2))
        with np.errstate(invalid="ignore", divide="ignore"):
            p_value = 2 * stats.norm.sf(np.abs(mean / se))
        what = "fixed cases: within-case binomial variance, normal interval"
    degenerate = ~(se > _ZERO) & np.isfinite(se)
    p_value = np.where(degenerate, np.where(np.abs(mean) > _ZERO, 0.0, 1.0), p_value)
    method = np.full(size, what, dtype=object)

    single = np.bincount(ids, weights=((n_a == 1) & (n_b == 1)).astype(float), minlength=size)
    for g in np.flatnonzero(single == cases):
        rows = ids == g
        passed_a, passed_b = rate_a[rows] == 1, rate_b[rows] == 1
        table = [
            [np.sum(passed_a & passed_b), np.sum(passed_a & ~passed_b)],
            [np.sum(~passed_a & passed_b), np.sum(~passed_a & ~passed_b)],
        ]
        p_value[g] = mcnemar(table, exact=True).pvalue
        method[g] = f"exact McNemar (one sample per case and side); interval: {what}"

    significant = p_value < alpha
    verdict = np.where(
        significant & (mean > 0), B_BETTER, np.where(significant & (mean < 0), A_BETTER, CANT_TELL)
    )
    unpaired = (
        wide[~wide["paired"]].groupby(keys, observed=True, dropna=False).size()
        if (~wide["paired"]).any()
        else pd.Series(dtype="int64")
    )

    out.insert(len(keys), "a", a)
    out.insert(len(keys) + 1, "b", b)
    out["cases"] = spread["cases"]
    out["groups"] = spread["groups"]
    out["repeats_a"] = _mean_by(n_a, ids, cases)
    out["repeats_b"] = _mean_by(n_b, ids, cases)
    out["rate_a"] = _mean_by(rate_a, ids, cases)
    out["rate_b"] = _mean_by(rate_b, ids, cases)
    out["diff"] = mean
    out["se"] = se
    out["df"] = df
    # A difference of two rates lies in [-1, 1]; the t interval can reach past it.
    out["low"] = np.maximum(mean - critical * se, -1.0)
    out["high"] = np.minimum(mean + critical * se, 1.0)
    out["level"] = level
    out["p_value"] = p_value
    out["correlation"] = _correlation(rate_a, rate_b, ids, size)
    out["verdict"] = verdict
    out["mode"] = mode
    out["method"] = method
    index = pd.MultiIndex.from_frame(out[keys]) if len(keys) > 1 else pd.Index(out["check"])
    out["unpaired"] = unpaired.reindex(index, fill_value=0).to_numpy().astype(np.int64)
    return out


def compare_cases(
    data: Run | pd.DataFrame,
    a: str | None = None,
    b: str | None = None,
    *,
    check: str | Sequence[str] | None = "all",
    by: str | Sequence[str] | None = None,
    on: str = "variant",
    source: str = "checks",
) -> pd.DataFrame:
    """The per-case differences behind :func:`compare`, largest moves first.

    Returns:
        DataFrame, one row per case (within each ``by`` group and check), columns:
        the ``by`` keys, ``check``, ``case_id``, ``group`` (when cases have groups),
        ``k_a``, ``n_a``, ``rate_a``, ``k_b``, ``n_b``, ``rate_b``, ``diff`` (B - A),
        and ``paired`` (False when only one side ran the case; those rows come last).
    """
    by = _args.names("by", by)
    wide, _, _, cluster = paired_counts(data, a, b, check=check, by=by, on=on, source=source)
    order = wide.assign(_moved=-wide["diff"].abs().fillna(-1.0))
    order = order.sort_values([*by, "check", "_moved"], kind="stable").drop(columns="_moved")
    columns = [*by, "check", "case_id", *([cluster] if cluster != "case_id" else [])]
    columns += ["k_a", "n_a", "rate_a", "k_b", "n_b", "rate_b", "diff", "paired"]
    return order[columns].reset_index(drop=True)


def paired_counts(
    data: Any, a: str | None, b: str | None, *, check: Any, by: list[str], on: str, source: str
) -> tuple[pd.DataFrame, str, str, str]:
    """Per case: counts of both sides side by side, and which cases are paired."""
    for reserved in (on, "case_id", "group"):
        if reserved in by:
            raise ValueError(
                f"'by' must not include {reserved!r}: a comparison pairs {on} values within "
                f"cases; got {by!r}"
            )
    cluster = "group" if has_column(data, "group") else "case_id"
    extra = [cluster] if cluster != "case_id" else []
    counts = tallies(data, [*by, on, "case_id", *extra], check=check, source=source)
    values = [str(v) for v in pd.unique(counts[on].astype(object))]
    if isinstance(counts[on].dtype, pd.CategoricalDtype):
        present = set(values)
        values = [str(v) for v in counts[on].cat.categories if str(v) in present]
    if a is None and b is None:
        if len(values) != 2:
            raise ValueError(
                f"'a' and 'b' must name the two {on} values to compare (the data has "
                f"{', '.join(map(repr, values)) or 'none'}); got a=None, b=None"
            )
        a, b = values
    a = _args.choice("a", a, values)
    b = _args.choice("b", b, values)
    if a == b:
        raise ValueError(f"'a' and 'b' must differ; got a={a!r}, b={b!r}")
    side = counts[on].astype(object)
    keys = [*by, "check", "case_id", *extra]
    left = counts.loc[side == a, [*keys, "k", "n"]].rename(columns={"k": "k_a", "n": "n_a"})
    right = counts.loc[side == b, [*keys, "k", "n"]].rename(columns={"k": "k_b", "n": "n_b"})
    for frame in (left, right):
        for key in keys:
            if isinstance(frame[key].dtype, pd.CategoricalDtype):
                frame[key] = frame[key].astype(object)
    wide = left.merge(right, on=keys, how="outer", sort=False)
    for column in ("k_a", "n_a", "k_b", "n_b"):
        wide[column] = wide[column].fillna(0).astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        wide["rate_a"] = np.where(wide["n_a"] > 0, wide["k_a"] / wide["n_a"], np.nan)
        wide["rate_b"] = np.where(wide["n_b"] > 0, wide["k_b"] / wide["n_b"], np.nan)
    wide["diff"] = wide["rate_b"] - wide["rate_a"]
    wide["paired"] = (wide["n_a"] > 0) & (wide["n_b"] > 0)
    for key in keys:
        if isinstance(counts[key].dtype, pd.CategoricalDtype):
            wide[key] = pd.Categorical(wide[key], categories=counts[key].cat.categories)
    wide = wide.sort_values(keys, kind="stable").reset_index(drop=True)
    return wide, a, b, cluster


def _binomial_variance(rate: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Unbiased variance of a per-case rate from ``n`` draws: p(1-p)/(n-1)."""
    return rate * (1 - rate) / np.maximum(n - 1, 1)


def _mean_by(values: np.ndarray, ids: np.ndarray, cases: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.bincount(ids, weights=values, minlength=len(cases)) / cases


def _correlation(x: np.ndarray, y: np.ndarray, ids: np.ndarray, size: int) -> np.ndarray:
    """Pearson correlation of x and y within each id; NaN when either is constant."""
    cases = np.bincount(ids, minlength=size).astype(float)
    dx = x - _mean_by(x, ids, cases)[ids]
    dy = y - _mean_by(y, ids, cases)[ids]
    sxy = np.bincount(ids, weights=dx * dy, minlength=size)
    sxx = np.bincount(ids, weights=dx * dx, minlength=size)
    syy = np.bincount(ids, weights=dy * dy, minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((sxx > _ZERO) & (syy > _ZERO), sxy / np.sqrt(sxx * syy), np.nan)
