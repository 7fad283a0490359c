"""Power of a paired comparison: what a design can detect, and what a difference needs.

The model behind :func:`evalnb.compare` (``mode="random"``): each case has a true
difference between the variants, varying across cases with variance ``between_var``;
each draw of a case passes or not, with per-draw variance ``within_var`` (p(1-p)) on
each side. With ``r`` repeats per case and side, a per-case observed difference has
variance ``between_var + 2 * within_var / r``, and the test is a paired t test across
cases. Repeats only shrink the second term: past a point, only more cases help.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.power import TTestPower

from evalnb._numbers import is_number
from evalnb.analysis import _args
from evalnb.analysis._tally import tallies
from evalnb.analysis.compare import paired_counts
from evalnb.analysis.frames import Run

__all__ = ["power"]

METHOD = "paired t across cases (statsmodels TTestPower)"


def power(
    pilot: Run | pd.DataFrame | None = None,
    *,
    a: str | None = None,
    b: str | None = None,
    check: str = "all",
    cases: int | Sequence[int] | None = None,
    repeats: int | Sequence[int] | None = None,
    diff: float | Sequence[float] | None = None,
    rate: float | None = None,
    between_var: float | None = None,
    within_var: float | None = None,
    level: float = 0.95,
    power: float = 0.8,
) -> pd.DataFrame:
    """Minimum detectable difference, cases or repeats needed, or power, for a design.

    What is solved for follows from what is left out:

    - ``diff`` None: the minimum detectable difference for ``cases`` x ``repeats``;
    - ``cases`` None: the cases needed to detect ``diff`` with ``repeats``;
    - ``repeats`` None: the repeats per case needed to detect ``diff`` with ``cases``
      (infinite when the between-case variance alone is too large: add cases);
    - all three given: the power to detect ``diff``.

    ``cases``, ``repeats`` and ``diff`` may be lists: one row per combination.
    Variances come from a ``pilot`` run or frame when given: with two variants
    (``a`` and ``b``, or the only two) from the per-case differences; with one, the
    between-case variance of its rates stands in for that of the differences. A pilot
    also supplies the design (its cases and mean repeats) and the baseline rate.
    Without a pilot, ``rate`` (the baseline pass rate) gives ``within_var = p(1-p)``
    and ``between_var`` is taken as 0 unless given. ``within_var`` and
    ``between_var`` override the estimates. ``level`` is 1 - alpha (two-sided).

    Returns:
        DataFrame, one row per design, columns: ``solve_for`` (``"diff"``,
        ``"cases"``, ``"repeats"`` or ``"power"``), ``cases``, ``repeats``,
        ``samples`` (per variant), ``diff``, ``power``, ``level``, ``sd`` (of an
        observed per-case difference), ``within_var``, ``between_var``,
        ``variance_source``, ``method``, ``note``.

    >>> evalnb.power(rate=0.8, cases=[20, 40], repeats=5)     # doctest: +SKIP
    """
    level = _args.level(level)
    if not is_number(power, 0, 1, open_low=True, open_high=True):
        raise ValueError(f"'power' must be a number between 0 and 1 (e.g. 0.8); got {power!r}")
    if rate is not None:
        rate = _args.fraction("rate", rate)
    for name, value in (("between_var", between_var), ("within_var", within_var)):
        if value is not None and (not is_number(value, 0)):
            raise ValueError(f"{name!r} must be a non-negative number; got {value!r}")

    estimate = _from_pilot(pilot, a, b, check) if pilot is not None else {}
    if rate is None:
        rate = estimate.get("rate")
    if within_var is not None:
        within, source = 2 * float(within_var), "given"
    elif "within_sum" in estimate:
        within, source = estimate["within_sum"], estimate["source"]
    elif rate is not None:
        within, source = None, f"rate {rate:g}"
    else:
        raise ValueError(
            "'rate' (the baseline pass rate), 'within_var' or a 'pilot' run is needed to "
            "know the within-case variance; got none"
        )
    if between_var is not None:
        between, between_source = float(between_var), "given"
    elif "between_var" in estimate:
        between, between_source = estimate["between_var"], estimate["between_source"]
    else:
        between, between_source = 0.0, "assumed 0 (give between_var or a pilot)"

    if diff is None:
        solve = "diff"
    elif cases is None:
        solve = "cases"
    elif repeats is None:
        solve = "repeats"
    else:
        solve = "power"
    case_list = _designs("cases", cases, estimate.get("cases"), minimum=2)
    repeat_list = _designs("repeats", repeats, estimate.get("repeats"), minimum=1)
    diff_list = None if diff is None else _diffs(diff)
    given = {"cases": case_list, "repeats": repeat_list}
    for name in {"diff": ("cases", "repeats"), "cases": ("repeats",)}.get(solve, ("cases",)):
        if given[name] is None:
            raise ValueError(
                f"{name!r} is needed to solve for {solve!r} (or a pilot run to take it from); "
                "got None"
            )
    # What is solved for takes no value from the pilot's design.
    if solve == "cases":
        case_list = None
    elif solve == "repeats":
        repeat_list = None

    analysis = TTestPower()
    alpha = 1 - level
    rows = []
    for c, r, d in itertools.product(
        case_list or (None,), repeat_list or (None,), diff_list or (None,)
    ):
        if within is None:
            assert rate is not None  # within is None only when the rate gives it
            w = _binomial_within(rate, d)
        else:
            w = within
        row = _solve(analysis, solve, c, r, d, w, between, alpha, power)
        row.update(
            level=level,
            within_var=w / 2,
            between_var=between,
            variance_source=f"within: {source}; between: {between_source}",
            method=METHOD,
        )
        rows.append(row)
    columns = [
        "solve_for",
        "cases",
        "repeats",
        "samples",
        "diff",
        "power",
        "level",
        "sd",
        "within_var",
        "between_var",
        "variance_source",
        "method",
        "note",
    ]
    return pd.DataFrame(rows, columns=columns)


def _power(analysis: TTestPower, effect: float, cases: int, alpha: float) -> float:
    """Two-sided power of the one-sample t test.

    statsmodels returns NaN for some large effects (its lower tail, the noncentral t cdf far
    below the mean, is NaN there); both tails as upper tails of scipy's noncentral t stay
    exact: P(T < -c | nc) = P(T > c | -nc).
    """
    value = float(analysis.power(effect, cases, alpha))
    if math.isfinite(value):
        return value
    df, noncentrality = cases - 1, effect * math.sqrt(cases)
    critical = stats.t.ppf(1 - alpha / 2, df)
    upper = stats.nct.sf(critical, df, noncentrality)
    lower = stats.nct.sf(critical, df, -noncentrality)
    return float(upper + lower)


def _solve(
    analysis: TTestPower,
    solve: str,
    cases: int | None,
    repeats: float | None,
    diff: float | None,
    within_sum: float,
    between: float,
    alpha: float,
    target: float,
) -> dict[str, Any]:
    note = ""

    def sd(r: float) -> float:
        return math.sqrt(between + within_sum / r)

    # power() made sure that what is not solved for is given.
    if solve == "diff":
        assert cases is not None and repeats is not None
        effect = analysis.solve_power(nobs=cases, alpha=alpha, power=target)
        diff, achieved = float(effect) * sd(repeats), target
    elif solve == "cases":
        assert repeats is not None and diff is not None
        spread = sd(repeats)
        if spread == 0:
            cases, note = 2, "no variance: any difference shows with 2 cases"
        else:
            found = analysis.solve_power(effect_size=abs(diff) / spread, alpha=alpha, power=target)
            cases = max(2, math.ceil(float(np.squeeze(found))))
        achieved = target
    elif solve == "repeats":
        assert cases is not None and diff is not None
        effect = float(analysis.solve_power(nobs=cases, alpha=alpha, power=target))
        allowed = (abs(diff) / effect) ** 2
        if allowed <= between:
            repeats = math.inf
            note = (
                "between-case variance alone is too large for this difference with these "
                "cases: add cases"
            )
        else:
            repeats = max(1, math.ceil(within_sum / (allowed - between)))
        achieved = target
    else:
        assert cases is not None and repeats is not None and diff is not None
        spread = sd(repeats)
        achieved = 1.0 if spread == 0 else _power(analysis, abs(diff) / spread, cases, alpha)
    spread = sd(repeats) if math.isfinite(repeats) else math.sqrt(between)
    return {
        "solve_for": solve,
        "cases": cases,
        "repeats": repeats,
        "samples": cases * repeats,
        "diff": diff,
        "power": achieved,
        "sd": spread,
        "note": note,
    }


def _from_pilot(pilot: Any, a: str | None, b: str | None, check: str) -> dict[str, Any]:
    """Design, baseline rate and variance components estimated from a pilot."""
    if not isinstance(pilot, Run | pd.DataFrame):
        raise TypeError(
            f"'pilot' must be a Run (from evalnb.load) or a pandas DataFrame; got "
            f"{type(pilot).__name__}"
        )
    per_case = tallies(pilot, ["variant", "case_id"], check=check)
    variants = [str(v) for v in pd.unique(per_case["variant"].astype(object))]
    if a is None and b is None:
        if len(variants) > 2:
            raise ValueError(
                f"'a' (and 'b') must name the pilot's variants to use ({', '.join(variants)}); "
                "got None"
            )
        a, b = [*variants, None][:2]
    a = _args.choice("a", a, variants)
    if b is None:
        return _one_variant(per_case[per_case["variant"].astype(object) == a], a)
    wide, a, b, _ = paired_counts(pilot, a, b, check=check, by=[], on="variant", source="checks")
    paired = wide[wide["paired"]]
    n_a, n_b = paired["n_a"].to_numpy(float), paired["n_b"].to_numpy(float)
    _enough(len(paired), np.concatenate([n_a, n_b]), "cases run by both variants")
    s_a = _draw_variance(paired["rate_a"].to_numpy(float), n_a)
    s_b = _draw_variance(paired["rate_b"].to_numpy(float), n_b)
    diff = paired["diff"].to_numpy(float)
    between = max(0.0, float(np.var(diff, ddof=1) - np.mean(s_a / n_a + s_b / n_b)))
    return {
        "cases": len(paired),
        "repeats": round(float(np.mean(np.concatenate([n_a, n_b])))),
        "rate": float(paired["rate_a"].mean()),
        "within_sum": float(np.mean(s_a) + np.mean(s_b)),
        "between_var": between,
        "between_source": f"pilot, per-case differences {b} - {a}",
        "source": f"pilot ({a}, {b})",
    }


def _one_variant(per_case: pd.DataFrame, name: str) -> dict[str, Any]:
    per_case = per_case[per_case["n"] > 0]
    n = per_case["n"].to_numpy(float)
    _enough(len(per_case), n, f"cases of {name!r}")
    rates = per_case["k"].to_numpy(float) / n
    s = _draw_variance(rates, n)
    between = max(0.0, float(np.var(rates, ddof=1) - np.mean(s / n)))
    return {
        "cases": len(per_case),
        "repeats": round(float(np.mean(n))),
        "rate": float(np.mean(rates)),
        "within_sum": 2 * float(np.mean(s)),
        "between_var": between,
        "between_source": f"pilot, variance of per-case rates of {name!r} (stands in for "
        "differences)",
        "source": f"pilot ({name})",
    }


def _enough(cases: int, n: np.ndarray, what: str) -> None:
    if cases < 2 or (n < 2).any():
        raise ValueError(
            f"'pilot' needs at least 2 {what} with 2 or more scored repeats each to estimate "
            f"variances; got {cases} cases, fewest repeats {int(n.min(initial=0))}"
        )


def _draw_variance(rate: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Unbiased per-draw variance of a case from n draws: p(1-p) n / (n-1)."""
    return rate * (1 - rate) * n / (n - 1)


def _binomial_within(rate: float, diff: float | None) -> float:
    """p(1-p) for A plus q(1-q) for B, with q = p + diff (A's when diff is unknown)."""
    other = rate if diff is None else min(1.0, max(0.0, rate + diff))
    return rate * (1 - rate) + other * (1 - other)


def _designs(name: str, value: Any, fallback: Any, *, minimum: int) -> list[int] | None:
    if value is None:
        return None if fallback is None else [fallback]
    values = _args.positive_ints(name, value)
    if any(v < minimum for v in values):
        raise ValueError(f"{name!r} must be at least {minimum}; got {value!r}")
    return values


def _diffs(value: Any) -> list[float]:
    values = value if isinstance(value, Sequence) else [value]
    for v in values:
        if not is_number(v) or not 0 < abs(v) <= 1:
            raise ValueError(
                f"'diff' must be a difference in pass rate, 0 < |diff| <= 1, or a list of them; "
                f"got {value!r}"
            )
    return [float(v) for v in values]
