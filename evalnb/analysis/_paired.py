"""The tests behind :func:`evalnb.compare`: one helper per method, and one that picks.

Every helper takes the paired per-case counts of one comparison (:class:`Pairs`, numbered
by ``by`` group and check) and gives, for the groups it is asked about, what that method
says; :func:`paired_test` chooses among them the way statsmodels' ``proportion_confint``
chooses a branch:

==============================  ==========================================================
design                          method
==============================  ==========================================================
one sample per case and side    :func:`exact_mcnemar` (its interval is the one it inverts)
``mode="random"``               :func:`paired_t`; :func:`sign_flip` beside it with fewer
                                than 10 groups or no spread
``mode="fixed"``                :func:`within_cases`; :func:`exact_conditional` beside it
==============================  ==========================================================

A standard error of 0 is never certainty: :func:`agresti_caffo_variance` stands in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar

from evalnb.analysis._cluster import clustered_mean, group_ids
from evalnb.analysis._exact import (
    conditional_interval,
    conditional_mcnemar_interval,
    sign_flip_interval,
    sign_flip_min_p,
    sign_flip_p,
    stratified_exact_p,
)

__all__ = [
    "FEW_GROUPS",
    "PairedTest",
    "Pairs",
    "agresti_caffo_variance",
    "paired_test",
    "wide_counts",
]

#: Below this many groups the t verdict also needs the exact sign-flip test.
FEW_GROUPS = 10
_ZERO = 1e-12


@dataclass
class Pairs:
    """The paired cases of one comparison: per-case counts, and per group (``by`` keys and
    check, numbered by ``ids``; their values in ``keys``) the mean per-case difference
    B - A with its spread across cases (:func:`~evalnb.analysis._cluster.clustered_mean`)."""

    keys: pd.DataFrame
    ids: np.ndarray
    k_a: np.ndarray
    n_a: np.ndarray
    k_b: np.ndarray
    n_b: np.ndarray
    clusters: np.ndarray

    def __post_init__(self) -> None:
        self.size = len(self.keys)
        self.rate_a = self.k_a / np.maximum(self.n_a, 1)
        self.rate_b = self.k_b / np.maximum(self.n_b, 1)
        self.diff = self.rate_b - self.rate_a
        self.spread = clustered_mean(self.diff, self.ids, self.clusters, self.size)
        self.cases = self.spread["cases"].astype(float)
        self.groups = self.spread["groups"]
        self.mean = self.spread["mean"]
        self.unit = np.where(self.groups == self.cases, "cases", "groups")
        one = ((self.n_a == 1) & (self.n_b == 1)).astype(float)
        self.single = np.bincount(self.ids, weights=one, minlength=self.size) == self.cases
        order = np.argsort(self.ids, kind="stable")
        self.members = np.split(order, np.cumsum(np.bincount(self.ids, minlength=self.size))[:-1])
        # The units whose signs are flipped: per-case differences summed within each group.
        self.sums = [_group_sums(self.diff[rows], self.clusters[rows]) for rows in self.members]
        self.sizes = [_group_sums(np.ones(len(rows)), self.clusters[rows]) for rows in self.members]
        adjusted = agresti_caffo_variance(self.k_a, self.n_a)
        adjusted += agresti_caffo_variance(self.k_b, self.n_b)
        self.floor = np.sqrt(np.bincount(self.ids, weights=adjusted, minlength=self.size))
        self.floor /= self.cases

    @classmethod
    def of(cls, paired: pd.DataFrame, keys: list[str], cluster: str) -> Pairs:
        """From a frame of paired cases (``k_a``, ``n_a``, ``k_b``, ``n_b``, the keys)."""
        ids, values = group_ids(paired, keys)
        k_a, n_a, k_b, n_b = (paired[c].to_numpy(dtype=float) for c in ("k_a", "n_a", "k_b", "n_b"))
        return cls(values, ids, k_a, n_a, k_b, n_b, paired[cluster].astype(object).to_numpy())


@dataclass
class PairedTest:
    """Per group: the interval and test the verdict rests on, and the exact test beside it.

    ``p_exact`` is NaN and ``exact_method`` empty where no exact test is needed; ``min_p``
    is the smallest p the exact test could give (0 where the verdict rests on the t alone);
    ``exact_low`` and ``exact_high`` are the interval the exact test inverts (NaN where
    there is none); ``flat`` marks the groups whose standard error was 0 and is the
    Agresti-Caffo floor.
    """

    se: np.ndarray
    df: np.ndarray
    p_value: np.ndarray
    low: np.ndarray
    high: np.ndarray
    method: np.ndarray
    flat: np.ndarray

    def __post_init__(self) -> None:
        size = len(self.se)
        self.p_exact = np.full(size, np.nan)
        self.exact_method = np.full(size, "", dtype=object)
        self.min_p = np.zeros(size)
        self.exact_low = np.full(size, np.nan)
        self.exact_high = np.full(size, np.nan)

    def set(self, groups: np.ndarray, **columns: Any) -> None:
        """Put the values a method found for ``groups`` in place."""
        for name, values in columns.items():
            getattr(self, name)[groups] = values


def paired_test(pairs: Pairs, mode: str, level: float) -> PairedTest:
    """The test and interval the design calls for, per group (see the module's table)."""
    if mode == "random":
        test = paired_t(pairs, level)
        few = np.flatnonzero(((pairs.groups < FEW_GROUPS) | test.flat) & ~pairs.single)
        test.set(few, **sign_flip(pairs, few, level))
    else:
        test = within_cases(pairs, level)
        several = np.flatnonzero(~pairs.single)
        test.set(several, **exact_conditional(pairs, several, level))
    single = np.flatnonzero(pairs.single)
    test.set(single, **exact_mcnemar(pairs, single, level))
    return test


def paired_t(pairs: Pairs, level: float) -> PairedTest:
    """Paired t across cases (``mode="random"``): generalises to new cases.

    The mean ``d`` of the per-case differences, its CR1 cluster-robust standard error over
    the ``G`` case groups (Cameron & Miller 2015, "A practitioner's guide to
    cluster-robust inference"; the ordinary ``sd / sqrt(C)`` when every case is its own
    group), and Student's t on ``G - 1`` degrees of freedom: ``d +- t_{1-alpha/2, G-1} se``,
    ``p = 2 P(T_{G-1} > |d / se|)``, the interval cut to [-1, 1].
    """
    se, df = pairs.spread["se"], pairs.spread["df"]
    critical = stats.t.ppf(1 - (1 - level) / 2, np.maximum(df, 1))
    flat = ~(se > _ZERO) & (pairs.groups >= 2)
    se = np.where(flat, pairs.floor, se)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_value = 2 * stats.t.sf(np.abs(pairs.mean / se), np.maximum(df, 1))
    return _normal_theory(pairs, se, df, critical, p_value, flat, "paired t across cases")


def within_cases(pairs: Pairs, level: float) -> PairedTest:
    """Fixed cases (``mode="fixed"``): "on exactly these cases", the draws inside each case
    the only noise.

    Each per-case rate has the unbiased binomial variance ``p (1 - p) / (n - 1)``, so
    ``Var(d) = sum_c [v_{a,c} + v_{b,c}] / C^2``, and the interval and test are the normal
    (Wald) ones: ``d +- z_{1-alpha/2} se``, ``p = 2 P(Z > |d / se|)``, cut to [-1, 1].
    """
    within = _binomial_variance(pairs.rate_a, pairs.n_a)
    within += _binomial_variance(pairs.rate_b, pairs.n_b)
    se = np.sqrt(np.bincount(pairs.ids, weights=within, minlength=pairs.size)) / pairs.cases
    df = np.full(pairs.size, np.inf)
    critical = np.full(pairs.size, stats.norm.ppf(1 - (1 - level) / 2))
    flat = ~(se > _ZERO) & (pairs.cases > 0)
    se = np.where(flat, pairs.floor, se)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_value = 2 * stats.norm.sf(np.abs(pairs.mean / se))
    what = "fixed cases: within-case binomial variance, normal interval"
    return _normal_theory(pairs, se, df, critical, p_value, flat, what)


def sign_flip(pairs: Pairs, groups: np.ndarray, level: float) -> dict[str, Any]:
    """The exact sign-flip (randomisation) test over cases, or over case groups.

    Under "no difference" each unit's summed difference is as likely to have either sign,
    so ``p`` is the share of the ``2^m`` sign assignments whose absolute sum is at least the
    observed one (Fisher 1935, *The Design of Experiments*, on Darwin's paired plants;
    :func:`~evalnb.analysis._exact.sign_flip_p`). The smallest p any outcome can give is
    ``2 / 2^G``, known before the data is seen. Its interval is the set of shifts it does
    not reject (:func:`~evalnb.analysis._exact.sign_flip_interval`).
    """
    unit = pairs.unit[groups]
    intervals = [sign_flip_interval(pairs.sums[g], pairs.sizes[g], level) for g in groups]
    return {
        "p_exact": sign_flip_p([pairs.sums[g] for g in groups]),
        "exact_method": np.where(unit == "cases", "sign-flip over cases", "sign-flip over groups"),
        "min_p": sign_flip_min_p(pairs.groups[groups]),
        "exact_low": [low for low, _ in intervals],
        "exact_high": [high for _, high in intervals],
    }


def exact_conditional(pairs: Pairs, groups: np.ndarray, level: float) -> dict[str, Any]:
    """The exact conditional test of the per-case 2x2 tables (A/B by pass/fail, one per case).

    Given each case's total passes, B's passes are hypergeometric under "no difference";
    B's total is their convolution, and the two-sided p sums the outcomes no more likely
    than the observed one: the exact test of a common odds ratio of 1 in K 2x2 tables
    (R's ``mantelhaen.test(exact = TRUE)``; Fisher's exact test with one case;
    :func:`~evalnb.analysis._exact.stratified_exact_p`). Its interval is the set of common
    odds ratios it does not reject, mapped to the mean per-case difference
    (:func:`~evalnb.analysis._exact.conditional_interval`).
    """
    found, intervals = [], []
    for rows in (pairs.members[g] for g in groups):
        counts = (pairs.k_a[rows], pairs.n_a[rows], pairs.k_b[rows], pairs.n_b[rows])
        found.append(stratified_exact_p(*counts))
        intervals.append(conditional_interval(*counts, level))
    return {
        "p_exact": [p for p, _ in found],
        "min_p": [smallest for _, smallest in found],
        "exact_method": "exact conditional test of the per-case 2x2 tables",
        "exact_low": [low for low, _ in intervals],
        "exact_high": [high for _, high in intervals],
    }


def exact_mcnemar(pairs: Pairs, groups: np.ndarray, level: float) -> dict[str, Any]:
    """One sample per case and side: the exact McNemar test (McNemar 1947), both modes.

    Only the discordant cases (one side passed) tell the variants apart; under "no
    difference" those favouring B are Binomial(d, 1/2) (statsmodels
    ``mcnemar(exact=True)``). With case groups it is the sign-flip test of the group sums.
    The interval is the one the test inverts: Clopper-Pearson (1934) for the share of the
    discordant cases that favour B, mapped to the difference
    (:func:`~evalnb.analysis._exact.conditional_mcnemar_interval`).
    """
    p_value, low, high = [], [], []
    for g in groups:
        rows = pairs.members[g]
        passed_a, passed_b = pairs.rate_a[rows] == 1, pairs.rate_b[rows] == 1
        b_only, a_only = int(np.sum(~passed_a & passed_b)), int(np.sum(passed_a & ~passed_b))
        if pairs.unit[g] == "cases":
            both, neither = np.sum(passed_a & passed_b), np.sum(~passed_a & ~passed_b)
            p_value.append(mcnemar([[both, a_only], [b_only, neither]], exact=True).pvalue)
        else:
            p_value.append(sign_flip_p([pairs.sums[g]])[0])
        interval = conditional_mcnemar_interval(b_only, a_only, int(pairs.cases[g]), level)
        low.append(interval[0])
        high.append(interval[1])
    return {
        "p_value": p_value,
        "p_exact": p_value,
        "min_p": sign_flip_min_p(pairs.groups[groups]),
        "low": low,
        "high": high,
        "se": np.nan,
        "exact_method": [
            "exact McNemar"
            if unit == "cases"
            else "exact McNemar over groups (sign-flip of group sums)"
            for unit in pairs.unit[groups]
        ],
        "method": (
            "exact McNemar (one sample per case and side); interval: conditional "
            "Clopper-Pearson, the one the test inverts"
        ),
    }


def agresti_caffo_variance(k: np.ndarray, n: Any) -> np.ndarray:
    """Variance of a per-case rate with one pass and one fail added (Agresti & Caffo 2000,
    "Simple and effective confidence intervals for proportions and differences of
    proportions"): ``p~ (1 - p~) / (n + 2)``, ``p~ = (k + 1) / (n + 2)``; never 0."""
    rate = (k + 1) / (n + 2)
    return np.asarray(rate * (1 - rate) / (n + 2))


def _normal_theory(
    pairs: Pairs,
    se: np.ndarray,
    df: np.ndarray,
    critical: np.ndarray,
    p_value: np.ndarray,
    flat: np.ndarray,
    what: str,
) -> PairedTest:
    low = np.maximum(pairs.mean - critical * se, -1.0)
    high = np.minimum(pairs.mean + critical * se, 1.0)
    method = np.full(pairs.size, what, dtype=object)
    return PairedTest(se, df, p_value, low, high, method, flat)


def _binomial_variance(rate: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Unbiased variance of a per-case rate from ``n`` draws: p(1-p)/(n-1)."""
    return np.asarray(rate * (1 - rate) / np.maximum(n - 1, 1))


def _group_sums(diff: np.ndarray, clusters: np.ndarray) -> np.ndarray:
    """Per-case differences summed within each group: the units whose signs are flipped."""
    codes = pd.factorize(pd.Series(clusters, dtype=object))[0]
    return np.bincount(codes, weights=diff)


def wide_counts(
    counts: pd.DataFrame, a: str, b: str, *, by: list[str], on: str, cluster: str
) -> Any:
    """Per ``by`` key, check and case (and ``cluster`` when it is not the case): both sides'
    counts ``k_a n_a k_b n_b``, rates, their difference and whether both sides scored the case
    (only then is it ``paired``); :func:`evalnb.compare` and the sequences pair cases so."""
    extra = [cluster] if cluster != "case_id" else []
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
    return wide.sort_values(keys, kind="stable").reset_index(drop=True)
