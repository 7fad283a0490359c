"""Two variants (or several) on the same cases: paired per-case differences and a verdict.

The question a comparison answers depends on what it generalises to. The default,
``mode="random"``, treats the cases as a sample of the cases you care about: the
standard error comes from how much the per-case differences vary across cases, with
a t interval on ``C - 1`` degrees of freedom (groups when cases share a ``group``).
``mode="fixed"`` answers "on exactly these cases": the only noise is the binomial
noise of the repeats inside each case. Overlapping intervals are never used.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from statsmodels.stats.multitest import multipletests

from evalnb._exceptions import ArgumentError
from evalnb.analysis import _args
from evalnb.analysis import _display as display
from evalnb.analysis._exact import rejects, sign_flip_min_p
from evalnb.analysis._frames import Run
from evalnb.analysis._paired import (
    FEW_GROUPS,
    PairedTest,
    Pairs,
    exact_conditional,
    paired_test,
    wide_counts,
    within_cases,
)
from evalnb.analysis._tally import has_column, require_cases, tallies

__all__ = ["compare", "compare_cases"]

MODES = ("random", "fixed")
#: statsmodels ``multipletests`` methods offered for several comparisons, and "none".
ADJUSTMENTS = ("holm", "bonferroni", "fdr_bh", "none")
B_BETTER = "B better"
A_BETTER = "A better"
CANT_TELL = "can't tell yet"
_ZERO = 1e-12


def compare(
    data: Run | pd.DataFrame,
    by: str | Sequence[str] | None = None,
    *,
    a: str | None = None,
    b: str | Sequence[str] | None = None,
    check: str | Sequence[str] | None = "all",
    on: str = "variant",
    mode: str = "random",
    source: str = "checks",
    level: float = 0.95,
    adjust: str | None = "holm",
) -> pd.DataFrame:
    """Is ``b`` better than ``a``? Paired per-case differences of pass rates (B - A).

    Only cases both ran (with at least one scored sample each) are paired. ``a`` (the
    baseline) and ``b`` are values of ``on`` (variant names by default; ``on="run_id"``
    compares runs), given by keyword so that they cannot be swapped unseen. ``b`` may be
    a list: ``a`` against each. With ``a`` alone, ``a`` against every other value; with
    neither, the only two values, or every pair when there are more.
    Several comparisons are adjusted for multiplicity (``adjust``, Holm by default, per
    ``by`` group and check): five prompt variants are not five uncorrected tests.

    The test follows the design. ``mode="random"`` (generalise to new cases): paired t
    across cases on ``C - 1`` degrees of freedom (groups when cases share a ``group``);
    with fewer than 10 groups the exact sign-flip test over cases (groups) must agree,
    because the t is not robust with so few (its p is in ``p_exact``). ``mode="fixed"``
    (exactly these cases): the within-case binomial variance with a normal interval,
    and the exact conditional test of the per-case 2x2 tables must agree. With one sample
    per case and side both modes use the exact McNemar test, and the interval is the one
    that inverts it. A standard error of 0 (every per-case difference the same) is never
    certainty: the within-case binomial standard error (Agresti-Caffo: one pass and one
    fail added per case and side) stands in. ``min_p`` is the smallest p-value the exact
    test could give with this many cases; when it is not below ``1 - level`` no verdict
    but "can't tell yet" is possible, and ``note`` says so. The verdict is "B better" or
    "A better" when ``p_adjusted < 1 - level``, otherwise "can't tell yet".

    A run made with ``until=evalnb.Decided(...)`` may have stopped because its data looked
    decided, so no fixed-n test is valid on it: it is read with its own anytime-valid
    sequence (:func:`evalnb.confidence_sequence`) at its last look, at ``level`` (split
    over the rule's comparisons), per ``by`` group when ``by`` names case fields (tags,
    split, metadata); an argument the sequence cannot honour (``mode="fixed"``, a sample
    column in ``by``, ``on``, ``source``, ``adjust="none"``) is refused in one line.

    Returns:
        DataFrame, one row per comparison, ``by`` group and check, columns:

        - the ``by`` keys, then ``check``; ``a``, ``b``: the two sides;
        - ``cases``: paired cases; ``groups``: their distinct groups;
        - ``repeats_a``, ``repeats_b``: mean scored samples per case;
        - ``rate_a``, ``rate_b``: mean per-case pass rates over the paired cases;
        - ``diff``: mean of per-case (B - A); ``se``: its standard error;
        - ``df``: degrees of freedom (infinite for ``mode="fixed"``);
        - ``low``, ``high``, ``level``: interval for ``diff``, cut to [-1, 1]: the one the
          deciding test inverts, excluding 0 exactly when it rejects (unadjusted);
        - ``p_value``: two-sided, for no difference, the verdict's before adjustment: the
          larger of ``p_method`` (the test named in ``method``: the paired t in random mode)
          and ``p_exact`` (the exact test beside it, ``exact_method``; NaN when none);
        - ``min_p``: the smallest p the exact test can give with these cases (0: none);
        - ``p_adjusted``: ``p_value`` adjusted over the ``comparisons`` (``adjust``);
        - ``correlation``: Pearson correlation of the per-case rates of A and B;
        - ``note``: what the reader must know before the verdict (a design that cannot
          reach significance, an exact test that does not agree...), or empty;
        - ``verdict``: "B better", "A better" or "can't tell yet";
        - ``mode``: "random" (generalises to new cases) or "fixed" (these cases);
        - ``method``: the test and interval used; ``exact_method``: the exact test;
        - ``interval_method``: the test whose inversion ``low`` and ``high`` are;
        - ``bounded``: False when no outcome could reject any difference (``min_p`` not
          below ``1 - level``): ``low`` and ``high`` are -1 and 1;
        - ``fixed_low``, ``fixed_high``, ``fixed_method``: beside an interval not
          ``bounded`` in random mode, ``mode="fixed"``'s (these cases); else NaN and "";
        - ``unpaired``: cases only one side ran, left out;
        - ``comparisons``: comparisons in the family; ``adjust``: the adjustment used.

    >>> evalnb.compare(run, a="baseline", b="revised")     # doctest: +SKIP
    >>> evalnb.compare(run, a="baseline", b=["short", "polite", "strict"])  # doctest: +SKIP
    """
    from evalnb.analysis._stopped import is_sequential, refuse_stopped

    if not is_sequential(data):  # several runs, one of them stopped: no sequence spans them
        refuse_stopped(data, "comparison across runs", "evalnb.compare(run) on that run alone")
    else:
        # An optionally stopped run: its own sequence, never a fixed-n interval.
        given: dict[str, Any] = {"on": on, "mode": mode, "source": source, "level": level}
        given.update(a=a, b=b, check=check, adjust=adjust)
        return display.result(_stopped(data, by, given), display.compare_summary)
    level = _args.level(level)
    _args.choice("mode", mode, MODES)
    adjust = _args.choice("adjust", "none" if adjust is None else adjust, ADJUSTMENTS)
    by = _args.names("by", by)
    require_cases(data, "a comparison pairs cases")
    counts, values, cluster = side_counts(data, by=by, on=on, check=check, source=source)
    pairs = _pairs(values, a, b, on)
    keys = [*by, "check"]
    parts = []
    for left, right in pairs:
        wide = wide_counts(counts, left, right, by=by, on=on, cluster=cluster)
        parts.append(_compare_pair(wide, left, right, keys, cluster, mode, level))
    out = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
    return display.result(_adjust(out, keys, adjust, 1 - level), display.compare_summary)


def _stopped(data: Any, by: Any, given: dict[str, Any]) -> pd.DataFrame:
    """``compare`` on a run a rule stopped: a race by its pairs' sequences (which take no
    ``by``, ``mode``, ``source`` or ``level`` of their own), else the run's sequence."""
    from evalnb.analysis._race import compare_race, is_race
    from evalnb.analysis._stopped import compare_sequence

    if not is_race(data):
        return compare_sequence(data, _args.names("by", by), **given)
    asked = {"by": by, "mode": given["mode"], "source": given["source"], "level": given["level"]}
    defaults = {"by": None, "mode": "random", "source": "checks", "level": 0.95}
    odd = [k for k, v in asked.items() if v != defaults[k]]
    if odd:
        raise ArgumentError(
            f"a race is read by its own sequences, at its own level: compare(run, a=, b=, "
            f"check=) takes no {odd[0]!r}; got {asked[odd[0]]!r}"
        )
    return compare_race(data, a=given["a"], b=given["b"], check=given["check"], on=given["on"])


def _pairs(values: list[str], a: Any, b: Any, on: str) -> list[tuple[str, str]]:
    """The (A, B) pairs asked for, each checked against the values present."""
    if a is None and b is None:
        if len(values) < 2:
            raise ArgumentError(
                f"'a' and 'b' must name the two {on} values to compare (the data has "
                f"{', '.join(map(repr, values)) or 'none'}); got a=None, b=None"
            )
        return list(itertools.combinations(values, 2))
    a = _args.choice("a", a, values)
    if b is None:
        others = [v for v in values if v != a]
        if not others:
            raise ArgumentError(f"'b' must name a {on} value other than a={a!r}; the data has none")
        return [(a, v) for v in others]
    wanted = [b] if isinstance(b, str) else b
    if not isinstance(wanted, Sequence) or not wanted:
        raise TypeError(f"'b' must be a {on} value or a list of them; got {b!r}")
    chosen = [_args.choice("b", v, values) for v in wanted]
    if len(set(chosen)) != len(chosen):
        raise ArgumentError(f"'b' must not repeat a value; got {b!r}")
    if a in chosen:
        raise ArgumentError(f"'a' and 'b' must differ; got a={a!r}, b={b!r}")
    return [(a, v) for v in chosen]


def _compare_pair(
    wide: pd.DataFrame, a: str, b: str, keys: list[str], cluster: str, mode: str, level: float
) -> pd.DataFrame:
    """One comparison (A, B) per ``by`` group and check: the design's test, then the rows."""
    pairs = Pairs.of(wide[wide["paired"]].reset_index(drop=True), keys, cluster)
    test = paired_test(pairs, mode, level)
    out = pairs.keys.copy()
    out.insert(len(keys), "a", a)
    out.insert(len(keys) + 1, "b", b)
    out["cases"] = pairs.spread["cases"]
    out["groups"] = pairs.groups
    out["repeats_a"] = _mean_by(pairs.n_a, pairs.ids, pairs.cases)
    out["repeats_b"] = _mean_by(pairs.n_b, pairs.ids, pairs.cases)
    out["rate_a"] = _mean_by(pairs.rate_a, pairs.ids, pairs.cases)
    out["rate_b"] = _mean_by(pairs.rate_b, pairs.ids, pairs.cases)
    out["diff"] = pairs.mean
    for column in ("se", "df"):
        out[column] = getattr(test, column)
    # The interval shown is the one the deciding test (the larger p) inverts.
    exact_decides = (test.p_exact >= test.p_value) & np.isfinite(test.exact_low)
    out["low"], out["high"] = _agree(
        np.where(exact_decides, test.exact_low, test.low),
        np.where(exact_decides, test.exact_high, test.high),
        np.fmax(test.p_value, test.p_exact),
        1 - level,
    )
    out["level"] = level
    deciding = np.fmax(test.p_value, test.p_exact)
    out["p_value"] = deciding
    out["p_method"] = test.p_value
    out["p_exact"] = test.p_exact
    out["min_p"] = test.min_p
    out["p_adjusted"] = deciding
    out["correlation"] = _correlation(pairs.rate_a, pairs.rate_b, pairs.ids, pairs.size)
    out["note"] = _notes(pairs, test, mode, 1 - level)
    out["verdict"] = CANT_TELL
    out["mode"] = mode
    out["method"] = test.method
    out["exact_method"] = test.exact_method
    out["interval_method"] = np.where(
        pairs.single,
        "exact McNemar, inverted (conditional Clopper-Pearson)",
        np.where(exact_decides, [f"{m}, inverted" for m in test.exact_method], test.method),
    )
    # With too few cases for the deciding test no outcome rejects any shift: its interval is
    # the whole axis and says nothing. What these cases alone can tell is offered beside it.
    bounded = ~(test.min_p >= 1 - level)
    out["bounded"] = bounded
    fixed = _fixed_beside(pairs, ~bounded & ~pairs.single & (mode == "random"), level)
    out["fixed_low"], out["fixed_high"], out["fixed_method"] = fixed
    unpaired = (
        wide[~wide["paired"]].groupby(keys, observed=True, dropna=False).size()
        if (~wide["paired"]).any()
        else pd.Series(dtype="int64")
    )
    index = pd.MultiIndex.from_frame(out[keys]) if len(keys) > 1 else pd.Index(out["check"])
    out["unpaired"] = unpaired.reindex(index, fill_value=0).to_numpy().astype(np.int64)
    return out


def _fixed_beside(
    pairs: Pairs, wanted: np.ndarray, level: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For the ``wanted`` groups, the interval ``mode="fixed"`` would show (exactly these
    cases: the one its deciding test inverts); NaN and "" elsewhere."""
    low, high = np.full(pairs.size, np.nan), np.full(pairs.size, np.nan)
    method = np.full(pairs.size, "", dtype=object)
    groups = np.flatnonzero(wanted)
    if not len(groups):
        return low, high, method
    normal = within_cases(pairs, level)
    exact = exact_conditional(pairs, groups, level)
    p_exact = np.asarray(exact["p_exact"], dtype=float)
    exact_low, exact_high = np.asarray(exact["exact_low"]), np.asarray(exact["exact_high"])
    use_exact = (p_exact >= normal.p_value[groups]) & np.isfinite(exact_low)
    chosen_low = np.where(use_exact, exact_low, normal.low[groups])
    chosen_high = np.where(use_exact, exact_high, normal.high[groups])
    p = np.fmax(normal.p_value[groups], p_exact)
    low[groups], high[groups] = _agree(chosen_low, chosen_high, p, 1 - level)
    method[groups] = np.where(
        use_exact, f"{exact['exact_method']}, inverted", normal.method[groups]
    )
    return low, high, method


def _agree(
    low: np.ndarray, high: np.ndarray, p: np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """The interval held to its test's decision at p = alpha: it holds 0 when the test
    does not reject, and an end that rounding put on 0 moves off it when the test rejects
    (a bound within 1e-9 of 0; the interval is the test's inversion, so only rounding can
    put it there)."""
    decided = rejects(p, alpha)
    low = np.where(~decided & np.isfinite(low), np.minimum(low, 0.0), low)
    high = np.where(~decided & np.isfinite(high), np.maximum(high, 0.0), high)
    tiny = np.nextafter(0.0, 1.0)
    low = np.where(decided & (low <= 0) & (low > -1e-9) & (high > 0), tiny, low)
    high = np.where(decided & (high >= 0) & (high < 1e-9) & (low < 0), -tiny, high)
    return low, high


def _notes(pairs: Pairs, test: PairedTest, mode: str, alpha: float) -> list[str]:
    """What the reader must know before each verdict, one text per group."""
    moved = [int(np.sum(np.abs(v) > _ZERO)) for v in pairs.sums]
    few = (pairs.groups < FEW_GROUPS) | test.flat
    texts = []
    for i in range(pairs.size):
        single, notes = pairs.single[i], []
        where = f"{int(pairs.groups[i])} {pairs.unit[i]}"
        if test.min_p[i] >= alpha:
            notes.append(
                f"no outcome with {where} can reach p < {alpha:g} (the smallest exact p is "
                f"{test.min_p[i]:.3g}): the verdict can only be can't tell yet"
                + ("; add cases" if mode == "random" else "")
            )
        elif (single or (mode == "random" and few[i])) and sign_flip_min_p(moved[i]) >= alpha:
            what_moved = "discordant cases" if single else f"{pairs.unit[i]} moved"
            notes.append(f"only {moved[i]} {what_moved}: no p < {alpha:g} is possible from them")
        if test.flat[i] and not single:
            notes.append(
                "every per-case difference is the same: the standard error is the "
                "within-case binomial one (Agresti-Caffo), not 0"
            )
        p_value, p_exact = test.p_value[i], test.p_exact[i]
        if not single and p_value < alpha <= p_exact and test.min_p[i] < alpha:
            notes.append(f"the exact test ({test.exact_method[i]}) does not agree")
        texts.append("; ".join(notes))
    return texts


def _adjust(out: pd.DataFrame, keys: list[str], adjust: str, alpha: float) -> pd.DataFrame:
    """Adjust ``p_adjusted`` over the comparisons of each family, then give the verdicts."""
    family = out.groupby(keys, observed=True, dropna=False, sort=False).ngroup().to_numpy()
    size = np.bincount(family, minlength=family.max(initial=-1) + 1)
    out["comparisons"] = size[family].astype(np.int64)
    adjusted = out["p_adjusted"].to_numpy(dtype=float).copy()
    if adjust == "holm":
        adjusted = _holm(adjusted, family)
    elif adjust != "none" and (size > 1).any():
        for f in np.flatnonzero(size > 1):
            rows = np.flatnonzero((family == f) & np.isfinite(adjusted))
            if len(rows):
                adjusted[rows] = multipletests(adjusted[rows], alpha=alpha, method=adjust)[1]
    out["p_adjusted"] = adjusted
    out["adjust"] = np.where(size[family] > 1, adjust, "none")
    several = (size[family] > 1) & (adjust != "none")
    out["note"] = [
        "; ".join(filter(None, [note, f"{adjust.capitalize()}-adjusted over {n} comparisons"]))
        + _unreachable(adjust, n, smallest, alpha)
        if many
        else note
        for note, n, many, smallest in zip(
            out["note"], size[family], several, out["min_p"], strict=True
        )
    ]
    significant = rejects(adjusted, alpha)
    mean = out["diff"].to_numpy(dtype=float)
    out["verdict"] = np.where(
        significant & (mean > 0), B_BETTER, np.where(significant & (mean < 0), A_BETTER, CANT_TELL)
    )
    return out


def _unreachable(adjust: str, comparisons: int, smallest: float, alpha: float) -> str:
    """The note when the adjustment puts alpha out of reach although the raw p could reach it.

    Holm and Bonferroni multiply the smallest p of the family by the number of comparisons,
    so no adjusted p can be below ``comparisons * min_p``; Benjamini-Hochberg leaves the
    smallest possible p as it is.
    """
    if adjust not in ("holm", "bonferroni") or not smallest < alpha:
        return ""
    reach = comparisons * smallest
    if reach < alpha:
        return ""
    return (
        f"; no adjusted p can reach {alpha:g} (the smallest exact p, {smallest:.3g}, times "
        f"{comparisons} is {min(reach, 1.0):.3g}): the verdict can only be can't tell yet"
    )


def compare_cases(
    data: Run | pd.DataFrame,
    by: str | Sequence[str] | None = None,
    *,
    a: str | None = None,
    b: str | None = None,
    check: str | Sequence[str] | None = "all",
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
    counts, values, cluster = side_counts(data, by=by, on=on, check=check, source=source)
    a, b = _args.pair(a, b, values, what=f"{on} values")
    return wide_counts(counts, a, b, by=by, on=on, cluster=cluster), a, b, cluster


def side_counts(
    data: Any, *, by: list[str], on: str, check: Any, source: str
) -> tuple[pd.DataFrame, list[str], str]:
    """Counts per (``by``, ``on``, case), the ``on`` values present, and the cluster column."""
    for reserved in (on, "case_id", "group"):
        if reserved in by:
            raise ArgumentError(
                f"'by' must not include {reserved!r}: a comparison pairs {on} values within "
                f"cases; got {by!r}"
            )
    _no_side_in_by(data, by, on)
    cluster = "group" if has_column(data, "group") else "case_id"
    extra = [cluster] if cluster != "case_id" else []
    counts = tallies(data, [*by, on, "case_id", *extra], check=check, source=source)
    values = [str(v) for v in pd.unique(counts[on].astype(object))]
    if isinstance(counts[on].dtype, pd.CategoricalDtype):
        present = set(values)
        values = [str(v) for v in counts[on].cat.categories if str(v) in present]
    return counts, values, cluster


def _no_side_in_by(data: Any, by: list[str], on: str) -> None:
    """A side named where ``by`` goes (``compare(run, "v1")``, the order of old) is an
    error that says so, not a column that is missing."""
    if not isinstance(data, Run | pd.DataFrame):
        return
    unknown = [c for c in by if not has_column(data, c)]
    if not unknown:
        return
    if isinstance(data, Run):
        values = data.variants if on == "variant" else data.run_ids if on == "run_id" else []
    else:
        values = data[on].dropna().unique() if on in data.columns else []
    sides = [c for c in unknown if c in {str(v) for v in values}]
    if sides:
        raise ArgumentError(
            f"'by' must name columns to group by; got {sides[0]!r}, one of the {on} values: "
            f"name the sides with the keywords a= (the baseline) and b="
        )


def _holm(p: np.ndarray, family: np.ndarray) -> np.ndarray:
    """Holm's step-down adjustment within each family, all families at once.

    The same numbers as statsmodels ``multipletests(p, method="holm")`` (a test pins
    them), which runs ``gc.collect()`` on every call: a second per family, over a thousand
    ``by`` groups. NaN p-values are left out of their family and stay NaN.
    """
    finite = np.isfinite(p)
    order = np.lexsort((p, family))
    order = order[finite[order]]
    ranked_family = family[order]
    size = np.bincount(ranked_family, minlength=family.max(initial=-1) + 1)
    start = np.concatenate([[0], np.cumsum(size)[:-1]])
    rank = np.arange(len(order)) - start[ranked_family]
    scaled = np.minimum(1.0, p[order] * (size[ranked_family] - rank))
    # running maximum within each family: offset families so they never mix
    running = np.maximum.accumulate(scaled + 2.0 * ranked_family) - 2.0 * ranked_family
    out = np.full(len(p), np.nan)
    out[order] = running
    return out


def _mean_by(values: np.ndarray, ids: np.ndarray, cases: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(np.bincount(ids, weights=values, minlength=len(cases)) / cases)


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
