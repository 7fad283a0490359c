"""The suite pass rate with repeats: the mean of per-case rates, with an interval across cases."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from evalnb._exceptions import ArgumentError
from evalnb._numbers import is_whole
from evalnb.analysis import _args
from evalnb.analysis import _display as display
from evalnb.analysis._betabinomial import beta_binomial_interval
from evalnb.analysis._cluster import clustered_mean, group_ids
from evalnb.analysis._frames import Run
from evalnb.analysis._rates import proportion_interval
from evalnb.analysis._tally import has_column, require_cases, tallies

__all__ = ["DEFAULT_METHOD", "effective_n", "suite_rate"]

#: Below this many cases a warning says the interval is necessarily wide.
FEW_CASES = 10
#: The default interval on the effective n: Agresti-Coull covered below 0.93 in 3 of 385
#: simulated designs, Wilson in 20 and the beta-binomial in 72 of 220 (issue 30; BENCHMARKS.md).
DEFAULT_METHOD = "agresti_coull"
#: The ``method`` value of the hierarchical interval, as rows report it.
BETA_BINOMIAL = "beta-binomial"
#: Standard errors below this are treated as zero (all per-case rates equal).
_ZERO = 1e-12


def suite_rate(
    data: Run | pd.DataFrame,
    by: str | Sequence[str] | None = "variant",
    *,
    check: str | Sequence[str] | None = "all",
    source: str = "checks",
    level: float = 0.95,
    method: str = DEFAULT_METHOD,
    few_cases: int = 0,
) -> pd.DataFrame:
    """The suite rate per ``by`` group: the mean of per-case pass rates.

    The case is the unit: repeats are draws inside a case. The standard error is taken
    across cases, clustered by the case ``group`` when cases share one. The interval is
    ``method`` (statsmodels ``proportion_confint``; Agresti-Coull by default) on the
    effective sample size ``n_eff = p(1-p) / se^2`` shrunk by ``(z / t_{G-1})^2`` (the
    correction Korn & Graubard 1998 make), so it stays inside [0, 1] and widens as a t
    interval on ``G - 1`` degrees of freedom does.
    Agresti-Coull is the default: it covered best over 2-500 cases, 1-50 repeats and rates
    0.01-0.99 where Wilson dips near 0 and 1 (``benchmarks/coverage.py``, BENCHMARKS.md).

    When every case has the same rate (``se`` is 0) ``n_eff`` is the number of groups,
    shrunk. When every sample passed (or failed) the open bound is Clopper-Pearson on the
    groups (``G`` of ``G``), which assumes nothing about how the groups' rates spread.
    The interval always contains the estimate.

    ``method="beta-binomial"`` asks for the hierarchical **beta-binomial** interval
    instead: each case (or group) has its own rate drawn from a Beta with mean ``mu``
    and intra-case correlation ``rho``, its repeats are binomial draws of that rate, and
    the interval is the equal-tailed posterior interval of ``mu`` under uniform priors on
    ``mu`` and ``rho`` on a grid (Bowyer, Aitchison & Ivanova 2025); with one draw per case,
    Clopper-Pearson on the cases. ``few_cases=G`` takes it below ``G`` groups (default 0:
    never). Cases with every outcome unscored are left out. Warns with fewer than 10 cases
    and when groups of ``by`` hold different cases.

    Returns:
        DataFrame, one row per group and check, columns:

        - the ``by`` keys, then ``check``;
        - ``cases``: cases with a scored sample; ``groups``: distinct case groups;
        - ``repeats``: mean scored samples per case; ``samples``: scored samples in all;
        - ``k``: passed samples; ``incomplete``: scored samples that did not complete;
        - ``estimate``: the mean of per-case rates; ``se``: its standard error;
        - ``n_eff``: the effective sample size the interval uses (NaN for beta-binomial);
        - ``design_effect``: ``se^2`` over the variance if every sample were independent;
        - ``low``, ``high``, ``level``;
        - ``method``: ``method`` as given, or ``"beta-binomial"``;
        - ``basis``: ``"across cases"`` (every interval treats the case as the unit);
        - ``note``: why the beta-binomial interval was chosen, how a zero ``se`` was
          handled, or that a bound is Clopper-Pearson on the groups; or empty;
        - ``cases_missing``: cases other groups of the same check (differing only in
          ``variant`` or ``run_id``) have and this one lacks.

    >>> evalnb.suite_rate(run, by=["variant", "split"])    # doctest: +SKIP
    """
    by = _args.names("by", by)
    level = _args.level(level)
    _check_arguments(by, method, few_cases)
    require_cases(data, "the suite rate is taken across cases")
    cluster = "group" if has_column(data, "group") else "case_id"
    per_case = tallies(
        data,
        [*by, "case_id", *([cluster] if cluster != "case_id" else [])],
        check=check,
        source=source,
    )
    per_case = per_case[per_case["n"] > 0].reset_index(drop=True)
    ids, out = group_ids(per_case, [*by, "check"])
    size = len(out)
    n = per_case["n"].to_numpy(dtype=float)
    clusters = per_case[cluster].astype(object).to_numpy()
    spread = clustered_mean(per_case["k"].to_numpy(dtype=float) / n, ids, clusters, size)
    samples = np.bincount(ids, weights=n, minlength=size)
    mean, se, groups = spread["mean"], spread["se"], spread["groups"]
    n_eff, design_effect = effective_n(mean, se, groups, samples, level)
    low, high, n_eff, methods, notes = _interval(
        per_case, ids, clusters, spread, n_eff, level, method, few_cases
    )

    out["cases"] = spread["cases"]
    out["groups"] = groups
    out["repeats"] = samples / spread["cases"]
    out["samples"] = samples.astype(np.int64)
    for column in ("k", "incomplete"):
        counted = np.bincount(ids, weights=per_case[column].to_numpy(dtype=float), minlength=size)
        out[column] = counted.astype(np.int64)
    out["estimate"] = mean
    out["se"] = np.where(~(se > _ZERO) & (groups >= 2), 0.0, se)
    out["n_eff"] = n_eff
    out["design_effect"] = design_effect
    out["low"] = low
    out["high"] = high
    out["level"] = level
    out["method"] = methods
    out["basis"] = "across cases"
    out["note"] = notes
    out["cases_missing"] = _cases_missing(per_case, ids, out, by)
    _warn_few_cases(out, by)
    _warn_missing(out, by)
    return display.result(out, display.suite_summary)


def _interval(
    per_case: pd.DataFrame,
    ids: np.ndarray,
    clusters: np.ndarray,
    spread: dict[str, np.ndarray],
    n_eff: np.ndarray,
    level: float,
    method: str,
    few_cases: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per group ``low``, ``high``, ``n_eff``, ``method`` and ``note``: ``method`` on the
    effective sample size, or the beta-binomial interval where it is asked for or chosen."""
    size, mean, groups = len(n_eff), spread["mean"], spread["groups"]
    flat = ~(spread["se"] > _ZERO)
    degenerate = flat | (groups < 2)
    chosen = (
        np.ones(size, dtype=bool)
        if method == BETA_BINOMIAL
        else ((groups < few_cases) | degenerate) & (few_cases > 0)
    )
    interval = DEFAULT_METHOD if method == BETA_BINOMIAL else method
    _, low, high = proportion_interval(mean * n_eff, n_eff, level=level, method=interval)
    low, high = _skew_hull(per_case, ids, clusters, spread, low, high, level)
    notes = np.where(
        degenerate & ~chosen,
        np.where(
            groups < 2,
            "one group: n_eff is 1, shrunk",
            "every case has the same rate: n_eff is the number of groups",
        ),
        "",
    ).astype(object)
    methods = np.full(size, method, dtype=object)
    if chosen.any():
        b_low, b_high, b_notes = _beta_binomial(
            per_case, ids, clusters, size, chosen, level, spread, flat, few_cases, method
        )
        low = np.where(chosen, b_low, low)
        high = np.where(chosen, b_high, high)
        n_eff = np.where(chosen, np.nan, n_eff)
        methods[chosen] = BETA_BINOMIAL
        notes[chosen] = b_notes[chosen]
    low, high, bounded = _group_bound(per_case, ids, spread, low, high, level)
    for g in np.flatnonzero(bounded != ""):
        notes[g] = "; ".join(filter(None, [notes[g], bounded[g]]))
    # Whatever the method, the interval holds its own estimate.
    low = np.where(np.isfinite(low), np.minimum(low, mean), low)
    high = np.where(np.isfinite(high), np.maximum(high, mean), high)
    return low, high, n_eff, methods, notes


#: From this many groups up the interval also holds Hall's skewness-corrected t interval.
SKEWED_FROM = 20


def _skew_hull(
    per_case: pd.DataFrame,
    ids: np.ndarray,
    clusters: np.ndarray,
    spread: dict[str, np.ndarray],
    low: np.ndarray,
    high: np.ndarray,
    level: float,
) -> tuple[np.ndarray, np.ndarray]:
    """The interval widened to hold Hall's skewness-corrected t interval, from
    :data:`SKEWED_FROM` groups up.

    With case rates near 0 or 1 and many repeats, a few cases carry the mean: it is skewed,
    and a sample that missed them has both a low spread and a mean on the wrong side, so
    an interval symmetric in the standard error covered 0.88-0.92 at 50-100 cases x 50
    repeats (issue 39). Hall (1992, "On the removal of skewness by transformation", JRSS-B
    54) transforms the studentised mean ``T`` by ``g(T) = T + a T^2 + a^2 T^3 / 3 + b``,
    ``a = gamma / (3 sqrt(G))``, ``b = gamma / (6 sqrt(G))``, ``gamma`` the skewness of the
    groups' sums; the interval is ``mean - se g^-1(+-t_{G-1})``. Below ``SKEWED_FROM``
    groups the skewness is too noisy to use (and the small-case rules apply).
    """
    size = len(low)
    mean, se, groups = spread["mean"], spread["se"], spread["groups"].astype(float)
    values = per_case["k"].to_numpy(dtype=float) / per_case["n"].to_numpy(dtype=float)
    codes = pd.factorize(pd.Series(clusters, dtype=object))[0].astype(np.int64)
    pair = ids * (codes.max(initial=0) + 1) + codes
    pairs, index = np.unique(pair, return_inverse=True)
    owner = pairs // (codes.max(initial=0) + 1)
    sums = np.bincount(index, weights=values - mean[ids], minlength=len(pairs))
    second = np.bincount(owner, weights=sums**2, minlength=size) / np.maximum(groups, 1)
    third = np.bincount(owner, weights=sums**3, minlength=size) / np.maximum(groups, 1)
    used = (groups >= SKEWED_FROM) & (se > _ZERO) & (second > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        gamma = np.where(used, third / second**1.5, 0.0)
        a = gamma / (3 * np.sqrt(groups))
        b = gamma / (6 * np.sqrt(groups))
        t = stats.t.ppf(0.5 + level / 2, np.maximum(groups - 1, 1))

        def inverse(x: np.ndarray) -> np.ndarray:
            moved = np.cbrt(1 + 3 * a * (x - b))
            out: np.ndarray = np.where(
                np.abs(a) > 1e-12, (moved - 1) / np.where(a == 0, 1, a), x - b
            )
            return out

        hall_low = mean - se * inverse(t)
        hall_high = mean - se * inverse(-t)
    low = np.where(used & np.isfinite(hall_low), np.fmin(low, np.clip(hall_low, 0, 1)), low)
    high = np.where(used & np.isfinite(hall_high), np.fmax(high, np.clip(hall_high, 0, 1)), high)
    return low, high


def _group_bound(
    per_case: pd.DataFrame,
    ids: np.ndarray,
    spread: dict[str, np.ndarray],
    low: np.ndarray,
    high: np.ndarray,
    level: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where every sample passed (or failed): the Clopper-Pearson bound on the groups.

    ``G`` groups that always passed show only that most groups of the population always
    pass (a share of at least ``((1 - level) / 2)^(1/G)``); a bound from the samples
    would assume how the other groups' rates spread. Returns the bounds and a note.
    """
    size = len(low)
    passes = np.bincount(ids, weights=per_case["k"].to_numpy(dtype=float), minlength=size)
    draws = np.bincount(ids, weights=per_case["n"].to_numpy(dtype=float), minlength=size)
    groups = spread["groups"].astype(float)
    bound = np.where(groups > 0, ((1 - level) / 2) ** (1 / np.maximum(groups, 1)), np.nan)
    every = (draws > 0) & (passes >= draws)
    none = (draws > 0) & (passes <= 0)
    low = np.where(every, bound, low)
    high = np.where(none, 1 - bound, high)
    unit = np.where(spread["groups"] == spread["cases"], "cases", "groups")
    notes = np.full(size, "", dtype=object)
    for g in np.flatnonzero(every | none):
        which = ("lower", "passed") if every[g] else ("upper", "failed")
        notes[g] = (
            f"every sample {which[1]}: the {which[0]} bound is Clopper-Pearson on the "
            f"{int(groups[g])} {unit[g]} ({int(groups[g])} of {int(groups[g])}), which "
            "assumes nothing about how their rates spread"
        )
    return low, high, notes


def _check_arguments(by: list[str], method: str, few_cases: int) -> None:
    _args.choice("method", method, (*_args.INTERVAL_METHODS, BETA_BINOMIAL))
    if not is_whole(few_cases, 0):
        raise ArgumentError(
            f"'few_cases' must be a whole number >= 0 (0: never switch to the beta-binomial "
            f"interval); got {few_cases!r}"
        )
    for reserved in ("case_id", "group"):
        if reserved in by:
            raise ArgumentError(
                f"'by' must not include {reserved!r}: the suite rate is taken across cases "
                f"(use evalnb.rates for per-case rates); got {by!r}"
            )


def effective_n(
    mean: np.ndarray,
    se: np.ndarray,
    groups: np.ndarray,
    samples: np.ndarray,
    level: float,
) -> tuple[np.ndarray, np.ndarray]:
    """The effective sample size ``p(1-p) / se^2`` shrunk by ``(z / t_{G-1})^2``, and the
    design effect, per group. ``samples`` is kept for the design effect only: an effective
    n above the samples is what a t interval would take too (capping it there made the
    interval err wide from 10 cases up, 0.98-0.99 where every case has one rate)."""
    binomial = mean * (1 - mean)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = stats.norm.ppf(0.5 + level / 2)
        t = stats.t.ppf(0.5 + level / 2, np.maximum(groups - 1, 1))
        shrink = (z / t) ** 2
        n_eff = binomial / se**2 * shrink
        design_effect = np.where(binomial > 0, se**2 / (binomial / samples), np.nan)
    # No spread across cases is not certainty: at most one independent draw per group.
    degenerate = ~(se > _ZERO) | (groups < 2)
    return np.where(degenerate, groups * shrink, n_eff), design_effect


def _beta_binomial(
    per_case: pd.DataFrame,
    ids: np.ndarray,
    clusters: np.ndarray,
    size: int,
    chosen: np.ndarray,
    level: float,
    spread: dict[str, np.ndarray],
    flat: np.ndarray,
    few_cases: int,
    method: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The beta-binomial interval per chosen id, over its groups, and why it was chosen."""
    frame = pd.DataFrame(
        {
            "id": ids,
            "cluster": pd.factorize(pd.Series(clusters, dtype=object))[0],
            "k": per_case["k"].to_numpy(dtype=np.int64),
            "n": per_case["n"].to_numpy(dtype=np.int64),
        }
    )
    frame = frame[chosen[frame["id"].to_numpy()]]
    per_cluster = frame.groupby(["id", "cluster"], sort=True)[["k", "n"]].sum().reset_index()
    cid = per_cluster["id"].to_numpy()
    k, n = per_cluster["k"].to_numpy(), per_cluster["n"].to_numpy()
    single = np.bincount(cid, weights=(n > 1).astype(float), minlength=size) == 0
    low, high = beta_binomial_interval(k, n, cid, size, level)
    if (single & chosen).any():
        # One draw per group: the model is binomial over groups, Clopper-Pearson is exact.
        passes = np.bincount(cid, weights=k, minlength=size)
        count = np.bincount(cid, minlength=size)
        rows = np.flatnonzero(single & chosen & (count > 0))
        cp_low, cp_high = proportion_confint(
            passes[rows], count[rows], alpha=1 - level, method="beta"
        )
        low[rows] = np.where(passes[rows] == 0, 0.0, cp_low)
        high[rows] = np.where(passes[rows] == count[rows], 1.0, cp_high)
    model = (
        "hierarchical beta-binomial over {unit}: equal-tailed posterior interval of the mean "
        "rate, uniform priors on the mean and the intra-case correlation (grid)"
    )
    groups, cases = spread["groups"], spread["cases"]
    notes = np.empty(size, dtype=object)
    for g in range(size):
        unit, one = ("cases", "case") if groups[g] == cases[g] else ("groups", "group")
        text = model.format(unit=unit)
        if single[g]:
            text = f"one draw per {one}: binomial over {unit}, Clopper-Pearson"
        if method == BETA_BINOMIAL:
            why = "asked for"
        elif groups[g] < 2:
            why = "chosen: one group"
        elif flat[g]:
            why = "chosen: every case has the same rate (no spread for a t interval)"
        else:
            why = f"chosen: {int(groups[g])} {unit} (< {few_cases})"
        notes[g] = f"{text}; {why}"
    return low, high, notes


def _cases_missing(
    per_case: pd.DataFrame, ids: np.ndarray, out: pd.DataFrame, by: list[str]
) -> np.ndarray:
    """Per row, cases its siblings (same keys but ``variant`` / ``run_id``) have and it lacks."""
    sides = [k for k in by if k in ("variant", "run_id")]
    if not sides or out.empty:
        return np.zeros(len(out), dtype=np.int64)
    rest = [k for k in [*by, "check"] if k not in sides]
    family = (
        out.groupby(rest, observed=True, dropna=False, sort=False).ngroup().to_numpy()
        if rest
        else np.zeros(len(out), dtype=np.int64)
    )
    case_codes = pd.factorize(per_case["case_id"].astype(object))[0]
    union = pd.DataFrame({"family": family[ids], "case": case_codes}).drop_duplicates()
    in_family = union.groupby("family").size()
    return np.asarray(
        (in_family.reindex(family).to_numpy() - out["cases"].to_numpy()).astype(np.int64)
    )


def _where(out: pd.DataFrame, rows: pd.DataFrame, by: list[str], column: str, what: str) -> str:
    return ", ".join(
        " ".join(f"{k}={row[k]}" for k in by) + f" ({row[column]} {what})"
        if by
        else f"{row[column]} {what}"
        for _, row in rows.drop_duplicates(by or ["check"]).head(5).iterrows()
    )


def _warn_few_cases(out: pd.DataFrame, by: list[str]) -> None:
    few = out[out["cases"] < FEW_CASES]
    if few.empty:
        return
    display.caution(
        f"suite_rate: fewer than {FEW_CASES} cases in {_where(out, few, by, 'cases', 'cases')}; "
        "an interval across so few cases is necessarily wide",
        stacklevel=3,
    )


def _warn_missing(out: pd.DataFrame, by: list[str]) -> None:
    short = out[out["cases_missing"] > 0]
    if short.empty:
        return
    display.caution(
        f"suite_rate: {_where(out, short, by, 'cases_missing', 'cases missing')} that other "
        "groups have: these rates are over different cases (evalnb.compare pairs cases)",
        stacklevel=3,
    )
