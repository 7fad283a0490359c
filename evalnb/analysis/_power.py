"""Power of a paired comparison: what a design can detect, and what a difference needs.

The model behind :func:`evalnb.compare` (``mode="random"``): each case has a true
difference between the variants, varying across cases with variance ``between_var``;
each draw of a case passes or not, with per-draw variance ``within_var`` (p(1-p)) on
each side. With ``r`` repeats per case and side, a per-case observed difference has
variance ``between_var + 2 * within_var / r``, and the test is a paired t test across
cases. Repeats only shrink the second term: past a point, only more cases help.

Power follows the test :func:`evalnb.compare` actually runs. With 10 or more cases it is
the t test's (statsmodels ``TTestPower``). With fewer, compare's verdict also needs the
exact sign-flip test, whose smallest p-value is ``2 / 2^C``: with 5 cases or fewer no
verdict is possible at the 5% level (power 0), and in between the power of both tests
together is simulated (seeded, 4,000 draws of the same normal model). With one sample
per case compare runs the exact McNemar test, and so does power: exactly, from the
chances that a case passes for B only and for A only (the two sides' draws taken as
independent within a case).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize, stats
from statsmodels.stats.power import TTestPower

from evalnb._exceptions import ArgumentError
from evalnb._numbers import is_number
from evalnb.analysis import _args
from evalnb.analysis._compare import paired_counts
from evalnb.analysis._exact import mcnemar_power, sign_flip_min_p
from evalnb.analysis._frames import Run
from evalnb.analysis._paired import FEW_GROUPS, agresti_caffo_variance
from evalnb.analysis._tally import require_cases, tallies

__all__ = ["power"]

METHOD = "paired t across cases (statsmodels TTestPower)"
FEW_METHOD = (
    "paired t and exact sign-flip test together (fewer than 10 cases): simulated, "
    "4,000 seeded experiments (binomial draws at the rates; normal without a rate)"
)
MCNEMAR_METHOD = (
    "exact McNemar (one sample per case): exact power, A's and B's draws independent within a case"
)
_DRAWS = 4000
_SEED = 20240601
# Above this many repeats the binomial draws of a few-case simulation are normal enough.
_BINOMIAL_UP_TO = 10_000
COLUMNS = [
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
    advise: bool = False,
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

    ``advise=True`` answers "add cases or add repeats?" for one ``diff``: from the current
    design (the pilot's, or ``cases`` and ``repeats``) and its within- and between-case
    variances, a row for the cases needed at the current repeats and one for the repeats
    needed at the current cases, with ``advice``, ``added_samples`` (per variant) and
    ``cheaper`` (the row needing fewer samples). A pilot made with ``until=`` (an
    optionally stopped run) is refused for advice: its own rule decides when to stop.

    Returns:
        DataFrame, one row per design, columns: ``solve_for`` (``"diff"``,
        ``"cases"``, ``"repeats"`` or ``"power"``), ``cases``, ``repeats``,
        ``samples`` (per variant), ``diff``, ``power``, ``level``, ``sd`` (of an
        observed per-case difference), ``within_var``, ``between_var``,
        ``variance_source``, ``method``, ``note``; with ``advise=True`` also ``advice``,
        ``added_samples`` and ``cheaper``.

    >>> evalnb.power(rate=0.8, cases=[20, 40], repeats=5)     # doctest: +SKIP
    """
    level = _args.level(level)
    rate = _checked(power, rate, between_var, within_var)
    if advise:
        from evalnb.analysis._stopped import refuse_stopped

        refuse_stopped(
            pilot,
            "design advice",
            "its own rule: its sequence already says whether more cases are needed; give "
            "more cases or budget and resume it with the same until=",
        )
    estimate = _from_pilot(pilot, a, b, check) if pilot is not None else {}
    if rate is None:
        rate = estimate.get("rate")
    within, source = _within(within_var, estimate, rate)
    if between_var is not None:
        between, between_source = float(between_var), "given"
    elif "between_var" in estimate:
        between, between_source = estimate["between_var"], estimate["between_source"]
    else:
        between, between_source = 0.0, "assumed 0 (give between_var or a pilot)"
    alpha = 1 - level
    if advise:
        design = _Design(rate, within, between, alpha, power)
        sources = f"within: {source}; between: {between_source}"
        return _advise(design, cases, repeats, diff, estimate, level, between, sources)
    solve, case_list, repeat_list, diff_list = _designs(cases, repeats, diff, rate, estimate)
    rows = []
    for c, r, d in itertools.product(
        case_list or (None,), repeat_list or (None,), diff_list or (None,)
    ):
        design = _Design(rate, within, between, alpha, power)
        row = design.solve(solve, c, r, d)
        row.update(
            level=level,
            between_var=between,
            variance_source=f"within: {source}; between: {between_source}",
        )
        rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)


def _advise(
    design: _Design,
    cases: Any,
    repeats: Any,
    diff: Any,
    estimate: dict[str, Any],
    level: float,
    between: float,
    sources: str,
) -> pd.DataFrame:
    """Two ways to reach the target power for ``diff``: more cases at the current repeats,
    or more repeats at the current cases; the cheaper one in samples."""
    now_cases = cases if cases is not None else estimate.get("cases")
    now_repeats = repeats if repeats is not None else estimate.get("repeats")
    if not (is_number(diff) and is_number(now_cases, 2) and is_number(now_repeats, 1)):
        raise ArgumentError(
            "advise=True needs one 'diff' and the current design: a pilot, or 'cases' and "
            f"'repeats'; got diff={diff!r}, cases={now_cases!r}, repeats={now_repeats!r}"
        )
    have_cases, have_repeats = int(float(now_cases)), int(float(now_repeats))  # type: ignore[arg-type]
    now = have_cases * have_repeats
    rows = []
    for advice, solve, c, r in (
        ("add cases", "cases", None, have_repeats),
        ("add repeats", "repeats", have_cases, None),
    ):
        row = design.solve(solve, c, r, float(diff))
        row.update(level=level, between_var=between, variance_source=sources, advice=advice)
        samples = row["samples"]
        row["added_samples"] = max(0.0, samples - now) if math.isfinite(samples) else math.inf
        rows.append(row)
    out = pd.DataFrame(rows, columns=[*COLUMNS, "advice", "added_samples"])
    needed = out["samples"].astype(float)
    out["cheaper"] = needed == needed.min()
    return out


def _checked(power: Any, rate: Any, between_var: Any, within_var: Any) -> float | None:
    """``rate`` as a float (or None), once every number given is checked."""
    if not is_number(power, 0, 1, open_low=True, open_high=True):
        raise ArgumentError(f"'power' must be a number between 0 and 1 (e.g. 0.8); got {power!r}")
    if rate is not None:
        rate = _args.fraction("rate", rate)
    for name, value in (("between_var", between_var), ("within_var", within_var)):
        if value is not None and (not is_number(value, 0)):
            raise ArgumentError(f"{name!r} must be a non-negative number; got {value!r}")
    return None if rate is None else float(rate)


def _within(
    within_var: float | None, estimate: dict[str, Any], rate: float | None
) -> tuple[float | None, str]:
    """The per-draw variance of A plus B's, and where it came from; None: binomial at the
    rates, worked out per design."""
    if within_var is not None:
        return 2 * float(within_var), "given"
    if estimate.get("within_sum"):
        return estimate["within_sum"], estimate["source"]
    if "within_sum" in estimate:
        # Every pilot case passed (or failed) every draw: that is not zero variance, only
        # too few draws to see any; the binomial variance at the rates stands in.
        return None, f"rate {rate:g} ({estimate['source']} shows no variance)"
    if rate is not None:
        return None, f"rate {rate:g}"
    raise ArgumentError(
        "'rate' (the baseline pass rate), 'within_var' or a 'pilot' run is needed to "
        "know the within-case variance; got none"
    )


def _designs(
    cases: Any, repeats: Any, diff: Any, rate: float | None, estimate: dict[str, Any]
) -> tuple[str, list[int] | None, list[int] | None, list[float] | None]:
    """What is solved for (what is left out), and the cases, repeats and differences to
    take the designs from (a pilot's design fills in what is not given)."""
    if diff is None:
        solve = "diff"
    elif cases is None:
        solve = "cases"
    elif repeats is None:
        solve = "repeats"
    else:
        solve = "power"
    case_list = _counts("cases", cases, estimate.get("cases"), minimum=2)
    repeat_list = _counts("repeats", repeats, estimate.get("repeats"), minimum=1)
    diff_list = None if diff is None else _diffs(diff)
    if rate is not None:
        for step in diff_list or []:
            if not 0 <= rate + step <= 1:
                raise ArgumentError(
                    f"'diff' must keep the rate a pass rate: rate {rate:g} + diff {step:g} = "
                    f"{rate + step:g} is outside [0, 1]"
                )
    given = {"cases": case_list, "repeats": repeat_list}
    for name in {"diff": ("cases", "repeats"), "cases": ("repeats",)}.get(solve, ("cases",)):
        if given[name] is None:
            raise ArgumentError(
                f"{name!r} is needed to solve for {solve!r} (or a pilot run to take it from); "
                "got None"
            )
    # What is solved for takes no value from the pilot's design.
    if solve == "cases":
        case_list = None
    elif solve == "repeats":
        repeat_list = None
    return solve, case_list, repeat_list, diff_list


class _Design:
    """One design's variances and test: power at (cases, repeats, diff), and its inverses."""

    def __init__(
        self, rate: float | None, within: float | None, between: float, alpha: float, target: float
    ):
        self.rate, self.within, self.between = rate, within, between
        self.alpha, self.target = alpha, target
        self.analysis = TTestPower()

    def within_sum(self, diff: float | None) -> float:
        """Per-draw variance of A plus B's: given, from a pilot, or binomial at the rates."""
        if self.within is not None:
            return self.within
        assert self.rate is not None  # power() made sure one of them is known
        return _binomial_within(self.rate, diff)

    def sd(self, repeats: float, diff: float | None) -> float:
        return math.sqrt(self.between + self.within_sum(diff) / repeats)

    def regime(self, cases: int, repeats: float) -> str:
        if repeats == 1:
            return "mcnemar"
        return "few" if cases < FEW_GROUPS else "t"

    def method(self, cases: int, repeats: float) -> str:
        return {"mcnemar": MCNEMAR_METHOD, "few": FEW_METHOD, "t": METHOD}[
            self.regime(cases, repeats)
        ]

    def power(self, cases: int, repeats: float, diff: float) -> float:
        regime = self.regime(cases, repeats)
        if regime == "mcnemar":
            if self.rate is None:
                raise ArgumentError(
                    "'rate' (or a pilot) is needed for the power of one sample per case: the "
                    "exact McNemar test depends on the rates themselves; got none"
                )
            p, q = self.rate, min(1.0, max(0.0, self.rate + diff))
            return mcnemar_power(cases, q * (1 - p), p * (1 - q), self.alpha)
        spread = self.sd(repeats, diff)
        if spread == 0:
            return 1.0 if regime == "t" or sign_flip_min_p(cases) < self.alpha else 0.0
        effect = abs(diff) / spread
        if regime == "few":
            if self.rate is not None and repeats <= _BINOMIAL_UP_TO:
                return _few_case_binomial_power(
                    cases, int(repeats), self.rate, diff, self.between, self.alpha
                )
            return _few_case_power(cases, effect, self.alpha)
        return _t_power(self.analysis, effect, cases, self.alpha)

    def solve(self, solve: str, cases: Any, repeats: Any, diff: Any) -> dict[str, Any]:
        note = ""
        variance_diff = diff
        if solve == "diff":
            diff, note, variance_diff = self.detectable(cases, repeats)
            achieved = self.target if math.isfinite(diff) else math.nan
        elif solve == "cases":
            cases, achieved, note = self.cases_needed(repeats, diff)
        elif solve == "repeats":
            repeats, achieved, note = self.repeats_needed(cases, diff)
        else:
            achieved = self.power(cases, repeats, diff)
        if not note and self.regime(cases, repeats) != "t":
            floor = float(sign_flip_min_p(cases))
            if floor >= self.alpha:
                note = (
                    f"with {cases} cases no outcome can reach p < {self.alpha:g} (the smallest "
                    f"exact p is {floor:.3g}): compare can only say can't tell yet"
                )
        if variance_diff is not None and not math.isfinite(variance_diff):
            variance_diff = None
        spread = self.sd(repeats, variance_diff) if math.isfinite(repeats) else None
        return {
            "solve_for": solve,
            "cases": cases,
            "repeats": repeats,
            "samples": cases * repeats,
            "diff": diff,
            "power": achieved,
            "sd": math.sqrt(self.between) if spread is None else spread,
            "within_var": self.within_sum(variance_diff) / 2,
            "method": self.method(cases, repeats) if math.isfinite(repeats) else METHOD,
            "note": note,
        }

    def detectable(self, cases: int, repeats: float) -> tuple[float, str, float | None]:
        """The smallest detectable difference, a note, and the difference its variance
        was taken at (None: the baseline rate's)."""
        regime = self.regime(cases, repeats)
        # A rate of 0 or 1 has no variance of its own: B's, at rate + diff, is all there is,
        # so the difference is solved for with the variance that goes with it.
        varies = self.within is not None or (self.rate is not None and 0 < self.rate < 1)
        if regime == "t" and varies:
            effect = float(
                self.analysis.solve_power(nobs=cases, alpha=self.alpha, power=self.target)
            )
            diff = effect * self.sd(repeats, None)
            return (*self._feasible(diff, cases, repeats), None)
        if sign_flip_min_p(cases) >= self.alpha:
            note = (
                f"with {cases} cases no outcome can reach p < {self.alpha:g} (the smallest "
                f"exact p is {float(sign_flip_min_p(cases)):.3g}): no difference is detectable; "
                "add cases"
            )
            return math.inf, note, None
        if regime == "few" and self.rate is None:
            effect = optimize.brentq(
                lambda e: _few_case_power(cases, e, self.alpha) - self.target, 0.0, 100.0
            )
            return (*self._feasible(effect * self.sd(repeats, None), cases, repeats), None)
        # A rise first, as far as the rate allows; if no rise is detectable, a drop.
        for sign, room in ((1.0, self._room(1.0)), (-1.0, self._room(-1.0))):
            if room > 0 and self.power(cases, repeats, sign * room) >= self.target:
                size = optimize.brentq(
                    lambda x, sign=sign: self.power(cases, repeats, sign * x) - self.target,
                    1e-9,
                    room,
                    xtol=1e-6,
                )
                found = sign * size
                note = ""
                if sign < 0 and self._room(1.0) > 0:
                    note = (
                        f"no rise the rate allows (at most {self._room(1.0):.3g}) is detectable: "
                        "the smallest detectable drop"
                    )
                elif sign < 0:
                    note = (
                        f"rate {self.rate:g} leaves no room to rise: the smallest detectable drop"
                    )
                return found, note, found
        note = (
            f"no difference in pass rate reaches power {self.target:g} with {cases} cases "
            f"x {repeats:g} repeats"
        )
        return math.inf, note, None

    def _room(self, sign: float) -> float:
        """How far the pass rate can move up (sign 1) or down (-1)."""
        if self.rate is None:
            return 1.0
        return 1 - self.rate if sign > 0 else self.rate

    def _feasible(self, diff: float, cases: int, repeats: float) -> tuple[float, str]:
        if abs(diff) > max(self._room(1.0), self._room(-1.0)):
            return math.inf, (
                f"no difference in pass rate reaches power {self.target:g} with {cases} cases "
                f"x {repeats:g} repeats (it would take {abs(diff):.2f})"
            )
        if self.rate is not None and self.rate + diff > 1 and diff > 0:
            return diff, (
                f"rate {self.rate:g} leaves no room to rise by {diff:.3g}: detectable as a drop"
            )
        return diff, ""

    def cases_needed(self, repeats: float, diff: float) -> tuple[int, float, str]:
        spread = self.sd(repeats, diff)
        if repeats != 1 and spread == 0:
            smallest = 2
            while sign_flip_min_p(smallest) >= self.alpha and smallest < FEW_GROUPS:
                smallest += 1
            return smallest, 1.0, f"no variance: any difference shows with {smallest} cases"
        if repeats != 1:
            found = self.analysis.solve_power(
                effect_size=abs(diff) / spread, alpha=self.alpha, power=self.target
            )
            cases = max(2, math.ceil(float(np.squeeze(found))))
            if cases >= FEW_GROUPS:
                return cases, self.target, ""
            for c in range(cases, FEW_GROUPS):
                achieved = self.power(c, repeats, diff)
                if achieved >= self.target:
                    return c, achieved, ""
            return FEW_GROUPS, self.power(FEW_GROUPS, repeats, diff), ""
        # The exact test's power is not monotone in the cases: the smallest that reaches it.
        cases, high = 2, 2
        while self.power(high, repeats, diff) < self.target:
            cases, high = high, high * 2
            if high > 100_000:
                return (
                    math.inf,  # type: ignore[return-value]
                    math.nan,
                    "no number of cases up to 100,000 reaches the power",
                )
        for c in range(cases, high + 1):
            achieved = self.power(c, repeats, diff)
            if achieved >= self.target:
                return c, achieved, ""
        return high, self.power(high, repeats, diff), ""

    def repeats_needed(self, cases: int, diff: float) -> tuple[float, float, str]:
        add_cases = (
            "between-case variance alone is too large for this difference with these "
            "cases: add cases"
        )
        if self.regime(cases, 2) == "few" and sign_flip_min_p(cases) >= self.alpha:
            return (
                math.inf,
                math.nan,
                (f"with {cases} cases no outcome can reach p < {self.alpha:g}: add cases"),
            )
        effect = float(self.analysis.solve_power(nobs=cases, alpha=self.alpha, power=self.target))
        allowed = (abs(diff) / effect) ** 2
        if allowed <= self.between:
            return math.inf, math.nan, add_cases
        repeats = max(1, math.ceil(self.within_sum(diff) / (allowed - self.between)))
        if self.regime(cases, repeats) == "t":
            return repeats, self.target, ""
        if repeats == 1 and self.power(cases, 1, diff) >= self.target:
            return 1, self.power(cases, 1, diff), ""
        repeats = max(repeats, 2)
        if self.regime(cases, repeats) == "t":
            return repeats, self.target, ""
        # Few cases: grow the repeats until the simulated power of both tests is reached.
        limit = self.power(cases, 1e9, diff)
        if limit < self.target:
            return math.inf, math.nan, add_cases
        low, high = repeats, repeats
        while self.power(cases, high, diff) < self.target:
            low, high = high, high * 2
        while high - low > 1:
            middle = (low + high) // 2
            if self.power(cases, middle, diff) >= self.target:
                high = middle
            else:
                low = middle
        return high, self.power(cases, high, diff), ""


def _t_power(analysis: TTestPower, effect: float, cases: int, alpha: float) -> float:
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


def _few_case_power(cases: int, effect: float, alpha: float) -> float:
    """Power of compare's few-case verdict: the paired t and the exact sign-flip test both
    below ``alpha``, simulated from normal per-case differences (mean ``effect`` sd)."""
    if sign_flip_min_p(cases) >= alpha:
        return 0.0
    rng = np.random.default_rng(_SEED + cases)
    draws = rng.standard_normal((_DRAWS, cases)) + effect
    mean = draws.mean(axis=1)
    sd = draws.std(axis=1, ddof=1)
    p_t = 2 * stats.t.sf(np.abs(mean / (sd / math.sqrt(cases))), cases - 1)
    signs = 1 - 2 * ((np.arange(2**cases)[:, None] >> np.arange(cases)) & 1)
    flipped = np.abs(draws @ signs.T)
    observed = np.abs(draws.sum(axis=1))[:, None]
    p_flip = (flipped >= observed * (1 - 1e-12)).mean(axis=1)
    return float(np.mean((p_t < alpha) & (p_flip < alpha)))


def _from_pilot(pilot: Any, a: str | None, b: str | None, check: str) -> dict[str, Any]:
    """Design, baseline rate and variance components estimated from a pilot."""
    if not isinstance(pilot, Run | pd.DataFrame):
        raise TypeError(
            f"'pilot' must be a Run (from evalnb.load) or a pandas DataFrame; got "
            f"{type(pilot).__name__}"
        )
    require_cases(pilot, "a pilot's variances are estimated across cases")
    per_case = tallies(pilot, ["variant", "case_id"], check=check)
    variants = [str(v) for v in pd.unique(per_case["variant"].astype(object))]
    if a is None and b is None:
        if len(variants) > 2:
            raise ArgumentError(
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
        raise ArgumentError(
            f"'pilot' needs at least 2 {what} with 2 or more scored repeats each to estimate "
            f"variances; got {cases} cases, fewest repeats {int(n.min()) if n.size else 0}"
        )


def _draw_variance(rate: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Unbiased per-draw variance of a case from n draws: p(1-p) n / (n-1)."""
    return np.asarray(rate * (1 - rate) * n / (n - 1))


def _binomial_within(rate: float, diff: float | None) -> float:
    """p(1-p) for A plus q(1-q) for B, with q = p + diff (A's when diff is unknown)."""
    other = rate if diff is None else min(1.0, max(0.0, rate + diff))
    return rate * (1 - rate) + other * (1 - other)


def _counts(name: str, value: Any, fallback: Any, *, minimum: int) -> list[int] | None:
    if value is None:
        return None if fallback is None else [fallback]
    values = _args.positive_ints(name, value)
    if any(v < minimum for v in values):
        raise ArgumentError(f"{name!r} must be at least {minimum}; got {value!r}")
    return values


def _diffs(value: Any) -> list[float]:
    values = value if isinstance(value, Sequence) else [value]
    for v in values:
        if not is_number(v) or not 0 < abs(v) <= 1:
            raise ArgumentError(
                f"'diff' must be a difference in pass rate, 0 < |diff| <= 1, or a list of them; "
                f"got {value!r}"
            )
    return [float(v) for v in values]


def _few_case_binomial_power(
    cases: int, repeats: int, rate: float, diff: float, between: float, alpha: float
) -> float:
    """Power of compare's few-case verdict on binomial draws, as compare sees them.

    Each case's true difference is ``diff`` plus a normal spread of variance ``between``
    (rates kept in [0, 1]); A passes ``Binomial(repeats, rate)`` draws, B
    ``Binomial(repeats, rate + difference)``; the verdict needs the paired t (with the
    Agresti-Caffo floor when every difference is the same) and the exact sign-flip test
    below ``alpha``. The uniforms are seeded per design, so power is a smooth enough
    function of ``diff`` to solve for.
    """
    if sign_flip_min_p(cases) >= alpha:
        return 0.0
    rng = np.random.default_rng([_SEED, cases, repeats])
    spread = rng.standard_normal((_DRAWS, cases))
    u_a, u_b = rng.random((2, _DRAWS, cases))
    rate_b = np.clip(rate + diff + math.sqrt(between) * spread, 0.0, 1.0)
    k_a = stats.binom.ppf(u_a, repeats, rate)
    k_b = stats.binom.ppf(u_b, repeats, rate_b)
    diffs = (k_b - k_a) / repeats
    mean = diffs.mean(axis=1)
    se = diffs.std(axis=1, ddof=1) / math.sqrt(cases)
    adjusted = agresti_caffo_variance(k_a, repeats) + agresti_caffo_variance(k_b, repeats)
    floor = np.sqrt(adjusted.sum(axis=1)) / cases
    se = np.where(se > 1e-12, se, floor)
    p_t = 2 * stats.t.sf(np.abs(mean / se), cases - 1)
    signs = 1 - 2 * ((np.arange(2**cases)[:, None] >> np.arange(cases)) & 1)
    flipped = np.abs(diffs @ signs.T)
    observed = np.abs(diffs.sum(axis=1))[:, None]
    p_flip = (flipped >= observed - 1e-9).mean(axis=1)
    return float(np.mean((p_t < alpha) & (p_flip < alpha)))
