"""Exact tests for few cases: the sign-flip test over cases, the exact conditional test of
K 2x2 tables, and the exact McNemar test's interval and power.

These are the tests whose smallest possible p-value is known before any data is seen,
which is what lets :func:`evalnb.compare` say when a design cannot reach significance.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

__all__ = [
    "conditional_mcnemar_interval",
    "mcnemar_power",
    "sign_flip_min_p",
    "sign_flip_p",
    "stratified_exact_p",
]

#: Sign-flip p-values are enumerated exactly up to this many non-zero values (2**16 signs).
MAX_EXACT = 16
# Relative tolerance for "at least as extreme", as R's fisher.test and mantelhaen.test use.
_RELATIVE = 1 + 1e-7
_ZERO = 1e-12


def sign_flip_p(values: Sequence[np.ndarray]) -> np.ndarray:
    """Two-sided exact sign-flip p-value of the mean, one per array of values.

    Under "no difference" each case's (or group's) difference is as likely to have either
    sign, so the p-value is the share of the ``2**m`` sign assignments whose absolute sum
    is at least the observed one (``m`` non-zero values; zeros cannot change sign). This
    is ``scipy.stats.permutation_test(..., permutation_type="samples")`` with every
    assignment enumerated; with values in {-1, 0, 1} it is the exact McNemar test.
    Arrays with more than :data:`MAX_EXACT` non-zero values get NaN.
    """
    out = np.full(len(values), np.nan)
    by_size: dict[int, list[tuple[int, np.ndarray]]] = {}
    for i, v in enumerate(values):
        v = np.asarray(v, dtype=float)
        v = v[np.abs(v) > _ZERO]
        if len(v) == 0:
            out[i] = 1.0
        elif len(v) <= MAX_EXACT:
            by_size.setdefault(len(v), []).append((i, v))
    for size, items in by_size.items():
        signs = 1 - 2 * ((np.arange(2**size)[:, None] >> np.arange(size)) & 1)
        for start in range(0, len(items), max(1, 2**20 // 2**size)):
            chunk = items[start : start + max(1, 2**20 // 2**size)]
            stacked = np.stack([v for _, v in chunk])
            sums = np.abs(stacked @ signs.T)
            observed = np.abs(stacked.sum(axis=1))[:, None]
            p = (sums >= observed - 1e-9 * np.maximum(observed, 1)).mean(axis=1)
            out[[i for i, _ in chunk]] = p
    return out


def sign_flip_min_p(nonzero: np.ndarray | int) -> np.ndarray:
    """The smallest p-value a two-sided sign-flip test of ``m`` values can give: 2 / 2**m."""
    return np.minimum(1.0, 2.0 ** (1 - np.asarray(nonzero, dtype=float)))


def stratified_exact_p(
    k_a: np.ndarray, n_a: np.ndarray, k_b: np.ndarray, n_b: np.ndarray
) -> tuple[float, float]:
    """Exact conditional test that A and B pass equally often in every case (stratum).

    Given each case's total passes, B's passes are hypergeometric under the null; the
    null distribution of B's total is their convolution (the exact test of a common odds
    ratio of 1 in K 2x2 tables, as R's ``mantelhaen.test(exact = TRUE)``). Two-sided: the
    sum of the probabilities no larger than the observed one. With one case it is
    Fisher's exact test; with one sample per case and side it is the exact McNemar test.
    Returns ``(p, smallest p any outcome with these totals could give)``.
    """
    distribution = np.ones(1)
    low = 0
    for ka, na, kb, nb in zip(k_a, n_a, k_b, n_b, strict=True):
        total, size = int(ka + kb), int(na + nb)
        first = max(0, total - int(na))
        last = min(total, int(nb))
        if first == last:
            low += first
            continue
        distribution = np.convolve(distribution, _hypergeom(size, total, int(nb)))
        low += first
    observed = int(np.sum(k_b)) - low
    if len(distribution) == 1:
        return 1.0, 1.0
    cut = distribution[observed] * _RELATIVE
    p = float(min(1.0, distribution[distribution <= cut].sum()))
    # The most extreme outcomes are the least likely ones: the smallest p any outcome gives.
    order = np.sort(distribution)
    smallest = float(min(1.0, order[order <= order[0] * _RELATIVE].sum()))
    return p, smallest


@functools.lru_cache(maxsize=4096)
def _hypergeom(size: int, total: int, drawn: int) -> np.ndarray:
    """P(B passes x) for x from its smallest to its largest possible value (scipy)."""
    first, last = max(0, total - (size - drawn)), min(total, drawn)
    pmf = stats.hypergeom.pmf(np.arange(first, last + 1), size, total, drawn)
    pmf.flags.writeable = False
    return np.asarray(pmf)


def conditional_mcnemar_interval(
    b_only: int, a_only: int, cases: int, level: float
) -> tuple[float, float]:
    """Interval for the paired difference (B - A) that agrees with the exact McNemar test.

    Conditional on the ``d = b_only + a_only`` discordant cases, as the test is: the
    Clopper-Pearson interval for the share of them that favour B, ``theta``, maps to the
    difference ``(2 theta - 1) d / cases``. It excludes 0 exactly when the test rejects.
    With no discordant case the difference is 0 and the interval is +-(the Clopper-Pearson
    upper bound on the discordant share, 0 of ``cases``).
    """
    discordant = b_only + a_only
    if cases == 0:
        return math.nan, math.nan
    if discordant == 0:
        _, upper = proportion_confint(0, cases, alpha=1 - level, method="beta")
        return -float(upper), float(upper)
    low, high = proportion_confint(b_only, discordant, alpha=1 - level, method="beta")
    if b_only == 0:
        low = 0.0
    if b_only == discordant:
        high = 1.0
    scale = discordant / cases
    return float((2 * low - 1) * scale), float((2 * high - 1) * scale)


def mcnemar_power(cases: int, b_only: float, a_only: float, alpha: float) -> float:
    """Exact power of the two-sided exact McNemar test with ``cases`` pairs.

    ``b_only`` and ``a_only`` are the chances that a case passes for B only and for A only.
    The number ``d`` of discordant cases is binomial; given it, the cases favouring B are
    binomial with ``b_only / (b_only + a_only)``. The test (statsmodels
    ``mcnemar(exact=True)``, the binomial test at 1/2) rejects when ``x <= c_d`` or
    ``x >= d - c_d``, ``c_d`` the largest ``x`` with ``P(X <= x) < alpha / 2``.
    """
    share = b_only + a_only
    if share <= 0 or cases < 1:
        return 0.0
    favour = b_only / share
    d = np.arange(1, cases + 1)
    critical = stats.binom.ppf(alpha / 2, d, 0.5) - 1
    # ppf's result can sit a rounding error off: step down while the tail is not below alpha/2
    critical = np.where(stats.binom.cdf(critical, d, 0.5) < alpha / 2, critical, critical - 1)
    reject = stats.binom.cdf(critical, d, favour) + stats.binom.sf(d - critical - 1, d, favour)
    reject = np.where(critical >= 0, reject, 0.0)
    return float(min(1.0, np.sum(stats.binom.pmf(d, cases, share) * reject)))
